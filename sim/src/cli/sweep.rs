//! `leasesim sweep`: many seeds of many scenarios on several threads,
//! streamed.
//!
//! Each run is reduced the moment it ends: its JSON line is written (and
//! flushed) and it is folded into the per-scenario summary, so memory does
//! not grow with the number of runs and a sweep killed at any moment leaves
//! every finished run's line behind. Lines come out in work order (scenario
//! by scenario, seed by seed) whatever `--jobs` is: a run that finishes
//! early waits in a small window for the ones before it, and threads stop
//! claiming work while the window is full. `--resume FILE` continues such a
//! file: the runs it holds are counted, not re-run, and new lines are
//! appended to it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::progress::Progress;
use super::summary::{margins, table, NotJudgedLine, RunLine, Summaries, ViolationLine, TABLE_LEGEND};
use super::SweepArgs;
use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::{self as scenario, Scenario};

/// Finished runs a sweep may hold while it waits for an earlier one, per
/// thread.
const WINDOW_PER_JOB: usize = 8;
/// Unexpected runs printed on the terminal per scenario (all are in the
/// JSON lines, the JUnit file and the report).
const SHOWN_PER_SCENARIO: usize = 5;

/// Seeds of `range` that belong to `shard` (1-based I of N).
pub fn shard_seeds(range: std::ops::Range<u64>, shard: Option<(u64, u64)>) -> Vec<u64> {
    range.enumerate().filter(|(position, _)| shard.is_none_or(|(i, n)| *position as u64 % n == i - 1)).map(|(_, seed)| seed).collect()
}

impl RunLine {
    /// What a summary keeps of a finished run.
    pub fn of(outcome: &RunOutcome) -> RunLine {
        RunLine {
            scenario: outcome.scenario.clone(),
            file: outcome.file.clone(),
            seed: outcome.seed,
            violations: outcome
                .violations
                .iter()
                .map(|v| ViolationLine {
                    invariant: v.invariant.clone(),
                    at: v.at.clone(),
                    detail: v.detail.clone(),
                    assumptions_held: v.assumptions_held,
                })
                .collect(),
            expected: outcome.expected,
            expected_violations: outcome.expected_violations.clone(),
            sim_seconds: outcome.sim_seconds,
            wall_seconds: outcome.wall_seconds,
            replay: outcome.replay.clone(),
            bugs: outcome.bugs.clone(),
            trace_digest: outcome.trace_digest.clone(),
            liveness_margin: outcome.liveness_margin.clone(),
            not_judged: outcome
                .not_judged
                .iter()
                .map(|n| NotJudgedLine { invariant: n.invariant.to_string(), needs: n.needs.clone() })
                .collect(),
        }
    }
}

pub fn sweep_command(args: &SweepArgs) -> i32 {
    let (scenarios, errors) = scenario::load_all(&args.paths);
    if !errors.is_empty() {
        return crate::json_error::report_scenario_errors(&errors, args.json);
    }
    if scenarios.is_empty() {
        let message = format!("no scenario files found in {:?}; give .toml files or directories holding them", args.paths);
        return crate::json_error::report_message(&message, args.json);
    }
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let options = RunOptions { trace: false, extra_bugs: args.bugs.to_bugs(), keep_observations: false, ..RunOptions::default() };

    let mut summaries = Summaries::new();
    let planned = plan(&scenarios, args, &mut summaries);

    let mut sink = Sink { stdout: args.json, files: Vec::new() };
    let mut work = planned.clone();
    if let Some(path) = &args.resume {
        match resume(path, &scenarios, &planned, &mut summaries) {
            Ok((done, file)) => {
                eprintln!("resume: {} finished run(s) in {}; {} to go", done.len(), path.display(), planned.len() - done.len());
                work.retain(|(i, seed)| !done.contains(&(*i, *seed)));
                sink.files.push(file);
            }
            Err(message) => {
                return crate::json_error::report_message(&message, args.json);
            }
        }
    }
    let results_for_report = match &args.report {
        None => None,
        Some(dir) => match report_results_file(dir, args.resume.as_deref()) {
            Ok((path, file)) => {
                sink.files.extend(file);
                Some(path)
            }
            Err(message) => {
                return crate::json_error::report_message(&message, args.json);
            }
        },
    };

    let started = Instant::now();
    let mut printer = FailurePrinter { json: args.json, with_details: args.report.is_none(), shown: BTreeMap::new() };
    let streamed = run_streaming(&scenarios, &work, jobs, &options, &mut sink, &mut summaries, &mut printer);
    if let Err(message) = streamed {
        return crate::json_error::report_message(&message, args.json);
    }
    let wall = started.elapsed().as_secs_f64();

    let rendered = table(summaries.scenarios(), Some((wall, work.len()))) + &margins(summaries.scenarios());
    print_table(&rendered, args.json);
    if let Err(message) = write_reports(args, &summaries, results_for_report.as_deref(), wall) {
        return crate::json_error::report_message(&message, args.json);
    }
    i32::from(!summaries.all_met())
}

