//! The report commands end to end, through the `leasesim` binary:
//! `run --report` draws a run's faults where the scenario put them,
//! `sweep --report` writes a summary and a timeline per unexpected seed
//! while the terminal stays short, `report` renders saved `--json` results,
//! and bad results files get a clear error naming file and line, exit 2.
//!
//! Assertions are on what the scenario fixes (fault times, processes), not
//! on protocol details that change with the engine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const S: u64 = 1_000_000_000;
/// Faults fire a few nanoseconds after their scheduled instant.
const SLACK_NS: u64 = 1_000_000;

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run leasesim")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Three servers, two lock clients, one fault of each kind at fixed times.
const SMALL: &str = r#"
name = "report-small"
duration = "8s"
settle = "2s"
seeds = "0..2"
[cluster]
servers = 3
[[workload]]
kind = "lock"
clients = 2
keys = ["orders"]
ttl = "1s"
hold = ["100ms", "300ms"]
[[fault]]
at = "1s"
partition = [["s3"], ["s1", "s2"]]
for = "1500ms"
[[fault]]
at = "2s"
pause = "c1"
for = "2s"
[[fault]]
at = "5s"
clock = "s2"
jump = "+3s"
[[fault]]
at = "6s"
crash = "s3"
for = "1s"
"#;

/// A holder paused past its lease with an unfenced store — the stale write
/// lands late — in a file that claims to be safe, so violations are
/// unexpected.
const UNFENCED_CLAIMS_SAFE: &str = r#"
name = "report-unfenced"
duration = "10s"
settle = "3s"
[cluster]
servers = 3
[[workload]]
kind = "lock"
clients = 3
keys = ["orders"]
ttl = "1s"
hold = ["300ms", "800ms"]
think = ["0ms", "100ms"]
fenced = false
[[fault]]
at = "3s"
pause = "holder:orders"
for = "3s"
[expect]
verdict = "safe"
"#;

fn scenario(dir: &Path, name: &str, toml: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

/// The `<g …>` of one lane: lanes hold no nested groups.
fn lane<'a>(html: &'a str, name: &str) -> &'a str {
    let start = html.find(&format!("id=\"lane-{name}\"")).unwrap_or_else(|| panic!("lane {name} is drawn"));
    let end = html[start..].find("</g>").expect("the lane closes") + start;
    &html[start..end]
}

/// (start, end) of every element with `class="{class}"` in `part`.
fn spans(part: &str, class: &str) -> Vec<(u64, u64)> {
    part.match_indices(&format!("class=\"{class}\""))
        .map(|(i, _)| {
            let tag = &part[i..i + part[i..].find('>').unwrap()];
            (attr(tag, "data-start-ns"), attr(tag, "data-end-ns"))
        })
        .collect()
}

fn attr(tag: &str, name: &str) -> u64 {
    let at = tag.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("{name} in {tag}")) + name.len() + 2;
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

fn near(actual_ns: u64, expected_ns: u64) -> bool {
    actual_ns >= expected_ns && actual_ns - expected_ns <= SLACK_NS
}

#[test]
fn a_run_report_draws_each_fault_where_the_scenario_put_it() {
    let dir = temp_dir("run");
    let file = scenario(&dir, "small.toml", SMALL);
    let out_dir = dir.join("out");
    let out = leasesim(&["run", &file, "--seed", "1", "--json", "--report", out_dir.to_str().unwrap()]);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).expect("--json stays one JSON object with --report");
    assert_eq!(json["seed"], 1);
    let page = out_dir.join("report-small-seed1.html");
    assert!(text(&out.stderr).contains(&format!("report: {}", page.display())), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).expect("the run report is written");

    for name in ["s1", "s2", "s3", "c1", "c2", "store"] {
        lane(&html, name);
    }
    let partition = spans(&html, "fault link partition");
    assert_eq!(partition.len(), 1, "one partition band");
    assert!(near(partition[0].0, S) && near(partition[0].1, 2500 * S / 1000), "partition at 1s for 1.5s: {partition:?}");
    assert!(html.contains("data-procs=\"s3\""), "s3 is the side cut off");
    assert!(spans(lane(&html, "s3"), "role down").iter().any(|(a, b)| near(*a, 6 * S) && near(*b, 7 * S)), "s3 down 6s–7s");
    assert!(spans(lane(&html, "c1"), "paused").iter().any(|(a, b)| near(*a, 2 * S) && near(*b, 4 * S)), "c1 paused 2s–4s");
    let s2 = lane(&html, "s2");
    let jump = s2.find("class=\"mark jump\"").expect("s2's clock jump is marked");
    assert!(near(attr(&s2[jump..], "data-at-ns"), 5 * S), "at 5s");
    assert!(s2.contains("err +3.00s"), "s2's label gives its clock error");
    assert!(html.contains("id=\"lock-orders\""), "the lock track");
    assert!(html.contains("class=\"hold\""), "someone held the lock");
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "nothing is fetched");
}

