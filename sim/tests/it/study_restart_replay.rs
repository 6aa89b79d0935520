//! Why leader-stamped-wall reports `keepalive-after-revoke` in the
//! leader-change study: not the leader change but the crashed server's
//! restart. It replays its log and judges every old wall-clock stamp by its
//! clock of now, so it revokes each lease right after the lease's grant (in
//! log order), and every renewal the log holds after that index counts as
//! answered after a revoke. Crashing a follower instead gives the same
//! reports; the same run under leader-monotonic is clean. The run is
//! leader-change's cell 10 with seed 0, as
//! `leasesim study reports/studies/leader-change.toml --scenario-of 10:0`
//! prints it.

#![cfg(madsim)]

use std::path::Path;

use leasesim::run::{run_seed, RunOptions};
use leasesim::study::{grid, spec};
use leasesim_scenario::{FaultAction, Selector};

fn kar(outcome: &leasesim::run::RunOutcome) -> Vec<&leasesim::run::outcome::ViolationJson> {
    outcome.violations.iter().filter(|v| v.invariant == "keepalive-after-revoke").collect()
}

#[test]
fn a_restarted_servers_log_replay_revokes_every_stamped_lease_at_once() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/studies/leader-change.toml");
    let s = spec::load(&path).unwrap();
    let base = leasesim_scenario::load(&s.base).unwrap();
    let cells = grid::cells(&s);
    assert_eq!(grid::label(&cells[10]), "leader-stamped-wall pause=2500ms leader_drift=0 margin=0.1");
    let scenario = grid::apply_run(&base, &s, &cells[10], 0);
    let crash = scenario.faults.iter().find(|f| matches!(f.action, FaultAction::Crash(Selector::Leader))).expect("a leader crash");
    let restart_ns = crash.at_ns + crash.for_ns.unwrap();
    let options = RunOptions { trace: false, ..RunOptions::default() };

    let leader_crash = run_seed(&scenario, 0, &options);
    let reports = kar(&leader_crash);
    assert!(reports.len() >= 10, "{:?}", leader_crash.violations);
    // Every report judges an answer against a revoke made by the restarted
    // server at its restart (the detail names when the revoke happened),
    // and most answers it flags came long before the crash.
    let ended_at = |d: &str| -> f64 { d.rsplit("at ").next().unwrap().trim_end_matches('s').parse().unwrap() };
    for v in &reports {
        let at = ended_at(&v.detail);
        assert!((restart_ns as f64 / 1e9..restart_ns as f64 / 1e9 + 0.1).contains(&at), "{}", v.detail);
    }
    assert!(reports.iter().any(|v| v.at_ns < crash.at_ns));

    // Control 1: crash a follower instead: the same kind of reports.
    let mut follower = scenario.clone();
    for f in &mut follower.faults {
        if matches!(f.action, FaultAction::Crash(Selector::Leader)) {
            f.action = FaultAction::Crash(Selector::Follower);
        }
    }
    let follower_crash = run_seed(&follower, 0, &options);
    assert!(kar(&follower_crash).len() >= 10, "{:?}", follower_crash.violations);

    // Control 2: the same run under leader-monotonic: nothing fires.
    let mut monotonic = scenario.clone();
    monotonic.cluster.lease_expiry = leasesim_core::ExpiryStrategy::LeaderMonotonic;
    let clean = run_seed(&monotonic, 0, &options);
    assert!(clean.violations.is_empty(), "{:?}", clean.violations);
}
