//! `leasesim study`: measured safe regions next to the theoretical ones.
//! A spec ([`spec`]) names a base scenario and axes; the grid ([`grid`])
//! runs every cell for many seeds on a thread pool (the sweep's pattern);
//! [`metrics`] turns each run's observations into figures, [`theory`] gives
//! each cell the verdict the classic bounds predict, and [`output`] writes
//! JSON, CSV and SVG. Research on clock-skew expiry is one of leasesim's
//! three uses (DESIGN.md); this module is where it is done.

pub mod calibration;
pub mod forecast;
pub mod grid;
pub mod leader_pause_forecast;
pub mod lease_read_forecast;
pub mod metrics;
mod model_runner;
pub mod output;
pub mod pauses;
pub mod significance;
pub mod spec;
pub mod stale_write_forecast;
pub mod theory;
pub mod wall_step_forecast;
pub mod wall_step_forecast_v2;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::run::{run_seed, RunOptions};
use grid::CellParams;
use leasesim_scenario::{Scenario, WorkloadKind};
use metrics::{measure, CellMetrics};
use spec::StudySpec;
use theory::Prediction;

/// The commit this binary was built from (`git describe --always --dirty`
/// by sim/build.rs; `LEASESIM_BUILD_COMMIT` in the build's environment
/// overrides it), so a results file names the code that measured it.
pub const BUILD_COMMIT: &str = match option_env!("LEASESIM_GIT_DESCRIBE") {
    Some(v) => v,
    None => "unknown",
};

/// Every parameter a cell ran with that a reader needs to reproduce or
/// judge it, read from the cell's scenario (not only what the grid varied).
#[derive(Clone, Debug, Serialize)]
pub struct CellSetup {
    pub lease_expiry: &'static str,
    pub servers: u64,
    pub clients: u64,
    pub latency_ns: (u64, u64),
    pub election_timeout_ns: (u64, u64),
    pub heartbeat_ns: u64,
    pub keepalive_read_index: bool,
    /// The bound `lease-early-expiry` judges by: the base scenario's, raised
    /// to the cell's largest clock drift (docs/STUDY-FORMAT.md).
    pub drift_bound: f64,
    pub ttl_ns: u64,
    pub keepalive_ns: u64,
    pub margin: f64,
    pub belief_from: &'static str,
    pub fenced: bool,
    pub hold_ns: (u64, u64),
    pub think_ns: (u64, u64),
    /// Per process: (drift, wall offset in ns).
    pub clocks: Vec<(String, f64, i64)>,
    pub duration_ns: u64,
}