#[test]
fn a_failing_sweep_writes_a_timeline_per_unexpected_seed_and_stays_short() {
    let dir = temp_dir("sweep");
    let file = scenario(&dir, "unfenced.toml", UNFENCED_CLAIMS_SAFE);
    let out_dir = dir.join("out");
    let out = leasesim(&["sweep", &file, "--seeds", "0..4", "--jobs", "2", "--report", out_dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "violations in a file that expects none: {stdout}{}", text(&out.stderr));
    assert!(stdout.contains("replay: leasesim replay"), "the replay command stays on the terminal: {stdout}");
    assert!(!stdout.contains("fencing-order at "), "violation details go to the report: {stdout}");
    assert!(text(&out.stderr).contains("index.html"), "{}", text(&out.stderr));

    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).expect("results.jsonl");
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).expect("summary.md");
    let index = std::fs::read_to_string(out_dir.join("index.html")).expect("index.html");
    let mut unexpected = 0;
    for line in results.lines() {
        let run: serde_json::Value = serde_json::from_str(line).unwrap();
        if run["expected"] == false {
            unexpected += 1;
            let name = format!("report-unfenced-seed{}.html", run["seed"]);
            let page = std::fs::read_to_string(out_dir.join(&name)).unwrap_or_else(|_| panic!("{name} is written"));
            assert!(page.contains("class=\"violation "), "{name} marks its violations");
            assert!(index.contains(&format!("href=\"{name}\"")), "index.html links {name}");
        }
    }
    assert!(unexpected > 0, "a paused holder with an unfenced store breaks fencing in some seed");
    assert!(summary.contains("| report-unfenced | 0..4 | 4 |"), "{summary}");
    assert!(summary.contains("NOT MET"), "{summary}");
    assert!(summary.contains("- replay: `leasesim replay"), "{summary}");
}

#[test]
fn saved_results_render_with_timelines_for_their_unexpected_seeds() {
    let dir = temp_dir("saved");
    let small = scenario(&dir, "small.toml", SMALL);
    let unfenced = scenario(&dir, "unfenced.toml", UNFENCED_CLAIMS_SAFE);
    let a = leasesim(&["sweep", &small, "--seeds", "0..2", "--json"]);
    let b = leasesim(&["sweep", &unfenced, "--seeds", "0..3", "--json"]);
    let saved_a = dir.join("a.jsonl");
    let saved_b = dir.join("b.jsonl");
    std::fs::write(&saved_a, &a.stdout).unwrap();
    std::fs::write(&saved_b, &b.stdout).unwrap();
    let out_dir = dir.join("out");
    let out = leasesim(&["report", saved_a.to_str().unwrap(), saved_b.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).lines().count() <= 3, "the terminal gets a headline and the path: {}", text(&out.stdout));
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| report-small | 0..2 | 2 |"), "{summary}");
    assert!(summary.contains(&format!("From: `{}`, `{}`", saved_a.display(), saved_b.display())), "{summary}");
    for line in text(&b.stdout).lines() {
        let run: serde_json::Value = serde_json::from_str(line).unwrap();
        if run["expected"] == false {
            let page = std::fs::read_to_string(out_dir.join(format!("report-unfenced-seed{}.html", run["seed"])))
                .expect("a timeline per unexpected seed");
            assert!(!page.contains("differs from the saved result"), "same build, same digest");
        }
    }
}

#[test]
fn bad_results_files_are_named_with_their_line_and_exit_2() {
    let dir = temp_dir("bad");
    let good = r#"{"scenario":"x","seed":1,"verdict":"ok","violations":[],"expected":true}"#;
    let malformed = dir.join("malformed.jsonl");
    std::fs::write(&malformed, format!("{good}\n{{\"scenario\": \"x\", \"seed\": \n")).unwrap();
    let table = dir.join("table.txt");
    std::fs::write(&table, "scenario  seeds  clean\n").unwrap();
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let missing = dir.join("missing.jsonl");
    let out_dir = dir.join("out");
    let cases = [
        (missing.display().to_string(), format!("{}: cannot read the results file", missing.display())),
        (malformed.display().to_string(), format!("{}:2: not a leasesim run result", malformed.display())),
        (table.display().to_string(), format!("{}:1: not a JSON object", table.display())),
        (empty.display().to_string(), format!("{}: holds no run results", empty.display())),
    ];
    for (file, expected) in cases {
        let out = leasesim(&["report", &file, "--out", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&expected), "{file}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Results whose scenario file is gone still render, without timelines.
    let orphan = dir.join("orphan.jsonl");
    std::fs::write(&orphan, good.replace("\"expected\":true", "\"expected\":false,\"file\":\"gone.toml\"")).unwrap();
    let out = leasesim(&["report", orphan.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("gone.toml: cannot load the scenario"), "{}", text(&out.stderr));
}
