//! Runs one scenario in both worlds and collects each run's JSON line:
//! the simulator through the `leasesim` binary (`sweep --json`), so this
//! crate never links madsim, and real runs through this binary's own `run
//! --json`, each in its own process (its own cluster, ports, temp dir and
//! signal handling), at most `parallel` at once.
//!
//! Real run i plays seed `first + i`, the same seed the simulator's i-th
//! run uses: for a chaos scenario both worlds then play the very fault
//! schedule that seed draws (`leasesim_scenario::chaos_draw`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::Deserialize;

use leasesim_judge::measures::Measures;

/// What `compare` reads of one run's JSON line, in either world.
#[derive(Clone, Debug, Deserialize)]
pub struct RunLine {
    pub violations: Vec<Fired>,
    /// Invariants the run could not judge: what a real run's target does
    /// not report, or what a checker's search gave up on (either world).
    #[serde(default)]
    pub not_judged: Vec<NotJudged>,
    #[serde(default)]
    pub measures: Measures,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Fired {
    pub invariant: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct NotJudged {
    pub invariant: String,
}

impl RunLine {
    /// Invariants that fired at least once in this run.
    pub fn fired(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.violations.iter().map(|v| v.invariant.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// One world's runs: the parsed lines and the raw text (kept for `--raw`).
#[derive(Default)]
pub struct World {
    pub runs: Vec<RunLine>,
    pub raw: Vec<String>,
}

fn parse_lines(text: &str, who: &str) -> Result<World, String> {
    let mut world = World::default();
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let run: RunLine = serde_json::from_str(line).map_err(|e| format!("{who}: unreadable JSON line ({e}): {line}"))?;
        world.runs.push(run);
        world.raw.push(line.to_string());
    }
    Ok(world)
}

/// The simulated runs: `leasesim sweep FILE --seeds A..B --json`.
pub fn simulate(leasesim: &Path, file: &Path, seeds: &std::ops::Range<u64>, bugs: &[String]) -> Result<World, String> {
    let mut cmd = Command::new(leasesim);
    cmd.arg("sweep").arg(file).arg("--seeds").arg(format!("{}..{}", seeds.start, seeds.end)).arg("--json").arg("--jobs").arg("1");
    for bug in bugs {
        cmd.arg("--bug").arg(bug);
    }
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("{}: cannot start: {e}", leasesim.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let world = parse_lines(&text, &leasesim.display().to_string())?;
    // Exit 1 only says some run was not what the scenario expects.
    if world.runs.len() as u64 != seeds.end - seeds.start {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{}: {} of {} simulated runs came back: {}",
            leasesim.display(),
            world.runs.len(),
            seeds.end - seeds.start,
            err.trim()
        ));
    }
    Ok(world)
}

/// How to start one real run.
pub struct RealRuns<'a> {
    pub exe: PathBuf,
    pub file: &'a Path,
    pub target: &'static str,
    pub bugs: &'a [String],
    pub first_seed: u64,
    pub runs: u64,
    pub parallel: usize,
}

impl RealRuns<'_> {
    /// Every real run, in seed order; the first refusal or failure stops
    /// the rest (a run that cannot be played is not a sample).
    pub fn run(&self) -> Result<World, String> {
        let next = Mutex::new(0u64);
        let done: Mutex<BTreeMap<u64, Result<String, String>>> = Mutex::default();
        std::thread::scope(|scope| {
            for _ in 0..self.parallel.max(1) {
                scope.spawn(|| loop {
                    let i = {
                        let mut next = next.lock().expect("no panics hold it");
                        let failed = done.lock().expect("no panics hold it").values().any(Result::is_err);
                        if *next >= self.runs || failed {
                            return;
                        }
                        *next += 1;
                        *next - 1
                    };
                    let result = self.one(self.first_seed + i);
                    done.lock().expect("no panics hold it").insert(i, result);
                });
            }
        });
        let mut text = String::new();
        for result in done.into_inner().expect("threads joined").into_values() {
            text.push_str(&result?);
            text.push('\n');
        }
        parse_lines(&text, "leasesim-real run")
    }

    /// One real run's JSON line (exit 0 or 1: the verdict; 2 and above: it
    /// could not be played).
    fn one(&self, seed: u64) -> Result<String, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("run").arg(self.file).arg("--target").arg(self.target).arg("--seed").arg(seed.to_string()).arg("--json");
        for bug in self.bugs {
            cmd.arg("--bug").arg(bug);
        }
        let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{}: cannot start: {e}", self.exe.display()))?;
        let line = String::from_utf8_lossy(&out.stdout).lines().find(|l| l.starts_with('{')).map(str::to_string);
        match (out.status.code(), line) {
            (Some(0 | 1), Some(line)) => Ok(line),
            (code, _) => Err(format!(
                "real run of seed {seed} failed (exit {}): {}",
                code.map_or("by signal".to_string(), |c| c.to_string()),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}
