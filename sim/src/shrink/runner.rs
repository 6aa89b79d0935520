//! Trying candidate scenarios against the target invariant, within a run
//! budget, deterministically.
//!
//! Candidates are tried in order and the first whose run (same seed) fires
//! the target wins. Several may run at once on `jobs` threads, but the
//! answer and the runs it is charged are those of trying them one by one:
//! the result never depends on the number of threads, only the wall time.
//! A candidate the loader would reject (checked by writing and re-reading
//! it) is skipped without a run.

use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::{parse, to_toml, Scenario};

pub struct Runner {
    pub seed: u64,
    /// Invariant id that must fire.
    pub target: String,
    pub jobs: usize,
    pub budget_runs: usize,
    /// Runs charged so far.
    pub runs: usize,
}

impl Runner {
    pub fn new(seed: u64, target: String, jobs: usize, budget_runs: usize) -> Self {
        Runner { seed, target, jobs: jobs.max(1), budget_runs, runs: 0 }
    }

    pub fn exhausted(&self) -> bool {
        self.runs >= self.budget_runs
    }

    /// Whether this outcome fires the target.
    pub fn fires(&self, outcome: &RunOutcome) -> bool {
        outcome.violations.iter().any(|v| v.invariant == self.target)
    }

    /// Runs one scenario, charged to the budget.
    pub fn run(&mut self, scenario: &Scenario) -> RunOutcome {
        self.runs += 1;
        run_seed(scenario, self.seed, &RunOptions::default())
    }

    /// The first candidate, in order, that still fires the target.
    pub fn first_failing(&mut self, candidates: Vec<Scenario>) -> Option<(Scenario, RunOutcome)> {
        let mut pending: Vec<Scenario> = candidates.into_iter().filter(loads_back).collect();
        pending.reverse();
        while !pending.is_empty() && !self.exhausted() {
            let room = (self.budget_runs - self.runs).min(self.jobs).min(pending.len());
            let batch: Vec<Scenario> = (0..room).filter_map(|_| pending.pop()).collect();
            let seed = self.seed;
            let outcomes: Vec<RunOutcome> = std::thread::scope(|scope| {
                let handles: Vec<_> = batch.iter().map(|s| scope.spawn(move || run_seed(s, seed, &RunOptions::default()))).collect();
                handles.into_iter().map(|h| h.join().expect("run_seed reports panics as outcomes")).collect()
            });
            match outcomes.iter().position(|o| self.fires(o)) {
                Some(i) => {
                    self.runs += i + 1;
                    let outcome = outcomes.into_iter().nth(i).expect("position is in range");
                    let scenario = batch.into_iter().nth(i).expect("one outcome per candidate");
                    return Some((scenario, outcome));
                }
                None => self.runs += batch.len(),
            }
        }
        None
    }
}

/// Whether the candidate is a valid scenario file once written.
fn loads_back(s: &Scenario) -> bool {
    parse(&to_toml(s), &s.path.display().to_string()).is_ok()
}
