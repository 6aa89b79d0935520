//! The side-by-side figures of `compare`: per invariant, in how many runs
//! of each world it fired (with Wilson 95 % intervals, `leasesim_judge::
//! rate`), and each timing figure's distribution in each world. An
//! invariant a real run could not judge is "not judged" on the real side,
//! never a zero.

use std::collections::BTreeSet;

use leasesim_judge::checkers::CHECKERS;
use leasesim_judge::measures::Measures;
use leasesim_judge::rate::Rate;
use serde::Serialize;

use super::worlds::World;

/// A timing figure's samples and its unanswered count, read from a run's
/// measures.
type Figure = fn(&Measures) -> (&[f64], u64);

/// One invariant's row.
#[derive(Debug, Serialize)]
pub struct InvariantRow {
    pub invariant: String,
    pub sim: Rate,
    /// `None`: the real runs could not judge it.
    pub real: Option<Rate>,
    /// The two intervals are disjoint: the worlds disagree at 95 %.
    pub disagree: bool,
}

/// A distribution's summary, in ms.
#[derive(Debug, Default, Serialize)]
pub struct Spread {
    pub n: usize,
    /// Events that got no answer before their run ended.
    pub unanswered: u64,
    pub p10_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct TimingRow {
    pub figure: &'static str,
    pub sim: Spread,
    pub real: Spread,
}

/// Everything `compare` prints (and its `--json` object).
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub file: String,
    pub target: &'static str,
    pub sim_runs: usize,
    pub real_runs: usize,
    pub sim_seeds: String,
    pub real_seeds: String,
    pub invariants: Vec<InvariantRow>,
    pub timings: Vec<TimingRow>,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    Some(sorted[((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(last)])
}

fn spread(world: &World, values: fn(&Measures) -> (&[f64], u64)) -> Spread {
    let mut all: Vec<f64> = world.runs.iter().flat_map(|r| values(&r.measures).0.iter().copied()).collect();
    all.sort_by(f64::total_cmp);
    Spread {
        n: all.len(),
        unanswered: world.runs.iter().map(|r| values(&r.measures).1).sum(),
        p10_ms: percentile(&all, 0.1),
        p50_ms: percentile(&all, 0.5),
        p90_ms: percentile(&all, 0.9),
        max_ms: all.last().copied(),
    }
}

/// In how many runs `invariant` fired.
fn fired_in(world: &World, invariant: &str) -> u64 {
    world.runs.iter().filter(|r| r.fired().contains(&invariant)).count() as u64
}

pub fn compare(sim: &World, real: &World) -> (Vec<InvariantRow>, Vec<TimingRow>) {
    // Every checker, then anything else that fired (`engine-panic`).
    // (`linearizable` has two checkers, one row.)
    let mut ids: Vec<String> = Vec::new();
    for (id, _) in CHECKERS {
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_string());
        }
    }
    let extra: BTreeSet<&str> = sim.runs.iter().chain(&real.runs).flat_map(|r| r.fired()).collect();
    ids.extend(extra.into_iter().filter(|id| !CHECKERS.iter().any(|(c, _)| c == id)).map(str::to_string));
    let not_judged: BTreeSet<&str> = real.runs.iter().flat_map(|r| r.not_judged.iter().map(|n| n.invariant.as_str())).collect();
    let invariants = ids
        .into_iter()
        .map(|id| {
            let sim_rate = Rate::of(fired_in(sim, &id), sim.runs.len() as u64);
            let real_rate = (!not_judged.contains(id.as_str())).then(|| Rate::of(fired_in(real, &id), real.runs.len() as u64));
            let disagree = real_rate.is_some_and(|r| r.disjoint(&sim_rate));
            InvariantRow { invariant: id, sim: sim_rate, real: real_rate, disagree }
        })
        .collect();
    let figures: [(&'static str, Figure); 2] = [
        ("holder-outlived", |m| (&m.holder_outlived_ms, m.holder_outlived_unanswered)),
        ("failover-stall", |m| (&m.failover_stall_ms, m.failover_stall_unanswered)),
    ];
    let timings = figures.into_iter().map(|(figure, f)| TimingRow { figure, sim: spread(sim, f), real: spread(real, f) }).collect();
    (invariants, timings)
}

fn rate_cell(rate: &Rate) -> String {
    format!("{}/{} ({:.0}–{:.0} %)", rate.k, rate.n, rate.lo * 100.0, rate.hi * 100.0)
}

fn ms_cell(ms: Option<f64>) -> String {
    ms.map_or("-".to_string(), |ms| format!("{ms:.0}"))
}

fn spread_cell(s: &Spread) -> String {
    format!(
        "n={} p10={} p50={} p90={} max={} ms{}",
        s.n,
        ms_cell(s.p10_ms),
        ms_cell(s.p50_ms),
        ms_cell(s.p90_ms),
        ms_cell(s.max_ms),
        if s.unanswered > 0 { format!(" ({} unanswered)", s.unanswered) } else { String::new() }
    )
}

/// The comparison as text: one line per invariant, then the timings.
pub fn print(c: &Comparison) {
    println!(
        "{} ({}): simulator seeds {} ({} runs) vs {} real runs on {} (seeds {})",
        c.scenario, c.file, c.sim_seeds, c.sim_runs, c.real_runs, c.target, c.real_seeds
    );
    println!("  {:<26} {:<24} {:<24}", "invariant (runs fired)", "simulator", "real");
    for row in &c.invariants {
        let real = row.real.as_ref().map_or("not judged".to_string(), rate_cell);
        let flag = if row.disagree { "  << disagree" } else { "" };
        println!("  {:<26} {:<24} {:<24}{flag}", row.invariant, rate_cell(&row.sim), real);
    }
    for t in &c.timings {
        println!("  {} simulator: {}", t.figure, spread_cell(&t.sim));
        println!("  {} real:      {}", t.figure, spread_cell(&t.real));
    }
}
