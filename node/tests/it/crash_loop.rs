//! Power loss, over and over: a 3-member cluster run with
//! `--unsafe-test-lose-unsynced` (log writes stay in memory until fsynced,
//! so a SIGKILL drops them as a power loss would) takes a stream of puts
//! while its members are SIGKILLed and restarted: one member at a time,
//! and every other round all three at once. Every acknowledged put must
//! read back afterwards.
//!
//! The mode is shown to bite: with the planted bug `ack-before-fsync` (the
//! driver answers before fsyncing) the same loop loses acknowledged puts
//! and the test sees it, while without the mode (a SIGKILL keeps the page
//! cache) the same bug goes unseen.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::acked::{lost, read_back, wait_for_acks, writer, Acked};
use common::ProcessCluster;

const ROUNDS: usize = 6;
const ACKS_PER_ROUND: usize = 40;

/// What one loop did.
struct Outcome {
    acked: usize,
    lost: Vec<String>,
    /// Members not running at the end (a planted bug may crash one), each
    /// with the last lines of its log, so a failure says why it stopped.
    crashed: Vec<(usize, String)>,
}

/// Runs the loop.
fn crash_loop(extra_args: &[&str]) -> Outcome {
    // Side by side with the other suites (and each other) two of these
    // loops once stalled past wait_for_acks' 90 s bound on a loaded machine.
    let _timing = common::timing_lock();
    let mut cluster = ProcessCluster::start_with(3, extra_args);
    cluster.wait_for_leader();
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3).map(|id| runtime.spawn(writer(id, urls.clone(), acked.clone(), stop.clone(), None))).collect();
    for round in 0..ROUNDS {
        let before = acked.lock().unwrap().len();
        wait_for_acks(&acked, before + ACKS_PER_ROUND);
        // Odd rounds: one member; even rounds: the whole cluster at once.
        let victims: Vec<usize> = if round % 2 == 1 { vec![round % 3] } else { vec![0, 1, 2] };
        for &i in &victims {
            cluster.kill(i);
        }
        for &i in &victims {
            cluster.launch(i);
        }
    }
    let before = acked.lock().unwrap().len();
    wait_for_acks(&acked, before + ACKS_PER_ROUND);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        runtime.block_on(w).unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let stored = runtime.block_on(read_back(&urls));
    let lost = lost(&acked, &stored);
    let stopped: Vec<usize> = (0..3).filter(|i| !cluster.running(*i)).collect();
    let crashed = stopped.into_iter().map(|i| (i, log_tail(&cluster, i))).collect();
    Outcome { acked: acked.len(), lost, crashed }
}

/// The last lines of member `i`'s log (its directory goes with the cluster).
fn log_tail(cluster: &ProcessCluster, i: usize) -> String {
    let log = std::fs::read_to_string(cluster.log_path(i)).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[test]
fn power_losses_under_load_lose_no_acknowledged_write() {
    let Outcome { acked, lost, crashed } = crash_loop(&["--unsafe-test-lose-unsynced"]);
    eprintln!("{acked} acknowledged puts over {ROUNDS} rounds of SIGKILLs, {} lost", lost.len());
    assert!(lost.is_empty(), "{} acknowledged puts lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    assert!(crashed.is_empty(), "members {crashed:?} crashed");
}

#[test]
fn acking_before_fsync_is_caught_by_the_same_loop() {
    let Outcome { acked, lost, .. } = crash_loop(&["--unsafe-test-lose-unsynced", "--bug", "ack-before-fsync"]);
    eprintln!("with ack-before-fsync: {acked} acknowledged puts, {} lost", lost.len());
    assert!(!lost.is_empty(), "the loop missed the planted bug: none of {acked} acknowledged puts was lost");
}

#[test]
fn without_the_mode_a_sigkill_keeps_unsynced_writes_and_the_bug_goes_unseen() {
    let Outcome { acked, lost, crashed } = crash_loop(&["--bug", "ack-before-fsync"]);
    eprintln!("ack-before-fsync without --unsafe-test-lose-unsynced: {acked} acknowledged puts, {} lost", lost.len());
    assert!(lost.is_empty(), "a SIGKILL lost page-cache writes: {} of {acked}", lost.len());
    assert!(crashed.is_empty(), "members {crashed:?} crashed");
}
