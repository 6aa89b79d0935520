//! Reports a person can read: `leasesim run … --report DIR` writes the
//! seed's timeline page, `leasesim sweep … --report DIR` writes the sweep
//! summary (Markdown and HTML) plus a timeline for every unexpected seed,
//! and `leasesim report RESULTS… --out DIR` renders the same from saved
//! `--json` results.
//!
//! Saved results hold no observations, so a timeline is drawn from a fresh
//! run of the seed — the same build, scenario and seed give the same run —
//! and its trace digest is compared with the saved one; a mismatch (another
//! build, a changed scenario, a `--bug` flag not repeated) is said on the
//! page. The rendering itself is `leasesim-reports`; this file gathers the
//! data and writes the files.

mod links;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use leasesim_reports::sweep::Expect;
use leasesim_reports::{run_page, run_report_name, SweepSummary};

use super::BugArgs;
use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::{self as scenario, Scenario, Verdict};
pub use view::run_view;

/// At most this many timelines per sweep: a broken build can fail every
/// seed, and a thousand pages help no one more than fifty.
pub const MAX_RUN_REPORTS: usize = 50;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files: the JSON lines `leasesim sweep --json` or `leasesim run --json` print.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Directory to write index.html, summary.md and the run timelines into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Re-run at most this many unexpected seeds to draw their timelines (0: none).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_runs: usize,
    #[command(flatten)]
    pub bugs: BugArgs,
}

fn expect_of(scenario: &Scenario) -> Expect {
    match &scenario.expect.verdict {
        Verdict::Safe => Expect::Safe,
        Verdict::Violation { ids } => Expect::Violation(ids.clone()),
    }
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create the report directory: {e}", dir.display()))
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

/// `--bug` names beyond the scenario's own, for the commands a report prints.
fn bug_names(options: &RunOptions) -> Vec<String> {
    options.extra_bugs.enabled().into_iter().map(String::from).collect()
}

/// Writes the timeline page of a run kept with `keep_observations`;
/// returns its path. `note` is a caveat to show on the page; `bugs` are the
/// `--bug` flags the run had.
pub fn write_run_report(
    dir: &Path,
    scenario: &Scenario,
    outcome: &RunOutcome,
    bugs: &[String],
    note: Option<String>,
) -> Result<PathBuf, String> {
    create_dir(dir)?;
    let mut view = run_view(scenario, outcome);
    view.replay = leasesim_reports::results::with_bug_flags(view.replay, bugs);
    view.notes.extend(note);
    let path = dir.join(run_report_name(&outcome.scenario, outcome.seed));
    write_file(&path, &run_page(&view))?;
    Ok(path)
}

/// Runs `seed` again with its observations kept and writes its timeline;
/// `saved_digest` is the digest the first run reported.
fn rerun_report(dir: &Path, scenario: &Scenario, seed: u64, options: &RunOptions, saved_digest: &str) -> Result<String, String> {
    let options = RunOptions { keep_observations: true, trace: false, ..options.clone() };
    let outcome = run_seed(scenario, seed, &options);
    let note = (!saved_digest.is_empty() && outcome.trace_digest != saved_digest).then(|| {
        format!(
            "This timeline is from a re-run whose trace digest {} differs from the saved result's {saved_digest}: \
             another build, a changed scenario file, or planted bugs (--bug) not given again. It may not show the saved failure.",
            outcome.trace_digest
        )
    });
    let path = write_run_report(dir, scenario, &outcome, &bug_names(&options), note)?;
    Ok(path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default())
}

/// The sweep's report, rendered from the results file the sweep streamed
/// its runs into (so the sweep itself holds no run in memory): a timeline
/// per unexpected seed (re-run with its observations, at most
/// [`MAX_RUN_REPORTS`]), summary.md and index.html. Returns the index path
/// and how many timelines were written.
pub fn write_sweep_report(dir: &Path, results: &Path, bugs: &[String], elapsed_seconds: Option<f64>) -> Result<(PathBuf, usize), String> {
    let (_, index, timelines) = render(&[results.to_path_buf()], dir, bugs, MAX_RUN_REPORTS, elapsed_seconds)?;
    Ok((index, timelines))
}

fn write_summary(dir: &Path, summary: &SweepSummary) -> Result<PathBuf, String> {
    write_file(&dir.join("summary.md"), &leasesim_reports::sweep_md::sweep_markdown(summary))?;
    let index = dir.join("index.html");
    write_file(&index, &leasesim_reports::sweep_html::sweep_html(summary))?;
    Ok(index)
}

/// `leasesim report RESULTS… --out DIR`.
pub fn report_command(args: &ReportArgs) -> i32 {
    match report(args) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("{message}");
            2
        }
    }
}

