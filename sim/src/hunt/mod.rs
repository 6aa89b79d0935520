//! Measuring the suite's bug-finding power: for each planted bug, sweep
//! seeds of general chaos scenarios with that bug on until an invariant
//! fires, note how many runs and how much wall time it took, and shrink the
//! first failure to a small scenario. A bug the chaos cannot find in its
//! budget is a gap in the scenarios or the checkers; [`notes`] says which
//! bugs no checker can see and why.
//!
//! [`search`] finds the first failure, [`pick`] chooses the scenarios,
//! [`table`] renders the results.

pub mod notes;
pub mod pick;
pub mod search;
pub mod table;

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use leasesim_core::bugs::Bugs;

use crate::shrink::{self, ShrinkOptions, Shrunk};
use leasesim_scenario::Scenario;

#[derive(Clone, Debug)]
pub struct HuntOptions {
    pub seeds: Range<u64>,
    pub jobs: usize,
    /// Wall-clock budget of one search (None: the seed range is the only
    /// bound — what tests use, so they count runs, not seconds).
    pub budget: Option<Duration>,
    /// Searches per bug, each on the next window of seeds (the table shows
    /// medians); only the first one's failure is shrunk.
    pub repeat: usize,
    /// Run budget of the shrink; 0: do not shrink.
    pub shrink_budget_runs: usize,
    /// Where to write each bug's shrunk scenario (`<bug>.toml`).
    pub shrunk_dir: Option<PathBuf>,
}

/// A failing run a search found.
#[derive(Clone, Debug)]
pub struct Found {
    pub scenario: String,
    pub file: PathBuf,
    pub seed: u64,
    /// Invariants that fired, first firing first.
    pub fired: Vec<String>,
}

/// One search of one bug.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub seeds: Range<u64>,
    pub found: Option<Found>,
    pub runs: usize,
    pub wall: Duration,
    /// Seeds that failed without the bug too (scenario file, seed, fired).
    pub failing_without_bug: Vec<(PathBuf, u64, Vec<String>)>,
}

/// Everything a hunt learned about one bug.
#[derive(Clone, Debug)]
pub struct BugHunt {
    pub bug: String,
    pub attempts: Vec<Attempt>,
    /// The first attempt's failure, shrunk (or why it could not be).
    pub shrunk: Option<Result<Shrunk, String>>,
    /// Where the shrunk scenario was written.
    pub shrunk_file: Option<PathBuf>,
}

impl BugHunt {
    pub fn first_found(&self) -> Option<&Found> {
        self.attempts.iter().find_map(|a| a.found.as_ref())
    }

    pub fn found_count(&self) -> usize {
        self.attempts.iter().filter(|a| a.found.is_some()).count()
    }

    /// Median wall time of the attempts that found it.
    pub fn median_wall(&self) -> Option<Duration> {
        median(self.attempts.iter().filter(|a| a.found.is_some()).map(|a| a.wall).collect())
    }

    /// Median runs of the attempts that found it.
    pub fn median_runs(&self) -> Option<usize> {
        median(self.attempts.iter().filter(|a| a.found.is_some()).map(|a| a.runs).collect())
    }
}

fn median<T: Ord + Copy>(mut values: Vec<T>) -> Option<T> {
    values.sort_unstable();
    values.get(values.len().checked_sub(1)? / 2).copied()
}

/// Hunts one bug over `scenarios` (none of which may be written for it).
pub fn hunt_bug(scenarios: &[Scenario], bug: &str, options: &HuntOptions) -> BugHunt {
    let mut bugs = Bugs::default();
    bugs.enable(bug).expect("a name from Bugs::NAMES");
    let span = options.seeds.end - options.seeds.start;
    let mut attempts = Vec::new();
    let mut first: Option<(usize, u64)> = None;
    for r in 0..options.repeat.max(1) as u64 {
        let seeds = options.seeds.start + r * span..options.seeds.end + r * span;
        let found = search::first_failure(scenarios, seeds.clone(), bugs, options.jobs, options.budget);
        let found_run = found.found.map(|(i, outcome)| {
            first.get_or_insert((i, outcome.seed));
            Found {
                scenario: scenarios[i].name.clone(),
                file: scenarios[i].path.clone(),
                seed: outcome.seed,
                fired: outcome.fired().into_iter().map(String::from).collect(),
            }
        });
        let failing_without_bug =
            found.failing_without_bug.into_iter().map(|u| (scenarios[u.scenario].path.clone(), u.seed, u.fired)).collect();
        attempts.push(Attempt { seeds, found: found_run, runs: found.runs, wall: found.wall, failing_without_bug });
    }
    let mut hunt = BugHunt { bug: bug.to_string(), attempts, shrunk: None, shrunk_file: None };
    if let (Some((i, seed)), true) = (first, options.shrink_budget_runs > 0) {
        let shrink_options =
            ShrinkOptions { extra_bugs: bugs, budget_runs: options.shrink_budget_runs, jobs: options.jobs, invariant: None };
        let mut shrunk = shrink::shrink(&scenarios[i], seed, &shrink_options).map_err(|e| e.to_string());
        if let Ok(s) = &mut shrunk {
            // One file per bug, checkable together: names must be unique.
            s.scenario.name = format!("{bug}-{}", s.scenario.name);
        }
        if let (Ok(s), Some(dir)) = (&shrunk, &options.shrunk_dir) {
            let out = dir.join(format!("{bug}.toml"));
            match shrink::file::write(s, &scenarios[i].path, &out) {
                Ok(()) => hunt.shrunk_file = Some(out),
                Err(e) => {
                    hunt.shrunk = Some(Err(format!("{}: {e}", out.display())));
                    return hunt;
                }
            }
        }
        hunt.shrunk = Some(shrunk);
    }
    hunt
}
