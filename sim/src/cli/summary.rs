//! The per-scenario summary of a sweep (or of merged shards), built one run
//! at a time and of bounded size whatever the number of runs: counts and
//! sums, the invariants that fired, whether the expectation is met, and the
//! first few unexpected runs in full (for the terminal, JUnit and reports).
//!
//! Runs arrive as [`RunLine`]s: what `sweep --json` prints, read back. The
//! sweep reduces each finished run to one at once and drops the rest, so a
//! sweep of forty thousand seeds holds no more than a sweep of forty.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Unexpected runs kept in full per scenario (the lowest seeds); the rest
/// are counted.
pub const UNEXPECTED_KEPT: usize = 50;

/// One run as `sweep --json` prints it (the fields a summary needs).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RunLine {
    pub scenario: String,
    pub file: String,
    pub seed: u64,
    pub violations: Vec<ViolationLine>,
    pub expected: bool,
    /// Absent in results from before the field existed: read as `safe`.
    #[serde(default)]
    pub expected_violations: Vec<String>,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub replay: String,
    /// Planted bugs beyond the scenario's own (absent in older results).
    #[serde(default)]
    pub bugs: Vec<String>,
    #[serde(default)]
    pub trace_digest: String,
    /// The run's closest liveness margin (absent when it met no deadline,
    /// and in results from before the field existed).
    #[serde(default)]
    pub liveness_margin: Option<MarginLine>,
    /// Invariants a checker could not decide in the run (absent when every
    /// check decided, and in results from before the field existed).
    #[serde(default)]
    pub not_judged: Vec<NotJudgedLine>,
}

/// An invariant a run left undecided, as `sweep --json` prints it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct NotJudgedLine {
    pub invariant: String,
    pub needs: String,
}

/// A run's closest liveness margin, as `sweep --json` prints it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct MarginLine {
    pub deadline: String,
    pub margin: String,
    pub margin_ns: u64,
    /// The stated slack the margin should exceed (judge's
    /// `liveness_bounds::slack_ns`).
    pub slack_ns: u64,
    /// Whether the margin is below the slack: met by luck, not by design
    /// (absent in results from before the field existed: read off the two
    /// figures above).
    #[serde(default)]
    pub below_slack: bool,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ViolationLine {
    pub invariant: String,
    pub at: String,
    pub detail: String,
    pub assumptions_held: bool,
}

/// One scenario's runs, reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioSummary {
    pub name: String,
    pub file: String,
    pub runs: usize,
    pub clean: usize,
    /// Runs with a violation inside the stated assumptions.
    pub bugs: usize,
    /// Runs whose every violation broke an assumption.
    pub broken: usize,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    /// Invariant ids fired, in order of first firing.
    pub fired: Vec<String>,
    /// The scenario's `[expect] violations` (empty: it expects `safe`).
    pub expected_violations: Vec<String>,
    /// How many runs were not what the expectation allows.
    pub unexpected_runs: usize,
    /// The first [`UNEXPECTED_KEPT`] of them, by seed.
    pub unexpected: Vec<RunLine>,
    /// Whether some run fired one of `expected_violations`.
    expected_fired: bool,
    /// The liveness margin of any run nearest to (or furthest below) its
    /// stated slack, with its seed.
    pub closest_margin: Option<(MarginLine, u64)>,
    /// Runs whose closest margin is below the stated slack.
    pub within_slack: usize,
    /// Runs that left some invariant not judged, and the first by seed.
    pub not_judged_runs: usize,
    /// (seed, invariant, the command that replays it).
    pub first_not_judged: Option<(u64, String, String)>,
}

impl ScenarioSummary {
    fn new(name: &str, file: &str) -> Self {
        ScenarioSummary {
            name: name.to_string(),
            file: file.to_string(),
            runs: 0,
            clean: 0,
            bugs: 0,
            broken: 0,
            sim_seconds: 0.0,
            wall_seconds: 0.0,
            fired: Vec::new(),
            expected_violations: Vec::new(),
            unexpected_runs: 0,
            unexpected: Vec::new(),
            expected_fired: false,
            closest_margin: None,
            within_slack: 0,
            not_judged_runs: 0,
            first_not_judged: None,
        }
    }

