//! The judgements that read the members' final logs and the lock table's
//! client ids, made for real against leasesim-node and shown to bite:
//! `durability` (every member's log read by `GET /log` when the run ends)
//! passes a cluster SIGKILLed whole and restarted, and fails the same run
//! under the node's planted `ack-before-fsync`; `release-by-owner` (the
//! runner's lock clients name their ids under `--unsafe-test-client-ids`)
//! fails an unfenced holder pause under `release-without-owner-check`,
//! where the paused holder's stale unlock releases the next holder (the
//! same file without the bug passes it: `real_runs.rs`); log-matching's
//! end-of-run half fails leaders cut off while their clients write, under
//! `no-truncate-conflict`, where a deposed leader keeps its stale suffix
//! below the entries it later shares with the others.
//!
//! Each run is a few seconds of real time and waits on nothing but its
//! own end. A planted bug is caught by chance (the run's real timing), so
//! each planted test plays up to a number of runs (seeds 0, 1, …) worked
//! out from its measured catch rate for a miss rate below 1e-4, and stops
//! at the first catch: CI almost always plays one run.

use crate::common;
use common::{data, invariants, json, not_judged, real};
use serde_json::Value;

/// Plays `file` with `--bug bug` on seeds 0, 1, … until `caught` says the
/// judge caught it, at most `attempts` runs; the catching run's exit code
/// and `--json` line, or a panic listing every missed run.
fn first_catch(file: &str, bug: &str, attempts: u64, caught: impl Fn(&Value) -> bool) -> (Option<i32>, Value) {
    let mut missed = Vec::new();
    for seed in 0..attempts {
        let seed = seed.to_string();
        let out = real(&["run", &data(file), "--json", "--bug", bug, "--seed", &seed]);
        let v = json(&out);
        assert!(not_judged(&v).is_empty(), "every invariant is judged against leasesim-node: {v}");
        if caught(&v) {
            assert_eq!(v["bugs"], serde_json::json!([bug]));
            return (out.status.code(), v);
        }
        missed.push(format!("seed {seed}: {v}"));
    }
    panic!("{bug} in {file} missed in all {attempts} runs:\n{}", missed.join("\n"));
}

#[test]
fn a_cluster_killed_whole_keeps_every_entry_and_durability_is_judged() {
    let out = real(&["run", &data("power-loss-short.toml"), "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(not_judged(&v).is_empty(), "every invariant is judged against leasesim-node: {v}");
    let faults = v["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 4, "the leader and then all three members were crashed: {v}");
}

/// Runs for the durability and release-by-owner catches. Measured
/// (2026-11-27, load average 8–12, binaries of 22d3ab5): each caught its
/// bug in 20 of 20 runs (seeds 0..20), so one run misses with probability
/// at most 0.161 (Wilson 95 % upper bound) and six all miss with at most
/// 0.161^6 ≈ 1.7e-5 < 1e-4 (five would be 1.1e-4).
const TWENTY_OF_TWENTY_ATTEMPTS: u64 = 6;

#[test]
fn acknowledging_before_fsync_loses_committed_entries_to_a_power_loss() {
    let durability = |v: &Value| invariants(v).contains(&"durability");
    let (code, v) = first_catch("power-loss-short.toml", "ack-before-fsync", TWENTY_OF_TWENTY_ATTEMPTS, durability);
    assert_eq!(code, Some(1), "the planted bug fails a safe scenario: {v}");
}

#[test]
fn a_release_by_a_client_that_does_not_hold_the_lock_is_caught() {
    // The woken holder's unlock released the next holder.
    let released = |v: &Value| invariants(v).contains(&"release-by-owner");
    let (code, v) = first_catch("holder-pause-unfenced-short.toml", "release-without-owner-check", TWENTY_OF_TWENTY_ATTEMPTS, released);
    assert_eq!(code, Some(1), "an invariant the file does not expect fired: {v}");
    let detail =
        v["violations"].as_array().unwrap().iter().find(|x| x["invariant"] == "release-by-owner").unwrap()["detail"].as_str().unwrap();
    // The lock table names the runner's own clients (c1…c3), not pooled ids.
    let named = |word: &str| word.strip_prefix('c').and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| (1..=3).contains(&n));
    assert_eq!(detail.split_whitespace().filter(|w| named(w.trim_end_matches(','))).count(), 2, "{detail}");
}

/// Runs for the log-matching catch. Measured (2026-11-27, load average
/// 6–12, binaries of 22d3ab5): caught by the final logs in 30 of 30 runs
/// (seeds 0..30), so one run misses with probability at most 0.114
/// (Wilson 95 % upper bound) and five all miss with at most 0.114^5 ≈
/// 1.9e-5 < 1e-4. (Each run cuts three leaders off and one divergence is
/// enough; a cut leaves none only if each of the three clients on that
/// leader sends a read first, about (2/5)^3.)
const DIVERGENCE_ATTEMPTS: u64 = 5;

#[test]
fn a_deposed_leader_that_keeps_its_conflicting_suffix_breaks_log_matching_in_the_final_logs() {
    // The end-of-run half names the index both logs share above the one
    // where they differ; the half judged during the run compares entries
    // of one index and term, which never differ here.
    let from_final_logs = |v: &Value| {
        let violations = v["violations"].as_array().unwrap();
        violations.iter().any(|x| x["invariant"] == "log-matching" && x["detail"].as_str().unwrap().contains(" but differ at index "))
    };
    let (code, v) = first_catch("divergent-suffix.toml", "no-truncate-conflict", DIVERGENCE_ATTEMPTS, from_final_logs);
    assert_eq!(code, Some(1), "the planted bug fails a safe scenario: {v}");
}
