//! `leasesim shrink FILE --seed N --out F [--bug NAME…]`: the smallest
//! scenario that still fires the same invariant with the same seed, written
//! as a readable file (see `crate::shrink`), and how far it shrank.

use std::path::{Path, PathBuf};

use clap::Args;

use super::run::load_or_report;
use super::BugArgs;
use crate::shrink::{self, file, ShrinkOptions, Shrunk, Size};

#[derive(Args, Debug)]
pub struct ShrinkArgs {
    /// The scenario of the failing run.
    pub file: PathBuf,
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// Where to write the shrunk scenario.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Invariant that must keep firing (default: the first the run fires).
    #[arg(long, value_name = "ID")]
    pub invariant: Option<String>,
    /// Most runs to spend trying smaller scenarios.
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub budget_runs: usize,
    /// Candidate runs at once (default: the number of cores); the result
    /// does not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub bugs: BugArgs,
}

pub fn shrink_command(args: &ShrinkArgs) -> i32 {
    let scenario = match load_or_report(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(id) = &args.invariant {
        if !leasesim_scenario::is_known_invariant(id) && id != "engine-panic" {
            eprintln!("--invariant {id}: unknown invariant id; the ids are in SCENARIO-FORMAT.md (e.g. lock-belief-overlap)");
            return 2;
        }
    }
    quiet_simulation_panics();
    let options = ShrinkOptions {
        extra_bugs: args.bugs.to_bugs(),
        budget_runs: args.budget_runs.max(1),
        jobs: args.jobs.unwrap_or_else(default_jobs),
        invariant: args.invariant.clone(),
    };
    let shrunk = match shrink::shrink(&scenario, args.seed, &options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.file.display());
            return 2;
        }
    };
    let text = file::render(&shrunk, &args.file, &args.out);
    if let Err(message) = file::verify(&text, &args.out, &shrunk) {
        eprintln!("{}: {message}", args.out.display());
        return 1;
    }
    if let Err(e) = std::fs::write(&args.out, text) {
        eprintln!("{}: cannot write the shrunk scenario: {e}; give --out a path in an existing, writable folder", args.out.display());
        return 2;
    }
    print_summary(&shrunk, &args.file, args.budget_runs);
    println!("wrote {}; replay: leasesim run {} --seed {}", args.out.display(), args.out.display(), shrunk.seed);
    0
}

/// Keeps engine panics inside simulations from printing a backtrace each:
/// the run reports them as `engine-panic` already, and a hunt or a shrink
/// makes hundreds of runs. Panics elsewhere print as usual.
pub fn quiet_simulation_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Simulation threads are named `<scenario>#<seed>` (run::run_seed).
        if std::thread::current().name().is_some_and(|n| n.contains('#')) {
            return;
        }
        default(info);
    }));
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_summary(shrunk: &Shrunk, source: &Path, budget_runs: usize) {
    let (b, a): (&Size, &Size) = (&shrunk.before, &shrunk.after);
    let bugs = shrunk.scenario.bugs.enabled();
    let with_bugs = if bugs.is_empty() { String::new() } else { format!(" (bugs: {})", bugs.join(", ")) };
    println!("shrunk {} seed {}{with_bugs}: {}", source.display(), shrunk.seed, file::what_fires(shrunk));
    let drawn = if shrunk.drawn_faults > 0 { format!("   ({} drawn by [chaos])", shrunk.drawn_faults) } else { String::new() };
    let secs = leasesim_core::fmt_secs;
    println!("  faults     {:>8} -> {}{drawn}", b.faults, a.faults);
    println!("  duration   {:>8} -> {}", secs(b.duration_ns), secs(a.duration_ns));
    println!("  settle     {:>8} -> {}", secs(b.settle_ns), secs(a.settle_ns));
    println!("  clients    {:>8} -> {}   (workloads {} -> {})", b.clients, a.clients, b.workloads, a.workloads);
    println!("  servers    {:>8} -> {}", b.servers, a.servers);
    let spent = if shrunk.budget_spent { " (budget spent; a larger --budget-runs may shrink further)" } else { "" };
    println!("  runs       {:>8} of {budget_runs}{spent}", shrunk.runs);
}
