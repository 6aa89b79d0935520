//! The `leasesim` command line (clap). Exit codes: 0 = as expected,
//! 1 = a violation or an expectation not met, 2 = bad input (file, flag).

pub mod bench;
pub mod check_history;
pub mod fisher;
pub mod hunt;
pub mod junit;
pub mod merge;
mod progress;
pub mod report;
mod run;
pub mod shrink;
pub mod study;
pub mod summary;
mod sweep;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use leasesim_core::bugs::Bugs;

pub use run::{replay_command, run_command};
pub use sweep::sweep_command;

#[derive(Parser, Debug)]
#[command(name = "leasesim", version, about = "Deterministic simulation testbed for leases and locks on Raft")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one seed of a scenario; exit 1 if an invariant outside the scenario's expectation fired.
    Run(RunArgs),
    /// Run many seeds of many scenarios; exit 1 if any file's expectation is not met.
    Sweep(SweepArgs),
    /// Validate scenario files; errors as file:line:col, exit 2.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// One JSON object per file and per error (JSON lines) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Re-run one seed with the full trace on stderr (RUST_LOG filters it).
    Replay(ReplayArgs),
    /// Check a history file for linearizability (Jepsen or leasesim format).
    CheckHistory(check_history::CheckHistoryArgs),
    /// Render saved `--json` results as a sweep report (Markdown + HTML) with run timelines.
    Report(report::ReportArgs),
    /// Run a study grid over scenario parameters; JSON, CSV and SVG in --out (docs/STUDY-FORMAT.md).
    Study(study::StudyArgs),
    /// Shrink a failing seed to the smallest scenario that still fires the same invariant.
    Shrink(shrink::ShrinkArgs),
    /// For each planted bug, sweep general chaos scenarios until it is found; shrink and tabulate.
    Hunt(hunt::HuntArgs),
    /// Merge the JSON lines of sweep shards into one summary table and exit code.
    Merge(merge::MergeArgs),
    /// Fisher's exact two-sided test on two rates given as K/N (the test the study report uses).
    Fisher(fisher::FisherArgs),
    /// Measure the simulator: x real time, runs/min, events and messages per second, peak memory, hosting overhead.
    Bench(bench::BenchArgs),
}

#[derive(Args, Debug, Clone, Default)]
pub struct BugArgs {
    /// Turn on a planted bug (repeatable); see `leasesim run --help` for names.
    #[arg(long = "bug", value_name = "NAME", value_parser = parse_bug)]
    pub bugs: Vec<String>,
}

impl BugArgs {
    pub fn to_bugs(&self) -> Bugs {
        let mut bugs = Bugs::default();
        for name in &self.bugs {
            bugs.enable(name).expect("validated by the parser");
        }
        bugs
    }
}

fn parse_bug(name: &str) -> Result<String, String> {
    Bugs::default().enable(name).map(|_| name.to_string())
}

#[derive(Args, Debug)]
pub struct RunArgs {
    pub file: PathBuf,
    /// Seed to run (default: the first of the scenario's `seeds`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the run as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write every observation as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Run twice and compare trace digests; exit 1 if they differ.
    #[arg(long)]
    pub check_determinism: bool,
    /// Write the run's timeline report (self-contained HTML) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub bugs: BugArgs,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub seed: u64,
    #[command(flatten)]
    pub bugs: BugArgs,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Scenario files or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Seed range `A..B` (B excluded), instead of each scenario's own `seeds`.
    #[arg(long, value_parser = parse_seed_range)]
    pub seeds: Option<std::ops::Range<u64>>,
    /// Runs in parallel (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only shard I of N (1-based): seeds whose position modulo N is I-1.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Print one JSON object per run (JSON lines) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the sweep report and a timeline per unexpected seed into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also write a JUnit XML report (one testcase per scenario) to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Continue a sweep from the JSON lines it left in FILE (e.g. killed by a
    /// time limit): runs already there are counted, not re-run; new runs are
    /// appended to FILE. Give the same scenarios, seeds and flags.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub bugs: BugArgs,
}

pub use leasesim_scenario::seeds::parse_flag as parse_seed_range;

pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let fix = "write a shard as I/N with 1 <= I <= N, e.g. 2/8";
    let (i, n) = text.split_once('/').ok_or_else(|| format!("`{text}` is not a shard; {fix}"))?;
    let i: u64 = i.trim().parse().map_err(|_| format!("`{i}` is not a number; {fix}"))?;
    let n: u64 = n.trim().parse().map_err(|_| format!("`{n}` is not a number; {fix}"))?;
    if i == 0 || n == 0 || i > n {
        return Err(format!("`{text}` is out of range; {fix}"));
    }
    Ok((i, n))
}

/// Runs the parsed command; returns the exit code.
pub fn main_with(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run_command(&args),
        Command::Sweep(args) => sweep_command(&args),
        Command::Check { paths, json: false } => leasesim_scenario::check::check_command(&paths),
        Command::Check { paths, json: true } => crate::json_error::check_command_json(&paths, &mut std::io::stdout().lock()),
        Command::Replay(args) => replay_command(&args),
        Command::CheckHistory(args) => check_history::check_history_command(&args),
        Command::Report(args) => report::report_command(&args),
        Command::Study(args) => study::study_command(&args),
        Command::Shrink(args) => shrink::shrink_command(&args),
        Command::Hunt(args) => hunt::hunt_command(&args),
        Command::Merge(args) => merge::merge_command(&args),
        Command::Bench(args) => bench::bench_command(&args),
        Command::Fisher(args) => fisher::fisher_command(&args),
    }
}