/// Every (scenario, seed) this sweep (or shard) runs, in work order; each
/// scenario declared in `summaries`, so one with no seed here still shows.
fn plan(scenarios: &[Scenario], args: &SweepArgs, summaries: &mut Summaries) -> Vec<(usize, u64)> {
    let mut planned = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        summaries.declare(&s.name, &s.path.display().to_string());
        let range = args.seeds.clone().unwrap_or_else(|| s.seeds.clone());
        planned.extend(shard_seeds(range, args.shard).into_iter().map(|seed| (i, seed)));
    }
    planned
}

fn print_table(rendered: &str, json: bool) {
    if json {
        // stdout carries JSON lines only.
        eprint!("{rendered}");
    } else {
        print!("{rendered}");
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            println!("({TABLE_LEGEND})");
        }
    }
}

/// The HTML report (`--report`) and the JUnit file (`--junit`), if asked.
fn write_reports(args: &SweepArgs, summaries: &Summaries, results: Option<&Path>, wall: f64) -> Result<(), String> {
    if let (Some(dir), Some(results)) = (&args.report, results) {
        let (index, timelines) = super::report::write_sweep_report(dir, results, &args.bugs.bugs, Some(wall))?;
        // On stderr, so `--json` output stays JSON lines.
        eprintln!("report: {} ({timelines} run timeline(s))", index.display());
    }
    if let Some(path) = &args.junit {
        super::junit::write(path, summaries.scenarios(), "leasesim sweep")?;
    }
    Ok(())
}

/// Where finished runs' JSON lines go, each flushed as it is written.
struct Sink {
    stdout: bool,
    files: Vec<File>,
}

impl Sink {
    fn write(&mut self, line: &str) -> Result<(), String> {
        if self.stdout {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| format!("cannot write to stdout: {e}"))?;
        }
        for file in &mut self.files {
            writeln!(file, "{line}").and_then(|()| file.flush()).map_err(|e| format!("cannot write a results file: {e}"))?;
        }
        Ok(())
    }
}

/// Prints the first unexpected runs of each scenario as they are counted.
struct FailurePrinter {
    json: bool,
    with_details: bool,
    shown: BTreeMap<String, usize>,
}

