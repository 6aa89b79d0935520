//! The stated slack, end to end: a simulated run that meets its liveness
//! deadline by less than the slack is reported as such — in its JSON line
//! (`below_slack`), in the sweep's margins table (`within`), by `run`, and
//! as a failure by `merge --fail-below-slack` — while the same scenario
//! with room to spare is not. The planted files
//! (`tests/data/liveness-slack/`) differ only in the settle phase's length,
//! so the leader deadline's margin is that length exactly.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(root()).output().expect("run leasesim")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

const SHORT: &str = "sim/tests/data/liveness-slack/short-settle.toml";
const LONG: &str = "sim/tests/data/liveness-slack/long-settle.toml";
/// Two maximum election timeouts (the default 300 ms) plus 100 ms.
const SLACK_NS: u64 = 700_000_000;

/// Each JSON line's (scenario, closest margin's deadline, margin, slack,
/// below slack).
fn margins(json_lines: &str) -> Vec<(String, String, u64, u64, bool)> {
    json_lines
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            let m = &v["liveness_margin"];
            (
                v["scenario"].as_str().unwrap().to_string(),
                m["deadline"].as_str().unwrap_or_else(|| panic!("no liveness_margin: {line}")).to_string(),
                m["margin_ns"].as_u64().unwrap(),
                m["slack_ns"].as_u64().unwrap(),
                m["below_slack"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_deadline_met_by_less_than_the_slack_is_reported_below_it_and_one_met_by_more_is_not() {
    let out = leasesim(&["sweep", SHORT, LONG, "--seeds", "0..2", "--jobs", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "met deadlines are met: {}", text(&out.stderr));
    let lines = margins(&text(&out.stdout));
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (scenario, deadline, margin_ns, slack_ns, below) in lines {
        assert!(deadline.starts_with("a leader in office at the end"), "{scenario}: {deadline}");
        assert_eq!(slack_ns, SLACK_NS, "{scenario}");
        // The leader took office long before the faults' end (there are
        // none), so it is met when the run heals, at the settle phase's
        // start (the heal itself runs a millisecond tick later).
        let settle_ns = if scenario == "short-settle" { 500_000_000 } else { 3_000_000_000 };
        assert!(
            (settle_ns - 2_000_000..=settle_ns).contains(&margin_ns),
            "{scenario}: the margin {margin_ns} is due (the end) minus met (the heal), the settle phase's length {settle_ns}"
        );
        assert_eq!(below, scenario == "short-settle", "{scenario}: margin {margin_ns} against slack {slack_ns}");
    }
    // The table under a sweep counts the runs below the slack per scenario.
    let table = leasesim(&["sweep", SHORT, LONG, "--seeds", "0..2", "--jobs", "1"]);
    let table = text(&table.stdout) + &text(&table.stderr);
    let row = |name: &str| table.lines().find(|l| l.starts_with(name) && l.contains("a leader in office")).map(str::to_string);
    let short = row("short-settle").unwrap_or_else(|| panic!("no margins row for short-settle:\n{table}"));
    let long = row("long-settle").unwrap_or_else(|| panic!("no margins row for long-settle:\n{table}"));
    let within = |row: &str| row.split_whitespace().nth(4).and_then(|w| w.parse::<u64>().ok());
    assert_eq!((within(&short), within(&long)), (Some(2), Some(0)), "{table}");
    // `merge --fail-below-slack` (the nightly's) fails on such runs only.
    let dir = std::env::temp_dir().join(format!("liveness-slack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (file, name) in [(SHORT, "short.jsonl"), (LONG, "long.jsonl")] {
        let out = leasesim(&["sweep", file, "--seeds", "0..2", "--jobs", "1", "--json"]);
        std::fs::write(dir.join(name), out.stdout).expect("write results");
    }
    let merge = |name: &str, flag: bool| {
        let path = dir.join(name).display().to_string();
        let mut args = vec!["merge", path.as_str()];
        if flag {
            args.push("--fail-below-slack");
        }
        let out = leasesim(&args);
        (out.status.code(), text(&out.stdout))
    };
    let (code, out) = merge("short.jsonl", true);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("below the stated slack: 2 run(s) of short-settle"), "{out}");
    assert_eq!(merge("short.jsonl", false).0, Some(0), "without the flag the slack is reported, not enforced");
    let (code, out) = merge("long.jsonl", true);
    assert_eq!(code, Some(0), "{out}");
    std::fs::remove_dir_all(&dir).ok();
    // `run` says so in words.
    let run = text(&leasesim(&["run", SHORT, "--seed", "0"]).stdout);
    assert!(run.contains("closest margin 0.4") && run.contains("below the stated slack"), "{run}");
    let run = text(&leasesim(&["run", LONG, "--seed", "0"]).stdout);
    assert!(run.contains("closest margin 2.9") && !run.contains("below the stated slack"), "{run}");
}
