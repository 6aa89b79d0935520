//! `leasesim merge RESULTS.jsonl… [--junit F]`: the shards of a sweep
//! (each `sweep --shard I/N --json` writes JSON lines) become one summary
//! table and one exit code, as if one machine had swept every seed.
//!
//! Each scenario is judged by its runs' `expected` flags and, for a scenario
//! that expects a violation, by whether some seed fired one of its
//! `expected_violations` — all in the JSON, so merging needs no scenario
//! files. The same summary feeds `sweep --junit`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Deserialize;

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// JSON-lines files written by `leasesim sweep --json` (one per shard).
    #[arg(required = true, value_name = "RESULTS.jsonl")]
    pub files: Vec<PathBuf>,
    /// Also write a JUnit XML report (one testcase per scenario).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// One run as `sweep --json` prints it (the fields merge needs).
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
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ViolationLine {
    pub invariant: String,
    pub at: String,
    pub detail: String,
    pub assumptions_held: bool,
}

/// One scenario's runs and verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioSummary {
    pub name: String,
    pub file: String,
    /// In seed order.
    pub runs: Vec<RunLine>,
    pub met: bool,
    pub clean: usize,
    /// Runs with a violation inside the stated assumptions.
    pub bugs: usize,
    /// Runs whose every violation broke an assumption.
    pub broken: usize,
    pub sim_seconds: f64,
    /// Invariant ids fired, in seed order of first firing.
    pub fired: Vec<String>,
}

impl ScenarioSummary {
    pub fn unexpected(&self) -> impl Iterator<Item = &RunLine> {
        self.runs.iter().filter(|r| !r.expected)
    }

    pub fn wall_seconds(&self) -> f64 {
        self.runs.iter().map(|r| r.wall_seconds).sum()
    }
}

/// Groups runs by scenario (sorted by file, then name), each run once.
pub fn summarize(lines: Vec<RunLine>) -> Vec<ScenarioSummary> {
    let mut groups: BTreeMap<(String, String), BTreeMap<u64, RunLine>> = BTreeMap::new();
    for line in lines {
        groups.entry((line.file.clone(), line.scenario.clone())).or_default().entry(line.seed).or_insert(line);
    }
    groups
        .into_iter()
        .map(|((file, name), runs)| {
            let runs: Vec<RunLine> = runs.into_values().collect();
            let mut fired: Vec<String> = Vec::new();
            for v in runs.iter().flat_map(|r| &r.violations) {
                if !fired.contains(&v.invariant) {
                    fired.push(v.invariant.clone());
                }
            }
            let expects: BTreeSet<&String> = runs.iter().flat_map(|r| &r.expected_violations).collect();
            let all_allowed = runs.iter().all(|r| r.expected);
            let met = if expects.is_empty() {
                all_allowed
            } else {
                all_allowed && runs.iter().any(|r| r.violations.iter().any(|v| expects.contains(&v.invariant)))
            };
            ScenarioSummary {
                name,
                file,
                met,
                clean: runs.iter().filter(|r| r.violations.is_empty()).count(),
                bugs: runs.iter().filter(|r| r.violations.iter().any(|v| v.assumptions_held)).count(),
                broken: runs.iter().filter(|r| !r.violations.is_empty() && r.violations.iter().all(|v| !v.assumptions_held)).count(),
                sim_seconds: runs.iter().map(|r| r.sim_seconds).sum(),
                fired,
                runs,
            }
        })
        .collect()
}

/// Reads JSON lines; an error names the file and line.
pub fn read_lines(path: &Path) -> Result<Vec<RunLine>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| {
                format!("{}:{}: not a run of `leasesim sweep --json`: {e}; give the JSON lines a sweep printed", path.display(), i + 1)
            })
        })
        .collect()
}

/// The summary table (no wall-clock column: merged shards ran on different
/// machines, and the table must not depend on that).
pub fn table(summaries: &[ScenarioSummary]) -> String {
    let width = summaries.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
    let mut out = format!("{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8}  expectation  fired\n", "scenario", "seeds", "clean", "bug", "broken", "sim s");
    for s in summaries {
        out.push_str(&format!(
            "{:<width$}  {:>5}  {:>5}  {:>4}  {:>6}  {:>8.0}  {:<11}  {}\n",
            s.name,
            s.runs.len(),
            s.clean,
            s.bugs,
            s.broken,
            s.sim_seconds,
            if s.met { "met" } else { "NOT MET" },
            s.fired.join(","),
        ));
    }
    let runs: usize = summaries.iter().map(|s| s.runs.len()).sum();
    out.push_str(&format!("{runs} runs in {} scenario(s)\n", summaries.len()));
    out
}

pub fn merge_command(args: &MergeArgs) -> i32 {
    let mut lines = Vec::new();
    for path in &args.files {
        match read_lines(path) {
            Ok(mut more) => lines.append(&mut more),
            Err(message) => {
                eprintln!("{message}");
                return 2;
            }
        }
    }
    let total = lines.len();
    let summaries = summarize(lines);
    let kept: usize = summaries.iter().map(|s| s.runs.len()).sum();
    if kept < total {
        eprintln!("note: {} duplicate run(s) (same scenario and seed in two shards) counted once", total - kept);
    }
    for s in &summaries {
        for r in s.unexpected().take(5) {
            println!("SEED={} scenario={}", r.seed, r.scenario);
            println!("replay: {}", r.replay);
            for v in r.violations.iter().take(3) {
                println!("  {} at {}: {}", v.invariant, v.at, v.detail);
            }
        }
    }
    print!("{}", table(&summaries));
    if let Some(path) = &args.junit {
        if let Err(message) = super::junit::write(path, &summaries, "leasesim merge", "") {
            eprintln!("{message}");
            return 2;
        }
    }
    i32::from(summaries.iter().any(|s| !s.met))
}
