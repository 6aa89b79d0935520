//! A sweep, summarised per scenario: which seeds ran, how many were clean,
//! which invariants fired and whether as a bug or with an assumption
//! broken, the first failing seeds with the commands that replay them, and
//! simulated against wall time. Both the Markdown and the HTML sweep
//! reports render this one summary.

use std::collections::BTreeMap;

use crate::results::RunResult;

/// How many failing seeds each scenario lists.
pub const FAILING_LISTED: usize = 5;

/// A scenario's `[expect]`, when the scenario file could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Safe,
    Violation(Vec<String>),
}

impl Expect {
    pub fn describe(&self) -> String {
        match self {
            Expect::Safe => "safe".to_string(),
            Expect::Violation(ids) => format!("violation ({})", ids.join(", ")),
        }
    }

    /// The sweep's rule: every run allowed, and for a `violation`
    /// expectation some run fired one of the expected invariants.
    pub fn met(&self, runs: &[&RunResult]) -> bool {
        let all_allowed = runs.iter().all(|r| r.is_expected());
        match self {
            Expect::Safe => all_allowed,
            Expect::Violation(ids) => all_allowed && runs.iter().any(|r| r.violations.iter().any(|v| ids.contains(&v.invariant))),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InvariantSummary {
    pub id: String,
    /// Runs where it fired inside the stated assumptions.
    pub bug_runs: usize,
    /// Runs where it fired only with an assumption broken.
    pub broken_runs: usize,
    pub violations: usize,
    pub first_seed: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FailingSeed {
    pub seed: u64,
    /// Allowed by the scenario's expectation (a planted violation).
    pub expected: bool,
    pub invariants: Vec<String>,
    pub first_detail: String,
    pub replay: String,
    pub report_command: String,
    /// The run report written for it, relative to the sweep report.
    pub report_file: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioSummary {
    pub name: String,
    pub file: String,
    pub seeds: Vec<u64>,
    pub clean: usize,
    pub bug_runs: usize,
    pub broken_runs: usize,
    pub unexpected: usize,
    pub expect: Option<Expect>,
    /// `Some(met)` when the expectation is known.
    pub met: Option<bool>,
    pub invariants: Vec<InvariantSummary>,
    /// Unexpected failures first, then expected ones, by seed.
    pub failing: Vec<FailingSeed>,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct SweepSummary {
    pub scenarios: Vec<ScenarioSummary>,
    /// Where the runs came from (results files, or "this sweep").
    pub sources: Vec<String>,
    /// Runs seen twice with the same digest (e.g. overlapping shards).
    pub duplicates: usize,
    /// The sweep's own elapsed time, when known (runs overlap on threads).
    pub elapsed_seconds: Option<f64>,
    /// Where run reports were written from, to show in commands.
    pub report_dir: String,
}

impl ScenarioSummary {
    pub fn runs(&self) -> usize {
        self.seeds.len()
    }
}

impl SweepSummary {
    /// Summarises `runs` (in the order given; scenarios in order of first
    /// appearance). `expects` is keyed by scenario name; `reports` maps
    /// (scenario, seed) to a written run report.
    pub fn new(
        runs: &[RunResult],
        expects: &BTreeMap<String, Expect>,
        reports: &BTreeMap<(String, u64), String>,
        report_dir: &str,
    ) -> Self {
        let mut order: Vec<String> = Vec::new();
        let mut by_scenario: BTreeMap<String, Vec<&RunResult>> = BTreeMap::new();
        let mut seen: BTreeMap<(String, u64, String), ()> = BTreeMap::new();
        let mut duplicates = 0;
        for run in runs {
            if seen.insert((run.scenario.clone(), run.seed, run.trace_digest.clone()), ()).is_some() {
                duplicates += 1;
                continue;
            }
            if !by_scenario.contains_key(&run.scenario) {
                order.push(run.scenario.clone());
            }
            by_scenario.entry(run.scenario.clone()).or_default().push(run);
        }
        let scenarios = order.iter().map(|name| summarise(name, &by_scenario[name], expects.get(name), reports, report_dir)).collect();
        SweepSummary { scenarios, sources: Vec::new(), duplicates, elapsed_seconds: None, report_dir: report_dir.to_string() }
    }

    pub fn runs(&self) -> usize {
        self.scenarios.iter().map(|s| s.runs()).sum()
    }

    /// Scenarios worth a section: those that failed their expectation (or
    /// had unexpected runs) first, then those that fired anything at all.
    pub fn sections(&self) -> Vec<&ScenarioSummary> {
        let failed = |s: &&ScenarioSummary| s.met == Some(false) || s.unexpected > 0;
        let mut out: Vec<&ScenarioSummary> = self.scenarios.iter().filter(failed).collect();
        out.extend(self.scenarios.iter().filter(|s| !failed(s) && !s.invariants.is_empty()));
        out
    }

    pub fn unexpected(&self) -> usize {
        self.scenarios.iter().map(|s| s.unexpected).sum()
    }

    pub fn sim_seconds(&self) -> f64 {
        self.scenarios.iter().map(|s| s.sim_seconds).sum()
    }

    pub fn wall_seconds(&self) -> f64 {
        self.scenarios.iter().map(|s| s.wall_seconds).sum()
    }
}

fn summarise(
    name: &str,
    runs: &[&RunResult],
    expect: Option<&Expect>,
    reports: &BTreeMap<(String, u64), String>,
    report_dir: &str,
) -> ScenarioSummary {
    let mut runs = runs.to_vec();
    runs.sort_by_key(|r| r.seed);
    let mut invariants: BTreeMap<String, InvariantSummary> = BTreeMap::new();
    for run in &runs {
        let mut fired: BTreeMap<&str, (bool, usize)> = BTreeMap::new();
        for v in &run.violations {
            let entry = fired.entry(&v.invariant).or_insert((false, 0));
            entry.0 |= v.assumptions_held;
            entry.1 += 1;
        }
        for (id, (any_bug, count)) in fired {
            let s = invariants.entry(id.to_string()).or_insert(InvariantSummary {
                id: id.to_string(),
                bug_runs: 0,
                broken_runs: 0,
                violations: 0,
                first_seed: run.seed,
            });
            if any_bug {
                s.bug_runs += 1;
            } else {
                s.broken_runs += 1;
            }
            s.violations += count;
        }
    }
    let mut failing: Vec<&RunResult> = runs.iter().copied().filter(|r| !r.violations.is_empty() || !r.is_expected()).collect();
    failing.sort_by_key(|r| (r.is_expected(), r.seed));
    let failing = failing
        .into_iter()
        .take(FAILING_LISTED)
        .map(|r| {
            let mut ids: Vec<String> = Vec::new();
            for v in &r.violations {
                if !ids.contains(&v.invariant) {
                    ids.push(v.invariant.clone());
                }
            }
            FailingSeed {
                seed: r.seed,
                expected: r.is_expected(),
                invariants: ids,
                first_detail: r.violations.first().map(|v| format!("{} at {}: {}", v.invariant, v.at, v.detail)).unwrap_or_default(),
                replay: r.replay_command(),
                report_command: r.report_command(report_dir),
                report_file: reports.get(&(r.scenario.clone(), r.seed)).cloned(),
            }
        })
        .collect();
    ScenarioSummary {
        name: name.to_string(),
        file: runs.first().map(|r| r.file.clone()).unwrap_or_default(),
        seeds: runs.iter().map(|r| r.seed).collect(),
        clean: runs.iter().filter(|r| r.violations.is_empty()).count(),
        bug_runs: runs.iter().filter(|r| r.violations.iter().any(|v| v.assumptions_held)).count(),
        broken_runs: runs.iter().filter(|r| !r.violations.is_empty() && r.violations.iter().all(|v| !v.assumptions_held)).count(),
        unexpected: runs.iter().filter(|r| !r.is_expected()).count(),
        met: expect.map(|e| e.met(&runs)),
        expect: expect.cloned(),
        invariants: invariants.into_values().collect(),
        failing,
        sim_seconds: runs.iter().map(|r| r.sim_seconds).sum(),
        wall_seconds: runs.iter().map(|r| r.wall_seconds).sum(),
    }
}

/// Seeds as ranges in the CLI's own notation: `0..8, 12, 20..22`.
pub fn seed_ranges(seeds: &[u64]) -> String {
    let mut sorted = seeds.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j == i { start.to_string() } else { format!("{start}..{}", sorted[j] + 1) });
        i = j + 1;
    }
    parts.join(", ")
}

/// "met", "NOT MET", or the count of unexpected runs when the expectation
/// itself is unknown (the scenario file could not be read).
pub fn expectation_cell(s: &ScenarioSummary) -> String {
    match s.met {
        Some(true) => "met".to_string(),
        Some(false) => "NOT MET".to_string(),
        None if s.unexpected == 0 => "no unexpected runs".to_string(),
        None => format!("{} unexpected", s.unexpected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ViolationResult;

    fn run(scenario: &str, seed: u64, fired: &[(&str, bool)], expected: bool) -> RunResult {
        RunResult {
            scenario: scenario.into(),
            seed,
            verdict: if fired.is_empty() { "ok" } else { "violation" }.into(),
            violations: fired
                .iter()
                .map(|(id, held)| ViolationResult {
                    invariant: id.to_string(),
                    at: "1.000s".into(),
                    at_ns: 1,
                    detail: "d".into(),
                    assumptions_held: *held,
                })
                .collect(),
            expected: Some(expected),
            bugs: vec![],
            file: format!("scenarios/{scenario}.toml"),
            trace_digest: format!("{seed:x}"),
            sim_seconds: 10.0,
            wall_seconds: 0.1,
            events: 1,
            replay: String::new(),
        }
    }

    #[test]
    fn counts_bugs_and_broken_assumptions_per_invariant() {
        let runs = vec![
            run("a", 2, &[("fencing-order", true)], true),
            run("a", 0, &[], true),
            run("a", 1, &[("fencing-order", false), ("liveness", false)], false),
            run("a", 1, &[("fencing-order", false), ("liveness", false)], false),
            run("b", 0, &[], true),
        ];
        let expects = BTreeMap::from([("a".to_string(), Expect::Violation(vec!["fencing-order".into()]))]);
        let s = SweepSummary::new(&runs, &expects, &BTreeMap::new(), "reports");
        assert_eq!(s.duplicates, 1);
        assert_eq!(s.runs(), 4);
        let a = &s.scenarios[0];
        assert_eq!((a.clean, a.bug_runs, a.broken_runs, a.unexpected), (1, 1, 1, 1));
        assert_eq!(a.met, Some(false), "seed 1 fired liveness, which is not allowed");
        let fencing = &a.invariants[0];
        assert_eq!((fencing.id.as_str(), fencing.bug_runs, fencing.broken_runs, fencing.first_seed), ("fencing-order", 1, 1, 1));
        assert_eq!(a.failing.iter().map(|f| (f.seed, f.expected)).collect::<Vec<_>>(), vec![(1, false), (2, true)]);
        assert_eq!(a.failing[0].replay, "leasesim replay scenarios/a.toml --seed 1");
        assert_eq!(s.scenarios[1].met, None);
        assert_eq!(s.sections().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["a"], "b fired nothing");
        assert_eq!(expectation_cell(&s.scenarios[1]), "no unexpected runs");
    }

    #[test]
    fn seeds_read_as_ranges() {
        assert_eq!(seed_ranges(&[3, 0, 1, 2, 7, 9, 10]), "0..4, 7, 9..11");
        assert_eq!(seed_ranges(&[]), "");
    }
}
