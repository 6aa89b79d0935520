//! A bounded sweep of every bundled scenario, judged like `leasesim sweep`:
//! each file's `[expect]` must be met over a fixed number of seeds (no run
//! outside the expectation; a `violation` scenario fires one of its ids in
//! some run).
//!
//! This is the simulator's half of the mutation score (reports/mutants.md):
//! a mutant of leasesim-core that survives core's own unit tests is run
//! against this test, and is killed when some scenario's expectation stops
//! holding (a checker fires on a `safe` scenario, a `violation` scenario stops
//! firing, or the engine panics). The budget is a count of runs, never wall
//! time, so the verdict is the same on any machine: SEEDS seeds (0..SEEDS) of
//! each of the bundled files, in release a few seconds.

use std::path::PathBuf;

use leasesim::cli::summary::{RunLine, Summaries};
use leasesim::run::{run_seed, RunOptions};
use leasesim_scenario as scenario;

/// Seeds per scenario: 0..SEEDS, as in CI's sweep. Every `violation` scenario bundled today
/// fires its expected ids within these seeds on a healthy engine.
const SEEDS: u64 = 8;

fn scenario_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bundled_scenario_meets_its_expectation_over_a_few_seeds() {
    let files = scenario_files();
    assert!(files.len() >= 20, "found only {} scenario files", files.len());
    let mut summaries = Summaries::new();
    for file in &files {
        let s = scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
        for seed in 0..SEEDS {
            summaries.add(RunLine::of(&run_seed(&s, seed, &RunOptions::default())));
        }
    }
    assert_eq!(summaries.runs(), files.len() * SEEDS as usize);
    let not_met: Vec<String> = summaries
        .scenarios()
        .iter()
        .filter(|s| !s.met())
        .map(|s| {
            let first = s.unexpected.first().map(|r| format!("; first unexpected: {}", r.replay)).unwrap_or_default();
            format!(
                "{} ({}): fired {:?}, expected {:?}, {} unexpected run(s){first}",
                s.name, s.file, s.fired, s.expected_violations, s.unexpected_runs
            )
        })
        .collect();
    assert!(not_met.is_empty(), "expectations not met over seeds 0..{SEEDS}:\n{}", not_met.join("\n"));
}
