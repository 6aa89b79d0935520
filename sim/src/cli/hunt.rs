//! `leasesim hunt`: for each planted bug, sweep general chaos scenarios with
//! it on until an invariant fires, shrink the first failure, and print (and
//! with `--out`, publish) the table. Exit 0 if every hunted bug was found,
//! 1 if one was not, 2 on bad input.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use leasesim_core::bugs::Bugs;

use super::parse_seed_range;
use super::shrink::{default_jobs, quiet_simulation_panics};
use crate::hunt::{self, pick, table, GuidedHunt, HuntOptions};
use leasesim_scenario::{self as scenario, Scenario};

#[derive(Args, Debug)]
pub struct HuntArgs {
    /// Wall-clock seconds each bug's search may take.
    #[arg(long, default_value_t = 60, value_name = "S")]
    pub budget_seconds: u64,
    /// Seeds to sweep (each scenario gets every seed, interleaved).
    #[arg(long, value_parser = parse_seed_range, default_value = "0..100000")]
    pub seeds: Range<u64>,
    /// Runs in parallel (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Hunt only this planted bug (repeatable; default: every one).
    #[arg(long = "bug", value_name = "NAME", value_parser = known_bug)]
    pub bugs: Vec<String>,
    /// Scenario to sweep (repeatable; default: every general chaos scenario
    /// in scenarios/: a [chaos] table, no planted bugs, expect safe).
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenarios: Vec<PathBuf>,
    /// Also write the table as Markdown, with the command that regenerates it.
    #[arg(long, value_name = "FILE.md")]
    pub out: Option<PathBuf>,
    /// Write each bug's shrunk failing scenario here as `<bug>.toml`.
    #[arg(long, value_name = "DIR")]
    pub shrunk_dir: Option<PathBuf>,
    /// Run budget for shrinking each bug's first failure (0: do not shrink).
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub shrink_budget_runs: usize,
    /// Searches per bug on successive seed windows; the table shows medians.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub repeat: usize,
    /// Search guided by coverage: mutate the fault schedules and knobs of
    /// runs that reached something new instead of drawing seed after seed
    /// (one run at a time; the run budget is the random search's: seeds ×
    /// scenarios).
    #[arg(long)]
    pub guided: bool,
    /// With --guided: probability that a run is a fresh seed, not a mutation.
    #[arg(long, default_value_t = 0.2, value_name = "P", value_parser = probability, requires = "guided")]
    pub explore: f64,
    /// With --guided: write each search's corpus (and its failing run) as
    /// scenario files in DIR/<bug>/<search>/, each with its replay command.
    #[arg(long, value_name = "DIR", requires = "guided")]
    pub corpus_dir: Option<PathBuf>,
}

fn probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("`{text}` is not a probability: give a number from 0 to 1")),
    }
}

fn known_bug(name: &str) -> Result<String, String> {
    Bugs::default().enable(name).map(|_| name.to_string())
}

pub fn hunt_command(args: &HuntArgs) -> i32 {
    let scenarios = match scenarios(&args.scenarios) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("{message}");
            return 2;
        }
    };
    let bugs: Vec<&str> = if args.bugs.is_empty() { Bugs::NAMES.to_vec() } else { args.bugs.iter().map(String::as_str).collect() };
    for bug in &bugs {
        if let Some(why) = scenarios.iter().find_map(|s| pick::written_for(s, bug)) {
            eprintln!("cannot hunt `{bug}` with this scenario: {why}; hunt with general chaos scenarios (drop --scenario, or give one without `bugs` that expects safe)");
            return 2;
        }
    }
    if args.seeds.end - args.seeds.start > u64::MAX / (args.repeat.max(1) as u64 + 1) {
        eprintln!(
            "--seeds {}..{} with --repeat {}: the seed windows overflow; give a smaller range",
            args.seeds.start, args.seeds.end, args.repeat
        );
        return 2;
    }
    let options = HuntOptions {
        seeds: args.seeds.clone(),
        jobs: args.jobs.unwrap_or_else(default_jobs).max(1),
        budget: Some(Duration::from_secs(args.budget_seconds.max(1))),
        repeat: args.repeat.max(1),
        shrink_budget_runs: args.shrink_budget_runs,
        shrunk_dir: args.shrunk_dir.clone(),
        guided: args.guided.then(|| GuidedHunt { explore: args.explore, corpus_dir: args.corpus_dir.clone() }),
    };
    quiet_simulation_panics();
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    eprintln!("hunting {} bug(s) in {} on {} thread(s), {} s each", bugs.len(), names.join(", "), options.jobs, args.budget_seconds.max(1));
    println!("{}", table::HEADER);
    let mut hunts = Vec::new();
    for bug in bugs {
        let h = hunt::hunt_bug(&scenarios, bug, &options);
        println!("{}", table::row(&h));
        hunts.push(h);
    }
    if let Some(out) = &args.out {
        let text = table::markdown(&hunts, &scenarios, &options, &command_line());
        if let Err(e) = write(out, &text) {
            eprintln!("{}: cannot write the report: {e}", out.display());
            return 2;
        }
        eprintln!("wrote {}", out.display());
    }
    let missing: Vec<&str> = hunts.iter().filter(|h| h.first_found().is_none()).map(|h| h.bug.as_str()).collect();
    if missing.is_empty() {
        0
    } else {
        eprintln!("not found within the budget: {}", missing.join(", "));
        1
    }
}

fn scenarios(paths: &[PathBuf]) -> Result<Vec<Scenario>, String> {
    if paths.is_empty() {
        let dir = Path::new("scenarios");
        if !dir.is_dir() {
            return Err("no scenarios/ folder here: run `leasesim hunt` from the repository root, or give --scenario FILE".to_string());
        }
        return pick::general_chaos(dir);
    }
    let (loaded, errors) = scenario::load_all(paths);
    if !errors.is_empty() {
        return Err(errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
    }
    if loaded.is_empty() {
        return Err(format!("no scenario files found in {paths:?}; give .toml files or directories holding them"));
    }
    Ok(loaded)
}

/// The command as typed, with the binary called `leasesim`.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).map(|a| if a.contains(' ') { format!("'{a}'") } else { a }).collect();
    format!("leasesim {}", args.join(" "))
}

fn write(out: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, text)
}
