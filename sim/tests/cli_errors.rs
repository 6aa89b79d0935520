//! Bad input gets a clear message and exit code 2, never a panic: bad
//! scenario files, bad flags, bad ranges.

use std::process::{Command, Output};

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run leasesim")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn temp_scenario(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_typo_in_a_key_names_file_line_and_fix() {
    let path = temp_scenario("typo.toml", "name = \"typo\"\nduration = \"5s\"\n\n[network]\nlaetncy = [\"1ms\", \"2ms\"]\n");
    for command in ["run", "check"] {
        let out = leasesim(&[command, path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = stderr(&out);
        assert!(err.contains("typo.toml:5:1"), "{command}: {err}");
        assert!(err.contains("did you mean `latency`"), "{command}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn an_impossible_selector_is_refused_before_running() {
    let path = temp_scenario(
        "selector.toml",
        "name = \"selector\"\nduration = \"5s\"\n[cluster]\nservers = 3\n[[fault]]\nat = \"1s\"\ncrash = \"s7\"\n",
    );
    let out = leasesim(&["sweep", path.to_str().unwrap(), "--seeds", "0..2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("selector.toml:7"), "{}", stderr(&out));
}

#[test]
fn bad_flags_exit_2() {
    for args in [
        vec!["sweep", "scenarios/", "--seeds", "5..2"],
        vec!["sweep", "scenarios/", "--shard", "4/3"],
        vec!["run", "scenarios/baseline.toml", "--bug", "no-such-bug"],
        vec!["run", "scenarios/no-such-file.toml"],
        vec!["frobnicate"],
    ] {
        let out = leasesim(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
    let out = leasesim(&["run", "scenarios/baseline.toml", "--bug", "no-such-bug"]);
    assert!(stderr(&out).contains("known bugs"), "{}", stderr(&out));
}
