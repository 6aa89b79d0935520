//! The tools end to end: `leasesim-node local` starts a cluster and prints
//! its endpoints; `leasesim-node load --nemesis kill-leader` writes through
//! it while SIGKILLing and restarting leaders, and reads every acknowledged
//! write back; SIGTERM to `local` stops every member, restarted ones too.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_leasesim-node");

fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn local_cluster_survives_a_kill_leader_nemesis_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut local = Command::new(BIN)
        .args(["local", "--servers", "3", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(local.stdout.take().unwrap()).lines();
    let endpoints = loop {
        let line = lines.next().expect("local printed its endpoints").unwrap();
        if let Some(at) = line.find("--endpoints=") {
            break line[at + "--endpoints=".len()..].split_whitespace().next().unwrap().to_string();
        }
    };
    let load = Command::new(BIN)
        .args(["load", "--endpoints", &endpoints, "--workload", "put", "--duration", "8s", "--concurrency", "4"])
        .args(["--nemesis", "kill-leader", "--every", "2s", "--cluster-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&load.stdout).into_owned();
    assert!(load.status.success(), "{report}{}", String::from_utf8_lossy(&load.stderr));
    assert!(report.contains("nemesis: ") && report.contains("SIGKILL"), "{report}");
    assert!(report.contains("; lost: 0"), "{report}");

    let roster: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("members.json")).unwrap()).unwrap();
    let pids: Vec<u32> = roster.as_array().unwrap().iter().map(|m| m["pid"].as_u64().unwrap() as u32).collect();
    assert_eq!(pids.len(), 3);
    Command::new("kill").args(["-TERM", &local.id().to_string()]).status().unwrap();
    local.wait().unwrap();
    let started = Instant::now();
    while pids.iter().any(|p| alive(*p)) {
        assert!(started.elapsed() < Duration::from_secs(30), "members still running after local stopped: {pids:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
