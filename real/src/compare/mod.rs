//! `leasesim-real compare SCENARIO`: runs one scenario in the simulator
//! (seeds) and for real (runs), and sets the two side by side: how often
//! each invariant fired in each world, with Wilson intervals, and the
//! timing figures both measure. It exists so that a finding of the
//! simulator can be checked against real sockets, schedulers, disks and
//! clocks, one seed's fault schedule at a time.

mod table;
mod worlds;

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::Target;

#[derive(clap::Args, Clone, Debug)]
pub struct CompareArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// The simulator's seeds (`A..B`).
    #[arg(long, value_parser = leasesim_scenario::seeds::parse_flag, default_value = "0..20")]
    pub sim_seeds: Range<u64>,
    /// How many real runs; run i plays seed `A + i` of --sim-seeds.
    #[arg(long, default_value_t = 20)]
    pub real_runs: u64,
    #[arg(long, value_enum, default_value = "node")]
    pub target: Target,
    /// Real runs at once (each its own cluster on loopback).
    #[arg(long, default_value_t = 4)]
    pub parallel: usize,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Plant a bug in both worlds (repeatable).
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Also write every run's JSON line here: sim.jsonl and real.jsonl.
    #[arg(long, value_name = "DIR")]
    pub raw: Option<PathBuf>,
    /// The simulator's binary (default: `leasesim` next to this one).
    #[arg(long)]
    pub leasesim_bin: Option<PathBuf>,
}

/// Runs the comparison; the exit code (2: bad input, or a world that could
/// not run the scenario).
pub fn run(args: &CompareArgs) -> i32 {
    match compare(args) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("leasesim-real compare: {message}");
            2
        }
    }
}

fn compare(args: &CompareArgs) -> Result<(), String> {
    let scenario = leasesim_scenario::load(&args.file).map_err(|e| e.to_string())?;
    if args.real_runs == 0 || args.sim_seeds.is_empty() {
        return Err("--real-runs and --sim-seeds must each give at least one run".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let leasesim = args.leasesim_bin.clone().unwrap_or_else(|| exe.with_file_name("leasesim"));
    if !leasesim.is_file() {
        return Err(format!(
            "{}: no leasesim binary (build it with `cargo build --release -p leasesim`, or pass --leasesim-bin)",
            leasesim.display()
        ));
    }
    let real = worlds::RealRuns {
        exe,
        file: &args.file,
        target: args.target.name(),
        bugs: &args.bugs,
        first_seed: args.sim_seeds.start,
        runs: args.real_runs,
        parallel: args.parallel,
    }
    .run()?;
    let sim = worlds::simulate(&leasesim, &args.file, &args.sim_seeds, &args.bugs)?;
    if let Some(dir) = &args.raw {
        write_raw(dir, &sim, &real).map_err(|e| format!("--raw {}: {e}", dir.display()))?;
    }
    let (invariants, timings) = table::compare(&sim, &real);
    let comparison = table::Comparison {
        scenario: scenario.name.clone(),
        file: args.file.display().to_string(),
        target: args.target.name(),
        sim_runs: sim.runs.len(),
        real_runs: real.runs.len(),
        sim_seeds: format!("{}..{}", args.sim_seeds.start, args.sim_seeds.end),
        real_seeds: format!("{}..{}", args.sim_seeds.start, args.sim_seeds.start + args.real_runs),
        invariants,
        timings,
    };
    if args.json {
        println!("{}", serde_json::to_string(&comparison).expect("comparisons serialize"));
    } else {
        table::print(&comparison);
    }
    Ok(())
}

fn write_raw(dir: &Path, sim: &worlds::World, real: &worlds::World) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("sim.jsonl"), sim.raw.join("\n") + "\n")?;
    std::fs::write(dir.join("real.jsonl"), real.raw.join("\n") + "\n")
}
