//! The simulator's benchmark: `cargo bench -p leasesim` runs `leasesim bench`
//! on the baseline (4 seeds) and prints its table. Speed targets live here
//! and in README.md, never in a timed test. (The per-run peak memory is
//! measured by the `leasesim` binary itself: `leasesim bench`.)

use std::path::PathBuf;

use leasesim::cli::bench::{bench_command, BenchArgs};

fn main() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let args =
        BenchArgs { paths: vec![root.join("scenarios/baseline.toml")], seeds: 0..4, json: false, no_child: true, max_overhead: None };
    std::process::exit(bench_command(&args));
}
