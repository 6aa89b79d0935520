//! `leasesim bench [FILE…] [--seeds A..B]`: how fast and how big the
//! simulator is, per scenario — simulated seconds per wall second of one
//! core, runs per minute, events and messages per second, peak memory of
//! one run (a child process per scenario, so its figure is its own) and of
//! the whole bench, and the hosting overhead: messages the pure core
//! harness (core's testkit, no async runtime, no world) steps per second
//! against what the simulator steps.
//!
//! These are measurements of this machine at this moment: they belong in a
//! benchmark and a README table, never in a test.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use leasesim_core::testkit::{Cluster, ClusterOptions, NetFaults};
use serde::Serialize;

use crate::run::{run_seed, RunOptions};
use crate::scenario::{self, Scenario};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Scenario files or directories (default: scenarios/baseline.toml).
    pub paths: Vec<PathBuf>,
    /// Seeds to run of each scenario, one after another on one core.
    #[arg(long, value_parser = super::parse_seed_range, default_value = "0..4")]
    pub seeds: std::ops::Range<u64>,
    /// Print one JSON object per scenario instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Skip the per-run peak memory (it spawns one child process per scenario).
    #[arg(long)]
    pub no_child: bool,
}

/// One scenario's figures.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub scenario: String,
    pub runs: usize,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    /// Simulated seconds per wall second, one run at a time on one core.
    pub x_real: f64,
    pub runs_per_min: f64,
    pub events_per_sec: f64,
    pub sim_messages_per_sec: f64,
    /// The pure core harness stepping Raft messages for the same servers,
    /// latency and commit rate.
    pub harness_messages_per_sec: f64,
    /// harness ÷ simulator: what hosting a message in the simulator costs.
    pub hosting_overhead: f64,
    /// Peak resident set of one run of the first seed, as its own process.
    pub run_peak_rss_mb: Option<f64>,
}

pub fn bench_command(args: &BenchArgs) -> i32 {
    let paths = if args.paths.is_empty() { vec![PathBuf::from("scenarios/baseline.toml")] } else { args.paths.clone() };
    let (scenarios, errors) = scenario::load_all(&paths);
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{e}");
        }
        return 2;
    }
    if scenarios.is_empty() {
        eprintln!("no scenario files found in {paths:?}; give .toml files or directories holding them");
        return 2;
    }
    let mut rows = Vec::new();
    for s in &scenarios {
        let row = bench_scenario(s, args.seeds.clone(), !args.no_child);
        if args.json {
            println!("{}", serde_json::to_string(&row).expect("rows serialize"));
        }
        rows.push(row);
    }
    let bench_peak_mb = peak_rss_mb_of_self();
    if args.json {
        println!("{}", serde_json::json!({ "bench_peak_rss_mb": bench_peak_mb }));
    } else {
        print!("{}", table(&rows));
        println!("peak RSS of this whole bench (every run above, in one process): {bench_peak_mb:.1} MB");
    }
    0
}

/// Wall-clock timing is the point of a benchmark; nothing else reads it.
fn bench_scenario(s: &Scenario, seeds: std::ops::Range<u64>, child: bool) -> BenchRow {
    let options = RunOptions::default();
    let (mut sim_s, mut wall_s, mut events, mut messages, mut runs) = (0.0, 0.0, 0u64, 0u64, 0usize);
    let mut commit_per_sim_s = 0.0;
    for seed in seeds.clone() {
        let started = Instant::now();
        let outcome = run_seed(s, seed, &options);
        wall_s += started.elapsed().as_secs_f64();
        sim_s += outcome.sim_seconds;
        events += outcome.events;
        messages += outcome.messages;
        runs += 1;
        commit_per_sim_s += outcome.committed_index as f64 / outcome.sim_seconds.max(1e-9);
    }
    let commit_per_sim_s = commit_per_sim_s / runs.max(1) as f64;
    let sim_messages_per_sec = messages as f64 / wall_s.max(1e-9);
    let harness_messages_per_sec = harness_rate(s, commit_per_sim_s);
    BenchRow {
        scenario: s.name.clone(),
        runs,
        sim_seconds: sim_s,
        wall_seconds: wall_s,
        x_real: sim_s / wall_s.max(1e-9),
        runs_per_min: runs as f64 / wall_s.max(1e-9) * 60.0,
        events_per_sec: events as f64 / wall_s.max(1e-9),
        sim_messages_per_sec,
        harness_messages_per_sec,
        hosting_overhead: harness_messages_per_sec / sim_messages_per_sec.max(1e-9),
        run_peak_rss_mb: if child { child_peak_rss_mb(&s.path, seeds.start) } else { None },
    }
}

