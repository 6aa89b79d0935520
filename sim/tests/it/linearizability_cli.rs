//! `leasesim check-history` end to end on small files: exit codes, format
//! detection, bad input named by file and line, and a partial failing
//! window reported as such on porcupine's largest failing history.

use std::path::PathBuf;
use std::process::Command;

use leasesim::cli::check_history::{
    check_history, check_history_command, CheckHistoryArgs, HistoryFormat, EXIT_BAD_INPUT, EXIT_LINEARIZABLE, EXIT_NOT_LINEARIZABLE,
    EXIT_UNKNOWN,
};
use serde_json::Value;

/// Writes `text` to a file unique to this test process.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-lin-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn args(file: PathBuf) -> CheckHistoryArgs {
    CheckHistoryArgs { file, format: None, json: false, budget: 1_000_000, shrink_budget: 1_000_000 }
}

fn jepsen(events: &[(u64, &str, &str, &str)]) -> String {
    events.iter().map(|(p, t, f, v)| format!("INFO  jepsen.util - {p}\t:{t}\t:{f}\t{v}\n")).collect()
}

const STALE_READ: &[(u64, &str, &str, &str)] =
    &[(0, "invoke", "write", "1"), (0, "ok", "write", "1"), (1, "invoke", "read", "nil"), (1, "ok", "read", "nil")];

#[test]
fn jepsen_file_verdicts_and_exit_codes() {
    let good = file("good.log", &jepsen(&STALE_READ[..2]));
    assert_eq!(check_history_command(&args(good)), EXIT_LINEARIZABLE);
    let stale = file("stale.log", &jepsen(STALE_READ));
    assert_eq!(check_history_command(&args(stale.clone())), EXIT_NOT_LINEARIZABLE);
    let json = CheckHistoryArgs { json: true, format: Some(HistoryFormat::Jepsen), ..args(stale) };
    assert_eq!(check_history_command(&json), EXIT_NOT_LINEARIZABLE);
}

const PUT: &str = r#"{"client":1,"call_ns":0,"return_ns":10,"input":{"put":{"key":"a","value":"1"}},"output":"ok"}"#;
const GET_1: &str = r#"{"client":2,"call_ns":20,"return_ns":30,"input":{"get":{"key":"a"}},"output":{"value":"1"}}"#;
const GET_NIL: &str = r#"{"client":2,"call_ns":40,"return_ns":50,"input":{"get":{"key":"a"}},"output":{"value":null}}"#;

#[test]
fn leasesim_files_in_both_forms() {
    let lines = file("ok.jsonl", &format!("{PUT}\n{GET_1}\n"));
    assert_eq!(check_history(&args(lines)), Ok(EXIT_LINEARIZABLE));
    let doc = file("bad.json", &format!("{{\n\"ops\": [\n{PUT},\n{GET_1},\n{GET_NIL}\n]\n}}\n"));
    assert_eq!(check_history(&args(doc)), Ok(EXIT_NOT_LINEARIZABLE));
}

#[test]
fn a_spent_budget_exits_3() {
    let lines = file("budget.jsonl", &format!("{PUT}\n{GET_1}\n"));
    assert_eq!(check_history(&CheckHistoryArgs { budget: 1, ..args(lines) }), Ok(EXIT_UNKNOWN));
}

fn bad_input(name: &str, text: &str) -> String {
    let path = file(name, text);
    assert_eq!(check_history_command(&args(path.clone())), EXIT_BAD_INPUT);
    let message = check_history(&args(path.clone())).expect_err("bad input").to_string();
    assert!(message.contains(&path.display().to_string()), "names the file: {message}");
    message
}

#[test]
fn bad_input_names_file_line_and_problem() {
    let m = bad_input("broken.jsonl", &format!("{PUT}\n{}\n", GET_1.replace("\"get\"", "\"fetch\"")));
    assert!(m.contains("broken.jsonl:2:") && m.contains("fetch"), "{m}");

    let m = bad_input("backwards.jsonl", &format!("{PUT}\n\n{}\n", GET_1.replace("\"return_ns\":30", "\"return_ns\":5")));
    assert!(m.contains("backwards.jsonl:3:") && m.contains("before call_ns"), "{m}");

    let m = bad_input("jepsen-bad.log", &jepsen(&[(0, "invoke", "write", "1"), (1, "ok", "write", "1")]));
    assert!(m.contains("jepsen-bad.log:2:") && m.contains("no pending invocation"), "{m}");

    let m = bad_input("what.txt", "\n\nhello world\n");
    assert!(m.contains("what.txt:3:") && m.contains("--format"), "{m}");

    let m = bad_input("empty.log", "");
    assert!(m.contains("empty.log:1:1: the file holds no client operation"), "{m}");

    let missing = std::env::temp_dir().join("leasesim-lin-cli-no-such-file.log");
    let m = check_history(&args(missing)).expect_err("missing file").to_string();
    assert!(m.contains("no-such-file") && m.contains("cannot read"), "{m}");
}

#[test]
fn forcing_the_wrong_format_is_bad_input_not_a_panic() {
    let path = file("forced.jsonl", &format!("{PUT}\n"));
    let forced = CheckHistoryArgs { format: Some(HistoryFormat::Jepsen), ..args(path) };
    let m = check_history(&forced).expect_err("not a Jepsen log").to_string();
    assert!(m.contains("forced.jsonl:1:"), "{m}");
}

/// One of porcupine's key-value histories, kept with the checker in history/.
fn porcupine(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../history/tests/data/porcupine-kv").join(name)
}

/// Runs the built `leasesim` binary; its exit code and standard output.
fn leasesim(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).output().expect("run leasesim");
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn the_command_says_when_the_window_is_partial() {
    let file = porcupine("c50-bad.txt").display().to_string();
    let (code, out) = leasesim(&["check-history", &file, "--json", "--shrink-budget", "1000"]);
    assert_eq!(code, Some(1), "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["verdict"], "not-linearizable");
    assert_eq!(json["window_partial"], true);
    assert_eq!(json["window_minimal"], false);
    assert_eq!(json["shrink_budget_steps"], 1000);
    assert!(json["shrink_steps"].as_u64().unwrap() <= 1000, "{out}");
    assert!(json["steps"].as_u64().unwrap() <= 200_000, "{out}");

    let (code, out) = leasesim(&["check-history", &file, "--shrink-budget", "1000"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("NOT linearizable") && out.contains("(partial: "), "{out}");

    // The default shrink budget completes c10-bad's window.
    let (code, out) = leasesim(&["check-history", &porcupine("c10-bad.txt").display().to_string(), "--json"]);
    assert_eq!(code, Some(1), "{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["window_partial"], false, "{out}");
}