    /// Counts one run in.
    pub fn add(&mut self, run: RunLine) {
        self.runs += 1;
        self.sim_seconds += run.sim_seconds;
        self.wall_seconds += run.wall_seconds;
        if run.violations.is_empty() {
            self.clean += 1;
        } else if run.violations.iter().any(|v| v.assumptions_held) {
            self.bugs += 1;
        } else {
            self.broken += 1;
        }
        for v in &run.violations {
            if !self.fired.contains(&v.invariant) {
                self.fired.push(v.invariant.clone());
            }
        }
        for id in &run.expected_violations {
            if !self.expected_violations.contains(id) {
                self.expected_violations.push(id.clone());
            }
        }
        if let Some(m) = &run.liveness_margin {
            self.within_slack += usize::from(m.margin_ns < m.slack_ns);
            // Nearest to its own slack (chaos knobs draw the slack per
            // seed): the run that is first to meet a deadline by luck.
            let to_slack = |m: &MarginLine| i128::from(m.margin_ns) - i128::from(m.slack_ns);
            let closer = self.closest_margin.as_ref().is_none_or(|(c, seed)| (to_slack(m), run.seed) < (to_slack(c), *seed));
            if closer {
                self.closest_margin = Some((m.clone(), run.seed));
            }
        }
        if let Some(n) = run.not_judged.first() {
            self.not_judged_runs += 1;
            if self.first_not_judged.as_ref().is_none_or(|(seed, _, _)| run.seed < *seed) {
                self.first_not_judged = Some((run.seed, n.invariant.clone(), run.replay.clone()));
            }
        }
        self.expected_fired |= run.violations.iter().any(|v| run.expected_violations.contains(&v.invariant));
        if !run.expected {
            self.unexpected_runs += 1;
            let at = self.unexpected.partition_point(|r| r.seed < run.seed);
            if at < UNEXPECTED_KEPT {
                self.unexpected.insert(at, run);
                self.unexpected.truncate(UNEXPECTED_KEPT);
            }
        }
    }

    /// Whether the runs meet the scenario's `[expect]`: no run outside it,
    /// and for a scenario that expects a violation, some run firing one.
    pub fn met(&self) -> bool {
        self.unexpected_runs == 0 && (self.expected_violations.is_empty() || self.expected_fired)
    }
}

/// Every scenario's summary, in the order their first runs arrived, each
/// (scenario, seed) counted once.
#[derive(Debug, Default)]
pub struct Summaries {
    scenarios: Vec<ScenarioSummary>,
    index: BTreeMap<(String, String), usize>,
    /// (scenario, seed) pairs already counted: eight bytes and a tree node
    /// per run, the one part that grows with the number of runs, and only
    /// where runs may repeat (merging shards, resuming).
    seen: Option<BTreeSet<(usize, u64)>>,
    pub duplicates: usize,
}

impl Summaries {
    /// Summaries that count every run they are given (a sweep never gives
    /// one twice).
    pub fn new() -> Self {
        Summaries::default()
    }

    /// Summaries that count a (scenario, seed) pair once, however often it
    /// comes (merged shards may overlap).
    pub fn deduplicating() -> Self {
        Summaries { seen: Some(BTreeSet::new()), ..Summaries::default() }
    }

    /// Makes sure `name` has a row even before any of its runs arrive.
    pub fn declare(&mut self, name: &str, file: &str) -> usize {
        let key = (file.to_string(), name.to_string());
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        self.scenarios.push(ScenarioSummary::new(name, file));
        self.index.insert(key, self.scenarios.len() - 1);
        self.scenarios.len() - 1
    }

    pub fn add(&mut self, run: RunLine) {
        let i = self.declare(&run.scenario, &run.file);
        if let Some(seen) = &mut self.seen {
            if !seen.insert((i, run.seed)) {
                self.duplicates += 1;
                return;
            }
        }
        self.scenarios[i].add(run);
    }

    pub fn scenarios(&self) -> &[ScenarioSummary] {
        &self.scenarios
    }

    /// Sorted by file, then name (merged shards: no arrival order to keep).
    pub fn sort_by_file(&mut self) {
        self.scenarios.sort_by(|a, b| (&a.file, &a.name).cmp(&(&b.file, &b.name)));
        self.index = self.scenarios.iter().enumerate().map(|(i, s)| ((s.file.clone(), s.name.clone()), i)).collect();
        self.seen = None;
    }

