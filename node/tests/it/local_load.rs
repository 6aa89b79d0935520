//! The tools end to end: `leasesim-node local` starts a cluster and prints
//! its endpoints; `leasesim-node load --nemesis kill-leader` drives every
//! workload through it while SIGKILLing and restarting leaders, and the
//! run is judged by leasesim's own rules: every acknowledged write reads
//! back (`put`), the history is linearizable by leasesim's checker (`kv`),
//! no fencing token is handed out or accepted twice and the data store's
//! own file never goes back in tokens (`lock`), no lease is gone before its
//! last renewal plus its TTL (`registry`). SIGTERM to `local` stops every
//! member, restarted ones too.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{own_host, OwnHost};

const BIN: &str = env!("CARGO_BIN_EXE_leasesim-node");

/// A running `leasesim-node local`, on a loopback address of its own (its
/// members' ports are picked in its process, where this process's port
/// counter cannot see them: the address keeps every other test's members
/// off them). Dropped before [`Local::stop`] (a failed assertion), it is
/// sent SIGTERM, which stops its members too, so no test leaves processes
/// behind.
struct Local {
    child: Option<Child>,
    _host: OwnHost,
}

impl Local {
    fn start(servers: &str, dir: &Path) -> Local {
        let host = own_host();
        let child = Command::new(BIN)
            .args(["local", "--servers", servers, "--host", &host.ip.to_string(), "--dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Local { child: Some(child), _host: host }
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("local is running")
    }

    /// SIGTERM, and waits for `local` to exit (it stops its members first).
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.stop();
    }
}

fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn local_cluster_survives_a_kill_leader_nemesis_and_stops_cleanly() {
    let _timing = crate::common::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let mut local = Local::start("3", dir.path());
    // The endpoints and the data store's URL, as `local` prints them.
    let (mut endpoints, mut store) = (None, None);
    for line in BufReader::new(local.child().stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some((_, url)) = line.split_once("data store: POST ") {
            store = Some(url.trim().trim_end_matches("/write").to_string());
        }
        if let Some(at) = line.find("--endpoints=") {
            endpoints = Some(line[at + "--endpoints=".len()..].split_whitespace().next().unwrap().to_string());
            break;
        }
    }
    let (endpoints, store) = (endpoints.expect("local printed its endpoints"), store.expect("local printed the data store"));
    // One load; under the kill-leader nemesis unless `calm`.
    let run = |workload: &str, duration: &str, extra: &[&str], calm: bool| {
        let mut command = Command::new(BIN);
        command.args(["load", "--endpoints", &endpoints, "--workload", workload, "--duration", duration, "--concurrency", "4"]);
        if !calm {
            command.args(["--nemesis", "kill-leader", "--every", "2s", "--cluster-dir"]).arg(dir.path());
        }
        let out = command.args(extra).output().unwrap();
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "load {workload}: {report}{}", String::from_utf8_lossy(&out.stderr));
        assert!(calm || (report.contains("nemesis: ") && report.contains("SIGKILL")), "{report}");
        report
    };
    let load = |workload: &str, duration: &str, extra: &[&str]| run(workload, duration, extra, false);
    let report = load("put", "8s", &[]);
    assert!(report.contains("; lost: 0"), "{report}");
    let history = dir.path().join("kv.jsonl");
    let report = load("kv", "6s", &["--history", history.to_str().unwrap()]);
    assert!(report.contains("check linearizable: ok"), "{report}");
    // A second run on the same cluster starts from keys of its own: the
    // first run's values must not read as writes nobody made.
    let report = run("kv", "3s", &[], true);
    assert!(report.contains("check linearizable: ok"), "{report}");
    let report = load("lock", "6s", &["--store", &store]);
    assert!(report.contains("check lock-belief-overlap: ok") && report.contains("check fencing-order: ok"), "{report}");
    let report = load("registry", "8s", &["--ttl", "3s"]);
    assert!(report.contains("check lease-early-expiry: ok"), "{report}");
    assert!(!report.contains("registry: 0 leases"), "no lease outlived its holder: {report}");

    // The data store's own file: per key, accepted tokens never go down,
    // and no token was written by two holders.
    let data = std::fs::read_to_string(dir.path().join("data.txt")).unwrap();
    let mut top: std::collections::BTreeMap<String, (u64, String)> = Default::default();
    let mut writes = 0;
    for line in data.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let (key, token, client) = (fields[0].to_string(), fields[1].parse::<u64>().unwrap(), fields[2].to_string());
        if let Some((before, holder)) = top.get(&key) {
            assert!(token >= *before, "the store accepted token {token} after {before} for {key}");
            assert!(token > *before || *holder == client, "token {token} written by {holder} and {client}");
        }
        top.insert(key, (token, client));
        writes += 1;
    }
    assert!(writes > 0, "the lock workload wrote nothing to the data store");

    let roster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("members.json")).unwrap()).unwrap();
    let pids: Vec<u32> = roster.as_array().unwrap().iter().map(|m| m["pid"].as_u64().unwrap() as u32).collect();
    assert_eq!(pids.len(), 3);
    local.stop();
    let started = Instant::now();
    while pids.iter().any(|p| alive(*p)) {
        assert!(started.elapsed() < Duration::from_secs(30), "members still running after local stopped: {pids:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whoever started `local` may stop reading its output once it has the
/// endpoints (this file's other test does). `local` once panicked on the
/// broken pipe while printing its last line and took every member down with
/// it, which failed a CI run as "no endpoint accepted a connection".
#[test]
fn local_keeps_its_cluster_when_nobody_reads_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut local = Local::start("1", dir.path());
    drop(local.child().stdout.take()); // closed before `local` prints a byte
    let roster = dir.path().join("members.json");
    let started = Instant::now();
    while !roster.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "local wrote no roster");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The banner is written right after the roster; give it time to fail.
    std::thread::sleep(Duration::from_millis(500));
    assert!(local.child().try_wait().unwrap().is_none(), "local exited when its stdout closed: {:?}", local.child().try_wait());
    let roster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&roster).unwrap()).unwrap();
    let pid = roster[0]["pid"].as_u64().unwrap() as u32;
    let log = || std::fs::read_to_string(dir.path().join("s1.log")).unwrap_or_default();
    assert!(alive(pid), "the member is gone; its log:\n{}", log());
    local.stop();
}
