//! The frozen model against the runs: the forecast file written before a
//! study runs (`leasesim study SPEC --forecast`), and after it the
//! calibration table and plot (forecast probability against the observed
//! frequency with its Wilson interval, per cell) and the strategy
//! comparisons (Fisher's exact test on each pair of cells that differ only
//! in the expiry strategy). Kept apart from output.rs, which writes what
//! every study writes.

use std::fmt::Write as _;

use leasesim_reports::study_plots::{line_chart_svg, Series};
use leasesim_scenario::Scenario;

use super::forecast::{forecast, MODEL};
use super::grid::CellParams;
use super::metrics::Rate;
use super::significance::fisher_exact_two_sided;
use super::spec::StudySpec;
use super::{CellResult, StudyResults};

const OVERLAP: &str = "lock-belief-overlap";

/// The cell's parameters that the calibration files name.
fn params_fields(p: &CellParams) -> String {
    let f = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    format!(
        "{},{},{},{},{}",
        p.lease_expiry.unwrap_or(""),
        f(p.leader_drift),
        f(p.client_drift),
        f(p.margin),
        p.pause_ns.map_or(String::new(), |v| format!("{}", v as f64 / 1e6))
    )
}

const PARAMS_HEADER: &str = "lease_expiry,leader_drift,client_drift,margin,pause_ms";

/// The forecast of every cell of `spec`, as CSV, computed before any run.
pub fn forecast_csv(spec: &StudySpec, base: &Scenario) -> String {
    let header = format!(
        "# frozen forecast of study {} (model {MODEL}); from the cells' inputs only\n\
         cell,{PARAMS_HEADER},p_overlap_run,window_ms,p_delay_short,p_lag,p_hit,p_pause,expected_pauses,scope\n",
        spec.name
    );
    super::model_runner::cells_csv(spec, base, header, |cell, s| {
        let p = params_fields(cell);
        match forecast(spec, cell, s) {
            Ok(f) => format!(
                "{p},{:.6},{:.3},{:.6},{:.6},{:.6},{:.6},{:.4},",
                f.p_overlap_run,
                f.window_ns / 1e6,
                f.p_delay_short,
                f.p_lag,
                f.p_hit,
                f.p_pause,
                f.expected_pauses
            ),
            Err(why) => format!("{p},,,,,,,,{why}"),
        }
    })
}

/// A forecast cell's observation: runs with lock-belief-overlap.
fn observed(c: &CellResult) -> Rate {
    Rate::of(c.metrics.invariant_runs.get(OVERLAP).copied().unwrap_or(0), c.metrics.runs)
}

/// One row per forecast cell: forecast, observed frequency, its interval,
/// and whether the forecast lies inside it. `None` when no cell has one.
pub fn calibration_csv(results: &StudyResults) -> Option<String> {
    let mut out = format!("cell,{PARAMS_HEADER},p_forecast,runs,overlap_runs,observed,wilson_lo,wilson_hi,inside,unsafe_runs\n");
    let mut any = false;
    for c in &results.cells {
        let Some(f) = &c.forecast else { continue };
        any = true;
        let o = observed(c);
        let inside = o.lo <= f.p_overlap_run && f.p_overlap_run <= o.hi;
        let _ = writeln!(
            out,
            "{},{},{:.6},{},{},{:.4},{:.4},{:.4},{},{}",
            c.index,
            params_fields(&c.params),
            f.p_overlap_run,
            o.n,
            o.k,
            o.p,
            o.lo,
            o.hi,
            if inside { "yes" } else { "no" },
            c.metrics.runs_unsafe
        );
    }
    any.then_some(out)
}

/// Calibration summary: cells, cells whose forecast lies inside the
/// observed 95 % interval, the Brier score over runs, and forecast against
/// observed overlapping runs in total.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub cells: usize,
    pub inside: usize,
    pub brier: f64,
    pub expected_runs: f64,
    pub observed_runs: u64,
}