impl CellSetup {
    pub fn of(s: &Scenario) -> CellSetup {
        let lock = s.workloads.iter().find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l.clone()),
            _ => None,
        });
        CellSetup {
            lease_expiry: grid::strategy_name(s.cluster.lease_expiry),
            servers: s.cluster.servers,
            clients: s.client_count(),
            latency_ns: s.network.latency_ns,
            election_timeout_ns: s.cluster.election_timeout_ns,
            heartbeat_ns: s.cluster.heartbeat_ns,
            keepalive_read_index: s.cluster.keepalive_read_index,
            drift_bound: s.cluster.drift_bound,
            ttl_ns: lock.as_ref().map_or(0, |l| l.ttl_ns),
            keepalive_ns: lock.as_ref().map_or(0, |l| l.keepalive_ns),
            margin: lock.as_ref().map_or(0.0, |l| l.margin),
            belief_from: lock.as_ref().map_or("send", |l| l.belief_from.name()),
            fenced: lock.as_ref().is_some_and(|l| l.fenced),
            hold_ns: lock.as_ref().map_or((0, 0), |l| l.hold_ns),
            think_ns: lock.as_ref().map_or((0, 0), |l| l.think_ns),
            clocks: s.clocks.iter().map(|(p, c)| (format!("{p:?}"), c.drift, c.offset_ns)).collect(),
            duration_ns: s.duration_ns,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub index: usize,
    pub label: String,
    pub params: CellParams,
    pub setup: CellSetup,
    pub metrics: CellMetrics,
    pub rates: CellRates,
    /// The cell's verdict by the classic symmetric bound (one ρ for every
    /// clock; [`theory::predict`]).
    pub prediction: Option<Prediction>,
    /// The frozen model's forecast for the cell, from its inputs alone
    /// ([`forecast::forecast`]); absent where the model does not reach.
    pub forecast: Option<forecast::Forecast>,
    /// Why the cell has no forecast.
    pub forecast_scope: Option<&'static str>,
    /// Run by run, the refined gap model ([`theory::check_run`]) against
    /// what each run measured: a consistency check, not a prediction (it
    /// reads each run's own hand-overs, lags and leaders).
    pub consistency_check: theory::ConsistencyCheck,
    /// Every safety invariant that fired in any seed (`scenario::is_safety`:
    /// all but `liveness`), with `engine-panic`.
    pub unsafe_invariants: Vec<String>,
    /// `safe` or `unsafe`: whether any safety invariant fired in any seed.
    pub measured: &'static str,
    /// `agree`, `theory-safe-measured-unsafe` (the bound failed: look here
    /// first) or `theory-unsafe-measured-safe` (the bound is conservative,
    /// or the seeds gave the hazard no opportunity).
    pub agreement: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct StudyResults {
    pub name: String,
    /// `git describe` of the build that ran the study.
    pub build: &'static str,
    pub description: Option<String>,
    pub base: String,
    /// First seed and the end of the largest range a cell could run.
    pub seeds: [u64; 2],
    pub seed_plan: String,
    /// `shared`: every cell runs the same seeds; `distinct`: cell i runs
    /// first + i × stride + k.
    pub seeds_per_cell: &'static str,
    pub pause_distribution: &'static str,
    pub pause_shape: f64,
    pub slew_at_ns: u64,
    pub slew_for_ns: u64,
    /// `fixed`: faults at the spec's times; `random`: shifted per run by
    /// offsets drawn from its seed within `phase_window_ns`.
    pub fault_phase: &'static str,
    pub phase_window_ns: u64,
    pub jump_at_ns: u64,
    pub pause_at_ns: u64,
    pub pause_every_ns: u64,
    /// The base scenario as TOML (every parameter a cell does not vary).
    pub base_scenario: String,
    pub cells: Vec<CellResult>,
    /// Every run (written to runs.csv and handovers.csv, not to the JSON).
    #[serde(skip)]
    pub runs: Vec<RunRecord>,
    pub wall_seconds: f64,
}

/// How many seeds each cell runs.
#[derive(Clone, Debug, PartialEq)]
pub enum SeedPlan {
    /// Every cell runs exactly these seeds.
    Fixed(std::ops::Range<u64>),
    /// Each cell runs seeds `first..first + n`, starting with `min` and
    /// doubling (up to `max`) while the Wilson 95 % interval of its
    /// unsafe-run rate is wider than `width`.
    Adaptive { first: u64, min: u64, max: u64, width: f64 },
}

impl From<std::ops::Range<u64>> for SeedPlan {
    fn from(r: std::ops::Range<u64>) -> SeedPlan {
        SeedPlan::Fixed(r)
    }
}

impl SeedPlan {
    /// The spec's plan: adaptive when it sets `target_ci_width`.
    pub fn of(spec: &StudySpec) -> SeedPlan {
        match spec.target_ci_width {
            Some(width) => SeedPlan::Adaptive { first: spec.seeds.start, min: spec.min_seeds, max: spec.max_seeds, width },
            None => SeedPlan::Fixed(spec.seeds.clone()),
        }
    }

    pub fn first(&self) -> u64 {
        match self {
            SeedPlan::Fixed(r) => r.start,
            SeedPlan::Adaptive { first, .. } => *first,
        }
    }

    /// The most seeds a cell can run under this plan.
    pub fn most(&self) -> u64 {
        match self {
            SeedPlan::Fixed(r) => r.end.saturating_sub(r.start),
            SeedPlan::Adaptive { max, .. } => *max,
        }
    }

    fn initial(&self) -> u64 {
        match self {
            SeedPlan::Fixed(r) => r.end.saturating_sub(r.start),
            SeedPlan::Adaptive { min, .. } => *min,
        }
    }

    /// How many seeds a cell that ran `n` with this rate should have run.
    fn wanted(&self, n: u64, rate: metrics::Rate) -> u64 {
        match self {
            SeedPlan::Fixed(_) => n,
            SeedPlan::Adaptive { max, width, .. } if rate.width() > *width => (n * 2).clamp(n, *max),
            SeedPlan::Adaptive { .. } => n,
        }
    }
}

/// One run: which cell and seed, where its faults fell, its figures and the
/// theory's prediction for it.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub cell: usize,
    pub seed: u64,
    pub phase: grid::Phase,
    pub metrics: metrics::RunMetrics,
    pub predicted: Option<theory::RunCheck>,
    /// The run's trace digest and verdict (what a replay of the scenario
    /// `--scenario-of` prints must reproduce).
    pub digest: String,
    pub verdict: &'static str,
    /// Every invariant the run's checkers left undecided (`linearizable`
    /// when its search spent its step budget): a run that fired nothing
    /// but is listed here was not shown clean, so a stale-read rate must
    /// say how many of its runs were undecided.
    pub not_judged: Vec<&'static str>,
}

