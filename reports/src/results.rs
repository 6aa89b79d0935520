//! Saved results: the JSON lines `leasesim sweep --json` and
//! `leasesim run --json` print, one object per run (SCENARIO-FORMAT.md,
//! "--json"). Reading them is how a sweep summary is rendered later, on
//! another machine, or across the shards of a CI matrix.
//!
//! Fields beyond the contract's are optional, so results from older or
//! newer builds still render; a line that is not a run is an error naming
//! its file and line.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViolationResult {
    pub invariant: String,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub at_ns: u64,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub assumptions_held: bool,
}

/// One run, as `--json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub scenario: String,
    pub seed: u64,
    /// `ok` or `violation`.
    pub verdict: String,
    #[serde(default)]
    pub violations: Vec<ViolationResult>,
    /// Whether the run is what the scenario's `[expect]` allows; results
    /// without it count a clean run as expected and a violation as not.
    #[serde(default)]
    pub expected: Option<bool>,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub trace_digest: String,
    #[serde(default)]
    pub sim_seconds: f64,
    #[serde(default)]
    pub wall_seconds: f64,
    #[serde(default)]
    pub events: u64,
    #[serde(default)]
    pub replay: String,
    /// Planted bugs the run had beyond its scenario's own (`--bug`), so the
    /// commands this report prints reproduce it. `--json` output lacks
    /// them; the sweep's own report fills them in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bugs: Vec<String>,
}

impl RunResult {
    pub fn is_expected(&self) -> bool {
        self.expected.unwrap_or(self.violations.is_empty())
    }

    /// The command that re-runs this seed; built from the file when the
    /// result does not carry one.
    pub fn replay_command(&self) -> String {
        let base =
            if !self.replay.is_empty() { self.replay.clone() } else { format!("leasesim replay {} --seed {}", self.file, self.seed) };
        with_bug_flags(base, &self.bugs)
    }

    /// The command that writes this seed's timeline report.
    pub fn report_command(&self, dir: &str) -> String {
        with_bug_flags(format!("leasesim run {} --seed {} --report {dir}", self.file, self.seed), &self.bugs)
    }
}

/// `command --bug a --bug b`, skipping flags the command already has.
pub fn with_bug_flags(mut command: String, bugs: &[String]) -> String {
    for bug in bugs {
        let flag = format!(" --bug {bug}");
        if !command.contains(&flag) {
            command.push_str(&flag);
        }
    }
    command
}

/// A results file that cannot be read as runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultsError {
    pub file: String,
    /// 1-based; 0 when the file as a whole is the problem.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ResultsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for ResultsError {}

/// Parses JSON lines (blank lines allowed). `file` names the source in
/// errors.
pub fn parse_results(file: &str, text: &str) -> Result<Vec<RunResult>, ResultsError> {
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| ResultsError { file: file.to_string(), line: i + 1, message };
        if !line.starts_with('{') {
            return Err(err(format!(
                "not a JSON object: `{}`; give the JSON lines that `leasesim sweep --json` or `leasesim run --json` print",
                clip(line)
            )));
        }
        let run: RunResult = serde_json::from_str(line).map_err(|e| err(format!("not a leasesim run result: {e}")))?;
        runs.push(run);
    }
    if runs.is_empty() {
        return Err(ResultsError {
            file: file.to_string(),
            line: 0,
            message: "holds no run results; give the output of `leasesim sweep --json`".into(),
        });
    }
    Ok(runs)
}

fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(60).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"scenario":"holder-pause-unfenced","file":"scenarios/holder-pause-unfenced.toml","seed":3,"verdict":"violation","violations":[{"invariant":"fencing-order","at":"10.005s","at_ns":10005000000,"detail":"x","assumptions_held":true}],"expected":true,"trace_digest":"5dd2","sim_seconds":28.0,"wall_seconds":0.1,"events":4888,"messages":1,"observations":1846,"replay":"leasesim replay scenarios/holder-pause-unfenced.toml --seed 3"}"#;

    #[test]
    fn reads_what_sweep_json_prints() {
        let runs = parse_results("r.jsonl", &format!("{LINE}\n\n{LINE}\n")).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].violations[0].invariant, "fencing-order");
        assert!(runs[0].is_expected());
        assert_eq!(runs[0].report_command("out"), "leasesim run scenarios/holder-pause-unfenced.toml --seed 3 --report out");
        let planted = RunResult { bugs: vec!["no-promote-extension".into()], ..runs[0].clone() };
        assert_eq!(planted.replay_command(), "leasesim replay scenarios/holder-pause-unfenced.toml --seed 3 --bug no-promote-extension");
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let e = parse_results("r.jsonl", &format!("{LINE}\n{{\"seed\": 1}}\n")).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("r.jsonl", 2));
        assert!(e.to_string().starts_with("r.jsonl:2: not a leasesim run result"), "{e}");
        let e = parse_results("r.jsonl", "scenario  seeds\n").unwrap_err();
        assert!(e.to_string().contains("r.jsonl:1: not a JSON object"), "{e}");
        assert_eq!(parse_results("e.jsonl", "\n").unwrap_err().line, 0);
    }
}
