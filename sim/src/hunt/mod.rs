//! Measuring the suite's bug-finding power: for each planted bug, sweep
//! seeds of general chaos scenarios with that bug on until an invariant
//! fires, note how many runs and how much wall time it took, and shrink the
//! first failure to a small scenario. A bug the chaos cannot find in its
//! budget is a gap in the scenarios or the checkers; [`notes`] says which
//! bugs no checker can see and why.
//!
//! [`search`] finds the first failure, [`pick`] chooses the scenarios,
//! [`table`] renders the results.

pub mod guided;
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
    /// Search guided by coverage ([`guided`]) instead of seed after seed.
    pub guided: Option<GuidedHunt>,
}

/// The guided search's settings for a hunt.
#[derive(Clone, Debug)]
pub struct GuidedHunt {
    /// Probability that a run is a fresh seed rather than a mutation.
    pub explore: f64,
    /// Each search's corpus goes to `<dir>/<bug>/<search>/` (None: not written).
    pub corpus_dir: Option<PathBuf>,
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
    let mut first: Option<(Scenario, u64)> = None;
    for r in 0..options.repeat.max(1) as u64 {
        let seeds = options.seeds.start + r * span..options.seeds.end + r * span;
        let (found, file) = search_once(scenarios, seeds.clone(), bugs, bug, r, options);
        let found_run = found.found.map(|(scenario, outcome)| {
            first.get_or_insert((scenario.clone(), outcome.seed));
            Found {
                scenario: scenario.name.clone(),
                file: file.unwrap_or_else(|| scenario.path.clone()),
                seed: outcome.seed,
                fired: outcome.fired().into_iter().map(String::from).collect(),
            }
        });
        let failing_without_bug = found.failing_without_bug.into_iter().map(|u| (u.file, u.seed, u.fired)).collect();
        attempts.push(Attempt { seeds, found: found_run, runs: found.runs, wall: found.wall, failing_without_bug });
    }
    let mut hunt = BugHunt { bug: bug.to_string(), attempts, shrunk: None, shrunk_file: None };
    if let (Some((scenario, seed)), true) = (first, options.shrink_budget_runs > 0) {
        shrink_first(&mut hunt, &scenario, seed, bugs, options);
    }
    hunt
}

/// One search of the window `seeds` (the `r`th): seed after seed, or
/// guided; the failing run's file when the guided search wrote one.
fn search_once(
    scenarios: &[Scenario],
    seeds: Range<u64>,
    bugs: Bugs,
    bug: &str,
    r: u64,
    options: &HuntOptions,
) -> (search::Search, Option<PathBuf>) {
    let Some(g) = &options.guided else {
        return (search::first_failure(scenarios, seeds, bugs, options.jobs, options.budget), None);
    };
    let max_runs = (seeds.end - seeds.start) as usize * scenarios.len();
    let corpus_dir = g.corpus_dir.as_ref().map(|d| d.join(bug).join(r.to_string()));
    if let Some(dir) = &corpus_dir {
        // A previous hunt's files would read as this one's corpus.
        let _ = std::fs::remove_dir_all(dir);
    }
    let guided_options = guided::GuidedOptions { seeds, max_runs, budget: options.budget, explore: g.explore, corpus_dir };
    let result = guided::first_failure(scenarios, bugs, &guided_options);
    (result.search, result.found_file)
}

/// Shrinks the first failure and writes it to the shrunk directory.
fn shrink_first(hunt: &mut BugHunt, scenario: &Scenario, seed: u64, bugs: Bugs, options: &HuntOptions) {
    let bug = hunt.bug.clone();
    let shrink_options = ShrinkOptions { extra_bugs: bugs, budget_runs: options.shrink_budget_runs, jobs: options.jobs, invariant: None };
    let mut shrunk = shrink::shrink(scenario, seed, &shrink_options).map_err(|e| e.to_string());
    if let Ok(s) = &mut shrunk {
        // One file per bug, checkable together: names must be unique.
        s.scenario.name = format!("{bug}-{}", s.scenario.name);
    }
    if let (Ok(s), Some(dir)) = (&shrunk, &options.shrunk_dir) {
        let out = dir.join(format!("{bug}.toml"));
        match shrink::file::write(s, &scenario.path, &out) {
            Ok(()) => hunt.shrunk_file = Some(out),
            Err(e) => {
                hunt.shrunk = Some(Err(format!("{}: {e}", out.display())));
                return;
            }
        }
    }
    hunt.shrunk = Some(shrunk);
}