pub fn summary(results: &StudyResults) -> Option<Summary> {
    let cells: Vec<(&CellResult, f64)> = results.cells.iter().filter_map(|c| c.forecast.as_ref().map(|f| (c, f.p_overlap_run))).collect();
    if cells.is_empty() {
        return None;
    }
    let mut s = Summary { cells: cells.len(), inside: 0, brier: 0.0, expected_runs: 0.0, observed_runs: 0 };
    let mut runs = 0;
    for (c, p) in cells {
        let o = observed(c);
        s.inside += usize::from(o.lo <= p && p <= o.hi);
        // Each run is a 0/1 outcome: k runs at (1 − p)², n − k at p².
        s.brier += o.k as f64 * (1.0 - p).powi(2) + (o.n - o.k) as f64 * p * p;
        s.expected_runs += p * o.n as f64;
        s.observed_runs += o.k;
        runs += o.n;
    }
    s.brier /= runs.max(1) as f64;
    Some(s)
}

/// Forecast (x) against observed frequency (y) per cell, one series per
/// strategy, whiskers the Wilson 95 % intervals, y = x dashed.
pub fn calibration_svg(results: &StudyResults) -> Option<String> {
    let mut strategies: Vec<&str> = results.cells.iter().filter(|c| c.forecast.is_some()).filter_map(|c| c.params.lease_expiry).collect();
    strategies.sort_unstable();
    strategies.dedup();
    if strategies.is_empty() {
        return None;
    }
    let series: Vec<Series> = strategies
        .iter()
        .map(|name| {
            let mut cells: Vec<(f64, Rate)> = results
                .cells
                .iter()
                .filter(|c| c.params.lease_expiry == Some(*name))
                .filter_map(|c| c.forecast.as_ref().map(|f| (f.p_overlap_run, observed(c))))
                .collect();
            cells.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name: name.to_string(),
                points: cells.iter().map(|(p, o)| (*p, o.p)).collect(),
                spread: cells.iter().map(|(_, o)| (o.lo, o.hi)).collect(),
                joined: false,
            }
        })
        .collect();
    let note = summary(results).map_or(String::new(), |s| {
        format!(
            "{} cells; forecast inside the\n95 % interval in {}\nBrier score {:.4}\noverlapping runs: {:.1} forecast,\n{} observed",
            s.cells, s.inside, s.brier, s.expected_runs, s.observed_runs
        )
    });
    Some(line_chart_svg(
        &format!("{}: frozen forecast ({MODEL}) against observed runs", results.name),
        "forecast P(run shows lock-belief-overlap)",
        "observed fraction of runs",
        &series,
        Some("y = x (perfect calibration)"),
        &note,
    ))
}

/// Every pair of cells equal but for the expiry strategy: each one's
/// overlap runs and Fisher's exact two-sided p-value. `None` without pairs.
pub fn comparisons_csv(results: &StudyResults) -> Option<String> {
    let mut out = String::from("cell_a,cell_b,lease_expiry_a,lease_expiry_b,leader_drift,client_drift,margin,k_a,n_a,k_b,n_b,fisher_p\n");
    let mut any = false;
    for (i, a) in results.cells.iter().enumerate() {
        for b in &results.cells[i + 1..] {
            let same_but_strategy =
                CellParams { lease_expiry: None, ..a.params.clone() } == CellParams { lease_expiry: None, ..b.params.clone() };
            if !same_but_strategy || a.params.lease_expiry == b.params.lease_expiry {
                continue;
            }
            any = true;
            let (x, y) = (observed(a), observed(b));
            let f = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{:.6}",
                a.index,
                b.index,
                a.params.lease_expiry.unwrap_or(""),
                b.params.lease_expiry.unwrap_or(""),
                f(a.params.leader_drift),
                f(a.params.client_drift),
                f(a.params.margin),
                x.k,
                x.n,
                y.k,
                y.n,
                fisher_exact_two_sided(x.k, x.n, y.k, y.n)
            );
        }
    }
    any.then_some(out)
}
