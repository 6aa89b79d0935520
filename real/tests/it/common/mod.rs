//! What every real-run test file needs to play a scenario and read its
//! outcome: the paths of the test data and of the bundled scenarios, the
//! runner itself (whose members and data store are its own binary run as
//! `leasesim-real node`, so these tests need no other build), and the
//! fields of its `--json` line. Each test file uses a part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// A file of real/tests/data.
pub fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).to_string_lossy().into_owned()
}

/// A bundled scenario (scenarios/ at the repository's root).
pub fn bundled(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name).to_string_lossy().into_owned()
}

/// `leasesim-real ARGS…`, waited for.
pub fn real(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim-real")).args(args).output().expect("leasesim-real runs")
}

/// The run's `--json` line (its last line of output).
pub fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The invariants that fired, one entry per violation.
pub fn invariants(v: &Value) -> Vec<&str> {
    v["violations"].as_array().unwrap().iter().map(|v| v["invariant"].as_str().unwrap()).collect()
}

/// The invariants the run could not judge.
pub fn not_judged(v: &Value) -> Vec<&str> {
    v["not_judged"].as_array().unwrap().iter().map(|n| n["invariant"].as_str().unwrap()).collect()
}