/// The `k`-th seed of cell `cell`: `first + k`, or with
/// `seeds_per_cell = "distinct"` `first + cell × stride + k`, the stride
/// being the most seeds a cell can run (so no two cells share a seed).
pub fn cell_seed(spec: &StudySpec, plan: &SeedPlan, cell: usize, k: u64) -> u64 {
    let stride = if spec.distinct_seeds { plan.most() } else { 0 };
    plan.first() + cell as u64 * stride + k
}

/// Runs every cell of `spec` by `plan` with `jobs` threads.
pub fn run_study(spec: &StudySpec, base: &Scenario, plan: impl Into<SeedPlan>, jobs: usize) -> StudyResults {
    let plan = plan.into();
    let started = std::time::Instant::now();
    let cells = grid::cells(spec);
    let scenarios: Vec<Scenario> = cells.iter().map(|c| grid::apply(base, spec, c)).collect();
    let mut done = vec![0_u64; cells.len()];
    let mut wanted = vec![plan.initial(); cells.len()];
    let mut records: Vec<RunRecord> = Vec::new();
    loop {
        let work: Vec<(usize, u64)> = (0..cells.len())
            .flat_map(|i| (done[i]..wanted[i]).map(move |k| (i, k)))
            .map(|(i, k)| (i, cell_seed(spec, &plan, i, k)))
            .collect();
        if work.is_empty() {
            break;
        }
        records.extend(run_batch(spec, base, &cells, &work, jobs));
        records.sort_by_key(|r| (r.cell, r.seed));
        for i in 0..cells.len() {
            done[i] = wanted[i];
            let mut m = CellMetrics::default();
            for r in records.iter().filter(|r| r.cell == i) {
                m.add(&r.metrics, r.metrics.invariants.contains_key("engine-panic"));
            }
            wanted[i] = plan.wanted(done[i], m.unsafe_runs());
        }
    }
    let mut metrics = vec![CellMetrics::default(); cells.len()];
    for r in &records {
        metrics[r.cell].add(&r.metrics, r.metrics.invariants.contains_key("engine-panic"));
    }
    let cells: Vec<CellResult> = cells
        .into_iter()
        .zip(metrics)
        .enumerate()
        .map(|(index, (params, metrics))| cell_result(spec, index, params, metrics, &scenarios[index], &records))
        .collect();
    let seeds_end = plan.first() + plan.most() * if spec.distinct_seeds { cells.len().max(1) as u64 } else { 1 };
    StudyResults {
        name: spec.name.clone(),
        description: spec.description.clone(),
        base: spec.base.display().to_string(),
        build: BUILD_COMMIT,
        seeds: [plan.first(), seeds_end],
        seeds_per_cell: if spec.distinct_seeds { "distinct" } else { "shared" },
        pause_distribution: spec.pause_distribution.name(),
        pause_shape: spec.pause_shape,
        slew_at_ns: spec.slew_at_ns,
        slew_for_ns: spec.slew_for_ns,
        seed_plan: match &plan {
            SeedPlan::Fixed(_) => "fixed".to_string(),
            SeedPlan::Adaptive { min, max, width, .. } => {
                format!("adaptive: {min}..{max} seeds per cell until the unsafe-run rate's Wilson 95% interval is at most {width} wide")
            }
        },
        fault_phase: if spec.random_phase { "random" } else { "fixed" },
        phase_window_ns: spec.phase_window_ns,
        jump_at_ns: spec.jump_at_ns,
        pause_at_ns: spec.pause_at_ns,
        pause_every_ns: spec.pause_every_ns,
        base_scenario: leasesim_scenario::to_toml(base),
        cells,
        runs: records,
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

/// Wilson 95 % intervals on a cell's rates.
#[derive(Clone, Debug, Serialize)]
pub struct CellRates {
    /// Runs in which any safety invariant fired.
    pub unsafe_runs: metrics::Rate,
    /// Hand-overs during which two clients believed at once.
    pub overlapping_handovers: metrics::Rate,
    /// Per invariant that fired: the runs it fired in.
    pub invariant_runs: std::collections::BTreeMap<String, metrics::Rate>,
}

/// The TTL of the first lock workload (what "renewed within its TTL" means
/// for false expiries); 0 if the scenario has none.
/// Runs each (cell, seed) of `work` with `jobs` threads, keeping each run's
/// figures (its observations are large) in any order.
fn run_batch(spec: &StudySpec, base: &Scenario, cells: &[CellParams], work: &[(usize, u64)], jobs: usize) -> Vec<RunRecord> {
    let options = RunOptions { trace: false, extra_bugs: Default::default(), keep_observations: true, ..RunOptions::default() };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(work.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(work.len()) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((i, seed)) = work.get(k).copied() else { break };
                let phase = grid::phase(spec, seed);
                let scenario = grid::apply_phased(base, spec, &cells[i], &phase);
                let outcome = run_seed(&scenario, seed, &options);
                let figures = measure(&outcome, lock_ttl_ns(&scenario));
                let predicted = theory::check_run(&scenario, &figures);
                let digest = outcome.trace_digest.clone();
                let mut not_judged: Vec<&'static str> = outcome.not_judged.iter().map(|n| n.invariant).collect();
                not_judged.sort_unstable();
                not_judged.dedup();
                let verdict = outcome.verdict;
                let record = RunRecord { cell: i, seed, phase, metrics: figures, predicted, digest, verdict, not_judged };
                results.lock().expect("results lock").push(record);
            });
        }
    });
    results.into_inner().expect("results lock")
}

