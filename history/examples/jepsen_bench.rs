//! Times the linearizability checker on every Jepsen etcd register history
//! (`history/tests/data/jepsen-etcd-register/`, or a folder given as argument):
//! steps and wall time per history, total and worst, with and without the
//! window shrinking. Run in release for the report's figures:
//! `cargo run --release -p leasesim-history --example jepsen_bench`.

use std::path::PathBuf;
use std::time::Instant;

use leasesim_history::jepsen::parse_jepsen;
use leasesim_history::{check_register, CheckOptions, Verdict};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen-etcd-register"));
    let Ok(verdicts) = std::fs::read_to_string(dir.join("verdicts.txt")) else {
        eprintln!("no verdicts.txt in {}", dir.display());
        std::process::exit(2);
    };
    let options = CheckOptions::default();
    // Checking only: a shrink budget of zero leaves the window unshrunk.
    let check_only = CheckOptions { shrink_budget_steps: 0, ..options };
    let (mut total_s, mut total_steps, mut total_with_shrink_s) = (0.0f64, 0u64, 0.0f64);
    let (mut worst_s, mut worst_s_file) = (0.0f64, String::new());
    let (mut worst_steps, mut worst_steps_file) = (0u64, String::new());
    let mut mismatches = 0;
    println!("{:<14} {:>4} {:>17} {:>10} {:>10} {:>12} {:>7}", "file", "ops", "verdict", "steps", "check_s", "w/shrink_s", "window");
    for row in verdicts.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = row.split_whitespace();
        let (file, want) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let text = std::fs::read_to_string(dir.join(file)).expect("readable history");
        let history = parse_jepsen(&text).expect("parsable history");

        let started = Instant::now();
        let report = check_register(&history, &check_only).expect("valid history");
        let check_s = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let full = check_register(&history, &options).expect("valid history");
        let full_s = started.elapsed().as_secs_f64();

        let window = match &full.verdict {
            Verdict::NotLinearizable { window } => window.len().to_string(),
            _ => "-".to_string(),
        };
        if report.verdict.name() != want {
            mismatches += 1;
        }
        println!(
            "{file:<14} {:>4} {:>17} {:>10} {check_s:>10.4} {full_s:>12.4} {window:>7}",
            history.ops.len(),
            report.verdict.name(),
            report.steps
        );
        total_s += check_s;
        total_with_shrink_s += full_s;
        total_steps += report.steps;
        if check_s > worst_s {
            (worst_s, worst_s_file) = (check_s, file.to_string());
        }
        if report.steps > worst_steps {
            (worst_steps, worst_steps_file) = (report.steps, file.to_string());
        }
    }
    println!("total: {total_s:.4}s and {total_steps} steps checking; {total_with_shrink_s:.4}s with window shrinking");
    println!("worst: {worst_s:.4}s ({worst_s_file}); {worst_steps} steps ({worst_steps_file})");
    println!("verdict mismatches: {mismatches}");
    if mismatches > 0 {
        std::process::exit(1);
    }
}
