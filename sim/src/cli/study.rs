//! `leasesim study SPEC.toml --out DIR`: runs a study grid (see
//! docs/STUDY-FORMAT.md) and writes its JSON, CSV and SVG figures. Exit 0
//! when it ran (a study measures; it has no expectation to miss), 2 on bad
//! input. Cells where measurement and theory disagree are listed on stdout.
//! `--redraw DIR` redraws the heatmaps from a committed `DIR/results.json`
//! without running anything, so a figure fix does not change the data or
//! the build that produced it.

use std::path::PathBuf;

use clap::Args;

use crate::study::spec::StudySpec;
use crate::study::{output, run_study, spec, SeedPlan, StudyResults};
use leasesim_scenario::{self as scenario, Scenario};

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// The study spec (TOML).
    pub spec: PathBuf,
    /// Folder for results.json, results.csv and the SVG figures.
    #[arg(long, required_unless_present_any = ["redraw", "scenario_of", "forecast", "forecast_stale_writes", "forecast_wall_step", "forecast_wall_step_v2", "forecast_leader_pause", "forecast_lease_reads"])]
    pub out: Option<PathBuf>,
    /// Instead of running the study, read DIR/results.json (written by an
    /// earlier run of this spec) and rewrite DIR's heatmap-*.svg from it;
    /// results.json and the other files are left as they are.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "seeds", "jobs", "scenario_of", "forecast"])]
    pub redraw: Option<PathBuf>,
    /// Print, instead of running the study, the scenario that the run of
    /// cell CELL (its index in results.json) with seed SEED ran, as TOML:
    /// `leasesim run FILE --seed SEED` replays that run (same digest).
    #[arg(long, value_name = "CELL:SEED")]
    pub scenario_of: Option<String>,
    /// Print, instead of running the study, the frozen model's forecast for
    /// every cell as CSV (commit it before running the seeds that test it).
    #[arg(long)]
    pub forecast: bool,
    /// Print, instead of running the study, the second frozen model's
    /// forecast (stale writes of a holder paused for less than the TTL,
    /// unfenced; for leasesim and for etcd 3.4's 500 ms lessor loop) as CSV.
    #[arg(long, conflicts_with = "forecast")]
    pub forecast_stale_writes: bool,
    /// Print, instead of running the study, the third frozen model's
    /// forecast (one step of the leader's wall clock under
    /// leader-stamped-wall: lease-early-expiry and lock-belief-overlap) as
    /// CSV.
    #[arg(long, conflicts_with_all = ["forecast", "forecast_stale_writes"])]
    pub forecast_wall_step: bool,
    /// Print, instead of running the study, the wall-step model's second
    /// version (frozen-v2-wall-step: four hops to the leader's apply, a
    /// follower's wait for the leader's next message, the two leases ending
    /// in separate applies) as CSV.
    #[arg(long, conflicts_with_all = ["forecast", "forecast_stale_writes", "forecast_wall_step"])]
    pub forecast_wall_step_v2: bool,
    /// Print, instead of running the study, the leader-pause model's
    /// forecast (frozen-v1-leader-pause: a leader paused while the lock
    /// holder is paused for good, lease checkpoints on or off) as CSV.
    #[arg(long, conflicts_with_all = ["forecast", "forecast_stale_writes", "forecast_wall_step", "forecast_wall_step_v2"])]
    pub forecast_leader_pause: bool,
    /// Print, instead of running the study, the leader-lease reads model's
    /// forecast (frozen-v1-lease-read: a stale read from a leader lease
    /// under a slow leader clock and a partition) as CSV.
    #[arg(long, conflicts_with_all = ["forecast", "forecast_stale_writes", "forecast_wall_step", "forecast_wall_step_v2", "forecast_leader_pause"])]
    pub forecast_lease_reads: bool,
    /// Seed range `A..B` per cell, instead of the spec's `seeds`.
    #[arg(long, value_parser = super::parse_seed_range)]
    pub seeds: Option<std::ops::Range<u64>>,
    /// Runs in parallel (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
}

pub fn study_command(args: &StudyArgs) -> i32 {
    let Some((spec, base)) = load_checked(args) else { return 2 };
    if let Some(dir) = &args.redraw {
        return redraw(dir, &spec.name);
    }
    if let Some(which) = &args.scenario_of {
        return print_scenario_of(which, &spec, &base);
    }
    if args.forecast {
        print!("{}", crate::study::calibration::forecast_csv(&spec, &base));
        return 0;
    }
    if args.forecast_stale_writes {
        print!("{}", crate::study::stale_write_forecast::forecast_csv(&spec, &base));
        return 0;
    }
    if args.forecast_wall_step {
        print!("{}", crate::study::wall_step_forecast::forecast_csv(&spec, &base));
        return 0;
    }
    if args.forecast_wall_step_v2 {
        print!("{}", crate::study::wall_step_forecast_v2::forecast_csv(&spec, &base));
        return 0;
    }
    if args.forecast_leader_pause {
        print!("{}", crate::study::leader_pause_forecast::forecast_csv(&spec, &base));
        return 0;
    }
    if args.forecast_lease_reads {
        print!("{}", crate::study::lease_read_forecast::forecast_csv(&spec, &base));
        return 0;
    }
    let Some(out) = &args.out else {
        eprintln!(
            "--out DIR is required (except with --scenario-of, --forecast, --forecast-stale-writes, --forecast-wall-step[-v2], --forecast-leader-pause or --forecast-lease-reads)"
        );
        return 2;
    };
    // --seeds fixes the count; otherwise the spec's (fixed or adaptive).
    let plan = args.seeds.clone().map_or_else(|| SeedPlan::of(&spec), SeedPlan::Fixed);
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let cells = crate::study::grid::cells(&spec).len();
    eprintln!("study {}: {cells} cells, seeds {plan:?}, on {jobs} threads", spec.name);
    let results = run_study(&spec, &base, plan, jobs);
    print_cells(&results);
    print_not_judged(&results);
    if let Some(s) = crate::study::calibration::summary(&results) {
        println!(
            "frozen forecast: {} cells, inside the observed 95% interval in {}; Brier {:.4}; overlapping runs {:.1} forecast, {} observed",
            s.cells, s.inside, s.brier, s.expected_runs, s.observed_runs
        );
    }
    match output::write_all(out, &results) {
        Ok(files) => {
            eprintln!("wrote {} files to {} in {:.1}s", files.len(), out.display(), results.wall_seconds);
            0
        }
        Err(e) => {
            eprintln!("{}: cannot write the results: {e}", out.display());
            2
        }
    }
}

