//! Scenarios aimed at the windows two hand-written mutations of the engine
//! escaped the bundled and chaos sweeps through (reports/hand-mutants.md).
//! The healthy engine must stay silent on them. With a mutation applied
//! (`reports/mutants/hand/*.patch`, a source patch, so measured by
//! `reports/mutants/hand.sh`, not here):
//! - `vote-crash-window.toml` (a server crashed for 2–4 ms right after a
//!   vote reply; narrow election timeouts and wide latency, so two
//!   candidates share a term and their requests arrive far apart) catches
//!   mutation 03, a vote not written before its reply, with
//!   `vote-durability` and `election-safety` (reports/mutants/hand/
//!   results-targeted.md);
//! - `deposed-leader-reads.toml` (the leader cut off from the servers while
//!   clients still reach it, election timeouts spread over 100–400 ms,
//!   50 ms client timeouts) does **not** catch mutation 10, reads served
//!   without a read-index round: every client leaves the deposed leader at
//!   its first write, long before a new leader has written anything (one
//!   request in flight per client). It stays as the healthy-engine check of
//!   that window; the report says what would catch it.

use std::path::Path;

use leasesim::run::{run_seed, RunOptions};
use leasesim_scenario::{self as scenario, Scenario};

fn load(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hand-mutants").join(name);
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Invariants fired over `seeds` (deduplicated).
fn fired(scenario: &Scenario, seeds: std::ops::Range<u64>) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for seed in seeds {
        for v in run_seed(scenario, seed, &RunOptions::default()).violations {
            if !ids.contains(&v.invariant) {
                ids.push(v.invariant);
            }
        }
    }
    ids
}

#[test]
fn a_crash_right_after_a_vote_reply_is_survived_by_a_healthy_engine() {
    let ids = fired(&load("vote-crash-window.toml"), 0..4);
    assert!(ids.is_empty(), "a healthy engine fired {ids:?}");
}

#[test]
fn a_deposed_leader_with_clients_still_attached_serves_no_stale_read() {
    let ids = fired(&load("deposed-leader-reads.toml"), 0..4);
    assert!(ids.is_empty(), "a healthy engine fired {ids:?}");
}
