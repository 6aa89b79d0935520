//! `leasesim-real compare` and chaos played for real, end to end: the
//! simulator's `leasesim` binary and real leasesim-node members on a few
//! seconds of scenario each.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).to_string_lossy().into_owned()
}

/// `compare` runs the simulator's `leasesim` next to itself (its members are
/// its own binary, `leasesim-real node`), and cargo builds only this crate's
/// binaries for these tests, so they hand it one with `--leasesim-bin`.
///
/// `.ci/run` names it in `LEASESIM_BIN`: there it is the very build of the
/// `cargo test --workspace --release` that runs this test, made before any
/// test ran (the simulator's own integration tests need it). A nested cargo
/// there could only find it fresh, yet on a fresh clone it compiled the
/// simulator again (about 40 s): sim/build.rs watches the git index, which
/// the build's own `git describe --dirty` had rewritten.
///
/// Without `LEASESIM_BIN`, build it once, as the very build `cargo test
/// --workspace --release` makes, so that it is fresh whatever ran before.
/// `--workspace` with a test target selected resolves features as that
/// command does (every member's dev-dependencies included), and `--test
/// cli_errors` (a small sim test) makes cargo build the binary; `-p
/// leasesim --bin leasesim` resolved features apart and compiled 37 crates
/// again, `--workspace --bin leasesim` (no dev-dependencies) 17. Cargo's
/// fingerprints, not this test, judge staleness: alone (`cargo test -p
/// leasesim-real`) it builds what is missing, and an older binary is never
/// used. The target directory is the one this test's own binary came from.
fn leasesim_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(named) = std::env::var_os("LEASESIM_BIN") {
            let bin = PathBuf::from(named);
            assert!(bin.is_file(), "LEASESIM_BIN names {}, which is no file", bin.display());
            return bin;
        }
        let dir = Path::new(env!("CARGO_BIN_EXE_leasesim-real")).parent().expect("a directory");
        let target_dir = dir.parent().expect("the target directory");
        let status = Command::new(env!("CARGO"))
            .args(["test", "--release", "--workspace", "--no-run", "--test", "cli_errors", "--target-dir"])
            .arg(target_dir)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building leasesim failed");
        let bin = dir.join("leasesim");
        assert!(bin.is_file(), "cargo built no leasesim in {}", dir.display());
        bin
    })
    .clone()
}

/// `leasesim-real compare ARGS --leasesim-bin BIN`.
fn compare(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leasesim-real"));
    command.arg("compare").args(args).arg("--leasesim-bin").arg(leasesim_bin());
    command.output().expect("leasesim-real runs")
}

fn real(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim-real")).args(args).output().expect("leasesim-real runs")
}