    pub fn runs(&self) -> usize {
        self.scenarios.iter().map(|s| s.runs).sum()
    }

    pub fn all_met(&self) -> bool {
        self.scenarios.iter().all(ScenarioSummary::met)
    }
}

/// The summary table; `made` (wall seconds, runs made in them) adds the
/// `x real` column and the throughput line (a merge leaves them out: its
/// shards ran elsewhere).
pub fn table(summaries: &[ScenarioSummary], made: Option<(f64, usize)>) -> String {
    let elapsed_seconds = made.map(|(wall, _)| wall);
    let width = summaries.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
    let real = if elapsed_seconds.is_some() { format!("  {:>6}", "x real") } else { String::new() };
    let mut out = format!(
        "{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8}{real}  expectation  fired\n",
        "scenario", "seeds", "clean", "bug", "broken", "sim s"
    );
    for s in summaries {
        let real = if elapsed_seconds.is_some() { format!("  {:>6.0}", s.sim_seconds / s.wall_seconds.max(1e-9)) } else { String::new() };
        out.push_str(&format!(
            "{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8.0}{real}  {:<11}  {}\n",
            s.name,
            s.runs,
            s.clean,
            s.bugs,
            s.broken,
            s.sim_seconds,
            if s.met() { "met" } else { "NOT MET" },
            s.fired.join(","),
        ));
    }
    let runs: usize = summaries.iter().map(|s| s.runs).sum();
    match made {
        Some((wall, made)) if made == runs => {
            out.push_str(&format!("{runs} runs in {wall:.1}s wall ({:.0} runs/min)\n", runs as f64 / wall.max(1e-9) * 60.0))
        }
        Some((wall, made)) => out.push_str(&format!(
            "{runs} runs, {made} of them made now in {wall:.1}s wall ({:.0} runs/min)\n",
            made as f64 / wall.max(1e-9) * 60.0
        )),
        None => out.push_str(&format!("{runs} runs in {} scenario(s)\n", summaries.len())),
    }
    out
}

/// Each scenario's closest liveness margin (nearest to its run's stated
/// slack) and how many runs met a deadline by less than the stated slack,
/// then how many runs left an invariant not judged (printed under the table).
pub fn margins(summaries: &[ScenarioSummary]) -> String {
    let width = summaries.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
    let mut out = format!("{:<width$}  {:>9}  {:>7}  {:>5}  {:>6}  deadline\n", "liveness", "closest", "slack", "seed", "within");
    for s in summaries {
        let Some((m, seed)) = &s.closest_margin else { continue };
        out.push_str(&format!(
            "{:<width$}  {:>9}  {:>7}  {:>5}  {:>6}  {}\n",
            s.name,
            m.margin,
            leasesim_core::fmt_secs(m.slack_ns),
            seed,
            s.within_slack,
            m.deadline
        ));
    }
    for s in summaries {
        let Some((seed, invariant, replay)) = &s.first_not_judged else { continue };
        out.push_str(&format!(
            "not judged: {} run(s) of {} left an invariant undecided (first: seed {seed}, {invariant}; `{replay}` says what it needs)\n",
            s.not_judged_runs, s.name
        ));
    }
    out
}