/// Raft messages per wall second in core's pure harness: the scenario's
/// voters and latency, one proposal per simulated millisecond thinned to
/// the commit rate the simulated run reached, cheap checks only, for 20
/// simulated seconds. The harness runs Raft with a toy state machine, so
/// the comparison is of hosting, not of the lease service's own work.
fn harness_rate(s: &Scenario, commits_per_sim_s: f64) -> f64 {
    const NS_PER_MS: u64 = 1_000_000;
    let net = NetFaults {
        drop_permille: (s.network.loss * 1000.0) as u32,
        dup_permille: (s.network.duplicate * 1000.0) as u32,
        min_delay_ns: s.network.latency_ns.0,
        max_delay_ns: s.network.latency_ns.1.max(s.network.latency_ns.0),
    };
    let mut options = ClusterOptions::new(s.cluster.servers as usize).seed(1).net(net).compact_every(1024);
    options.check_log_matching = false;
    options.check_durability = false;
    let mut cluster = Cluster::new(options);
    let per_ms = (commits_per_sim_s / 1000.0).max(0.001);
    let started = Instant::now();
    let (mut owed, mut command) = (0.0, 0u64);
    for _ in 0..20_000 {
        owed += per_ms;
        while owed >= 1.0 {
            owed -= 1.0;
            if let Some(leader) = cluster.leader() {
                command += 1;
                let _ = cluster.propose(leader, command);
            }
        }
        cluster.run_for(NS_PER_MS);
    }
    cluster.stats.steps as f64 / started.elapsed().as_secs_f64().max(1e-9)
}

/// Peak RSS of `leasesim run FILE --seed SEED` as a child process.
fn child_peak_rss_mb(file: &Path, seed: u64) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let child = std::process::Command::new(exe)
        .args(["run", &file.display().to_string(), "--seed", &seed.to_string(), "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid, with valid pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    (waited == pid).then(|| usage.ru_maxrss as f64 / 1024.0)
}

fn peak_rss_mb_of_self() -> f64 {
    // SAFETY: as above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills a valid struct for this process.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn table(rows: &[BenchRow]) -> String {
    let width = rows.iter().map(|r| r.scenario.len()).max().unwrap_or(8).max(8);
    let mut out = format!(
        "{:<width$}  {:>4}  {:>7}  {:>7}  {:>7}  {:>8}  {:>9}  {:>10}  {:>11}  {:>8}  {:>8}\n",
        "scenario", "runs", "sim s", "wall s", "x real", "runs/min", "events/s", "sim msg/s", "harness m/s", "overhead", "run MB"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<width$}  {:>4}  {:>7.0}  {:>7.2}  {:>7.0}  {:>8.0}  {:>9.0}  {:>10.0}  {:>11.0}  {:>7.1}x  {:>8}\n",
            r.scenario,
            r.runs,
            r.sim_seconds,
            r.wall_seconds,
            r.x_real,
            r.runs_per_min,
            r.events_per_sec,
            r.sim_messages_per_sec,
            r.harness_messages_per_sec,
            r.hosting_overhead,
            r.run_peak_rss_mb.map_or("-".to_string(), |m| format!("{m:.1}")),
        ));
    }
    out
}
