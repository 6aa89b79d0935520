//! The result of one run: the verdict, the violations, the trace digest and
//! the figures (`--json` prints one of these per run; SCENARIO-FORMAT.md).

use std::collections::BTreeMap;

use leasesim_core::bugs::Bugs;
use serde::Serialize;

use super::RunOptions;
use crate::world::Recorder;
pub use leasesim_judge::checkers::ViolationJson;
use leasesim_judge::checkers::{NotJudged, Violation};
use leasesim_judge::measures::{measure, Measures};
use leasesim_judge::observe::Obs;
use leasesim_judge::vocab::Proc;
use leasesim_judge::vocab::SimClock;
use leasesim_scenario::Scenario;

#[derive(Clone, Debug, Serialize)]
pub struct RunOutcome {
    pub scenario: String,
    pub file: String,
    pub seed: u64,
    /// `ok` or `violation`.
    pub verdict: &'static str,
    pub violations: Vec<ViolationJson>,
    /// Whether this run is what the scenario's `[expect]` allows (a run of a
    /// `violation` scenario may be clean; it may not fire other invariants).
    pub expected: bool,
    /// The scenario's `[expect] violations` (empty when it expects `safe`),
    /// so saved results can be judged without the file (`leasesim merge`).
    pub expected_violations: Vec<String>,
    pub trace_digest: String,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    /// Actor steps: messages handled and timers fired.
    pub events: u64,
    pub messages: u64,
    pub observations: usize,
    /// The highest commit index any server reached (entries committed).
    pub committed_index: u64,
    /// The command that replays this run: file, seed and every planted bug
    /// given beyond the scenario's own (the same text in the terminal,
    /// `SEED=` blocks, JSON, JUnit and the HTML report).
    pub replay: String,
    /// Planted bugs turned on beyond the scenario's own (`--bug`).
    pub bugs: Vec<String>,
    /// The engine knobs this seed drew (`[chaos] knobs = true`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knobs: Option<super::knobs::Knobs>,
    /// The closest margin by which the run met a liveness deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness_margin: Option<crate::cli::summary::MarginLine>,
    /// Invariants a checker could not decide in this run (a search that
    /// spent its step budget), with what judging them would need: never a
    /// silent "ok" (absent from the JSON line when every check decided).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<NotJudged>,
    /// The timing figures a real run measures too (`leasesim-real compare`
    /// sets them side by side), from what the clients saw.
    pub measures: Measures,
    #[serde(skip)]
    pub obs: Vec<Obs>,
    #[serde(skip)]
    pub clocks: BTreeMap<Proc, SimClock>,
    /// Where the run's time went, when `RunOptions::time_phases` asked.
    #[serde(skip)]
    pub phases: super::phases::PhaseTicks,
}

impl RunOutcome {
    #[allow(clippy::too_many_arguments)]
    pub fn judged(
        scenario: &Scenario,
        seed: u64,
        options: &RunOptions,
        recorder: Recorder,
        clocks: BTreeMap<Proc, SimClock>,
        end_ns: u64,
        committed_index: u64,
        violations: Vec<Violation>,
        wall_seconds: f64,
    ) -> Self {
        let violations: Vec<ViolationJson> = violations.iter().map(ViolationJson::from).collect();
        let observations = recorder.recorded;
        RunOutcome {
            scenario: scenario.name.clone(),
            file: scenario.path.display().to_string(),
            seed,
            verdict: if violations.is_empty() { "ok" } else { "violation" },
            expected: scenario.expect.verdict.allows(violations.iter().map(|v| v.invariant.as_str())),
            expected_violations: scenario.expect.verdict.expected_ids(),
            violations,
            trace_digest: format!("{:016x}", recorder.digest()),
            sim_seconds: end_ns as f64 / 1e9,
            wall_seconds,
            events: recorder.steps,
            messages: recorder.messages_sent,
            observations,
            committed_index,
            replay: replay_command(scenario, seed, &options.extra_bugs),
            bugs: bug_names(&options.extra_bugs),
            knobs: super::knobs::draw(scenario, seed),
            measures: measure(&recorder.obs),
            obs: if options.keep_observations { recorder.obs.into_vec() } else { Vec::new() },
            clocks,
            liveness_margin: None,
            not_judged: Vec::new(),
            phases: Default::default(),
        }
    }

    pub fn panicked(scenario: &Scenario, seed: u64, options: &RunOptions, message: String, wall_seconds: f64) -> Self {
        let violations = vec![ViolationJson {
            invariant: "engine-panic".to_string(),
            at: "?".to_string(),
            at_ns: 0,
            detail: message,
            assumptions_held: true,
        }];
        RunOutcome {
            scenario: scenario.name.clone(),
            file: scenario.path.display().to_string(),
            seed,
            verdict: "violation",
            expected: false,
            expected_violations: scenario.expect.verdict.expected_ids(),
            violations,
            trace_digest: String::new(),
            sim_seconds: 0.0,
            wall_seconds,
            events: 0,
            messages: 0,
            observations: 0,
            committed_index: 0,
            replay: replay_command(scenario, seed, &options.extra_bugs),
            bugs: bug_names(&options.extra_bugs),
            knobs: super::knobs::draw(scenario, seed),
            measures: Measures::default(),
            obs: Vec::new(),
            clocks: BTreeMap::new(),
            liveness_margin: None,
            not_judged: Vec::new(),
            phases: Default::default(),
        }
    }

    /// Invariant ids that fired, deduplicated, in order of first firing.
    pub fn fired(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for v in &self.violations {
            if !ids.contains(&v.invariant.as_str()) {
                ids.push(&v.invariant);
            }
        }
        ids
    }
}

/// The command that replays `seed` of `scenario` with `extra_bugs` on.
pub fn replay_command(scenario: &Scenario, seed: u64, extra_bugs: &Bugs) -> String {
    let mut command = format!("leasesim replay {} --seed {seed}", scenario.path.display());
    for bug in extra_bugs.enabled() {
        command.push_str(" --bug ");
        command.push_str(bug);
    }
    command
}

fn bug_names(bugs: &Bugs) -> Vec<String> {
    bugs.enabled().into_iter().map(String::from).collect()
}
