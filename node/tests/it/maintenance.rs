//! etcd's maintenance calls through etcdctl: `endpoint hashkv` agrees across
//! members that applied the same entries, `move-leader` hands leadership
//! over (Raft §3.10 transfer) and refuses an unknown target with etcd's
//! error, side by side with real etcd 3.4; and the periodic corruption
//! check (`--experimental-corrupt-check-time`) catches a planted replica
//! divergence, raises CORRUPT and refuses writes while serving reads.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{have_etcd, have_etcdctl, Kind, ProcessCluster};

/// Waits until every member has applied the same index, and returns it.
fn settled(cluster: &ProcessCluster) -> u64 {
    let started = Instant::now();
    loop {
        let applied: Vec<u64> = (0..cluster.members.len()).map(|i| cluster.status(i).map_or(0, |s| s.raft_applied_index)).collect();
        if applied[0] > 0 && applied.iter().all(|a| *a == applied[0]) {
            return applied[0];
        }
        assert!(started.elapsed() < Duration::from_secs(30), "members did not settle: {applied:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn leader_id(cluster: &ProcessCluster, i: usize) -> u64 {
    cluster.status(i).map_or(0, |s| s.leader)
}

/// Whether every member names `leader` as its leader, polled (up to 30 s)
/// while a follower has yet to hear from the new leader.
fn all_follow(cluster: &ProcessCluster, leader: u64) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if (0..cluster.members.len()).all(|i| leader_id(cluster, i) == leader) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// What a kind's cluster answered, with its ids replaced by names.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    hashes_equal: bool,
    moved: String,
    leader_is_target: bool,
    bad_target: String,
}

fn exercise(kind: Kind) -> Seen {
    let mut cluster = ProcessCluster::start_kind(kind, 3, 50, 500);
    let leader = cluster.wait_for_leader();
    for n in 0..20 {
        cluster.ctl_ok(&["put", &format!("k{n}"), "v"]);
    }
    settled(&cluster);
    let hashes: Vec<String> =
        cluster.ctl_ok(&["endpoint", "hashkv"]).lines().map(|l| l.rsplit(", ").next().unwrap_or_default().to_string()).collect();
    assert_eq!(hashes.len(), 3, "{hashes:?}");

    let ids: Vec<u64> = (0..3).map(|i| cluster.status(i).and_then(|s| s.header).map_or(0, |h| h.member_id)).collect();
    let target = (leader + 1) % 3;
    let moved = cluster.ctl_ok(&["move-leader", &format!("{:x}", ids[target])]);
    let name = |text: &str| {
        let mut text = text.trim().to_string();
        for (i, id) in ids.iter().enumerate() {
            text = text.replace(&format!("{id:x}"), &format!("<s{}>", i + 1));
        }
        text
    };
    let started = Instant::now();
    while leader_id(&cluster, target) != ids[target] {
        assert!(started.elapsed() < Duration::from_secs(30), "{kind:?}: the leadership did not move");
        std::thread::sleep(Duration::from_millis(50));
    }
    let bad = cluster.etcdctl(&cluster.endpoints(), &["move-leader", "abcdef"]);
    assert!(!bad.status.success());
    let bad_target = String::from_utf8_lossy(&bad.stderr).lines().last().unwrap_or_default().to_string();
    eprintln!("{kind:?}: hashkv {hashes:?}; move-leader: {}; unknown target: {bad_target}", moved.trim());
    Seen {
        hashes_equal: hashes.iter().all(|h| *h == hashes[0]),
        moved: name(&moved),
        leader_is_target: all_follow(&cluster, ids[target]),
        bad_target,
    }
}

#[test]
fn hashkv_agrees_and_move_leader_moves_as_on_etcd() {
    if !have_etcdctl() {
        return;
    }
    let ours = exercise(Kind::Leasesim);
    assert!(ours.hashes_equal && ours.leader_is_target, "{ours:?}");
    assert!(ours.moved.starts_with("Leadership transferred from <s"), "{ours:?}");
    assert_eq!(ours.bad_target, "Error: etcdserver: bad leader transferee");
    if have_etcd() {
        let theirs = exercise(Kind::Etcd);
        // The member names differ with who led; the shape is the same.
        let shape = |s: &Seen| (s.hashes_equal, s.moved.len(), s.leader_is_target, s.bad_target.clone());
        assert_eq!(shape(&ours), shape(&theirs), "leasesim-node {ours:?} vs etcd {theirs:?}");
    }
}

/// Grants a lease, attaches a key, keeps the lease alive through the
/// leader for a few TTLs, then writes 40 keys (past a whole-state digest
/// point, every 32 indices). Returns whether a write was refused as
/// corrupt (one of the 40, or a probe within `look` after them), and the
/// alarms etcdctl lists.
fn keep_alive_then_write(cluster: &ProcessCluster, look: Duration) -> (bool, String) {
    // Written before anything can diverge: read back once writes are refused.
    cluster.ctl_ok(&["put", "plain", "v"]);
    let granted = cluster.ctl_ok(&["lease", "grant", "1"]);
    let lease = granted.split_whitespace().nth(1).unwrap().to_string();
    cluster.ctl_ok(&["put", "held", "v", &format!("--lease={lease}")]);
    let mut keep_alive = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={}", cluster.endpoints()))
        .args(["lease", "keep-alive", &lease])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(6));
    // On a loaded machine the 40 writes take long enough for a check to
    // find a divergence among them: that refusal counts as well.
    let put = |key: &str| {
        let out = cluster.etcdctl(&cluster.endpoints(), &["put", key, "v"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let refused = !out.status.success() && stderr.contains("etcdserver: corrupt cluster");
        assert!(out.status.success() || refused, "etcdctl put {key} failed: {stderr}");
        refused
    };
    let mut refused = (0..40).any(|n| put(&format!("after{n}")));
    let started = Instant::now();
    while started.elapsed() < look && !refused {
        refused = put("probe");
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("refused as corrupt: {refused}, after {:?} of looking", started.elapsed());
    let _ = keep_alive.kill();
    let _ = keep_alive.wait();
    (refused, cluster.ctl_ok(&["alarm", "list"]))
}

#[test]
fn the_corruption_check_catches_a_planted_divergence() {
    if !have_etcdctl() {
        return;
    }
    let check = ["--experimental-corrupt-check-time", "1s"];
    let cluster = ProcessCluster::start_with(3, &[&check[..], &["--bug", "follower-expires-leases"]].concat());
    let mut cluster = cluster;
    cluster.wait_for_leader();
    // Looks until the refusal (20 s is a hang guard, not a deadline).
    let (refused, alarms) = keep_alive_then_write(&cluster, Duration::from_secs(20));
    assert!(refused, "a write was refused with `corrupt cluster` once followers expired a lease on their own");
    assert!(alarms.contains("alarm:CORRUPT"), "{alarms}");
    // Reads are still served.
    assert!(cluster.ctl_ok(&["get", "plain"]).contains("plain"));
    let logs: String = (0..3).map(|i| common::read_to_string(&cluster.log_path(i))).collect();
    assert!(logs.contains("corruption check: member"), "a member logged the mismatch");
}

#[test]
fn the_corruption_check_is_silent_when_members_agree() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start_with(3, &["--experimental-corrupt-check-time", "1s"]);
    cluster.wait_for_leader();
    // Five check periods (the check runs every second); where members
    // diverge, the planted case above is refused within the first two or
    // three (it prints when).
    let (refused, alarms) = keep_alive_then_write(&cluster, Duration::from_secs(5));
    assert!(!refused, "no write was refused");
    assert_eq!(alarms.trim(), "");
    // The lease's expiry may still be applying: ask again if an index moved.
    let mut hashes = Vec::new();
    for _ in 0..5 {
        let index = settled(&cluster);
        hashes = cluster.ctl_ok(&["endpoint", "hashkv"]).lines().map(|l| l.rsplit(", ").next().unwrap().to_string()).collect();
        if settled(&cluster) == index {
            break;
        }
    }
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
}
