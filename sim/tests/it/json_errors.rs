//! With `--json`, bad input is a JSON object on stdout
//! (`{"verdict":"error","file","line","column","message"}`) and exit code
//! 2, for `check-history`, `check`, `run` and `sweep`; without it, the text
//! errors on stderr are unchanged.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).output().expect("run leasesim")
}

fn write(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("leasesim-json-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The JSON objects on stdout, one a line.
fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"))).collect()
}

fn assert_error(v: &Value, file: &str, line: u64, column: u64, says: &str) {
    assert_eq!(v["verdict"], "error", "{v}");
    assert_eq!(v["file"], file, "{v}");
    assert_eq!((v["line"].as_u64(), v["column"].as_u64()), (Some(line), Some(column)), "{v}");
    assert!(v["message"].as_str().unwrap().contains(says), "{v}");
}

const TYPO: &str = "name = \"typo\"\nduration = \"5s\"\n\n[network]\nlaetncy = [\"1ms\", \"2ms\"]\n";

#[test]
fn check_history_errors_are_json() {
    let file = write("bad.edn", "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 0 :type :done}\n");
    let out = leasesim(&["check-history", &file, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_error(&lines[0], &file, 2, 19, "`:type` must be");
    // Without --json: text on stderr, nothing on stdout.
    let out = leasesim(&["check-history", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{file}:2:19: `:type` must be")), "{err}");
    // A file that cannot be read has no position.
    let out = leasesim(&["check-history", "/no/such/history.log", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v = &json_lines(&out)[0];
    assert!(v["line"].is_null() && v["column"].is_null() && v["verdict"] == "error", "{v}");
}

#[test]
fn check_run_and_sweep_errors_are_json() {
    let file = write("typo.toml", TYPO);
    for args in [vec!["check", &file, "--json"], vec!["run", &file, "--json"], vec!["sweep", &file, "--json"]] {
        let out = leasesim(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert_error(&lines[0], &file, 5, 1, "laetncy");
        assert!(lines[0]["fix"].as_str().is_some_and(|f| !f.is_empty()), "{args:?}: {}", lines[0]);
    }
}

#[test]
fn check_json_lists_good_files_too() {
    let good = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/baseline.toml");
    let bad = write("typo2.toml", &TYPO.replace("typo", "typo2"));
    let out = leasesim(&["check", good, &bad, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["verdict"], "ok");
    assert_eq!(lines[0]["scenario"], "baseline");
    assert_error(&lines[1], &bad, 5, 1, "laetncy");
    let out = leasesim(&["check", good, "--json"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn bad_flags_and_unwritable_outputs_are_json_too() {
    for args in [
        vec!["sweep", "scenarios/", "--seeds", "5..3", "--json"],
        vec!["run", "--no-such-flag", "scenarios/baseline.toml", "--json"],
        vec!["sweep", "scenarios/baseline.toml", "--seeds", "0..1", "--resume", "/nonexistent/dir/r.jsonl", "--json"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_leasesim"))
            .args(&args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .output()
            .expect("run leasesim");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert_eq!(lines[0]["verdict"], "error", "{args:?}");
        assert!(!lines[0]["message"].as_str().unwrap_or_default().is_empty(), "{args:?}");
    }
    let text = leasesim(&["run", "--no-such-flag", "x.toml"]);
    assert_eq!(text.status.code(), Some(2));
    assert!(text.stdout.is_empty() && String::from_utf8_lossy(&text.stderr).contains("--no-such-flag"), "text without --json");
}
