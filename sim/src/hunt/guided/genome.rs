//! One input of the guided hunt: what a seed of a chaos scenario decides
//! (its faults, clock drifts and engine knobs) held as data, so it can be
//! mutated, plus the seed the run itself is driven by. An unmutated genome
//! is exactly the seed's run (`from_seed`); any genome becomes an ordinary
//! scenario file without `[chaos]` (`scenario`), which is how every guided
//! run stays replayable from a file and a seed.

use leasesim_scenario::{Scenario, ScheduledFault};

use crate::run::chaos::{self, Decided};
use crate::run::knobs::{self, Knobs};

#[derive(Clone, Debug)]
pub struct Genome {
    /// Index of the chaos scenario it was drawn from.
    pub base: usize,
    /// The seed the run is driven by (scheduling, latencies, workloads).
    pub seed: u64,
    /// The chaos decision, mutated: faults in time order, drifts, and the
    /// chaos rates the seed drew (kept for the record only).
    pub decided: Decided,
    pub knobs: Option<Knobs>,
    /// The mutations that made it, oldest first ("seed 17 of
    /// chaos-failover" for a fresh draw).
    pub lineage: Vec<String>,
}

impl Genome {
    /// What `seed` of `scenarios[base]` draws; `None` without `[chaos]`.
    pub fn from_seed(scenarios: &[Scenario], base: usize, seed: u64) -> Option<Genome> {
        let scenario = &scenarios[base];
        let decided = chaos::decide(scenario, seed)?;
        let knobs = knobs::draw(scenario, seed);
        Some(Genome { base, seed, decided, knobs, lineage: vec![format!("seed {seed} of {}", scenario.name)] })
    }

    /// The scenario this genome runs: its base with the faults, drifts and
    /// knobs written in and `[chaos]` gone, named after `name`.
    pub fn scenario(&self, scenarios: &[Scenario], name: &str) -> Scenario {
        let base = &scenarios[self.base];
        let mut out = chaos::explicit_from(base, self.decided.clone(), self.knobs.as_ref());
        out.name = name.to_string();
        out
    }

    /// Faults a mutation may move, stretch, drop or copy: all but
    /// membership changes, whose order among themselves the replacement
    /// draw made valid (a server added before it is removed).
    pub fn mutable_faults(&self) -> Vec<usize> {
        let faults = &self.decided.faults;
        (0..faults.len()).filter(|&i| movable(&faults[i])).collect()
    }
}

pub fn movable(fault: &ScheduledFault) -> bool {
    !matches!(fault.action, leasesim_scenario::FaultAction::Add(_) | leasesim_scenario::FaultAction::Remove(_))
}
