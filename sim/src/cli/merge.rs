//! `leasesim merge RESULTS.jsonl… [--junit F]`: the shards of a sweep
//! (each `sweep --shard I/N --json` writes JSON lines) become one summary
//! table and one exit code, as if one machine had swept every seed.
//!
//! Each scenario is judged by its runs' `expected` flags and, for a scenario
//! that expects a violation, by whether some seed fired one of its
//! `expected_violations` — all in the JSON, so merging needs no scenario
//! files. The same summary feeds `sweep --junit`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use clap::Args;

use super::summary::{table, RunLine, Summaries};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// JSON-lines files written by `leasesim sweep --json` (one per shard).
    #[arg(required = true, value_name = "RESULTS.jsonl")]
    pub files: Vec<PathBuf>,
    /// Also write a JUnit XML report (one testcase per scenario).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also exit 1 if any run met a liveness deadline by less than the
    /// stated slack (two maximum election timeouts plus 100 ms): met by
    /// luck, an oracle about to fire on a harmless schedule shift.
    #[arg(long)]
    pub fail_below_slack: bool,
}

/// Reads a results file line by line into `summaries`; an error names the
/// file and line. A last line cut short (a sweep killed mid-write) is
/// skipped with a note: every line before it is whole.
pub fn read_into(path: &Path, summaries: &mut Summaries) -> Result<usize, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let (mut number, mut read) = (0, 0);
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        if n == 0 {
            return Ok(read);
        }
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<RunLine>(&line) {
            Ok(run) => {
                summaries.add(run);
                read += 1;
            }
            Err(_) if !line.ends_with('\n') => {
                eprintln!("note: {}:{number}: the last line is cut short (a sweep killed mid-write?); skipped", path.display());
            }
            Err(e) => {
                return Err(format!(
                    "{}:{number}: not a run of `leasesim sweep --json`: {e}; give the JSON lines a sweep printed",
                    path.display()
                ))
            }
        }
    }
}

pub fn merge_command(args: &MergeArgs) -> i32 {
    let mut summaries = Summaries::deduplicating();
    for path in &args.files {
        if let Err(message) = read_into(path, &mut summaries) {
            eprintln!("{message}");
            return 2;
        }
    }
    if summaries.duplicates > 0 {
        eprintln!("note: {} duplicate run(s) (same scenario and seed in two shards) counted once", summaries.duplicates);
    }
    summaries.sort_by_file();
    for s in summaries.scenarios() {
        for r in s.unexpected.iter().take(5) {
            println!("SEED={} scenario={}", r.seed, r.scenario);
            println!("replay: {}", r.replay);
            for v in r.violations.iter().take(3) {
                println!("  {} at {}: {}", v.invariant, v.at, v.detail);
            }
        }
    }
    print!("{}{}", table(summaries.scenarios(), None), super::summary::margins(summaries.scenarios()));
    if let Some(path) = &args.junit {
        if let Err(message) = super::junit::write(path, summaries.scenarios(), "leasesim merge") {
            eprintln!("{message}");
            return 2;
        }
    }
    let narrow = if args.fail_below_slack { below_slack(summaries.scenarios()) } else { Vec::new() };
    for line in &narrow {
        println!("{line}");
    }
    i32::from(!summaries.all_met() || !narrow.is_empty())
}

/// One line per scenario with runs that met a liveness deadline by less
/// than the stated slack.
fn below_slack(scenarios: &[super::summary::ScenarioSummary]) -> Vec<String> {
    scenarios
        .iter()
        .filter(|s| s.within_slack > 0)
        .map(|s| {
            let closest = s.closest_margin.as_ref().map_or(String::new(), |(m, seed)| {
                format!(" (closest: seed {seed}, {} against {}: {})", m.margin, leasesim_core::fmt_secs(m.slack_ns), m.deadline)
            });
            format!("below the stated slack: {} run(s) of {} met a liveness deadline by less than it{closest}", s.within_slack, s.name)
        })
        .collect()
}
