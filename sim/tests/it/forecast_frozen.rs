//! The frozen forecasts stay frozen: each reports/studies/*-forecast.csv
//! was committed before the seeds that test it ran, and must equal what its
//! model in sim/src/study/ computes. Changing the model without
//! regenerating (and so visibly re-committing) the forecast fails here.

use std::path::Path;

use leasesim::study::{calibration, spec, stale_write_forecast, wall_step_forecast, wall_step_forecast_v2};
use leasesim_scenario::Scenario;

/// reports/studies/STUDY-forecast.csv equals what `model` computes from
/// reports/studies/STUDY.toml and its base scenario.
fn assert_frozen(study: &str, model: fn(&spec::StudySpec, &Scenario) -> String) {
    let studies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/studies");
    let spec = spec::load(&studies.join(format!("{study}.toml"))).unwrap_or_else(|e| panic!("{study} spec: {e}"));
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let committed = std::fs::read_to_string(studies.join(format!("{study}-forecast.csv"))).expect("forecast file");
    assert_eq!(model(&spec, &base), committed, "{study}: the model no longer computes the committed forecast");
}

#[test]
fn the_committed_forecast_is_what_the_model_computes() {
    assert_frozen("calibration", calibration::forecast_csv);
}

#[test]
fn the_forecast_rises_as_the_margin_falls_and_covers_the_edge() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/calibration.toml")).expect("calibration spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let cells = leasesim::study::grid::cells(&spec);
    let p: Vec<f64> = cells
        .iter()
        .map(|c| {
            let s = leasesim::study::grid::apply(&base, &spec, c);
            leasesim::study::forecast::forecast(&spec, c, &s).expect("in scope").p_overlap_run
        })
        .collect();
    // Within one strategy and drift (20 margins, rising), the forecast
    // never rises with the margin.
    for row in p.chunks(20) {
        assert!(row.windows(2).all(|w| w[1] <= w[0] + 1e-12), "{row:?}");
    }
    let near_edge = p.iter().filter(|x| **x > 0.02 && **x < 0.98).count();
    assert!(near_edge >= 24, "only {near_edge} cells near an edge");
}

#[test]
fn the_committed_stale_write_forecast_is_what_its_model_computes() {
    assert_frozen("real-paused-holder", stale_write_forecast::forecast_csv);
}

#[test]
fn the_committed_wall_step_forecast_is_what_its_model_computes() {
    assert_frozen("real-wall-step", wall_step_forecast::forecast_csv);
}

#[test]
fn the_wall_step_forecast_turns_just_below_t_minus_k_and_overlaps_only_forward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/real-wall-step.toml")).expect("wall-step spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let by_jump_ms: Vec<(i64, wall_step_forecast::WallStepForecast)> = leasesim::study::grid::cells(&spec)
        .iter()
        .map(|c| {
            let s = leasesim::study::grid::apply(&base, &spec, c);
            (c.leader_jump_ns.expect("a jump axis") / 1_000_000, wall_step_forecast::forecast(c, &s).expect("in scope"))
        })
        .collect();
    let at = |j: i64| by_jump_ms.iter().find(|(k, _)| *k == j).map(|(_, f)| f.clone()).expect("cell");
    // TTL 2 s, keep-alive 500 ms: 1.5 s between a passed stamp and the
    // next keep-alive; 1 s leaves 500 ms, far more than any commit.
    assert_eq!(at(1000).p_lease, 0.0);
    for j in [2000, -2000] {
        assert!(at(j).p_early_expiry_run > 1.0 - 1e-9, "{j}");
    }
    for j in [1490, -1460] {
        let p = at(j).p_early_expiry_run;
        assert!(p > 0.2 && p < 0.8, "{j}: {p}");
        // Two clients, independent hops.
        assert!((p - (1.0 - (1.0 - at(j).p_lease).powi(2))).abs() < 1e-12);
    }
    for (j, f) in &by_jump_ms {
        assert!(f.edge_ns == 1.5e9 && f.p_overlap_run <= f.p_lease * f.p_hit, "{j}: {f:?}");
        if *j < 0 {
            assert_eq!(f.p_overlap_run, 0.0, "a backward step hands no lock on");
        }
    }
    // A step past the stamp at once ends both leases in one apply.
    assert_eq!(at(2000).p_overlap_run, 0.0);
    assert!(at(1490).p_overlap_run > 0.0);
}

#[test]
fn the_committed_wall_step_v2_forecast_is_what_its_model_computes() {
    assert_frozen("real-wall-step-v2", wall_step_forecast_v2::forecast_csv);
}

