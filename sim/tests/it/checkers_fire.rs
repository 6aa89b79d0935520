//! Every checker must be seen firing in a real simulated run — on a scenario
//! or a planted bug built to break it — and staying silent on healthy runs.
//! (Each checker's unit tests also plant violations in synthetic histories;
//! this proves the whole pipeline carries them.)

use std::path::Path;

use leasesim::run::{run_seed, RunOptions};
use leasesim_core::bugs::Bugs;
use leasesim_scenario::{self as scenario, Scenario};

fn load(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn with_bug(bug: &str) -> RunOptions {
    let mut bugs = Bugs::default();
    bugs.enable(bug).expect("a known bug");
    RunOptions { extra_bugs: bugs, ..RunOptions::default() }
}

/// Invariants fired over `seeds` (deduplicated).
fn fired(scenario: &Scenario, seeds: std::ops::Range<u64>, options: &RunOptions) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for seed in seeds {
        for v in run_seed(scenario, seed, options).violations {
            if !ids.contains(&v.invariant) {
                ids.push(v.invariant);
            }
        }
    }
    ids
}

fn assert_fires(ids: &[String], expected: &[&str]) {
    for id in expected {
        assert!(ids.iter().any(|i| i == id), "{id} did not fire; fired: {ids:?}");
    }
}

#[test]
fn healthy_chaos_runs_are_silent() {
    let ids = fired(&load("chaos-swarm.toml"), 0..6, &RunOptions::default());
    assert!(ids.is_empty(), "a healthy engine fired {ids:?}");
}

#[test]
fn raft_safety_checkers_fire_on_a_kept_conflicting_suffix() {
    let ids = fired(&load("chaos-swarm.toml"), 0..8, &with_bug("no-truncate-conflict"));
    assert_fires(&ids, &["state-machine-safety", "log-matching", "durability"]);
}

#[test]
fn lease_checkers_fire_when_followers_expire_leases_themselves() {
    let ids = fired(&load("chaos-swarm.toml"), 0..4, &with_bug("follower-expires-leases"));
    assert_fires(&ids, &["lease-early-expiry", "keepalive-after-revoke"]);
}

#[test]
fn lock_and_replica_checkers_fire_when_logs_diverge() {
    let ids = fired(&load("chaos-swarm.toml"), 0..6, &with_bug("no-truncate-conflict"));
    assert_fires(&ids, &["fifo-order", "replica-divergence"]);
}

#[test]
fn release_by_owner_fires_when_anyone_may_release() {
    let ids = fired(&load("chaos-swarm.toml"), 0..8, &with_bug("release-without-owner-check"));
    assert_fires(&ids, &["release-by-owner"]);
}

#[test]
fn replica_divergence_fires_when_followers_expire_leases_themselves() {
    // A change made outside the log: only the state digest can see it.
    let ids = fired(&load("chaos-swarm.toml"), 0..4, &with_bug("follower-expires-leases"));
    assert_fires(&ids, &["replica-divergence"]);
}

#[test]
fn fencing_order_fires_without_fencing() {
    let ids = fired(&load("holder-pause-unfenced.toml"), 0..4, &RunOptions::default());
    assert_eq!(ids, vec!["fencing-order".to_string()]);
    let safe = fired(&load("holder-pause-fenced.toml"), 0..4, &RunOptions::default());
    assert!(safe.is_empty(), "{safe:?}");
}

#[test]
fn clock_checkers_fire_when_the_leader_clock_runs_too_fast() {
    let scenario = load("leader-clock-too-fast.toml");
    let outcomes: Vec<_> = (0..6).map(|seed| run_seed(&scenario, seed, &RunOptions::default())).collect();
    let fired = |id: &str| outcomes.iter().filter(|o| o.violations.iter().any(|v| v.invariant == id)).count();
    assert!(fired("lease-early-expiry") >= 3, "lease-early-expiry in {} of 6 seeds", fired("lease-early-expiry"));
    assert!(fired("lock-belief-overlap") >= 1, "lock-belief-overlap in none of 6 seeds");
    for o in &outcomes {
        assert!(o.violations.iter().all(|v| !v.assumptions_held), "40% drift breaks the stated assumption (seed {})", o.seed);
    }
}

#[test]
fn linearizable_fires_on_stale_follower_reads() {
    let ids = fired(&load("membership-change.toml"), 0..10, &with_bug("stale-follower-reads"));
    assert_fires(&ids, &["linearizable"]);
}

#[test]
fn liveness_fires_when_the_settle_phase_is_too_short_to_recover() {
    let text = r#"
name = "no-time-to-recover"
duration = "5s"
settle = "20ms"
[cluster]
servers = 3
[[fault]]
at = "5s"
crash = "leader"
"#;
    let scenario = scenario::parse(text, "no-time-to-recover.toml").unwrap();
    let ids = fired(&scenario, 0..2, &RunOptions::default());
    assert_eq!(ids, vec!["liveness".to_string()]);
}
