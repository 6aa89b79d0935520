//! `leasesim bench [FILE…] [--seeds A..B]`: how fast and how big the
//! simulator is, per scenario — simulated seconds per wall second of one
//! core, runs per minute, events and messages per second, peak memory of
//! one run (a child process per scenario, so its figure is its own) and of
//! the whole bench, and the hosting overhead: messages the pure core
//! harness (leasesim-testkit, no async runtime, no world) steps per second
//! against what the simulator steps.
//!
//! Where the time goes, measured in the same runs (`run::phases`): the
//! processor's time-stamp counter is read around every server core call
//! (an input stepped and its output taken: the engine), every client
//! process's step (its workload logic and core's client library: clients)
//! and the checkers after the simulation (checking); each is a share of
//! the counter's total over `run_seed` (thread start to verdict), and
//! hosting is the rest: madsim's executor and timers, the world's network,
//! clocks and disks, the observation log and its digest, setup. The
//! readings cost about 1% of a run.
//!
//! The overhead is measured in rounds, one per seed: a run of the
//! simulator, then a slice of the pure harness (one harness cluster,
//! advanced a share of its 20 simulated seconds each round), each timed.
//! Timing the two seconds apart made the ratio follow whatever else the
//! machine did meanwhile (the harness's rate alone varied 0.73-1.30M msg/s
//! across three benches at low load); interleaved, both sides of a round
//! see the same moment's machine, and the bench reports the median of the
//! rounds' ratios with their range.
//!
//! `--max-overhead X` makes the bench a regression guard that does not
//! depend on the machine's speed: it exits 1 when a scenario's median
//! hosting overhead (a ratio of two rates measured in one process) is
//! above X. The nightly workflow runs it.
//!
//! These are measurements of this machine at this moment: they belong in a
//! benchmark and a README table, never in a test.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use leasesim_testkit::{NetFaults, RaftCluster, RaftClusterOptions};
use serde::Serialize;

use crate::run::phases::{self, PhaseTicks};
use crate::run::{run_seed, RunOptions};
use leasesim_scenario::{self as scenario, Scenario};

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
    /// Exit 1 if a scenario's hosting overhead (pure harness msg/s ÷
    /// simulator msg/s) is above this: a guard independent of machine speed.
    #[arg(long, value_parser = parse_max_overhead)]
    pub max_overhead: Option<f64>,
}

fn parse_max_overhead(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("`{text}` is not a ratio above 0 (the overhead is harness rate ÷ simulator rate, e.g. 2.5)")),
    }
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
    /// harness ÷ simulator: what hosting a message in the simulator costs
    /// (the median of the rounds' ratios).
    pub hosting_overhead: f64,
    /// The smallest and largest of the rounds' ratios.
    pub hosting_overhead_min: f64,
    pub hosting_overhead_max: f64,
    /// Peak resident set of one run of the first seed, as its own process.
    pub run_peak_rss_mb: Option<f64>,
    /// Shares of the runs' time (0..1, summing to 1): the servers' core
    /// stepping inputs, the client processes' steps, the checkers, and the
    /// rest, hosting (the module doc says how they are measured).
    pub engine_share: f64,
    pub clients_share: f64,
    pub checking_share: f64,
    pub hosting_share: f64,
}

/// The scenarios whose overhead is above `max`, said as errors.
fn over_limit(rows: &[BenchRow], max: f64) -> Vec<String> {
    rows.iter()
        // A ratio that could not be measured (NaN) fails the guard too.
        .filter(|r| r.hosting_overhead.is_nan() || r.hosting_overhead > max)
        .map(|r| format!("{}: hosting overhead {:.2}x is above --max-overhead {max}", r.scenario, r.hosting_overhead))
        .collect()
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
    let over = args.max_overhead.map(|max| over_limit(&rows, max)).unwrap_or_default();
    for e in &over {
        eprintln!("{e}");
    }
    if over.is_empty() {
        0
    } else {
        1
    }
}