fn last_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn compare_names_every_invariant_with_both_worlds_counts() {
    let out = compare(&[&data("holder-pause-unfenced-short.toml"), "--sim-seeds", "0..3", "--real-runs", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v = last_json(&out);
    assert_eq!((v["sim_runs"].as_u64(), v["real_runs"].as_u64()), (Some(3), Some(2)), "{v}");
    let rows = v["invariants"].as_array().unwrap();
    let row = |id: &str| rows.iter().find(|r| r["invariant"] == id).unwrap_or_else(|| panic!("no row for {id}: {v}"));
    let ids: Vec<&str> = rows.iter().map(|r| r["invariant"].as_str().unwrap()).collect();
    for id in ["election-safety", "lease-early-expiry", "lock-belief-overlap", "fencing-order", "linearizable", "liveness"] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{id} once: {ids:?}");
    }
    // The unfenced holder's stale write is found in both worlds (not in
    // every seed: a holder paused between writes writes nothing stale).
    let fencing = row("fencing-order");
    assert_eq!((fencing["sim"]["n"].as_u64(), fencing["real"]["n"].as_u64()), (Some(3), Some(2)), "{fencing}");
    assert!(fencing["sim"]["k"].as_u64().unwrap() >= 1 && fencing["real"]["k"].as_u64().unwrap() >= 1, "{fencing}");
    assert!(fencing["sim"]["hi"].as_f64().unwrap() <= 1.0 && fencing["sim"]["lo"].as_f64().unwrap() > 0.0, "{fencing}");
    // Against leasesim-node every invariant is judged for real: durability
    // from the members' final logs, the rest from their event logs too.
    assert_eq!(row("durability")["real"]["n"].as_u64(), Some(2), "{v}");
    assert_eq!(row("release-by-owner")["real"]["n"].as_u64(), Some(2), "{v}");
    assert_eq!(row("election-safety")["real"]["n"].as_u64(), Some(2), "{v}");
    assert_eq!(row("lease-early-expiry")["real"]["n"].as_u64(), Some(2));
    // The paused holder is outlived in both worlds: figures on each side.
    let outlived = v["timings"].as_array().unwrap().iter().find(|t| t["figure"] == "holder-outlived").expect("the figure");
    assert!(outlived["sim"]["n"].as_u64().unwrap() >= 3 && outlived["real"]["n"].as_u64().unwrap() >= 2, "{outlived}");
    assert!(outlived["real"]["p50_ms"].as_f64().unwrap() > 500.0, "a 1 s lease outlives its paused holder: {outlived}");
}

#[test]
fn compare_prints_the_table_and_refuses_bad_input() {
    let out = compare(&[&data("holder-pause-unfenced-short.toml"), "--sim-seeds", "0..2", "--real-runs", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fencing = stdout.lines().find(|l| l.trim_start().starts_with("fencing-order")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(fencing.contains("/2 (") && fencing.contains("/1 ("), "simulator of 2, real of 1: {fencing}");
    assert!(stdout.contains("election-safety") && !stdout.contains("not judged"), "everything is judged on leasesim-node: {stdout}");
    let out = compare(&[&data("short-mixed.toml"), "--sim-seeds", "3..1"]);
    assert_eq!(out.status.code(), Some(2));
    let out = compare(&[&data("short-mixed.toml"), "--real-runs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--real-runs"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The faults a seed's chaos draws, as `leasesim-real` names them when it
/// plays them (`crash`, `pause`, `partition`).
fn drawn(file: &str, seed: u64) -> Vec<(u64, String)> {
    let s = leasesim_scenario::load(Path::new(file)).expect("the file loads");
    let e = leasesim_scenario::chaos_draw::explicit(&s, seed);
    e.faults.iter().filter(|f| f.at_ns < s.duration_ns).map(|f| (f.at_ns, f.action.name().to_string())).collect()
}

#[test]
fn a_chaos_seed_plays_for_real_the_schedule_the_simulator_draws() {
    let file = data("chaos-short.toml");
    for seed in [1, 2] {
        let expected = drawn(&file, seed);
        assert!(expected.len() >= 2, "seed {seed} draws faults: {expected:?}");
        let out = real(&["run", &file, "--seed", &seed.to_string(), "--json"]);
        let v = last_json(&out);
        let played: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        // Each drawn fault, fired or skipped (its selector named nobody then).
        let fired: Vec<&&str> = played.iter().filter(|f| f.contains("[chaos]: ")).collect();
        assert_eq!(fired.len(), expected.len(), "seed {seed}: drawn {expected:?}, played {played:?}");
        for ((at_ns, action), line) in expected.iter().zip(&fired) {
            let played_s: f64 = line.split('s').next().and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("a time: {line}"));
            let drawn_s = *at_ns as f64 / 1e9;
            assert!(line.contains(action.as_str()), "seed {seed}: {action} at {drawn_s}, played {line}");
            // Played at its time, never early; late by a loaded machine's
            // lag, which at load average 20 on 2 cores can pass seconds: the
            // bound only catches a fault played far from its point of the
            // run (the order is the pairing with the drawn list above).
            assert!(played_s >= drawn_s - 0.001 && played_s < drawn_s + 30.0, "seed {seed}: drawn at {drawn_s}, played {line}");
        }
        assert!(v["notes"].to_string().contains(&format!("seed {seed}")), "{v}");
    }
}

#[test]
fn a_chaos_draw_the_target_cannot_play_is_refused_at_the_chaos_table() {
    // chaos-nemesis's seed 0 draws points on servers, which Debian's etcd
    // has no failpoints for; its pauses at a client's point the runner's
    // clients carry out on either target (their routes close their gates),
    // and are not among the refusals. Refused before anything starts.
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/chaos-nemesis.toml");
    let out = real(&["run", &bundled.to_string_lossy(), "--seed", "0", "--target", "etcd"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let server_point = "(drawn for seed 0) `when = \"after-send:vote-reply\"`: Debian's etcd is built without gofail failpoints";
    assert!(stderr.contains("chaos-nemesis.toml:62:1") && stderr.contains(server_point), "{stderr}");
    assert!(!stderr.contains("after-send:request"), "a client's pause at its point is played: {stderr}");
    // A drawn point fault is refused at [chaos], not at a line 0.
    assert!(!stderr.contains(":0:1:"), "{stderr}");
}
