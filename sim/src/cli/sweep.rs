//! `leasesim sweep`: many seeds of many scenarios on several threads, with a
//! progress line on a terminal, a summary table and the replay command of
//! every unexpected failure.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::run::print_failure;
use super::SweepArgs;
use crate::run::{run_seed, RunOptions, RunOutcome};
use crate::scenario::{self, Scenario, Verdict};

/// Seeds of `range` that belong to `shard` (1-based I of N).
pub fn shard_seeds(range: std::ops::Range<u64>, shard: Option<(u64, u64)>) -> Vec<u64> {
    range
        .enumerate()
        .filter(|(position, _)| shard.is_none_or(|(i, n)| *position as u64 % n == i - 1))
        .map(|(_, seed)| seed)
        .collect()
}

/// Whether a scenario's runs meet its `[expect]`.
pub fn expectation_met(scenario: &Scenario, outcomes: &[&RunOutcome]) -> bool {
    let all_allowed = outcomes.iter().all(|o| o.expected);
    match &scenario.expect.verdict {
        Verdict::Safe => all_allowed,
        Verdict::Violation { ids } => {
            all_allowed && outcomes.iter().any(|o| o.violations.iter().any(|v| ids.contains(&v.invariant)))
        }
    }
}

pub fn sweep_command(args: &SweepArgs) -> i32 {
    let (scenarios, errors) = scenario::load_all(&args.paths);
    if !errors.is_empty() {
        return crate::json_error::report_scenario_errors(&errors, args.json);
    }
    if scenarios.is_empty() {
        eprintln!("no scenario files found in {:?}; give .toml files or directories holding them", args.paths);
        return 2;
    }
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let options = RunOptions { trace: false, extra_bugs: args.bugs.to_bugs(), keep_observations: false };
    let mut work = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let range = args.seeds.clone().unwrap_or_else(|| s.seeds.clone());
        work.extend(shard_seeds(range, args.shard).into_iter().map(|seed| (i, seed)));
    }
    let started = Instant::now();
    let outcomes = run_all(&scenarios, &work, jobs, &options, args.json);
    let wall = started.elapsed().as_secs_f64();

    let mut failed = false;
    let mut rows = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let mine: Vec<&RunOutcome> = outcomes.iter().filter(|(j, _)| *j == i).map(|(_, o)| o).collect();
        let met = expectation_met(s, &mine);
        failed |= !met;
        if !args.json {
            for o in mine.iter().filter(|o| !o.expected).take(5) {
                print_failure(o);
                // With a report, the details are in it; the terminal stays short.
                for v in o.violations.iter().take(if args.report.is_some() { 0 } else { 3 }) {
                    println!("  {} at {}: {}", v.invariant, v.at, v.detail);
                }
            }
        }
        rows.push(Row::of(s, &mine, met));
    }
    if !args.json {
        print_table(&rows, wall);
    }
    if let Some(dir) = &args.report {
        match super::report::write_sweep_report(dir, &scenarios, &outcomes, &options, wall) {
            // On stderr, so `--json` output stays JSON lines.
            Ok((index, timelines)) => eprintln!("report: {} ({timelines} run timeline(s))", index.display()),
            Err(message) => {
                eprintln!("{message}");
                return 2;
            }
        }
    }
    if let Some(path) = &args.junit {
        if let Err(message) = super::junit::write_outcomes(path, outcomes.iter().map(|(_, o)| o), &args.bugs.bugs) {
            eprintln!("{message}");
            return 2;
        }
    }
    i32::from(failed)
}

fn run_all(
    scenarios: &[Scenario],
    work: &[(usize, u64)],
    jobs: usize,
    options: &RunOptions,
    json: bool,
) -> Vec<(usize, RunOutcome)> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failing = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(work.len()));
    let progress = !json && std::io::stderr().is_terminal();
    let stdout = Arc::new(Mutex::new(()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(work.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((i, seed)) = work.get(k).copied() else { break };
                let outcome = run_seed(&scenarios[i], seed, options);
                if !outcome.expected {
                    failing.fetch_add(1, Ordering::Relaxed);
                }
                if json {
                    let _guard = stdout.lock().expect("stdout lock");
                    println!("{}", serde_json::to_string(&outcome).expect("outcomes serialize"));
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if progress {
                    eprint!("\r{n}/{} runs, {} unexpected ", work.len(), failing.load(Ordering::Relaxed));
                }
                results.lock().expect("results lock").push((k, i, outcome));
            });
        }
    });
    if progress {
        eprintln!();
    }
    let mut results = results.into_inner().expect("results lock");
    // Report in work order, whatever order the threads finished in.
    results.sort_by_key(|(k, _, _)| *k);
    results.into_iter().map(|(_, i, o)| (i, o)).collect()
}

struct Row {
    name: String,
    seeds: usize,
    clean: usize,
    bugs: usize,
    broken: usize,
    met: bool,
    sim_seconds: f64,
    wall_seconds: f64,
    fired: Vec<String>,
}

impl Row {
    fn of(s: &Scenario, outcomes: &[&RunOutcome], met: bool) -> Row {
        let mut fired: Vec<String> = Vec::new();
        for o in outcomes {
            for id in o.fired() {
                if !fired.iter().any(|f| f == id) {
                    fired.push(id.to_string());
                }
            }
        }
        Row {
            name: s.name.clone(),
            seeds: outcomes.len(),
            clean: outcomes.iter().filter(|o| o.violations.is_empty()).count(),
            bugs: outcomes.iter().filter(|o| o.violations.iter().any(|v| v.assumptions_held)).count(),
            broken: outcomes.iter().filter(|o| !o.violations.is_empty() && o.violations.iter().all(|v| !v.assumptions_held)).count(),
            met,
            sim_seconds: outcomes.iter().map(|o| o.sim_seconds).sum(),
            wall_seconds: outcomes.iter().map(|o| o.wall_seconds).sum(),
            fired,
        }
    }
}

fn print_table(rows: &[Row], wall: f64) {
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(8).max(8);
    println!("{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8}  {:>9}  expectation  fired", "scenario", "seeds", "clean", "bug", "broken", "sim s", "x real");
    for r in rows {
        println!(
            "{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8.0}  {:>9.0}  {:<11}  {}",
            r.name,
            r.seeds,
            r.clean,
            r.bugs,
            r.broken,
            r.sim_seconds,
            r.sim_seconds / r.wall_seconds.max(1e-9),
            if r.met { "met" } else { "NOT MET" },
            r.fired.join(","),
        );
    }
    let runs: usize = rows.iter().map(|r| r.seeds).sum();
    println!("{runs} runs in {wall:.1}s wall ({:.0} seeds/min)", runs as f64 / wall.max(1e-9) * 60.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_seeds() {
        let all: Vec<u64> = (0..10).collect();
        let mut union: Vec<u64> = (1..=3).flat_map(|i| shard_seeds(0..10, Some((i, 3)))).collect();
        union.sort();
        assert_eq!(union, all);
        assert_eq!(shard_seeds(0..10, Some((2, 3))), vec![1, 4, 7]);
        assert_eq!(shard_seeds(5..8, None), vec![5, 6, 7]);
    }
}
