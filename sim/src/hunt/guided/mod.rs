//! Coverage-guided search for a bug's first failing run, as coverage-guided
//! fuzzers search (AFL, libFuzzer; for distributed systems, Mallory and
//! Jepsen-style nemesis fuzzing): instead of drawing a fresh seed for every
//! run, keep a corpus of the runs that reached something new ([`coverage`])
//! and mostly run mutations of them ([`mutate`]): their fault schedules and
//! engine knobs moved a little, so a run that came near a rare succession
//! of events is tried again from nearby.
//!
//! The first pass runs seed `seeds.start` of every scenario, exactly as the
//! random search does, so a bug the first seeds find is found at the same
//! run. After it, each run is a fresh seed (the random search's next one)
//! with probability `explore`, else a mutation of a corpus entry.
//!
//! Every run is replayable: a genome is an ordinary scenario without
//! `[chaos]` plus a seed ([`genome`]); the corpus entries and the failure
//! are written as files whose `# Replay:` line reproduces the run, digest
//! and all. One run at a time, so a search is the same whatever the
//! machine (only a wall budget running out depends on its speed).

pub mod corpus;
pub mod coverage;
pub mod genome;
pub mod mutate;

use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use leasesim_core::bugs::Bugs;
use leasesim_core::seed::{derive_seed, Stream};
use leasesim_scenario::Scenario;

use super::search::{Search, Unattributed};
use crate::run::{run_seed, RunOptions, RunOutcome};
use corpus::Corpus;
use genome::Genome;

/// How a guided search runs.
#[derive(Clone, Debug)]
pub struct GuidedOptions {
    /// Fresh seeds come from here, interleaved over the scenarios as in the
    /// random search; the search's own choices are drawn from `seeds.start`.
    pub seeds: Range<u64>,
    /// Runs at most (with the bug on; control runs are not counted).
    pub max_runs: usize,
    pub budget: Option<Duration>,
    /// Probability that a run after the first pass is a fresh seed.
    pub explore: f64,
    /// Where to write the corpus and the failure (`<dir>/<run>.toml`).
    pub corpus_dir: Option<PathBuf>,
}

/// What a guided search found, with the corpus it grew.
#[derive(Debug)]
pub struct Guided {
    pub search: Search,
    pub corpus: Corpus,
    /// The failing genome's scenario file (written when there is a corpus
    /// directory) and its replay command.
    pub found_file: Option<PathBuf>,
}

/// Searches for a failure with `bugs` on, guided by coverage.
pub fn first_failure(scenarios: &[Scenario], bugs: Bugs, options: &GuidedOptions) -> Guided {
    let started = Instant::now();
    let mut state = State::new(scenarios, bugs, options);
    let mut runs = 0;
    while runs < options.max_runs && options.budget.is_none_or(|b| started.elapsed() < b) {
        let Some(genome) = state.next_genome() else { break };
        runs += 1;
        if let Some(found) = state.try_genome(&genome, runs) {
            let search = Search { found: Some(found.0), runs, wall: started.elapsed(), failing_without_bug: state.unattributed };
            return Guided { search, corpus: state.corpus, found_file: found.1 };
        }
    }
    let search = Search { found: None, runs, wall: started.elapsed(), failing_without_bug: state.unattributed };
    Guided { search, corpus: state.corpus, found_file: None }
}

/// One search's moving parts.
struct State<'a> {
    scenarios: &'a [Scenario],
    bugs: Bugs,
    options: &'a GuidedOptions,
    rng: ChaCha8Rng,
    /// Fresh seeds drawn so far (position in the interleaved order).
    fresh: usize,
    /// Mutations made so far of each scenario's entries.
    mutated: Vec<usize>,
    corpus: Corpus,
    unattributed: Vec<Unattributed>,
}

impl<'a> State<'a> {
    fn new(scenarios: &'a [Scenario], bugs: Bugs, options: &'a GuidedOptions) -> State<'a> {
        let rng = ChaCha8Rng::seed_from_u64(derive_seed(options.seeds.start, Stream::Chaos, 1));
        let mutated = vec![0; scenarios.len()];
        State { scenarios, bugs, options, rng, fresh: 0, mutated, corpus: Corpus::default(), unattributed: Vec::new() }
    }

    /// A fresh seed during the first pass, with probability `explore` or
    /// when nothing is in the corpus; else a mutation of an entry.
    fn next_genome(&mut self) -> Option<Genome> {
        let first_pass = self.fresh < self.scenarios.len();
        if first_pass || self.corpus.entries.is_empty() || self.rng.gen_bool(self.options.explore) {
            return self.fresh_genome();
        }
        let base = self.corpus.next_base(&self.mutated)?;
        self.mutated[base] += 1;
        let parent = self.corpus.pick(base, &mut self.rng)?;
        let donor = self.corpus.donor(parent, &mut self.rng).cloned();
        Some(mutate::mutate(&self.corpus.entries[parent].genome, donor.as_ref(), self.scenarios, &mut self.rng))
    }

    /// The random search's next seed, as a genome; `None` when the seed
    /// range is spent.
    fn fresh_genome(&mut self) -> Option<Genome> {
        let count = self.scenarios.len().max(1);
        let seed = self.options.seeds.start + (self.fresh / count) as u64;
        if seed >= self.options.seeds.end {
            return None;
        }
        let base = self.fresh % count;
        self.fresh += 1;
        Genome::from_seed(self.scenarios, base, seed)
    }

    /// Runs `genome` (run number `run`): the failure and its file if it
    /// fails with the bug and not without; else offers its coverage.
    fn try_genome(&mut self, genome: &Genome, run: usize) -> Option<((Scenario, RunOutcome), Option<PathBuf>)> {
        let name = format!("{}-guided-{run}", self.scenarios[genome.base].name);
        let mut scenario = genome.scenario(self.scenarios, &name);
        let file = self.options.corpus_dir.as_ref().map(|dir| dir.join(format!("{run:05}.toml")));
        if let Some(path) = &file {
            // Named before the run, so the run's own `replay` field names
            // the file that will hold it.
            scenario.path = path.clone();
        }
        let options = RunOptions { extra_bugs: self.bugs, keep_observations: true, ..RunOptions::default() };
        let outcome = run_seed(&scenario, genome.seed, &options);
        let digest = outcome.trace_digest.clone();
        if !outcome.violations.is_empty() {
            let control = run_seed(&scenario, genome.seed, &RunOptions::default());
            if control.violations.is_empty() {
                let written = file.filter(|_| self.write(&mut scenario, genome, &digest, "the first failing run"));
                return Some(((scenario, outcome), written));
            }
            let fired = control.fired().into_iter().map(String::from).collect();
            self.unattributed.push(Unattributed { position: run - 1, file: scenario.path.clone(), seed: genome.seed, fired });
        }
        let features = coverage::features(&outcome.obs);
        let note = format!("run {run} reached new coverage");
        let grows = self.corpus.would_grow(&features);
        let written = file.filter(|_| grows && self.write(&mut scenario, genome, &digest, &note));
        self.corpus.offer(genome, &digest, features, written);
        None
    }

    fn write(&self, scenario: &mut Scenario, genome: &Genome, digest: &str, note: &str) -> bool {
        match corpus::write(scenario, genome, &self.bugs, digest, note) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{e}");
                false
            }
        }
    }
}