/// One cell's result: its figures, the theory's prediction for its
/// scenario, and whether the two agree.
fn cell_result(
    spec: &StudySpec,
    index: usize,
    params: CellParams,
    metrics: CellMetrics,
    scenario: &Scenario,
    records: &[RunRecord],
) -> CellResult {
    let prediction = theory::predict(scenario);
    let (forecast, forecast_scope) = match forecast::forecast(spec, &params, scenario) {
        Ok(f) => (Some(f), None),
        Err(why) => (None, Some(why)),
    };
    let unsafe_invariants: Vec<String> = metrics.invariants.keys().filter(|id| leasesim_scenario::is_safety(id)).cloned().collect();
    let unsafe_measured = !unsafe_invariants.is_empty();
    let measured = if unsafe_measured { "unsafe" } else { "safe" };
    let agreement = match prediction.as_ref().map(|p| p.verdict) {
        Some("safe") if unsafe_measured => "theory-safe-measured-unsafe",
        Some("unsafe") if !unsafe_measured => "theory-unsafe-measured-safe",
        _ => "agree",
    };
    let setup = CellSetup::of(scenario);
    let rates = CellRates {
        unsafe_runs: metrics.unsafe_runs(),
        overlapping_handovers: metrics.overlapping_handovers(),
        invariant_runs: metrics.invariant_rates(),
    };
    let runs_here: Vec<&RunRecord> = records.iter().filter(|r| r.cell == index).collect();
    let consistency_check = theory::ConsistencyCheck::of(&runs_here);
    CellResult {
        index,
        label: grid::label(&params),
        params,
        setup,
        metrics,
        rates,
        prediction,
        forecast,
        forecast_scope,
        consistency_check,
        unsafe_invariants,
        measured,
        agreement,
    }
}

fn lock_ttl_ns(s: &Scenario) -> u64 {
    s.workloads
        .iter()
        .find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l.ttl_ns),
            _ => None,
        })
        .unwrap_or(0)
}
