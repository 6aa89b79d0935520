//! The search for a bug's first failing run: seeds of several scenarios,
//! interleaved (seed 0 of each, then seed 1 of each, …), on `jobs` threads,
//! until a run fires an invariant or the wall-clock budget is spent.
//!
//! Runs are claimed in order, so when run k fails every run before it has
//! been claimed and will finish; the answer is the lowest failing position,
//! the same whatever the number of threads (only a budget running out mid-way
//! depends on the machine's speed).
//!
//! A failure counts only if the same seed without the bug is clean: a seed
//! that fails anyway shows a problem of its own, not the hunted bug (it is
//! counted apart, so a hunt also surfaces failures of the healthy code).

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use leasesim_core::bugs::Bugs;

use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::Scenario;

/// What a search found.
#[derive(Debug)]
pub struct Search {
    /// The scenario that failed, as it ran, and its outcome.
    pub found: Option<(Scenario, RunOutcome)>,
    /// Runs up to and including the failure (all runs made, if none failed).
    pub runs: usize,
    /// Wall time until every run up to the failure had finished (the whole
    /// search, if none failed).
    pub wall: Duration,
    /// Seeds (up to the failure) that failed without the bug as well: not
    /// the bug's doing.
    pub failing_without_bug: Vec<Unattributed>,
}

/// A seed that fails whether or not the bug is on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unattributed {
    /// Position in the search (runs are claimed in this order).
    pub position: usize,
    /// The scenario's file.
    pub file: PathBuf,
    pub seed: u64,
    /// Invariants the run without the bug fired.
    pub fired: Vec<String>,
}

/// One finished run of the search.
struct Done {
    position: usize,
    finished_after: Duration,
    /// The outcome, kept only if it is an attributable failure.
    failure: Option<RunOutcome>,
}

/// Searches `seeds` of every scenario with `bugs` on.
pub fn first_failure(scenarios: &[Scenario], seeds: Range<u64>, bugs: Bugs, jobs: usize, budget: Option<Duration>) -> Search {
    let started = Instant::now();
    let count = scenarios.len().max(1);
    let total = (seeds.end.saturating_sub(seeds.start) as usize).saturating_mul(scenarios.len());
    let item = |k: usize| (k % count, seeds.start + (k / count) as u64);
    let options = RunOptions { extra_bugs: bugs, ..RunOptions::default() };
    let next = AtomicUsize::new(0);
    let first_failing = AtomicUsize::new(usize::MAX);
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::new());
    let unattributed: Mutex<Vec<Unattributed>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                if k >= total || k > first_failing.load(Ordering::SeqCst) || budget.is_some_and(|b| started.elapsed() >= b) {
                    break;
                }
                let (i, seed) = item(k);
                let outcome = run_seed(&scenarios[i], seed, &options);
                let mut failed = !outcome.violations.is_empty();
                if failed {
                    let control = run_seed(&scenarios[i], seed, &RunOptions::default());
                    if !control.violations.is_empty() {
                        failed = false;
                        let fired = control.fired().into_iter().map(String::from).collect();
                        unattributed.lock().expect("search results").push(Unattributed {
                            position: k,
                            file: scenarios[i].path.clone(),
                            seed,
                            fired,
                        });
                    }
                }
                if failed {
                    first_failing.fetch_min(k, Ordering::SeqCst);
                }
                done.lock().expect("search results").push(Done {
                    position: k,
                    finished_after: started.elapsed(),
                    failure: failed.then_some(outcome),
                });
            });
        }
    });
    let mut done = done.into_inner().expect("search results");
    done.sort_by_key(|d| d.position);
    let mut unattributed = unattributed.into_inner().expect("search results");
    unattributed.sort();
    match done.iter().position(|d| d.failure.is_some()) {
        Some(p) => {
            let wall = done[..=p].iter().map(|d| d.finished_after).max().unwrap_or_default();
            let failing = done.swap_remove(p);
            let k = failing.position;
            unattributed.retain(|u| u.position < k);
            Search {
                found: failing.failure.map(|o| (scenarios[item(k).0].clone(), o)),
                runs: k + 1,
                wall,
                failing_without_bug: unattributed,
            }
        }
        None => Search { found: None, runs: done.len(), wall: started.elapsed(), failing_without_bug: unattributed },
    }
}
