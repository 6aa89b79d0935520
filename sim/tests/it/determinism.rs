//! Determinism is a feature users rely on: the same build, scenario and seed
//! give the same trace digest — in two separate processes, and whatever the
//! number of sweep threads.

use std::process::Command;

fn leasesim(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run leasesim");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn digests(json_lines: &str) -> Vec<(String, u64, String)> {
    let mut rows: Vec<(String, u64, String)> = json_lines
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
            (v["scenario"].as_str().unwrap().to_string(), v["seed"].as_u64().unwrap(), v["trace_digest"].as_str().unwrap().to_string())
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn same_seed_same_digest_in_two_processes() {
    let args = ["run", "scenarios/leader-crash-locks-held.toml", "--seed", "5", "--json"];
    let first = digests(&leasesim(&args));
    let second = digests(&leasesim(&args));
    assert_eq!(first.len(), 1);
    assert!(!first[0].2.is_empty());
    assert_eq!(first, second);
}

#[test]
fn different_seeds_differ() {
    let a = digests(&leasesim(&["run", "scenarios/holder-pause-fenced.toml", "--seed", "1", "--json"]));
    let b = digests(&leasesim(&["run", "scenarios/holder-pause-fenced.toml", "--seed", "2", "--json"]));
    assert_ne!(a[0].2, b[0].2, "a digest that ignores the seed proves nothing");
}

#[test]
fn jobs_do_not_change_digests() {
    let one = digests(&leasesim(&[
        "sweep",
        "scenarios/registry-client-crash.toml",
        "scenarios/holder-pause-unfenced.toml",
        "--seeds",
        "0..4",
        "--jobs",
        "1",
        "--json",
    ]));
    let two = digests(&leasesim(&[
        "sweep",
        "scenarios/registry-client-crash.toml",
        "scenarios/holder-pause-unfenced.toml",
        "--seeds",
        "0..4",
        "--jobs",
        "2",
        "--json",
    ]));
    assert_eq!(one.len(), 8);
    assert_eq!(one, two);
}

#[test]
fn check_determinism_flag_passes_on_a_healthy_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(["run", "scenarios/membership-change.toml", "--seed", "3", "--check-determinism"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run leasesim");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("deterministic: two runs gave digest"), "{stdout}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn fault_points_and_drawn_knobs_replay_exactly() {
    // chaos-nemesis draws crashes and pauses at fault points, timer jumps
    // and the engine's knobs: the same seed, twice, in two processes.
    let args = ["sweep", "scenarios/chaos-nemesis.toml", "--seeds", "0..3", "--json"];
    let (a, b) = (digests(&leasesim(&args)), digests(&leasesim(&args)));
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
}

#[test]
fn a_chaos_seed_and_its_explicit_scenario_give_one_digest() {
    // What `shrink` writes for a seed (knobs and points pinned in the file)
    // replays that seed bit for bit.
    use leasesim::run::{chaos, run_seed, RunOptions};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/chaos-nemesis.toml");
    let file = leasesim_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    for seed in 0..2 {
        let explicit_text = leasesim_scenario::to_toml(&chaos::explicit(&file, seed));
        assert!(explicit_text.contains("max_append_entries") && explicit_text.contains("when = "), "{explicit_text}");
        let explicit = leasesim_scenario::parse(&explicit_text, "explicit.toml").unwrap_or_else(|e| panic!("{e}"));
        let options = RunOptions::default();
        assert_eq!(run_seed(&file, seed, &options).trace_digest, run_seed(&explicit, seed, &options).trace_digest, "seed {seed}");
    }
}
