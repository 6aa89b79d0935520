//! The frozen forecast stays frozen: reports/studies/calibration-forecast.csv
//! was committed before the seeds that test it ran, and must equal what the
//! model in sim/src/study/forecast.rs computes. Changing the model without
//! regenerating (and so visibly re-committing) the forecast fails here.

use std::path::Path;

use leasesim::study::{calibration, spec, stale_write_forecast};

#[test]
fn the_committed_forecast_is_what_the_model_computes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/calibration.toml")).expect("calibration spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let committed = std::fs::read_to_string(root.join("reports/studies/calibration-forecast.csv")).expect("forecast file");
    assert_eq!(calibration::forecast_csv(&spec, &base), committed);
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = spec::load(&root.join("reports/studies/real-paused-holder.toml")).expect("paused-holder spec");
    let base = leasesim_scenario::load(&spec.base).expect("base scenario");
    let committed = std::fs::read_to_string(root.join("reports/studies/real-paused-holder-forecast.csv")).expect("forecast file");
    assert_eq!(stale_write_forecast::forecast_csv(&spec, &base), committed);
}
