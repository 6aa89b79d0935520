//! Leader leases for reads on real members (`--lease-reads`, Raft thesis
//! §6.4.1, core/src/raft/lease_read.rs): with the flag, a leader answers a
//! linearizable read from its lease with no read-index round; without it,
//! only after a round a majority acknowledged. A serializable read is the
//! member's own state either way.
//!
//! How "no round" is shown without counting messages (the node exposes no
//! per-kind counters): the read is sent to a leader that can exchange no
//! message at all. Three members, every peer link through a fault proxy;
//! the leader's monotonic clock is slowed to a twentieth (its lease, 980 ms
//! on its clock for T = 1 s and a 1 % bound, then lasts 19.6 s of true time:
//! the clock is far outside the bound, on purpose); its links are cut; the
//! other two elect a leader and write v2. A linearizable read sent to the
//! cut-off leader then answers v1 with the flag (no round could have been
//! confirmed: it is the stale read the lease risks when clocks break its
//! assumption) and v2 without it (it can only be answered once the cut is
//! lifted, through the new leader). Every wait is on a condition.

use crate::common;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use common::{free_port, http, Kind, ProcessCluster};
use leasesim_node::faults::mesh::{Mesh, MeshMember};
use leasesim_node::faults::proxy::LinkFault;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};

const KEY: &str = "lease-read";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

async fn put(url: &str, value: &str) {
    let mut kv = KvClient::new(common::channel(url).await);
    let mut request = tonic::Request::new(PutRequest { key: KEY.into(), value: value.into(), ..PutRequest::default() });
    request.set_timeout(Duration::from_secs(20));
    kv.put(request).await.unwrap_or_else(|e| panic!("put {value} on {url}: {e}"));
}

/// The key's value read on `url`, linearizable or serializable.
async fn get(url: String, serializable: bool) -> Result<String, tonic::Status> {
    let mut kv = KvClient::new(common::channel(&url).await);
    let mut request = tonic::Request::new(RangeRequest { key: KEY.into(), serializable, ..RangeRequest::default() });
    request.set_timeout(Duration::from_secs(30));
    let answer = kv.range(request).await?.into_inner();
    Ok(answer.kvs.first().map(|kv| String::from_utf8_lossy(&kv.value).into_owned()).unwrap_or_default())
}

