//! SIGKILL the leader of a real cluster in the middle of a write load,
//! restart it from its data directory, and check that no acknowledged
//! write was lost and that the restarted member catches up. Prints the
//! time from the kill to the next acknowledged write (a figure, not an
//! assertion: tests must not depend on the machine's speed).

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::acked::{lost, read_back, wait_for_acks, writer, Acked};
use common::ProcessCluster;

#[test]
fn a_sigkilled_leader_loses_no_acknowledged_write() {
    let mut cluster = ProcessCluster::start(3);
    let leader = cluster.wait_for_leader();
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let ack_times = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> =
        (0..4).map(|id| runtime.spawn(writer(id, urls.clone(), acked.clone(), stop.clone(), Some(ack_times.clone())))).collect();

    wait_for_acks(&acked, 300);
    let killed_at = Instant::now();
    cluster.kill(leader);
    let before_kill = acked.lock().unwrap().len();
    wait_for_acks(&acked, before_kill + 300);
    cluster.launch(leader);
    let before_restart = acked.lock().unwrap().len();
    wait_for_acks(&acked, before_restart + 300);
    stop.store(true, Ordering::Relaxed);
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
    let stored = runtime.block_on(read_back(&urls[leader..=leader]));
    let lost = lost(&acked, &stored);
    assert!(lost.is_empty(), "{} acknowledged writes lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);

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
