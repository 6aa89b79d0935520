//! Shrinking a failing run to the smallest scenario that still fails the
//! same way: a bug report should be a short file a person can read, not a
//! 30-second chaos run with 40 drawn faults.
//!
//! The failing seed's chaos is first made explicit (the faults it drew, the
//! clock drifts it pinned: `run::chaos::explicit`), which replays the very
//! same run; then [`passes`] remove faults, shorten phases and `for`s, and
//! drop clients, workloads and servers, keeping each change only if the same
//! seed still fires the same invariant. Everything is deterministic and
//! bounded by a run budget; [`file`] writes the result with a header saying
//! where it came from and how to replay it, after checking that the written
//! file itself still fails.

pub mod file;
mod passes;
mod renumber;
mod runner;
mod size;

use std::fmt;

use leasesim_core::bugs::Bugs;

use crate::run::{chaos, run_seed, RunOptions, RunOutcome};
use leasesim_scenario::Scenario;
use passes::Best;
use runner::Runner;
pub use size::Size;

/// How hard to try.
#[derive(Clone, Debug)]
pub struct ShrinkOptions {
    /// Planted bugs on top of the scenario's (they go into the written file).
    pub extra_bugs: Bugs,
    /// Most runs to spend on candidates.
    pub budget_runs: usize,
    /// Candidates run at once (the result does not depend on it).
    pub jobs: usize,
    /// Invariant to keep firing; default: the first one the run fired.
    pub invariant: Option<String>,
}

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions { extra_bugs: Bugs::default(), budget_runs: 300, jobs: 1, invariant: None }
    }
}

/// A shrunk failure.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// Chaos-free, planted bugs included, `seeds` = just this seed.
    pub scenario: Scenario,
    pub seed: u64,
    pub invariant: String,
    /// When it fires in the shrunk run.
    pub fired_at_ns: u64,
    /// The failing run as given (chaos counted as the faults it drew).
    pub before: Size,
    pub after: Size,
    /// How many of `before`'s faults chaos drew.
    pub drawn_faults: usize,
    pub runs: usize,
    /// Whether the budget ran out before no reduction was left.
    pub budget_spent: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ShrinkError {
    /// The run fired nothing: there is no failure to shrink.
    NothingFired { scenario: String, seed: u64 },
    /// `--invariant` names one the run did not fire.
    NotFired { invariant: String, fired: Vec<String> },
    /// The explicit form did not fail like the original (a determinism bug).
    NotReproduced { invariant: String },
}

impl fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShrinkError::NothingFired { scenario, seed } => write!(
                f,
                "seed {seed} of {scenario} fires no invariant, so there is nothing to shrink; \
                 pick a failing seed (a sweep prints `SEED=…`) or add the `--bug` it failed with"
            ),
            ShrinkError::NotFired { invariant, fired } => {
                write!(f, "the run does not fire `{invariant}`; it fires {}; pass one of those to --invariant", fired.join(", "))
            }
            ShrinkError::NotReproduced { invariant } => write!(
                f,
                "the failing seed, rewritten without chaos, no longer fires `{invariant}`: the explicit form should \
                 replay the same run; please report this scenario and seed to the leasesim developers"
            ),
        }
    }
}

/// Shrinks `seed` of `scenario` (run with `options.extra_bugs`).
pub fn shrink(scenario: &Scenario, seed: u64, options: &ShrinkOptions) -> Result<Shrunk, ShrinkError> {
    let original = run_seed(scenario, seed, &RunOptions { extra_bugs: options.extra_bugs, ..RunOptions::default() });
    let fired: Vec<String> = original.fired().into_iter().map(String::from).collect();
    let invariant = match &options.invariant {
        Some(id) if fired.contains(id) => id.clone(),
        Some(id) => return Err(ShrinkError::NotFired { invariant: id.clone(), fired }),
        None => fired.first().cloned().ok_or_else(|| ShrinkError::NothingFired { scenario: scenario.name.clone(), seed })?,
    };
    let base = explicit_with_bugs(scenario, seed, options.extra_bugs);
    let before = Size::of(&base);
    let drawn_faults = base.faults.len() - scenario.faults.len();
    let mut runner = Runner::new(seed, invariant.clone(), options.jobs, options.budget_runs.max(1));
    let outcome = runner.run(&base);
    if !runner.fires(&outcome) {
        return Err(ShrinkError::NotReproduced { invariant });
    }
    let mut best = Best { scenario: base, outcome };
    for _round in 0..4 {
        let mut progress = passes::shorten_phases(&mut runner, &mut best);
        progress |= passes::remove_faults(&mut runner, &mut best);
        progress |= passes::remove_clients(&mut runner, &mut best);
        progress |= passes::remove_servers(&mut runner, &mut best);
        progress |= passes::shorten_fors(&mut runner, &mut best);
        progress |= passes::simplify(&mut runner, &mut best);
        if !progress || runner.exhausted() {
            break;
        }
    }
    let fired_at_ns = first_firing(&best.outcome, &invariant);
    Ok(Shrunk {
        after: Size::of(&best.scenario),
        scenario: best.scenario,
        seed,
        invariant,
        fired_at_ns,
        before,
        drawn_faults,
        runs: runner.runs,
        budget_spent: runner.exhausted(),
    })
}

/// The seed's explicit scenario with every planted bug of the run in its
/// own `bugs`, named and described as a shrink of the original.
fn explicit_with_bugs(scenario: &Scenario, seed: u64, extra: Bugs) -> Scenario {
    let mut s = chaos::explicit(scenario, seed);
    for name in extra.enabled() {
        s.bugs.enable(name).expect("a name from Bugs::NAMES");
    }
    s.seeds = seed..seed + 1;
    s.name = format!("{}-shrunk", scenario.name);
    s
}

fn first_firing(outcome: &RunOutcome, invariant: &str) -> u64 {
    outcome.violations.iter().find(|v| v.invariant == invariant).map_or(0, |v| v.at_ns)
}