/// Polls until `check` holds (at most 60 s).
fn until(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the cut-off old leader answered, with what a failure needs to be
/// read: the cluster (dropped by the caller, so that a failed assertion
/// prints every member's log) and when each step ended after the cut.
struct CutOffRead {
    linearizable: Result<String, tonic::Status>,
    serializable: String,
    steps: String,
    _cluster: ProcessCluster,
}

/// What the cut-off old leader answers (linearizable, serializable).
fn read_at_a_cut_off_leader(lease_flags: &[&str]) -> CutOffRead {
    let rt = runtime();
    let control: Vec<u16> = (0..3).map(|_| free_port()).collect();
    // Each member's Raft events, for the failure message.
    let events = tempfile::tempdir().expect("temp dir");
    let mesh: RefCell<Option<Mesh>> = RefCell::new(None);
    // Heartbeat 10 ms: every 200 ms of true time once the leader's clock
    // runs at a twentieth, well inside the followers' 1–2 s election
    // timeout.
    let mut cluster = ProcessCluster::start_each(3, 10, 1000, Kind::Leasesim, lease_flags, |i, members| {
        let mut mesh = mesh.borrow_mut();
        let mesh = mesh.get_or_insert_with(|| {
            let members = members
                .iter()
                .map(|m| MeshMember { name: m.name.clone(), peer: ([127, 0, 0, 1], m.peer_port).into(), client: None })
                .collect();
            rt.block_on(Mesh::start(members)).expect("start the proxies")
        });
        let mut args = vec!["--unsafe-test-control-url".into(), format!("http://127.0.0.1:{}", control[i])];
        args.extend(["--unsafe-test-event-log".into(), events.path().join(format!("s{}.jsonl", i + 1)).display().to_string()]);
        args.extend(mesh.route_args(i));
        args
    });
    let mesh = mesh.into_inner().expect("the mesh");
    let old = cluster.wait_for_leader();
    let old_term = cluster.status(old).expect("status").raft_term;
    let (code, body) = http(control[old], "POST", "/clock", r#"{"monotonic": {"rate": 0.05}}"#).expect("the control endpoint");
    assert_eq!(code, 200, "{body}");
    // Committed in the old leader's term: it may serve reads from then on.
    rt.block_on(put(&cluster.url(old), "v1"));

    let before_cut = cluster.status(old).expect("status");
    let me = before_cut.header.as_ref().map_or(0, |h| h.member_id);
    assert!(
        before_cut.raft_term == old_term && before_cut.leader == me,
        "the leader changed before the cut (term {} → {}): not what this test is about",
        old_term,
        before_cut.raft_term
    );
    mesh.around(old, LinkFault { cut: true, ..LinkFault::default() }).expect("cut");
    let cut_at = Instant::now();
    let mut steps = format!("s{} led term {old_term}; after the cut:", old + 1);
    let others: Vec<usize> = (0..3).filter(|i| *i != old).collect();
    let mut new = None;
    until("the other two elect a leader", || {
        new = others.iter().copied().find(|i| {
            cluster.status(*i).is_some_and(|s| s.raft_term > old_term && s.leader == s.header.as_ref().map_or(0, |h| h.member_id))
        });
        new.is_some()
    });
    let new = new.expect("a new leader");
    steps += &format!(" s{} led at {:?};", new + 1, cut_at.elapsed());
    rt.block_on(put(&cluster.url(new), "v2"));
    steps += &format!(" v2 written at {:?};", cut_at.elapsed());

    let linearizable = rt.spawn(get(cluster.url(old), false));
    let serializable = rt.block_on(get(cluster.url(old), true)).expect("a serializable read needs no leader");
    if lease_flags.is_empty() {
        // No answer can come while the cut lasts: lift it, so that the
        // read is answered (through the new leader) rather than given up.
        mesh.heal();
    }
    let linearizable = rt.block_on(linearizable).expect("the read task");
    steps += &format!(" the linearizable read ended at {:?}", cut_at.elapsed());
    if linearizable.is_err() {
        let log = std::fs::read_to_string(events.path().join(format!("s{}.jsonl", old + 1))).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(12).collect();
        steps += &format!("; the old leader's last events, newest first:\n{}\n", tail.join("\n"));
    }
    if let Some(s) = cluster.status(old) {
        steps += &format!("; the old leader is now in term {}, leader {:x}", s.raft_term, s.leader);
    }
    mesh.heal();
    CutOffRead { linearizable, serializable, steps, _cluster: cluster }
}

// Ignored until its cause is found: it failed once in the full `it` suite
// at load average 10–18 with the leader's clock at a tenth, and again at
// load 1–2 with the clock at a twentieth (a lease of about 20 s of true
// time), though it passed 3 of 3 runs alone; so the lease's length is not
// the cause. Run it with `-- --ignored`.
#[test]
#[ignore = "fails intermittently in the full suite; cause not found (see the comment above)"]
fn with_lease_reads_a_cut_off_leader_answers_from_its_lease() {
    let _timing = common::timing_lock();
    // The margin: the lease ends 19.6 s of true time after the last round
    // acknowledged before the cut (heartbeats leave 200 ms apart); in
    // between come one election of the other two (a 1–2 s timer, a
    // pre-vote and a vote round), one put and one read, so it misses only
    // if those stall for more than 15 s.
    let read = read_at_a_cut_off_leader(&["--lease-reads", "--drift-bound", "0.01"]);
    let steps = &read.steps;
    let linearizable =
        read.linearizable.as_ref().unwrap_or_else(|e| panic!("the lease answered nothing while the leader was cut off: {e} ({steps})"));
    assert_eq!(linearizable, "v1", "answered from the lease, with no round: the new leader's write could not reach it ({steps})");
    assert_eq!(read.serializable, "v1", "a serializable read is the member's own state ({steps})");
}

#[test]
fn without_lease_reads_a_cut_off_leader_answers_only_after_a_round() {
    let read = read_at_a_cut_off_leader(&[]);
    let steps = &read.steps;
    let linearizable = read.linearizable.as_ref().unwrap_or_else(|e| panic!("the read failed once the cut was lifted: {e} ({steps})"));
    assert_eq!(linearizable, "v2", "a read waits for a confirmed round, which only the new leader can give ({steps})");
    assert_eq!(read.serializable, "v1", "a serializable read is the member's own state, leader or not ({steps})");
}
