//! `leasesim study`: measured safe regions next to the theoretical ones.
//! A spec ([`spec`]) names a base scenario and axes; the grid ([`grid`])
//! runs every cell for many seeds on a thread pool (the sweep's pattern);
//! [`metrics`] turns each run's observations into figures, [`theory`] gives
//! each cell the verdict the classic bounds predict, and [`output`] writes
//! JSON, CSV and SVG. Research on clock-skew expiry is one of leasesim's
//! three uses (DESIGN.md); this module is where it is done.

pub mod grid;
pub mod metrics;
pub mod output;
pub mod spec;
pub mod theory;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::run::{run_seed, RunOptions};
use crate::scenario::{Scenario, WorkloadKind};
use grid::CellParams;
use metrics::{measure, CellMetrics};
use spec::StudySpec;
use theory::Prediction;

/// The invariants whose firing makes a cell "unsafe" as measured: what a
/// client sees (two believers, a stale write taken). `lease-early-expiry`
/// is counted too but judges the servers against `drift_bound`, which any
/// drift beyond it breaks whatever the client's margin; it is reported
/// beside the verdict, not in it.
pub const SAFETY_IDS: [&str; 2] = ["lock-belief-overlap", "fencing-order"];

#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub index: usize,
    pub label: String,
    pub params: CellParams,
    pub metrics: CellMetrics,
    pub prediction: Option<Prediction>,
    /// `safe` or `unsafe`: whether any of [`SAFETY_IDS`] fired in any seed.
    pub measured: &'static str,
    /// `agree`, `theory-safe-measured-unsafe` (the bound failed: look here
    /// first) or `theory-unsafe-measured-safe` (the bound is conservative,
    /// or the seeds gave the hazard no opportunity).
    pub agreement: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct StudyResults {
    pub name: String,
    pub description: Option<String>,
    pub base: String,
    pub seeds: [u64; 2],
    pub cells: Vec<CellResult>,
    pub wall_seconds: f64,
}

/// Runs every cell of `spec` over `seeds` with `jobs` threads.
pub fn run_study(spec: &StudySpec, base: &Scenario, seeds: std::ops::Range<u64>, jobs: usize) -> StudyResults {
    let started = std::time::Instant::now();
    let cells = grid::cells(spec);
    let scenarios: Vec<Scenario> = cells.iter().map(|c| grid::apply(base, spec, c)).collect();
    let work: Vec<(usize, u64)> = (0..cells.len()).flat_map(|i| seeds.clone().map(move |s| (i, s))).collect();
    let options = RunOptions { trace: false, extra_bugs: Default::default(), keep_observations: true, ..RunOptions::default() };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(work.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(work.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((i, seed)) = work.get(k).copied() else { break };
                let outcome = run_seed(&scenarios[i], seed, &options);
                let panicked = outcome.violations.iter().any(|v| v.invariant == "engine-panic");
                // Observations are large: keep only the figures.
                let figures = measure(&outcome, lock_ttl_ns(&scenarios[i]));
                results.lock().expect("results lock").push((k, i, figures, panicked));
            });
        }
    });
    let mut results = results.into_inner().expect("results lock");
    results.sort_by_key(|r| r.0);
    let mut metrics = vec![CellMetrics::default(); cells.len()];
    for (_, i, figures, panicked) in &results {
        metrics[*i].add(figures, *panicked);
    }
    let cells = cells
        .into_iter()
        .zip(metrics)
        .enumerate()
        .map(|(index, (params, metrics))| {
            let prediction = theory::predict(&scenarios[index]);
            let unsafe_measured = SAFETY_IDS.iter().any(|id| metrics.invariants.contains_key(*id));
            let measured = if unsafe_measured { "unsafe" } else { "safe" };
            let agreement = match prediction.as_ref().map(|p| p.verdict) {
                Some("safe") if unsafe_measured => "theory-safe-measured-unsafe",
                Some("unsafe") if !unsafe_measured => "theory-unsafe-measured-safe",
                _ => "agree",
            };
            CellResult { index, label: grid::label(&params), params, metrics, prediction, measured, agreement }
        })
        .collect();
    StudyResults {
        name: spec.name.clone(),
        description: spec.description.clone(),
        base: spec.base.display().to_string(),
        seeds: [seeds.start, seeds.end],
        cells,
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

/// The TTL of the first lock workload (what "renewed within its TTL" means
/// for false expiries); 0 if the scenario has none.
fn lock_ttl_ns(s: &Scenario) -> u64 {
    s.workloads
        .iter()
        .find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l.ttl_ns),
            _ => None,
        })
        .unwrap_or(0)
}
