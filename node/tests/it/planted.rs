//! The load tool's lease rule catches a planted bug on real processes:
//! with `--bug follower-expires-leases` every follower ends leases by its
//! own clock, TTL after it applied the grant, ignoring the keep-alives only
//! the leader sees. Reads are served by the leader, so the damage shows
//! once a follower takes over. One registration, driven step by step: a
//! lease with a TTL of 10 s renewed every 2 s for 12 s, then the leader is
//! SIGKILLed; the new leader is asked for the key. The followers ended the
//! lease 10 s after the grant; its holder was promised 10 s past its last
//! renewal, so the new leader has 10 s to be elected before a slow
//! machine could blur the verdict. The steps are recorded as
//! `leasesim-node load` records them (`tools::load::observed::Recorder`)
//! and judged by the judge's `lease-early-expiry`, as the load judges them.
//! With the bug the key is gone before the last renewal plus the TTL and
//! the judge says the lease ended early; without it, the same steps find
//! the key and the judge finds nothing.

use crate::common;

use std::time::Duration;

use common::ProcessCluster;
use leasesim_judge::checkers::Violation;
use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::{LeaseGrantRequest, LeaseKeepAliveRequest, PutRequest, RangeRequest};
use leasesim_node::tools::load::observed::{self, Recorder};

const TTL_S: i64 = 10;
const RENEWALS: usize = 6;
const RENEW_EVERY: Duration = Duration::from_secs(2);

/// Runs the registration, recorded as the load tool records it: whether
/// the new leader had lost the key, and the judge's violations.
fn renewed_then_leader_killed(extra_args: &[&str]) -> (bool, Vec<Violation>) {
    let _timing = common::timing_lock();
    let mut cluster = ProcessCluster::start_with(3, extra_args);
    let leader = cluster.wait_for_leader();
    let seen = Recorder::default();
    let ttl_ns = Duration::from_secs(TTL_S as u64).as_nanos() as u64;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let lease = runtime.block_on(async {
        let chan = common::channel(&cluster.url(leader)).await;
        let (mut leases, mut kv) = (LeaseClient::new(chan.clone()), KvClient::new(chan));
        let granted = leases.lease_grant(LeaseGrantRequest { ttl: TTL_S, id: 0 }).await.unwrap().into_inner();
        let put = PutRequest { key: b"registry/0".to_vec(), value: b"up".to_vec(), lease: granted.id, ..Default::default() };
        kv.put(put).await.unwrap();
        for _ in 0..RENEWALS {
            tokio::time::sleep(RENEW_EVERY).await;
            let sent_at_ns = seen.now_ns();
            let mut answers =
                leases.lease_keep_alive(tokio_stream::iter([LeaseKeepAliveRequest { id: granted.id }])).await.unwrap().into_inner();
            let answer = answers.message().await.unwrap().expect("a keep-alive answer");
            assert!(answer.ttl > 0, "the leader itself keeps the lease alive: {answer:?}");
            seen.record(1, Event::LeaseAcked { lease: granted.id as u64, ttl_ns, sent_at_ns, keepalive: true });
        }
        granted.id
    });
    cluster.kill(leader);
    let next = cluster.wait_for_leader();
    let lost = runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(next)).await);
        let sent_ns = seen.now_ns();
        let read = kv.range(RangeRequest { key: b"registry/0".to_vec(), ..Default::default() }).await.unwrap().into_inner();
        let lost = read.kvs.iter().all(|kv| kv.lease != lease);
        if lost {
            seen.answered(1, sent_ns, Event::LeaseSeenGone { lease: lease as u64 });
        }
        lost
    });
    (lost, observed::judge(&seen.into_log(), &["lease-early-expiry"]).violations)
}

#[test]
fn a_follower_that_ended_a_renewed_lease_by_its_own_clock_is_caught_once_it_leads() {
    let (lost, violations) = renewed_then_leader_killed(&["--bug", "follower-expires-leases"]);
    assert!(lost, "the new leader still had the key");
    let fired: Vec<&str> = violations.iter().map(|v| v.invariant).collect();
    assert_eq!(fired, vec!["lease-early-expiry"], "the judge missed the planted bug: {violations:?}");
}

#[test]
fn without_the_bug_the_same_steps_find_the_lease_alive() {
    let (lost, violations) = renewed_then_leader_killed(&[]);
    assert!(!lost, "the new leader lost a renewed lease");
    assert!(violations.is_empty(), "{violations:?}");
}

#[test]
fn an_unknown_planted_bug_is_refused_with_the_list_of_names() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
        .args(["local", "--servers", "1", "--dir", "/nonexistent", "--bug", "follower-expire-leases"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown bug `follower-expire-leases`") && stderr.contains("follower-expires-leases"), "{stderr}");
}