#[test]
fn the_v2_wall_step_forecast_rises_towards_both_edges_and_overlaps_only_forward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/real-wall-step-v2.toml")).expect("wall-step v2 spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let mut by_jump_ms: Vec<(i64, wall_step_forecast_v2::WallStepForecastV2)> = leasesim::study::grid::cells(&spec)
        .iter()
        .map(|c| {
            let s = leasesim::study::grid::apply(&base, &spec, c);
            (c.leader_jump_ns.expect("a jump axis") / 1_000_000, wall_step_forecast_v2::forecast(&spec, c, &s).expect("in scope"))
        })
        .collect();
    by_jump_ms.sort_by_key(|(j, _)| *j);
    let (backward, forward): (Vec<_>, Vec<_>) = by_jump_ms.iter().partition(|(j, _)| *j < 0);
    // The larger the step, the likelier an early expiry, on both sides.
    assert!(forward.windows(2).all(|w| w[0].1.p_early_expiry_run <= w[1].1.p_early_expiry_run), "{forward:?}");
    assert!(backward.windows(2).all(|w| w[0].1.p_early_expiry_run >= w[1].1.p_early_expiry_run), "{backward:?}");
    let at = |j: i64| by_jump_ms.iter().find(|(k, _)| *k == j).map(|(_, f)| f.clone()).expect("cell");
    // A stamp 500 ms ahead of the next keep-alive never passes; steps
    // past T − K end every lease; the edges lie a commit below T − K.
    assert_eq!(at(1000).p_early_expiry_run, 0.0);
    for j in [2000, -2000] {
        assert_eq!(at(j).p_early_expiry_run, 1.0, "{j}");
    }
    for j in [1482, 1486, -1435, -1450] {
        let p = at(j).p_early_expiry_run;
        assert!(p > 0.2 && p < 0.8, "{j}: {p}");
    }
    // Overlaps only forward, never when the step passes both stamps at
    // once (+2 s: both leases end in one apply), and only when a lease
    // ends early.
    for (j, f) in &by_jump_ms {
        assert!(f.p_overlap_run <= f.p_early_expiry_run, "{j}: {f:?}");
        if *j < 0 || *j == 2000 {
            assert_eq!(f.p_overlap_run, 0.0, "{j}");
        }
    }
    assert!(at(1490).p_overlap_run > 0.05);
}

#[test]
fn the_committed_leader_pause_forecast_is_what_its_model_computes() {
    assert_frozen("leader-pause-checkpoint", leasesim::study::leader_pause_forecast::forecast_csv);
}

#[test]
fn the_committed_lease_read_forecast_is_what_its_model_computes() {
    assert_frozen("leader-lease-reads", leasesim::study::lease_read_forecast::forecast_csv);
}

#[test]
fn the_leader_pause_forecast_elects_past_the_election_range_and_checkpoints_shorten_the_gap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/leader-pause-checkpoint.toml")).expect("leader-pause spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let at = |pause_ms: u64, checkpoint_ms: u64| {
        let cell = leasesim::study::grid::cells(&spec)
            .into_iter()
            .find(|c| c.leader_pause_ns == Some(pause_ms * 1_000_000) && c.checkpoint_ns == Some(checkpoint_ms * 1_000_000))
            .expect("cell");
        let s = leasesim::study::grid::apply(&base, &spec, &cell);
        leasesim::study::leader_pause_forecast::forecast(&cell, &s).expect("in scope")
    };
    // No pause: no election, and the lease ends on time (the gap is the
    // margin's 200 ms plus a few hops) whatever the checkpoints.
    assert_eq!((at(0, 0).p_election, at(0, 250).p_election), (0.0, 0.0));
    assert_eq!(at(0, 0).gap_ms, at(0, 250).gap_ms);
    assert!(at(0, 0).gap_ms[1] > 200.0 && at(0, 0).gap_ms[1] < 300.0);
    // Past the election range a new leader always takes office, and how
    // long the old one stays paused no longer matters.
    assert_eq!(at(1000, 0), at(3000, 0));
    assert_eq!(at(1000, 0).p_election, 1.0);
    let edge = at(200, 0).p_election;
    assert!(edge > 0.2 && edge < 0.95, "{edge}");
    // Promote's full TTL: the lease outlives its holder by the extension
    // and the election on top of the margin; checkpoints carry the
    // remaining TTL over and shorten that.
    assert!(at(1000, 0).gap_ms[1] > at(0, 0).gap_ms[1] + 500.0);
    assert!(at(1000, 250).gap_ms[1] < at(1000, 0).gap_ms[1] - 100.0);
    // Only leader-monotonic is modelled.
    let cell = leasesim::study::grid::cells(&spec)[2].clone();
    let mut s = leasesim::study::grid::apply(&base, &spec, &cell);
    s.cluster.lease_expiry = leasesim_core::ExpiryStrategy::WriterClock;
    assert!(leasesim::study::leader_pause_forecast::forecast(&cell, &s).is_err());
}
