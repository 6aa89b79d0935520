//! SIGKILL the leader of a real cluster in the middle of a write load,
//! restart it from its data directory, and check that no acknowledged
//! write was lost and that the restarted member catches up. Prints the
//! time from the kill to the next acknowledged write (a figure, not an
//! assertion: tests must not depend on the machine's speed).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Cluster;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};
use tonic::transport::Channel;

type Acked = Arc<Mutex<BTreeMap<String, String>>>;

async fn connect(url: &str) -> Option<KvClient<Channel>> {
    let channel = Channel::from_shared(url.to_string()).ok()?.connect_timeout(Duration::from_secs(1));
    channel.connect().await.ok().map(KvClient::new)
}

/// One writer: puts `w{id}-{n}` = `n` through the members in turn, moving
/// on when a member fails; records each put that was acknowledged.
async fn writer(id: usize, urls: Vec<String>, acked: Acked, stop: Arc<Mutex<bool>>, ack_times: Arc<Mutex<Vec<Instant>>>) {
    let mut member = id % urls.len();
    let mut client = None;
    for n in 0.. {
        if *stop.lock().unwrap() {
            return;
        }
        if client.is_none() {
            client = connect(&urls[member]).await;
            if client.is_none() {
                member = (member + 1) % urls.len();
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        }
        let (key, value) = (format!("w{id}-{n}"), n.to_string());
        let mut request = tonic::Request::new(PutRequest { key: key.clone().into(), value: value.clone().into(), ..Default::default() });
        request.set_timeout(Duration::from_secs(5));
        match client.as_mut().expect("connected").put(request).await {
            Ok(_) => {
                acked.lock().unwrap().insert(key, value);
                ack_times.lock().unwrap().push(Instant::now());
            }
            Err(_) => {
                client = None;
                member = (member + 1) % urls.len();
            }
        }
    }
}

fn wait_for_acks(acked: &Acked, at_least: usize) {
    let started = Instant::now();
    while acked.lock().unwrap().len() < at_least {
        assert!(started.elapsed() < Duration::from_secs(90), "the load stalled at {} acknowledged writes", acked.lock().unwrap().len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_sigkilled_leader_loses_no_acknowledged_write() {
    let mut cluster = Cluster::start(3);
    let leader = cluster.wait_for_leader();
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let acked: Acked = Arc::default();
    let stop = Arc::new(Mutex::new(false));
    let ack_times = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> =
        (0..4).map(|id| runtime.spawn(writer(id, urls.clone(), acked.clone(), stop.clone(), ack_times.clone()))).collect();

    wait_for_acks(&acked, 300);
    let killed_at = Instant::now();
    cluster.kill(leader);
    let before_kill = acked.lock().unwrap().len();
    wait_for_acks(&acked, before_kill + 300);
    cluster.launch(leader);
    let before_restart = acked.lock().unwrap().len();
    wait_for_acks(&acked, before_restart + 300);
    *stop.lock().unwrap() = true;
    for w in writers {
        runtime.block_on(w).unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    // The longest stretch without an acknowledged write around the kill:
    // how long the cluster was unavailable to writers.
    let times = ack_times.lock().unwrap().clone();
    let stall = times
        .windows(2)
        .filter(|w| w[1] > killed_at && w[0] < killed_at + Duration::from_secs(30))
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    eprintln!("{} acknowledged writes; longest write stall after the leader's SIGKILL: {stall:?}", acked.len());

    // Every acknowledged write reads back, through the restarted member.
    let restarted = urls[leader].clone();
    runtime.block_on(async {
        let mut client = None;
        let started = Instant::now();
        while client.is_none() {
            assert!(started.elapsed() < Duration::from_secs(60), "the restarted member does not answer");
            client = connect(&restarted).await;
        }
        let mut client = client.unwrap();
        let all = client
            .range(RangeRequest { key: b"w".to_vec(), range_end: b"x".to_vec(), ..Default::default() })
            .await
            .expect("range over every written key")
            .into_inner();
        let stored: BTreeMap<String, String> =
            all.kvs.into_iter().map(|kv| (String::from_utf8(kv.key).unwrap(), String::from_utf8(kv.value).unwrap())).collect();
        let lost: Vec<_> = acked.iter().filter(|(k, v)| stored.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect();
        assert!(lost.is_empty(), "{} acknowledged writes lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    });

    // The restarted member catches up with the others' applied index.
    let started = Instant::now();
    loop {
        let applied: Vec<u64> = (0..3).map(|i| cluster.status(i).map_or(0, |s| s.raft_applied_index)).collect();
        if applied[leader] > 0 && applied.iter().all(|a| *a == applied[0]) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the restarted member did not catch up: {applied:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    for i in 0..3 {
        assert!(cluster.running(i), "member {i} crashed; see {}", cluster.log_path(i).display());
    }
}
