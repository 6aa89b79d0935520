//! Restarts as etcd operators do them: every member of a 3-member cluster
//! is stopped and restarted from its data directory in turn, once with the
//! flags it was created with (`--initial-cluster-state new`) and once with
//! `--initial-cluster-state existing`, under a stream of writes. The data
//! directory decides who the member is: nothing acknowledged is lost, the
//! cluster keeps electing a leader, and `etcdctl member list` is the same
//! at the end as at the start. A data directory of another member or
//! another cluster is refused (exit 2) and left as it was.

use crate::common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::acked::{lost, read_back, wait_for_acks, writer, Acked};
use common::{have_etcdctl, ProcessCluster};

/// Member list as `etcdctl member list` prints it, sorted.
fn member_list(cluster: &ProcessCluster) -> Vec<String> {
    let mut lines: Vec<String> = cluster.ctl_ok(&["member", "list"]).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn every_member_restarts_in_turn_with_new_and_with_existing_and_nothing_is_lost() {
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    let members_before = have_etcdctl().then(|| member_list(&cluster));
    let ids_before: Vec<u64> = (0..3).map(|i| cluster.status(i).and_then(|s| s.header).map_or(0, |h| h.member_id)).collect();
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (acked, stop): (Acked, _) = (Arc::default(), Arc::new(AtomicBool::new(false)));
    let writers: Vec<_> = (0..2).map(|id| runtime.spawn(writer(id, urls.clone(), acked.clone(), stop.clone(), None))).collect();

    wait_for_acks(&acked, 100);
    for state in ["new", "existing"] {
        cluster.cluster_state = Some(state);
        for (i, id_before) in ids_before.iter().enumerate() {
            cluster.kill(i);
            let before = acked.lock().unwrap().len();
            wait_for_acks(&acked, before + 50);
            cluster.launch(i);
            // The restarted member is itself again: same id, and the
            // cluster has a leader with all three members applying.
            let started = Instant::now();
            loop {
                let status = cluster.status(i);
                let id = status.as_ref().and_then(|s| s.header).map_or(0, |h| h.member_id);
                if id == *id_before && status.is_some_and(|s| s.leader != 0 && s.raft_applied_index > 0) {
                    break;
                }
                assert!(started.elapsed() < Duration::from_secs(60), "member {i} restarted with {state} did not come back as itself");
                std::thread::sleep(Duration::from_millis(100));
            }
            let before = acked.lock().unwrap().len();
            wait_for_acks(&acked, before + 50);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        runtime.block_on(w).unwrap();
    }
    cluster.wait_for_leader();
    let acked = acked.lock().unwrap().clone();
    eprintln!("{} acknowledged writes across six restarts", acked.len());

    for i in 0..3 {
        assert!(cluster.running(i), "member {i} exited; see {}", cluster.log_path(i).display());
        let log = common::read_to_string(&cluster.log_path(i));
        assert!(log.contains("--initial-cluster and --initial-cluster-state are ignored"), "member {i}'s log says the flags were ignored");
    }
    // Every acknowledged write reads back through every member.
    for url in &urls {
        let stored = runtime.block_on(read_back(std::slice::from_ref(url)));
        let lost = lost(&acked, &stored);
        assert!(lost.is_empty(), "{} acknowledged writes missing at {url}, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    }
    if let Some(before) = members_before {
        assert_eq!(member_list(&cluster), before, "etcdctl member list is unchanged");
    }
}

#[test]
fn a_data_directory_of_another_member_or_cluster_is_refused() {
    let mut first = ProcessCluster::start(3);
    first.wait_for_leader();
    first.ctl_ok(&["put", "a", "1"]);
    let mut second = ProcessCluster::start(3);
    second.wait_for_leader();
    for i in 0..3 {
        first.kill(i);
        second.kill(i);
    }
    let identity = |c: &ProcessCluster, i: usize| std::fs::read_to_string(c.data_dir(i).join("member.json")).unwrap();
    let s1_dir = first.data_dir(0);
    let before = (identity(&first, 0), std::fs::read(s1_dir.join("wal.log")).unwrap());

    let refuse = |name: &str, peer_port: u16, client_port: u16| {
        let out = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
            .args(["--name", name, "--data-dir"])
            .arg(&s1_dir)
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer_port}")])
            .args(["--listen-client-urls", &format!("http://127.0.0.1:{client_port}")])
            .args(["--initial-cluster", &second.initial_cluster, "--initial-cluster-state", "existing"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // s2 of the same cluster started on s1's directory.
    let err = refuse("s2", first.members[1].peer_port, first.members[1].client_port);
    assert!(err.contains("holds member s1") && err.contains("another member"), "{err}");
    // s1 of another cluster (its own peer URL) started on the first s1's directory.
    let err = refuse("s1", second.members[0].peer_port, second.members[0].client_port);
    assert!(err.contains("another cluster"), "{err}");
    assert_eq!((identity(&first, 0), std::fs::read(s1_dir.join("wal.log")).unwrap()), before, "the directory is left as it was");
}