/// What the table's columns mean (printed under it on a terminal, and in
/// README.md).
pub const TABLE_LEGEND: &str = "seeds: runs; clean: no invariant fired; bug: some violation while every clock stayed within \
the scenario's drift_bound (a real bug); broken: violations only outside those assumptions; sim s: simulated seconds; \
x real: simulated time per wall second of one run's thread; expectation: the scenario's [expect] against these runs";

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, fired: &[&str], expected: bool, expects: &[&str]) -> RunLine {
        RunLine {
            scenario: "s".into(),
            file: "s.toml".into(),
            seed,
            violations: fired
                .iter()
                .map(|id| ViolationLine { invariant: id.to_string(), at: "1.000s".into(), detail: String::new(), assumptions_held: true })
                .collect(),
            expected,
            expected_violations: expects.iter().map(|s| s.to_string()).collect(),
            sim_seconds: 1.0,
            wall_seconds: 0.5,
            replay: format!("leasesim replay s.toml --seed {seed}"),
            bugs: Vec::new(),
            trace_digest: String::new(),
            liveness_margin: None,
            not_judged: Vec::new(),
        }
    }

    #[test]
    fn the_closest_margin_and_the_runs_within_slack_are_kept() {
        let mut all = Summaries::new();
        // Seed 4 has the smallest margin but a smaller slack (drawn by its
        // knobs): it met its deadline by 30 more than the slack, seed 2 by
        // 250 less.
        for (seed, margin_ns, slack_ns) in [(0, 900, 300), (1, 200, 300), (2, 50, 300), (3, 400, 300), (4, 40, 10)] {
            let mut line = run(seed, &[], true, &[]);
            let margin = leasesim_core::fmt_secs(margin_ns);
            let below_slack = margin_ns < slack_ns;
            line.liveness_margin = Some(MarginLine { deadline: format!("d{seed}"), margin, margin_ns, slack_ns, below_slack });
            all.add(line);
        }
        let s = &all.scenarios()[0];
        assert_eq!(s.closest_margin.as_ref().map(|(m, seed)| (m.margin_ns, *seed)), Some((50, 2)), "nearest to its slack");
        assert_eq!(s.within_slack, 2, "200 and 50 are below the slack of 300");
        assert!(margins(all.scenarios()).contains("d2"));
    }

    /// Runs that left an invariant undecided are counted, and the first by
    /// seed is named under the table with its replay command.
    #[test]
    fn runs_not_judged_are_counted_and_the_first_is_named() {
        let mut all = Summaries::new();
        for seed in [5, 3, 4] {
            let mut line = run(seed, &[], true, &[]);
            if seed != 4 {
                let needs = "a longer search".to_string();
                line.not_judged = vec![NotJudgedLine { invariant: "linearizable".into(), needs }];
            }
            all.add(line);
        }
        let s = &all.scenarios()[0];
        assert_eq!(s.not_judged_runs, 2);
        assert_eq!(s.clean, 3, "an undecided check is no violation");
        let printed = margins(all.scenarios());
        assert!(printed.contains("not judged: 2 run(s) of s") && printed.contains("`leasesim replay s.toml --seed 3`"), "{printed}");
    }

    #[test]
    fn a_safe_scenario_is_met_only_without_unexpected_runs() {
        let mut all = Summaries::new();
        all.add(run(0, &[], true, &[]));
        all.add(run(1, &[], true, &[]));
        assert!(all.all_met());
        all.add(run(2, &["fifo-order"], false, &[]));
        let s = &all.scenarios()[0];
        assert!(!s.met());
        assert_eq!((s.runs, s.clean, s.bugs, s.unexpected_runs), (3, 2, 1, 1));
        assert_eq!(s.fired, vec!["fifo-order".to_string()]);
    }

    #[test]
    fn a_violation_scenario_needs_some_run_to_fire_an_expected_id() {
        let mut all = Summaries::new();
        all.add(run(0, &[], true, &["fencing-order"]));
        assert!(!all.all_met(), "no seed fired fencing-order yet");
        all.add(run(1, &["fencing-order"], true, &["fencing-order"]));
        assert!(all.all_met());
    }

    #[test]
    fn unexpected_runs_are_counted_but_kept_only_up_to_the_bound() {
        let mut all = Summaries::new();
        for seed in (0..(UNEXPECTED_KEPT as u64 * 3)).rev() {
            all.add(run(seed, &["x"], false, &[]));
        }
        let s = &all.scenarios()[0];
        assert_eq!(s.unexpected_runs, UNEXPECTED_KEPT * 3);
        assert_eq!(s.unexpected.len(), UNEXPECTED_KEPT);
        assert_eq!(s.unexpected.first().map(|r| r.seed), Some(0), "the lowest seeds are kept");
    }

    #[test]
    fn deduplicating_summaries_count_a_seed_once() {
        let mut all = Summaries::deduplicating();
        all.add(run(3, &[], true, &[]));
        all.add(run(3, &[], true, &[]));
        assert_eq!((all.runs(), all.duplicates), (1, 1));
    }
}
