//! NTP slew (`server_slew`, `slew_at`, `slew_for`): every server's clock
//! runs faster for a while and then at its own rate again, two clock
//! faults per server; the cell's drift bound counts the slewed rate; the
//! per-run model integrates a lease's span over the rate changes.

#![cfg(madsim)]

use std::path::Path;

use leasesim::study::{grid, spec, theory};
use leasesim_scenario::{FaultAction, Process, Selector};

#[test]
fn a_slew_is_two_clock_faults_per_server_and_the_model_integrates_it() {
    let mut s = spec::parse(
        "name = \"t\"\nbase = \"b.toml\"\nslew_at = \"5s\"\nslew_for = \"5s\"\n[axes]\nleader_drift = [0.01]\nserver_slew = [0.1]\n",
        "t.toml",
    )
    .unwrap();
    s.base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/studies/base-lock.toml");
    let base = leasesim_scenario::load(&s.base).unwrap();
    let sc = grid::apply(&base, &s, &grid::cells(&s)[0]);
    let clock_faults: Vec<_> = sc
        .faults
        .iter()
        .filter_map(|f| match &f.action {
            FaultAction::Clock { target: Selector::Server(n), drift: Some(d), jump_ns: None } => Some((f.at_ns, *n, *d)),
            _ => None,
        })
        .collect();
    assert_eq!(clock_faults.len(), 6, "on and off for each of 3 servers: {clock_faults:?}");
    for n in 1..=3 {
        assert!(clock_faults.contains(&(5_000_000_000, n, 0.01 + 0.1)), "{clock_faults:?}");
        assert!(clock_faults.contains(&(10_000_000_000, n, 0.01)), "{clock_faults:?}");
    }
    assert!((sc.cluster.drift_bound - 0.11).abs() < 1e-12, "the slewed rate raises the drift bound: {}", sc.cluster.drift_bound);
    let p = Process::Server(2);
    assert_eq!(theory::drift_at(&sc, p, 4_999_999_999), 0.01);
    assert!((theory::drift_at(&sc, p, 5_000_000_000) - 0.11).abs() < 1e-12);
    assert_eq!(theory::drift_at(&sc, p, 10_000_000_000), 0.01);
    // 2 s of the clock from 4 s: 1.01 s of clock by 5 s (true 1 s), the
    // remaining 0.99 s at 1.11: 0.8919 s. Total 1.8919 s of true time.
    let span = theory::true_span(&sc, p, 4e9, 2e9);
    assert!((span - (1e9 + 0.99e9 / 1.11)).abs() < 1.0, "{span}");
    // Entirely inside the slew, and entirely after it.
    assert!((theory::true_span(&sc, p, 6e9, 2e9) - 2e9 / 1.11).abs() < 1.0);
    assert!((theory::true_span(&sc, p, 11e9, 2e9) - 2e9 / 1.01).abs() < 1.0);
}
