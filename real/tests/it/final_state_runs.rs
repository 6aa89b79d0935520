//! The judgements that read the members' final logs and the lock table's
//! client ids, made for real against leasesim-node and shown to bite:
//! `durability` (every member's log read by `GET /log` when the run ends)
//! passes a cluster SIGKILLed whole and restarted, and fails the same run
//! under the node's planted `ack-before-fsync`; `release-by-owner` (the
//! runner's lock clients name their ids under `--unsafe-test-client-ids`)
//! fails an unfenced holder pause under `release-without-owner-check`,
//! where the paused holder's stale unlock releases the next holder (the
//! same file without the bug passes it: `real_runs.rs`).
//!
//! Each run is a few seconds of real time and waits on nothing but its
//! own end.

use crate::common;
use common::{data, invariants, json, not_judged, real};

#[test]
fn a_cluster_killed_whole_keeps_every_entry_and_durability_is_judged() {
    let out = real(&["run", &data("power-loss-short.toml"), "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(not_judged(&v).is_empty(), "every invariant is judged against leasesim-node: {v}");
    let faults = v["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 4, "the leader and then all three members were crashed: {v}");
}

#[test]
fn acknowledging_before_fsync_loses_committed_entries_to_a_power_loss() {
    let out = real(&["run", &data("power-loss-short.toml"), "--json", "--bug", "ack-before-fsync"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "the planted bug fails a safe scenario: {v}");
    assert!(invariants(&v).contains(&"durability"), "the logs read at the end lost applied entries: {v}");
    assert_eq!(v["bugs"], serde_json::json!(["ack-before-fsync"]));
}

#[test]
fn a_release_by_a_client_that_does_not_hold_the_lock_is_caught() {
    let out = real(&["run", &data("holder-pause-unfenced-short.toml"), "--json", "--bug", "release-without-owner-check"]);
    let v = json(&out);
    let fired = invariants(&v);
    assert!(fired.contains(&"release-by-owner"), "the woken holder's unlock released the next holder: {v}");
    assert_eq!(out.status.code(), Some(1), "an invariant the file does not expect fired: {v}");
    let detail =
        v["violations"].as_array().unwrap().iter().find(|x| x["invariant"] == "release-by-owner").unwrap()["detail"].as_str().unwrap();
    // The lock table names the runner's own clients (c1…c3), not pooled ids.
    let named = |word: &str| word.strip_prefix('c').and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| (1..=3).contains(&n));
    assert_eq!(detail.split_whitespace().filter(|w| named(w.trim_end_matches(','))).count(), 2, "{detail}");
}
