//! `GET /log` on a real cluster: every member reports its Raft log as term
//! runs on its lock listener, the members agree on the committed entries,
//! and a restarted member reports the log it had on disk.

use crate::common;

use std::time::{Duration, Instant};

use common::{channel, http_when_up, ProcessCluster};
use leasesim_node::log_view::LogView;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::PutRequest;

fn log_of(cluster: &ProcessCluster, i: usize) -> LogView {
    let (code, body) = http_when_up(cluster.members[i].lock_port, "GET", "/log", "");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not a LogView: {e}: {body}"))
}

/// Polls until every member's log reaches `index` (at most 30 s).
fn logs_at(cluster: &ProcessCluster, index: u64) -> Vec<LogView> {
    let started = Instant::now();
    loop {
        let logs: Vec<LogView> = (0..cluster.members.len()).map(|i| log_of(cluster, i)).collect();
        if logs.iter().all(|l| l.commit_index >= index && l.last_index >= index) {
            return logs;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "logs never reached {index}: {logs:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn members_report_their_logs_as_term_runs() {
    let mut cluster = ProcessCluster::start(3);
    let leader = cluster.wait_for_leader();
    let url = cluster.url(leader);
    tokio::runtime::Runtime::new().unwrap().block_on(async move {
        let mut kv = KvClient::new(channel(&url).await);
        for n in 0..5 {
            kv.put(PutRequest { key: format!("k{n}").into_bytes(), value: b"v".to_vec(), ..Default::default() }).await.expect("put");
        }
    });
    let leader_log = log_of(&cluster, leader);
    assert!(leader_log.last_index >= 6, "an entry of the leader's term and five puts: {leader_log:?}");
    let logs = logs_at(&cluster, leader_log.last_index);
    let term = cluster.status(leader).expect("the leader answers").raft_term;
    for log in &logs {
        assert_eq!(log.snapshot_index, 0, "nothing compacted yet");
        assert_eq!(log.runs.first().map(|r| r.first), Some(1), "runs start after the snapshot: {log:?}");
        assert_eq!(log.runs.last().map(|r| (r.last, r.term)), Some((log.last_index, term)), "{log:?}");
        let upto = |l: &LogView| l.entries().into_iter().filter(|(i, _)| *i <= leader_log.last_index).collect::<Vec<_>>();
        assert_eq!(upto(log), upto(&leader_log), "log matching on committed entries");
    }
    // A restarted member reports the log its disk kept.
    let other = (leader + 1) % 3;
    let before = log_of(&cluster, other);
    cluster.kill(other);
    cluster.launch(other);
    let after = logs_at(&cluster, before.last_index);
    assert_eq!(after[other].entries()[..before.entries().len()], before.entries()[..], "{before:?} then {:?}", after[other]);
}
