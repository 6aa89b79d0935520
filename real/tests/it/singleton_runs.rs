//! The singleton workload for real, end to end on real processes
//! (`tests/data/singleton-short.toml`, 14 s of real time per run): the
//! role's holder is paused past its lease and the leader crashes; on both
//! targets the role changes hands, the woken holder steps down, and
//! `singleton-overlap` and `fencing-order` judge what the instances saw.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn played(target: &str, trace: &Path) -> (Output, Value) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/singleton-short.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim-real"))
        .args(["run", &file.to_string_lossy(), "--target", target, "--json", "--trace", &trace.to_string_lossy()])
        .output()
        .expect("leasesim-real runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    let v = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (out, v)
}

/// The instances that ran the role, in order, and how each stopped.
fn roles(trace: &Path) -> (Vec<u64>, Vec<String>) {
    let text = std::fs::read_to_string(trace).expect("the trace was written");
    let (mut started, mut ended) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let obs: Value = serde_json::from_str(line).expect("a JSON line");
        match obs["event"]["kind"].as_str() {
            Some("singleton-started") => started.push(obs["proc"]["Client"].as_u64().expect("a client")),
            Some("singleton-ended") => ended.push(obs["event"]["why"].as_str().unwrap_or("?").to_string()),
            _ => {}
        }
    }
    (started, ended)
}

fn assert_the_role_changes_hands_safely(target: &str) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let trace = dir.path().join("trace.jsonl");
    let (out, v) = played(target, &trace);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!((v["verdict"].as_str(), v["target"].as_str()), (Some("ok"), Some(target)), "{v}");
    let faults = v["faults"].as_array().unwrap();
    assert!(faults[0].as_str().unwrap().contains("pause holder:generator=c"), "the holder was found and paused: {v}");
    let (started, ended) = roles(&trace);
    assert!(started.len() >= 2, "another instance took the role while the holder slept: {started:?}");
    assert!(started.windows(2).any(|w| w[0] != w[1]), "{started:?}");
    assert!(ended.iter().any(|why| why == "timer-lapsed"), "the woken holder stepped down: {ended:?}");
    let not_judged: Vec<&str> = v["not_judged"].as_array().unwrap().iter().map(|n| n["invariant"].as_str().unwrap()).collect();
    assert!(!not_judged.contains(&"singleton-overlap") && !not_judged.contains(&"fencing-order"), "{v}");
}

#[test]
fn a_singleton_role_changes_hands_safely_on_leasesim_node() {
    assert_the_role_changes_hands_safely("node");
}

#[test]
fn a_singleton_role_changes_hands_safely_on_etcd() {
    assert_the_role_changes_hands_safely("etcd");
}
