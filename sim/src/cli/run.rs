//! `leasesim run` and `leasesim replay`: one seed, told in full.

use std::io::Write;
use std::path::Path;

use super::{ReplayArgs, RunArgs};
use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::{self as scenario, Scenario};

/// Loads one scenario or prints its errors (exit code 2).
pub fn load_or_report(path: &Path) -> Result<Scenario, i32> {
    scenario::load(path).map_err(|e| {
        eprintln!("{e}");
        2
    })
}

pub fn run_command(args: &RunArgs) -> i32 {
    let scenario = match crate::json_error::load_scenario(&args.file, args.json) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let seed = args.seed.unwrap_or(scenario.seeds.start);
    let keep_observations = args.trace.is_some() || args.report.is_some();
    let options = RunOptions { trace: false, extra_bugs: args.bugs.to_bugs(), keep_observations, ..RunOptions::default() };
    let outcome = run_seed(&scenario, seed, &options);
    if let Some(path) = &args.trace {
        if let Err(e) = write_trace(path, &outcome) {
            return crate::json_error::report_message(&format!("{}: cannot write the trace: {e}", path.display()), args.json);
        }
    }
    if let Some(dir) = &args.report {
        match super::report::write_run_report(dir, &scenario, &outcome, &args.bugs.bugs, None) {
            // On stderr, so `--json` output stays one JSON object.
            Ok(path) => eprintln!("report: {}", path.display()),
            Err(message) => return crate::json_error::report_message(&message, args.json),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&outcome).expect("outcomes serialize"));
    } else {
        print_outcome(&outcome);
    }
    if args.check_determinism {
        let again = run_seed(&scenario, seed, &options);
        if again.trace_digest != outcome.trace_digest {
            eprintln!(
                "NOT DETERMINISTIC: seed {seed} of {} gave digest {} then {}",
                scenario.name, outcome.trace_digest, again.trace_digest
            );
            return 1;
        }
        if !args.json {
            println!("deterministic: two runs gave digest {}", outcome.trace_digest);
        }
    }
    if outcome.expected {
        0
    } else {
        // With --json, stdout carries the JSON object only.
        if args.json {
            eprint!("{}", failure_text(&outcome));
        } else {
            print!("{}", failure_text(&outcome));
        }
        1
    }
}

pub fn replay_command(args: &ReplayArgs) -> i32 {
    let scenario = match load_or_report(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    init_tracing();
    let options = RunOptions { trace: true, extra_bugs: args.bugs.to_bugs(), keep_observations: false, ..RunOptions::default() };
    let outcome = run_seed(&scenario, args.seed, &options);
    print_outcome(&outcome);
    if outcome.expected {
        0
    } else {
        1
    }
}

/// The trace goes to stderr; `RUST_LOG` filters it (default: everything).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).without_time().try_init();
}

fn write_trace(path: &Path, outcome: &RunOutcome) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for obs in &outcome.obs {
        serde_json::to_writer(&mut out, obs)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

pub fn print_outcome(outcome: &RunOutcome) {
    println!(
        "{} seed {}: {} — {} violation(s); digest {}; {:.1}s simulated in {:.3}s wall ({:.0}x), {} events",
        outcome.scenario,
        outcome.seed,
        outcome.verdict,
        outcome.violations.len(),
        outcome.trace_digest,
        outcome.sim_seconds,
        outcome.wall_seconds,
        outcome.sim_seconds / outcome.wall_seconds.max(1e-9),
        outcome.events,
    );
    for v in outcome.violations.iter().take(10) {
        let kind = if v.assumptions_held { "bug" } else { "assumption broken" };
        println!("  {} at {} [{kind}]: {}", v.invariant, v.at, v.detail);
    }
    if outcome.violations.len() > 10 {
        println!("  … and {} more", outcome.violations.len() - 10);
    }
    for n in &outcome.not_judged {
        println!("  {}: not judged: needs {}", n.invariant, n.needs);
    }
    if let Some(m) = &outcome.liveness_margin {
        let warn = if m.below_slack { " — below the stated slack: met by luck, not by design" } else { "" };
        let slack = leasesim_core::fmt_secs(m.slack_ns);
        println!("  liveness: closest margin {} ({}), stated slack {slack}{warn}", m.margin, m.deadline);
    }
}

/// The `SEED=` block of a failing run: the seed, the scenario and the
/// command that replays it (with every `--bug` it ran with).
pub fn failure_text(outcome: &RunOutcome) -> String {
    format!("SEED={} scenario={}\nreplay: {}\n", outcome.seed, outcome.scenario, outcome.replay)
}