fn report(args: &ReportArgs) -> Result<(), String> {
    let (summary, index, timelines) = render(&args.results, &args.out, &args.bugs.bugs, args.max_runs, None)?;
    println!("{}", leasesim_reports::sweep_md::headline(&summary).replace("**", ""));
    println!("report: {} (+ summary.md, {timelines} run timeline(s))", index.display());
    Ok(())
}

/// Reads results files and writes the report into `out`.
fn render(
    paths: &[PathBuf],
    out: &Path,
    bugs: &[String],
    max_runs: usize,
    elapsed_seconds: Option<f64>,
) -> Result<(SweepSummary, PathBuf, usize), String> {
    let mut results = Vec::new();
    for path in paths {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read the results file: {e}"))?;
        results.extend(leasesim_reports::parse_results(&name, &text).map_err(|e| e.to_string())?);
    }
    // `--bug` given here means the saved runs had it (older JSON cannot say).
    let given: Vec<String> = bugs.to_vec();
    for r in results.iter_mut().filter(|r| r.bugs.is_empty()) {
        r.bugs = given.clone();
    }
    // Scenario files give the expectation and allow re-runs; results
    // whose file is gone still render, with those parts left out.
    let mut scenarios: BTreeMap<String, Scenario> = BTreeMap::new();
    let mut unreadable: BTreeMap<String, String> = BTreeMap::new();
    for r in &results {
        if r.file.is_empty() || scenarios.contains_key(&r.file) || unreadable.contains_key(&r.file) {
            continue;
        }
        match scenario::load(Path::new(&r.file)) {
            Ok(s) => {
                scenarios.insert(r.file.clone(), s);
            }
            Err(e) => {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                unreadable.insert(r.file.clone(), first);
            }
        }
    }
    for (file, why) in &unreadable {
        eprintln!("note: {file}: cannot load the scenario ({why}); its expectation is unknown and its seeds are not re-run");
    }
    create_dir(out)?;
    let mut reports = BTreeMap::new();
    for r in results.iter().filter(|r| !r.is_expected()) {
        if reports.len() >= max_runs || reports.contains_key(&(r.scenario.clone(), r.seed)) {
            continue;
        }
        if let Some(s) = scenarios.get(&r.file) {
            let mut extra_bugs = leasesim_core::bugs::Bugs::default();
            for name in &r.bugs {
                extra_bugs.enable(name).map_err(|e| format!("{}: seed {}: {e}", r.file, r.seed))?;
            }
            let options = RunOptions { trace: false, extra_bugs, keep_observations: true, ..RunOptions::default() };
            let file = rerun_report(out, s, r.seed, &options, &r.trace_digest)?;
            reports.insert((r.scenario.clone(), r.seed), file);
        }
    }
    let expects = scenarios.values().map(|s| (s.name.clone(), expect_of(s))).collect();
    let mut summary = SweepSummary::new(&results, &expects, &reports, &out.display().to_string());
    summary.sources = paths.iter().map(|p| p.display().to_string()).collect();
    summary.elapsed_seconds = elapsed_seconds;
    let index = write_summary(out, &summary)?;
    let timelines = reports.len();
    Ok((summary, index, timelines))
}