/// The spec, its base scenario, and every cell checked against the base;
/// `None` (the errors printed) when any of them is bad.
fn load_checked(args: &StudyArgs) -> Option<(StudySpec, Scenario)> {
    let spec = spec::load(&args.spec).map_err(|e| eprintln!("{e}")).ok()?;
    let base = match scenario::load(&spec.base) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("(the base scenario named by `base` in {})", args.spec.display());
            return None;
        }
    };
    let text = std::fs::read_to_string(&args.spec).unwrap_or_default();
    if let Err(e) = spec::check_cells(&spec, &base, &text, &args.spec.display().to_string()) {
        eprintln!("{e}");
        return None;
    }
    Some((spec, base))
}

/// `--redraw DIR`: the heatmaps again from DIR/results.json, which must be
/// this spec's results.
fn redraw(dir: &std::path::Path, name: &str) -> i32 {
    match output::redraw(dir, name) {
        Ok((build, files)) => {
            eprintln!("redrew {} heatmaps in {} from results.json (build {build}, unchanged)", files.len(), dir.display());
            0
        }
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

/// `--scenario-of CELL:SEED`: prints the scenario that run ran, as TOML.
fn print_scenario_of(which: &str, spec: &StudySpec, base: &Scenario) -> i32 {
    let cells = crate::study::grid::cells(spec);
    let parsed = which.split_once(':').and_then(|(c, s)| Some((c.parse::<usize>().ok()?, s.parse::<u64>().ok()?)));
    let Some((cell, seed)) = parsed.filter(|(c, _)| *c < cells.len()) else {
        eprintln!(
            "--scenario-of {which}: expected CELL:SEED with CELL a cell index below {} (results.json `cells[].index`) and SEED a run's seed (runs.csv.gz)",
            cells.len()
        );
        return 2;
    };
    let mut s = crate::study::grid::apply_run(base, spec, &cells[cell], seed);
    s.name = format!("{}-cell{cell}-seed{seed}", spec.name);
    s.description = Some(format!(
        "Study {} cell {cell} ({}), the run with seed {seed}: replay with `leasesim run FILE --seed {seed}`.",
        spec.name,
        crate::study::grid::label(&cells[cell])
    ));
    s.seeds = seed..seed + 1;
    print!("{}", scenario::to_toml(&s));
    0
}

/// One line per invariant some run left undecided, with the count per
/// cell: a cell's rate of runs that fired is a lower bound when some of
/// its runs were not judged, and the reader must see how many. Nothing
/// when every run was judged.
fn print_not_judged(results: &StudyResults) {
    let mut ids: Vec<&str> = results.runs.iter().flat_map(|r| r.not_judged.iter().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let undecided = |cell: usize| results.runs.iter().filter(|r| r.cell == cell && r.not_judged.contains(&id)).count();
        let per_cell: Vec<String> = results
            .cells
            .iter()
            .filter(|c| undecided(c.index) > 0)
            .map(|c| format!("cell {} {}/{}", c.index, undecided(c.index), c.metrics.runs))
            .collect();
        let total: usize = results.cells.iter().map(|c| undecided(c.index)).sum();
        println!("{id} not judged (left undecided) in {total} of {} runs: {}", results.runs.len(), per_cell.join(", "));
    }
}

/// One line per cell on stdout, flagging those where measurement and
/// theory disagree.
fn print_cells(results: &StudyResults) {
    println!("build {}", results.build);
    println!(
        "{:<70} {:>5} {:>17} {:>10}  {:<8} {:<8} {:<9} invariants fired (count)",
        "cell", "runs", "unsafe-runs (95%)", "min-gap-ms", "theory", "measured", "consistency"
    );
    for c in &results.cells {
        let m = &c.metrics;
        let gap = m.min_margin_ns.map_or("-".to_string(), |g| format!("{:.1}", g as f64 / 1e6));
        let theory = c.prediction.as_ref().map_or("-", |p| p.verdict);
        let flag = if c.agreement == "agree" { "" } else { "  <- disagrees" };
        // Every invariant that fired, safety or not: none is left out.
        let fired: Vec<String> = m.invariants.iter().map(|(id, n)| format!("{id}={n}")).collect();
        let fired = if fired.is_empty() { "none".to_string() } else { fired.join(" ") };
        let u = &c.rates.unsafe_runs;
        let unsafe_runs = format!("{}/{} [{:.2},{:.2}]", u.k, u.n, u.lo, u.hi);
        let per_run = if c.consistency_check.runs == 0 && c.consistency_check.not_modelled_runs > 0 {
            "n/m".to_string()
        } else {
            format!("{}/{}", c.consistency_check.agree_runs, c.consistency_check.runs)
        };
        println!(
            "{:<70} {:>5} {:>17} {:>10}  {:<8} {:<8} {:<9} {fired}{flag}",
            c.label, m.runs, unsafe_runs, gap, theory, c.measured, per_run
        );
    }
}
