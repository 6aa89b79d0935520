//! Real `etcdctl` against a real 3-member leasesim-node cluster: every
//! command the issue lists, through any member (followers forward).

use crate::common;

use common::{have_etcdctl, ProcessCluster};

#[test]
fn etcdctl_commands_work_against_a_three_member_cluster() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start(3);
    let leader = cluster.wait_for_leader();
    let follower = (leader + 1) % 3;

    // KV, through a follower and read back through another member.
    let out = cluster.etcdctl(&cluster.endpoint(follower), &["put", "greeting", "hello"]);
    assert!(out.status.success(), "put via a follower: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    let out = cluster.etcdctl(&cluster.endpoint((leader + 2) % 3), &["get", "greeting"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "greeting\nhello\n");
    cluster.ctl_ok(&["put", "app/a", "1"]);
    cluster.ctl_ok(&["put", "app/b", "2"]);
    assert_eq!(cluster.ctl_ok(&["get", "--prefix", "app/", "--keys-only"]).split_whitespace().collect::<Vec<_>>(), ["app/a", "app/b"]);
    assert_eq!(cluster.ctl_ok(&["del", "greeting"]).trim(), "1");
    assert_eq!(cluster.ctl_ok(&["get", "greeting"]), "");
    assert_eq!(cluster.ctl_ok(&["del", "--prefix", "app/"]).trim(), "2");

    // Leases.
    let granted = cluster.ctl_ok(&["lease", "grant", "30"]);
    assert!(granted.contains("granted with TTL(30s)"), "{granted}");
    let lease = granted.split_whitespace().nth(1).expect("lease id").to_string();
    cluster.ctl_ok(&["put", "--lease", &lease, "svc/1", "up"]);
    let ttl = cluster.ctl_ok(&["lease", "timetolive", &lease, "--keys"]);
    assert!(ttl.contains("granted with TTL(30s)") && ttl.contains("attached keys([svc/1])"), "{ttl}");
    let kept = cluster.ctl_ok(&["lease", "keep-alive", "--once", &lease]);
    assert!(kept.contains("keepalived with TTL(30)"), "{kept}");
    assert!(cluster.ctl_ok(&["lease", "list"]).contains(&lease));
    assert!(cluster.ctl_ok(&["lease", "revoke", &lease]).contains("revoked"));
    assert_eq!(cluster.ctl_ok(&["get", "svc/1"]), "", "revoking a lease deletes its keys");
    assert!(cluster.ctl_ok(&["lease", "timetolive", &lease]).contains("already expired"));
    let out = cluster.etcdctl(&cluster.endpoints(), &["lease", "keep-alive", "--once", &lease]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("requested lease not found"));

    // A lock held while a command runs (etcdctl's client-side recipe).
    let out = cluster.ctl_ok(&["lock", "jobs", "echo", "holding-the-lock"]);
    assert_eq!(out.trim(), "holding-the-lock");
    assert_eq!(cluster.ctl_ok(&["get", "--prefix", "jobs"]), "", "the lock key is gone after unlock");

    // Status and membership.
    // Asked again while an election is under way (none or two members
    // leading for a moment, as a loaded machine may stall a leader); the
    // bound is a hang guard only.
    let started = std::time::Instant::now();
    let mut status = cluster.ctl_ok(&["endpoint", "status"]);
    while status.matches(", true, ").count() != 1 && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(200));
        status = cluster.ctl_ok(&["endpoint", "status"]);
    }
    assert_eq!(status.lines().count(), 3, "{status}");
    assert_eq!(status.matches(", true, ").count(), 1, "exactly one leader: {status}");
    let members = cluster.ctl_ok(&["member", "list"]);
    for i in 0..3 {
        assert!(members.contains(&format!("s{}", i + 1)) && members.contains(&cluster.url(i)), "{members}");
    }
    for i in 0..3 {
        assert!(cluster.running(i), "member {i} crashed");
    }
}

/// `etcdctl lock` by three contending processes (etcd's client-side recipe:
/// a txn on the lock key's create revision, a sorted range, a watch for the
/// predecessor's delete): the holders never overlap and are served in
/// arrival order. And `etcdctl watch` sees puts and deletes.
#[test]
fn contended_etcdctl_locks_and_watch() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    let dir = cluster.dir.path().to_path_buf();
    let script = dir.join("hold.sh");
    let log = dir.join("holders.log");
    std::fs::write(&script, format!("#!/bin/sh\necho \"$1 start\" >> {0}\nsleep 0.5\necho \"$1 end\" >> {0}\n", log.display())).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
    let mut holders = Vec::new();
    let mut waiters = std::collections::BTreeSet::new();
    for who in ["a", "b", "c"] {
        let child = std::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", cluster.endpoints()))
            .args(["lock", "contended"])
            .arg(&script)
            .arg(who)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        holders.push(child);
        // Let this one queue before the next starts (its key's create
        // revision decides the order): a condition, not a sleep, so that a
        // slow etcdctl start on a loaded machine cannot reorder them.
        wait_for_waiters(&cluster, &mut waiters, holders.len());
    }
    for mut holder in holders {
        assert!(holder.wait().unwrap().success());
    }
    let lines: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
    assert_eq!(lines, ["a start", "a end", "b start", "b end", "c start", "c end"], "holders overlapped or jumped the queue");

    // The key exists before the watch starts, and the watch replays from
    // revision 1 (`--rev=1`): etcdctl must print the history's PUT first,
    // then each later change exactly once (node's Watch is served from
    // core's history, src/etcd/watch.rs).
    cluster.ctl_ok(&["put", "watched", "one"]);
    let mut watcher = std::process::Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={}", cluster.endpoints()))
        .args(["watch", "watched", "--rev=1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watcher.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let next = || rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the watch reports within 30 s");
    // From revision 1: the put is reported however late the watch starts.
    assert_eq!([next(), next(), next()], ["PUT", "watched", "one"]);
    cluster.ctl_ok(&["del", "watched"]);
    assert_eq!([next(), next()], ["DELETE", "watched"]);
    let _ = watcher.kill();
    let _ = watcher.wait();
}

/// Polls the lock's waiter keys (`contended/<lease>`, one per etcdctl
/// that holds or waits) until `count` distinct ones were seen, adding them
/// to `seen`. Each key lives at least the holder's 0.5 s (the script's
/// sleep), far longer than a 10 ms poll; the bound is a hang guard only.
fn wait_for_waiters(cluster: &ProcessCluster, seen: &mut std::collections::BTreeSet<Vec<u8>>, count: usize) {
    use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
    use leasesim_node::pb::etcdserverpb::RangeRequest;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        let started = std::time::Instant::now();
        while seen.len() < count {
            let prefix =
                RangeRequest { key: b"contended/".to_vec(), range_end: b"contended0".to_vec(), keys_only: true, ..Default::default() };
            if let Ok(r) = kv.range(prefix).await {
                seen.extend(r.into_inner().kvs.into_iter().map(|kv| kv.key));
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(60), "{} of {count} etcdctl lock clients queued", seen.len());
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    });
}
