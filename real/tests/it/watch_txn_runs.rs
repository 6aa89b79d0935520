//! The txn and watch workloads for real, end to end on real processes
//! (`tests/data/watch-txn-short.toml`, 10 s of real time per run): both
//! targets play them and the judge's txn linearizability and
//! watch-delivery checkers judge what the clients saw, against the
//! committed history the runner reads from the cluster after the run; and
//! the bundled scenarios with planted bugs that break either one find them
//! for real on leasesim-node.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common;
use common::{data, invariants, json, not_judged, real};

/// How many observations of each kind the run's trace holds.
fn kinds(trace: &Path) -> std::collections::BTreeMap<String, usize> {
    let text = std::fs::read_to_string(trace).expect("the trace was written");
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        let obs: Value = serde_json::from_str(line).expect("a JSON line");
        *counts.entry(obs["event"]["kind"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    counts
}

/// Plays the short watch and txn file on `target`; its verdict line and
/// the kinds of what it observed.
fn played(target: &str) -> (Output, Value, std::collections::BTreeMap<String, usize>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let trace = dir.path().join("trace.jsonl");
    let (file, trace_path) = (data("watch-txn-short.toml"), trace.to_string_lossy().into_owned());
    let out = real(&["run", &file, "--target", target, "--json", "--trace", &trace_path]);
    let v = json(&out);
    let counts = kinds(&trace);
    (out, v, counts)
}

fn assert_both_workloads_played_and_judged(target: &str) {
    let (out, v, counts) = played(target);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!((v["verdict"].as_str(), v["target"].as_str()), (Some("ok"), Some(target)), "{v}");
    let count = |kind: &str| counts.get(kind).copied().unwrap_or(0);
    assert_eq!(count("watch-opened"), 2, "each watch client opened its watch once: {counts:?}");
    assert!(count("watch-event") > 100, "the watches saw the txns' writes: {counts:?}");
    assert!(count("watch-resumed") >= 1, "the leader crash moved a watch: {counts:?}");
    assert!(count("kv-call") > 50 && count("kv-return") > 50, "the txn clients ran: {counts:?}");
    let unjudged = not_judged(&v);
    assert!(!unjudged.contains(&"watch-delivery") && !unjudged.contains(&"linearizable"), "{v}");
}

#[test]
fn watch_and_txn_workloads_are_played_and_judged_on_leasesim_node() {
    assert_both_workloads_played_and_judged("node");
}

#[test]
fn watch_and_txn_workloads_are_played_and_judged_on_etcd() {
    assert_both_workloads_played_and_judged("etcd");
}

/// The bundled files written for the watch and txn planted bugs play
/// unchanged on leasesim-node and find what they expect: a watch that
/// misses an event across leader changes (three leader crashes, 25 s), a
/// txn read half-applied (13 s).
#[test]
fn bundled_watch_and_txn_bug_scenarios_find_their_violations_for_real() {
    // A real run finds watch-skip-leader-change's violation in about 19 of
    // 20 runs (reports/sim-vs-real.md): a leader crash may land where no
    // event is skipped. Up to four seeds (all four miss about once in
    // 160 000 at that rate; three would miss once in 8 000), so that a miss
    // of one real run does not fail CI, while a bug the runner stopped
    // finding still does.
    for (file, invariant) in [("watch-skip-leader-change.toml", "watch-delivery"), ("txn-split-entries.toml", "linearizable")] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(file);
        let mut seen = Vec::new();
        for seed in ["0", "1", "2", "3"] {
            let out = real(&["run", &path.to_string_lossy(), "--json", "--seed", seed]);
            let v = json(&out);
            assert_eq!(out.status.code(), Some(0), "{file} seed {seed}: the violation it expects: {v}");
            if v["verdict"].as_str() == Some("violation") && invariants(&v).contains(&invariant) {
                seen.clear();
                break;
            }
            seen.push(v);
        }
        assert!(seen.is_empty(), "{file}: {invariant} not found in four real runs: {seen:?}");
    }
}
