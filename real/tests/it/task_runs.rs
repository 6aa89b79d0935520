//! The task workload for real, and faults on the data store: a planted
//! bug in the store's task rows found for real by `task-once`, a safe task
//! run through a paused and a crashed store, whose restart is a new
//! process (a new pid) on the same files, after which writes resume, and
//! the bundled task scenarios refused no longer for their tasks or their
//! store faults.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::{bundled, data, invariants, json, real};

#[test]
fn a_store_that_takes_stale_completions_is_caught_by_task_once_for_real() {
    // A rate, not a certainty: measured under load (see the file's
    // header) a run finds it 2.0 times on average and 11 runs of 12 find
    // it; if a run's findings are Poisson, one misses with probability
    // about e^-2 = 0.14, so five runs all miss about 5 times in 100 000.
    let seeds = ["0", "1", "2", "3", "4"];
    let mut seen = Vec::new();
    for seed in seeds {
        let out = real(&["run", &data("task-completion-unfenced-short.toml"), "--seed", seed, "--json"]);
        let v = json(&out);
        let fired = invariants(&v);
        assert!(fired.iter().all(|id| *id == "task-once"), "only task-once may fire: {v}");
        if fired.contains(&"task-once") {
            assert_eq!(out.status.code(), Some(0), "the expected violation is the expected verdict: {v}");
            let detail = v["violations"][0]["detail"].as_str().unwrap();
            assert!(detail.contains("newer claim") || detail.contains("already completed"), "{detail}");
            return;
        }
        seen.push(v);
    }
    panic!("task-once never fired in {} real runs: {seen:?}", seeds.len());
}

/// `text` without its terminal colour codes (`ESC [ … m`).
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// `(at_ns, proc, kind)` of every observation in a `--trace` file.
fn trace(path: &Path) -> Vec<(u64, Value, String)> {
    let text = std::fs::read_to_string(path).expect("the trace was written");
    text.lines()
        .map(|line| {
            let o: Value = serde_json::from_str(line).expect("a JSON line");
            (o["at_ns"].as_u64().unwrap(), o["proc"].clone(), o["event"]["kind"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_paused_and_crashed_store_comes_back_as_a_new_process_and_task_writes_resume() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let keep = dir.path().join("run");
    let trace_path = dir.path().join("trace.jsonl");
    let (keep_arg, trace_arg) = (keep.to_string_lossy().into_owned(), trace_path.to_string_lossy().into_owned());
    let out = real(&["run", &data("task-store-crash-pause.toml"), "--keep-dir", &keep_arg, "--trace", &trace_arg, "--json"]);
    let v = json(&out);
    assert_eq!((out.status.code(), v["verdict"].as_str()), (Some(0), Some("ok")), "{v}");
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(
        faults.iter().any(|f| f.contains("pause store for 1s")) && faults.iter().any(|f| f.contains("crash store for 1s")),
        "{faults:?}"
    );
    // Two processes served the store: each logs its pid when it starts.
    let log = without_colours(&std::fs::read_to_string(keep.join("store.log")).expect("the store's log"));
    let pids: Vec<&str> = log.lines().filter(|l| l.contains("data store started")).filter_map(|l| l.split("pid=").nth(1)).collect();
    assert_eq!(pids.len(), 2, "started, then restarted after the crash: {log}");
    assert_ne!(pids[0], pids[1], "the restart is a new process");
    let obs = trace(&trace_path);
    let store = Value::String("Store".into());
    let at = |kind: &str| obs.iter().find(|(_, p, k)| *p == store && k == kind).map(|o| o.0).unwrap_or_else(|| panic!("no store {kind}"));
    let (paused, resumed, crashed, restarted) = (at("paused"), at("resumed"), at("crashed"), at("restarted"));
    assert!(paused < resumed && resumed < crashed && crashed < restarted);
    let accepted: Vec<u64> = obs.iter().filter(|(_, _, k)| k == "task-write-accepted").map(|o| o.0).collect();
    // A stopped store answers nothing, and a dead one neither. Margins for
    // a loaded machine: an answer stamped in the pause's first 500 ms may
    // have left just before it (the client stamps it when it runs next),
    // and one in the last 100 ms may have come right after the runner
    // woke the store but before it stamped that.
    let quiet = |from: u64, to: u64| !accepted.iter().any(|t| (from + 500_000_000..to.saturating_sub(100_000_000)).contains(t));
    assert!(quiet(paused, resumed) && quiet(crashed, restarted), "{accepted:?}");
    assert!(accepted.iter().filter(|t| **t > restarted).count() >= 2, "writes resume after the restart: {accepted:?}");
    let rows = std::fs::read_to_string(keep.join("data.tasks.txt")).expect("the task rows' file");
    assert!(rows.lines().count() >= accepted.len(), "every accepted task write is on disk");
}

/// What `leasesim-real run FILE` printed within 5 s, for each of `files`
/// (run side by side, so a second file costs no time): a refusal prints
/// at once; a playable file starts its cluster, and `timeout` stops it.
fn first_words(files: &[&str]) -> Vec<String> {
    let run = |file: &str| {
        Command::new("timeout")
            .args(["5", env!("CARGO_BIN_EXE_leasesim-real"), "run", &bundled(file)])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("timeout runs")
    };
    let children: Vec<_> = files.iter().map(|f| run(f)).collect();
    children.into_iter().map(|c| String::from_utf8_lossy(&c.wait_with_output().expect("it ends").stderr).into_owned()).collect()
}

#[test]
fn bundled_task_scenarios_are_refused_only_for_what_is_still_unplayable() {
    // task-singleton-nemesis's network faults on clients (lines 52 and 77)
    // play on the clients' own routes (`routes.rs`).
    for stderr in first_words(&["task-workers-crash-pause.toml", "task-singleton-nemesis.toml"]) {
        assert!(!stderr.contains("cannot play"), "{stderr}");
    }
}
