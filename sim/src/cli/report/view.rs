//! A simulated run's outcome → the report's `RunView`, through the view
//! builder both worlds share (`leasesim_reports::observed`): the simulator
//! adds what only it has (the trace digest, events, the fault numbers that
//! pair its link faults with their heals).

use leasesim_reports::observed::{self, ObservedRun};
use leasesim_reports::RunView;
use leasesim_scenario::Scenario;

use super::links;
use crate::run::setup::WALL_EPOCH_NS;
use crate::run::RunOutcome;

/// Builds the view of one run kept with `keep_observations`.
pub fn run_view(scenario: &Scenario, outcome: &RunOutcome) -> RunView {
    let obs = &outcome.obs;
    let end_ns = observed::end_of(obs, scenario.duration_ns + scenario.settle_ns);
    let (link_faults, link_note) = links::link_faults(obs, &links::fault_times(scenario, outcome.seed), end_ns);
    let view = observed::run_view(ObservedRun {
        obs,
        clocks: &outcome.clocks,
        wall_epoch_ns: WALL_EPOCH_NS,
        violations: &outcome.violations,
        settle_at_ns: scenario.duration_ns,
        end_ns,
        drift_bound: scenario.cluster.drift_bound,
        lock_keys: scenario.lock_keys().into_iter().map(String::from).collect(),
        link_faults,
        notes: link_note.into_iter().collect(),
    });
    RunView {
        scenario: outcome.scenario.clone(),
        file: outcome.file.clone(),
        seed: outcome.seed,
        verdict: outcome.verdict.to_string(),
        expected: outcome.expected,
        trace_digest: outcome.trace_digest.clone(),
        replay: outcome.replay.clone(),
        sim_seconds: outcome.sim_seconds,
        wall_seconds: outcome.wall_seconds,
        events: outcome.events,
        ..view
    }
}