/// One round of the overhead: messages and seconds of a simulator run,
/// then steps and seconds of the harness slice timed right after it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Round {
    sim_messages: u64,
    sim_seconds: f64,
    harness_steps: u64,
    harness_seconds: f64,
}

/// The overhead figures of some rounds: the median of their ratios
/// (harness rate ÷ simulator rate), the smallest and the largest. NaN
/// when a round could not be measured (no messages, no time), so that
/// the guard fails rather than passes on nothing.
fn overhead_of(rounds: &[Round]) -> (f64, f64, f64) {
    let rate = |count: u64, seconds: f64| if seconds > 0.0 { count as f64 / seconds } else { f64::NAN };
    let mut ratios: Vec<f64> = rounds
        .iter()
        .map(|r| {
            let sim = rate(r.sim_messages, r.sim_seconds);
            if sim > 0.0 {
                rate(r.harness_steps, r.harness_seconds) / sim
            } else {
                f64::NAN
            }
        })
        .collect();
    if ratios.is_empty() || ratios.iter().any(|r| r.is_nan()) {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = if n % 2 == 1 { ratios[n / 2] } else { (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0 };
    (median, ratios[0], ratios[n - 1])
}

/// Wall-clock timing is the point of a benchmark; nothing else reads it.
fn bench_scenario(s: &Scenario, seeds: std::ops::Range<u64>, child: bool) -> BenchRow {
    let options = RunOptions { time_phases: true, ..RunOptions::default() };
    let (mut sim_s, mut wall_s, mut events, mut messages, mut runs) = (0.0, 0.0, 0u64, 0u64, 0usize);
    let (mut phase_ticks, mut total_ticks) = (PhaseTicks::default(), 0u64);
    let mut harness: Option<Harness> = None;
    let mut rounds = Vec::new();
    let slice_ms = HARNESS_MS.div_ceil(seeds.clone().count().max(1) as u64);
    for seed in seeds.clone() {
        let started = Instant::now();
        let started_ticks = phases::ticks();
        let outcome = run_seed(s, seed, &options);
        total_ticks += phases::ticks().saturating_sub(started_ticks);
        let run_wall_s = started.elapsed().as_secs_f64();
        wall_s += run_wall_s;
        phase_ticks.engine += outcome.phases.engine;
        phase_ticks.clients += outcome.phases.clients;
        phase_ticks.checking += outcome.phases.checking;
        sim_s += outcome.sim_seconds;
        events += outcome.events;
        messages += outcome.messages;
        runs += 1;
        // The harness proposes at the first run's commit rate throughout,
        // so that every slice is the same workload.
        let commits_per_sim_s = outcome.committed_index as f64 / outcome.sim_seconds.max(1e-9);
        let harness = harness.get_or_insert_with(|| Harness::new(s, commits_per_sim_s));
        let (harness_steps, harness_seconds) = harness.run_ms(slice_ms);
        rounds.push(Round { sim_messages: outcome.messages, sim_seconds: run_wall_s, harness_steps, harness_seconds });
    }
    let (hosting_overhead, hosting_overhead_min, hosting_overhead_max) = overhead_of(&rounds);
    let harness_steps: u64 = rounds.iter().map(|r| r.harness_steps).sum();
    let harness_seconds: f64 = rounds.iter().map(|r| r.harness_seconds).sum();
    let share = |ticks: u64| ticks as f64 / total_ticks.max(1) as f64;
    let (engine_share, clients_share, checking_share) =
        (share(phase_ticks.engine), share(phase_ticks.clients), share(phase_ticks.checking));
    BenchRow {
        scenario: s.name.clone(),
        runs,
        sim_seconds: sim_s,
        wall_seconds: wall_s,
        x_real: sim_s / wall_s.max(1e-9),
        runs_per_min: runs as f64 / wall_s.max(1e-9) * 60.0,
        events_per_sec: events as f64 / wall_s.max(1e-9),
        sim_messages_per_sec: messages as f64 / wall_s.max(1e-9),
        harness_messages_per_sec: harness_steps as f64 / harness_seconds.max(1e-9),
        hosting_overhead,
        hosting_overhead_min,
        hosting_overhead_max,
        run_peak_rss_mb: if child { child_peak_rss_mb(&s.path, seeds.start) } else { None },
        engine_share,
        clients_share,
        checking_share,
        hosting_share: (1.0 - engine_share - clients_share - checking_share).max(0.0),
    }
}

/// Simulated milliseconds the harness runs per scenario, over all rounds.
const HARNESS_MS: u64 = 20_000;

/// Core's pure harness for a scenario: its voters and latency, one
/// proposal per simulated millisecond thinned to the commit rate the
/// simulated run reached, cheap checks only. The harness runs Raft with a
/// toy state machine, so the comparison is of hosting, not of the lease
/// service's own work.
struct Harness {
    cluster: RaftCluster,
    per_ms: f64,
    owed: f64,
    command: u64,
}

impl Harness {
    fn new(s: &Scenario, commits_per_sim_s: f64) -> Self {
        let net = NetFaults {
            drop_permille: (s.network.loss * 1000.0) as u32,
            dup_permille: (s.network.duplicate * 1000.0) as u32,
            min_delay_ns: s.network.latency_ns.0,
            max_delay_ns: s.network.latency_ns.1.max(s.network.latency_ns.0),
        };
        let mut options = RaftClusterOptions::new(s.cluster.servers as usize).seed(1).net(net).compact_every(1024);
        options.check_log_matching = false;
        options.check_durability = false;
        Harness { cluster: RaftCluster::new(options), per_ms: (commits_per_sim_s / 1000.0).max(0.001), owed: 0.0, command: 0 }
    }

    /// Runs `ms` more simulated milliseconds: (messages stepped, wall seconds).
    fn run_ms(&mut self, ms: u64) -> (u64, f64) {
        const NS_PER_MS: u64 = 1_000_000;
        let steps_before = self.cluster.stats.steps;
        let started = Instant::now();
        for _ in 0..ms {
            self.owed += self.per_ms;
            while self.owed >= 1.0 {
                self.owed -= 1.0;
                if let Some(leader) = self.cluster.leader() {
                    self.command += 1;
                    let _ = self.cluster.propose(leader, self.command);
                }
            }
            self.cluster.run_for(NS_PER_MS);
        }
        (self.cluster.stats.steps - steps_before, started.elapsed().as_secs_f64())
    }
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
        "{:<width$}  {:>4}  {:>7}  {:>7}  {:>7}  {:>8}  {:>9}  {:>10}  {:>11}  {:>8}  {:>13}  {:>8}  {:>7}  {:>7}  {:>7}  {:>7}\n",
        "scenario",
        "runs",
        "sim s",
        "wall s",
        "x real",
        "runs/min",
        "events/s",
        "sim msg/s",
        "harness m/s",
        "overhead",
        "(range)",
        "run MB",
        "engine",
        "clients",
        "checks",
        "hosting"
    );
    let pct = |share: f64| format!("{:.1}%", share * 100.0);
    for r in rows {
        out.push_str(&format!(
            "{:<width$}  {:>4}  {:>7.0}  {:>7.2}  {:>7.0}  {:>8.0}  {:>9.0}  {:>10.0}  {:>11.0}  {:>7.1}x  {:>13}  {:>8}  {:>7}  {:>7}  {:>7}  {:>7}\n",
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
            format!("{:.1}-{:.1}x", r.hosting_overhead_min, r.hosting_overhead_max),
            r.run_peak_rss_mb.map_or("-".to_string(), |m| format!("{m:.1}")),
            pct(r.engine_share),
            pct(r.clients_share),
            pct(r.checking_share),
            pct(r.hosting_share),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(scenario: &str, hosting_overhead: f64) -> BenchRow {
        BenchRow {
            scenario: scenario.to_string(),
            runs: 1,
            sim_seconds: 70.0,
            wall_seconds: 0.1,
            x_real: 700.0,
            runs_per_min: 600.0,
            events_per_sec: 1.0,
            sim_messages_per_sec: 1.0,
            harness_messages_per_sec: hosting_overhead,
            hosting_overhead,
            hosting_overhead_min: hosting_overhead,
            hosting_overhead_max: hosting_overhead,
            run_peak_rss_mb: None,
            engine_share: 0.4,
            clients_share: 0.1,
            checking_share: 0.1,
            hosting_share: 0.4,
        }
    }

    #[test]
    fn max_overhead_names_every_scenario_above_it_and_only_those() {
        let rows = [row("baseline", 2.6), row("quiet", 2.5), row("light", 1.2), row("broken", f64::NAN)];
        let over = over_limit(&rows, 2.5);
        assert_eq!(over.len(), 2, "{over:?}");
        assert!(over[0].starts_with("baseline: hosting overhead 2.60x is above --max-overhead 2.5"), "{over:?}");
        assert!(over[1].starts_with("broken:"), "a ratio that could not be measured fails the guard: {over:?}");
        assert!(over_limit(&rows[1..3], 2.5).is_empty(), "at the limit passes");
    }

    fn round(sim_messages: u64, sim_seconds: f64, harness_steps: u64, harness_seconds: f64) -> Round {
        Round { sim_messages, sim_seconds, harness_steps, harness_seconds }
    }

    #[test]
    fn the_overhead_is_the_median_of_the_rounds_ratios_with_their_range() {
        // Ratios 2, 4 (the harness twice as fast, in half the time) and 3.
        let rounds = [round(100, 1.0, 200, 1.0), round(100, 2.0, 100, 0.5), round(300, 1.0, 900, 1.0)];
        assert_eq!(overhead_of(&rounds), (3.0, 2.0, 4.0));
        // An even count: the mean of the middle two; one round: itself.
        let rounds = [round(100, 1.0, 100, 1.0), round(100, 1.0, 500, 1.0), round(100, 1.0, 200, 1.0), round(100, 1.0, 300, 1.0)];
        assert_eq!(overhead_of(&rounds), (2.5, 1.0, 5.0));
        assert_eq!(overhead_of(&rounds[1..2]), (5.0, 5.0, 5.0));
        // A slow outlier moves the median little: what interleaving is for.
        let rounds = [round(100, 1.0, 200, 1.0), round(100, 1.0, 210, 1.0), round(100, 1.0, 2_000, 1.0)];
        assert_eq!(overhead_of(&rounds).0, 2.1);
    }

    #[test]
    fn an_unmeasurable_round_makes_the_overhead_nan_so_the_guard_fails() {
        for bad in [round(0, 1.0, 100, 1.0), round(100, 0.0, 100, 1.0), round(100, 1.0, 100, 0.0)] {
            let (median, min, max) = overhead_of(&[round(100, 1.0, 200, 1.0), bad]);
            assert!(median.is_nan() && min.is_nan() && max.is_nan(), "{bad:?}");
        }
        assert!(overhead_of(&[]).0.is_nan(), "no rounds, no figure");
        let mut row = row("broken", 1.0);
        row.hosting_overhead = overhead_of(&[]).0;
        assert_eq!(over_limit(&[row], 4.5).len(), 1);
    }

    #[test]
    fn max_overhead_must_be_a_positive_ratio() {
        assert_eq!(parse_max_overhead("2.5"), Ok(2.5));
        for bad in ["0", "-1", "abc", "NaN", "inf"] {
            let err = parse_max_overhead(bad).expect_err(bad);
            assert!(err.contains(bad) && err.contains("ratio"), "{err}");
        }
    }
}
