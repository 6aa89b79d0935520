//! The runner's clients read their own skewable clocks
//! (`src/clients/clock.rs`): a client whose clock runs fast really acts
//! sooner in true time. Counted, not timed: renewals per client over the
//! same stretch of true time (`tests/data/client-clocks.toml`, 9 s of real
//! time); and the bundled singleton-slow-clock file, whose slow client's
//! lease ends while it still believes, found for real.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const S: u64 = 1_000_000_000;

fn run(file: &Path, trace: &Path) -> (Output, Value, Vec<Value>) {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim-real"))
        .args(["run", &file.to_string_lossy(), "--json", "--trace", &trace.to_string_lossy()])
        .output()
        .expect("leasesim-real runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    let v = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    let events = std::fs::read_to_string(trace).expect("the trace").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (out, v, events)
}

#[test]
fn a_client_whose_clock_runs_fast_renews_more_often_in_true_time() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace = dir.path().join("trace.jsonl");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/client-clocks.toml");
    let (out, v, events) = run(&file, &trace);
    assert_eq!(out.status.code(), Some(0), "{v}");
    // Keep-alives acknowledged to client `c` in true time [from, to) s.
    let renewals = |c: u64, from: u64, to: u64| {
        events
            .iter()
            .filter(|o| o["proc"]["Client"] == c && o["event"]["kind"] == "lease-acked" && o["event"]["keepalive"] == true)
            .filter(|o| (from * S..to * S).contains(&o["at_ns"].as_u64().unwrap()))
            .count() as f64
    };
    let (fast, exact) = (renewals(1, 1, 8), renewals(3, 1, 8));
    assert!(exact >= 10.0 && fast >= 1.4 * exact, "c1 at rate 1.9 renewed {fast} times, exact c3 {exact} times");
    // c2 is exact before its clock fault and fast after it.
    let (before, after) = (renewals(2, 1, 4), renewals(2, 5, 8));
    assert!(before <= 1.25 * renewals(3, 1, 4), "c2 renewed {before} times while exact, c3 {}", renewals(3, 1, 4));
    assert!(after >= 1.4 * before, "c2 renewed {before} times in 1–4 s, {after} in 5–8 s after its clock sped up");
    let played: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(played.iter().any(|f| f.contains("clock c2")), "{played:?}");
}