impl FailurePrinter {
    fn show(&mut self, run: &RunLine) {
        if run.expected {
            return;
        }
        let shown = self.shown.entry(run.scenario.clone()).or_insert(0);
        *shown += 1;
        if *shown > SHOWN_PER_SCENARIO {
            return;
        }
        let mut text = format!("SEED={} scenario={}\nreplay: {}\n", run.seed, run.scenario, run.replay);
        for v in run.violations.iter().take(if self.with_details { 3 } else { 0 }) {
            text.push_str(&format!("  {} at {}: {}\n", v.invariant, v.at, v.detail));
        }
        if self.json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
}

/// The runs finished but not yet written (waiting for an earlier one).
struct Window {
    claimed: usize,
    next_out: usize,
    finished: BTreeMap<usize, (String, RunLine)>,
    failed: Option<String>,
}

fn run_streaming(
    scenarios: &[Scenario],
    work: &[(usize, u64)],
    jobs: usize,
    options: &RunOptions,
    sink: &mut Sink,
    summaries: &mut Summaries,
    printer: &mut FailurePrinter,
) -> Result<(), String> {
    let window_len = jobs * WINDOW_PER_JOB;
    let state = Mutex::new(Window { claimed: 0, next_out: 0, finished: BTreeMap::new(), failed: None });
    let room = Condvar::new();
    let progress = Mutex::new(Progress::new(work.len()));
    let out = Mutex::new((sink, summaries, printer));
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(work.len().max(1)) {
            scope.spawn(|| loop {
                let k = {
                    let mut w = state.lock().expect("sweep window");
                    while w.claimed >= w.next_out + window_len && w.failed.is_none() {
                        w = room.wait(w).expect("sweep window");
                    }
                    if w.claimed >= work.len() || w.failed.is_some() {
                        break;
                    }
                    w.claimed += 1;
                    w.claimed - 1
                };
                let (i, seed) = work[k];
                let outcome = run_seed(&scenarios[i], seed, options);
                let line = serde_json::to_string(&outcome).expect("outcomes serialize");
                let run = RunLine::of(&outcome);
                drop(outcome);
                let mut w = state.lock().expect("sweep window");
                w.finished.insert(k, (line, run));
                // Whoever completes the prefix writes it, in order.
                let mut out = out.lock().expect("sweep output");
                loop {
                    let next = w.next_out;
                    let Some((line, run)) = w.finished.remove(&next) else { break };
                    w.next_out += 1;
                    let (sink, summaries, printer) = &mut *out;
                    if let Err(message) = sink.write(&line) {
                        w.failed = Some(message);
                        break;
                    }
                    printer.show(&run);
                    progress.lock().expect("progress").count(!run.expected);
                    summaries.add(run);
                }
                room.notify_all();
            });
        }
    });
    progress.into_inner().expect("progress").finish();
    match state.into_inner().expect("sweep window").failed {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// Reads a results file a killed sweep left: counts its runs that belong to
/// this sweep into `summaries`, cuts a last line left half-written, and
/// returns the finished (scenario, seed) pairs and the file, open for
/// appending.
fn resume(
    path: &Path,
    scenarios: &[Scenario],
    planned: &[(usize, u64)],
    summaries: &mut Summaries,
) -> Result<(BTreeSet<(usize, u64)>, File), String> {
    let at = |e: std::io::Error| format!("{}: cannot resume from it: {e}", path.display());
    let mut file = OpenOptions::new().read(true).append(true).create(true).open(path).map_err(at)?;
    let by_name: BTreeMap<&str, usize> = scenarios.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect();
    let planned: BTreeSet<(usize, u64)> = planned.iter().copied().collect();
    let mut done = BTreeSet::new();
    let mut whole_bytes: u64 = 0;
    let (mut number, mut foreign) = (0, 0);
    let mut reader = BufReader::new(&mut file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(at)?;
        if n == 0 {
            break;
        }
        number += 1;
        if !line.ends_with('\n') {
            eprintln!("note: {}:{number}: the last line was cut short (the sweep was killed mid-write); it is run again", path.display());
            break;
        }
        whole_bytes += n as u64;
        if line.trim().is_empty() {
            continue;
        }
        let run: RunLine = serde_json::from_str(&line).map_err(|e| {
            format!("{}:{number}: not a run of `leasesim sweep --json` ({e}); resume from a file a sweep wrote", path.display())
        })?;
        match by_name.get(run.scenario.as_str()).map(|i| (*i, run.seed)) {
            Some(key) if planned.contains(&key) => {
                if done.insert(key) {
                    summaries.add(run);
                }
            }
            _ => foreign += 1,
        }
    }
    if foreign > 0 {
        eprintln!(
            "note: {}: {foreign} run(s) of other scenarios or seeds than this sweep's are left as they are and not counted",
            path.display()
        );
    }
    let length = file.seek(SeekFrom::End(0)).map_err(at)?;
    if length > whole_bytes {
        file.set_len(whole_bytes).map_err(at)?;
    }
    Ok((done, file))
}

/// The results file a sweep's report is rendered from: the resumed file if
/// there is one (it holds every run), else DIR/results.jsonl written afresh
/// as runs finish.
fn report_results_file(dir: &Path, resumed: Option<&Path>) -> Result<(PathBuf, Option<File>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create the report directory: {e}", dir.display()))?;
    if let Some(path) = resumed {
        return Ok((path.to_path_buf(), None));
    }
    let path = dir.join("results.jsonl");
    let file = File::create(&path).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    Ok((path, Some(file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_seeds() {
        let all: Vec<u64> = (0..10).collect();
        let mut union: Vec<u64> = (1..=3).flat_map(|i| shard_seeds(0..10, Some((i, 3)))).collect();
        union.sort();
        assert_eq!(union, all);
        assert_eq!(shard_seeds(0..10, Some((2, 3))), vec![1, 4, 7]);
        assert_eq!(shard_seeds(5..8, None), vec![5, 6, 7]);
    }
}
