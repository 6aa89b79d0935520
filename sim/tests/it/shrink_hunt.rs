//! Bug-finding power, end to end: every planted bug that a checker can see
//! is found by the hunt within its budget; a shrunk failure is itself a
//! failing scenario, smaller than what it came from; chaos runs replay bit
//! for bit (the property shrinking relies on); shards merge to the same
//! summary as one sweep; the JUnit report is well-formed XML with one
//! testcase per scenario.
//!
//! Budgets are small so the whole file stays well under two minutes in
//! release mode on two cores.

use std::path::{Path, PathBuf};
use std::process::Command;

use leasesim::hunt::{self, notes, pick, HuntOptions};
use leasesim::run::{chaos, run_seed, RunOptions};
use leasesim::shrink::{self, file, ShrinkOptions, Size};
use leasesim_core::bugs::Bugs;
use leasesim_scenario::{self as scenario, parse, to_toml, Scenario};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load(relative: &str) -> Scenario {
    scenario::load(&root().join(relative)).unwrap_or_else(|e| panic!("{e}"))
}

fn bugs(name: &str) -> Bugs {
    let mut b = Bugs::default();
    b.enable(name).unwrap_or_else(|e| panic!("{e}"));
    b
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-shrink-hunt-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn leasesim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(root()).output().expect("run leasesim");
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).expect("utf-8 output"))
}

/// Runs the hunt may spend per bug in this test. From seed 0 most bugs
/// fall within 6 runs of this test's six general chaos scenarios,
/// interleaved; the slowest of the others is client-trusts-full-ttl (32
/// runs, reports/hunt.md, 2026-11-28). The search stops at the first
/// failure, so the test costs the runs it needs, not the cap.
const RUNS_PER_BUG: u64 = 1000;

/// Bugs that only one file finds, and late: interleaved, the hunt runs
/// five other files' seeds between two of that file's, so each costs six
/// times the runs it needs. The test hunts them in that file alone (as
/// `leasesim hunt --bug B --scenario scenarios/F.toml` does); the nightly
/// hunt and reports/hunt.md keep them interleaved. Measured on 2026-11-28
/// at 4ce4698 (`leasesim hunt --seeds 0..167 --jobs 2
/// --shrink-budget-runs 0`, reports/hunt.md): commit-old-term-by-counting
/// at run 746 interleaved (279 s of CPU) against 125 in chaos-failover
/// alone (68 s); count-older-term-votes at run 433 (chaos-aimed-messages
/// seed 72); reply-before-persist at run 177 (chaos-nemesis seed 29).
/// Every other bug was found within 32 runs.
const HUNTED_IN_ONE_FILE: &[(&str, &str)] = &[
    ("commit-old-term-by-counting", "chaos-failover"),
    ("count-older-term-votes", "chaos-aimed-messages"),
    ("reply-before-persist", "chaos-nemesis"),
];

/// The scenarios the hunt for `bug` searches in this test: all of
/// `general`, or the one file `HUNTED_IN_ONE_FILE` names for it.
fn hunted_in<'a>(general: &'a [Scenario], bug: &str) -> &'a [Scenario] {
    match HUNTED_IN_ONE_FILE.iter().find(|(name, _)| *name == bug) {
        None => general,
        Some((_, file)) => {
            let at = general.iter().position(|s| s.name == *file);
            let at = at.unwrap_or_else(|| panic!("{bug}: no general chaos scenario named {file}"));
            &general[at..=at]
        }
    }
}

#[test]
fn every_planted_bug_a_checker_can_see_is_found_by_the_hunt() {
    let scenarios = pick::general_chaos(&root().join("scenarios")).unwrap_or_else(|e| panic!("{e}"));
    let mut missed = Vec::new();
    for bug in Bugs::NAMES {
        if notes::why_not_observable(bug).is_some() {
            continue;
        }
        let searched = hunted_in(&scenarios, bug);
        let options = HuntOptions {
            // Interleaved: this many seeds make RUNS_PER_BUG runs.
            seeds: 0..RUNS_PER_BUG.div_ceil(searched.len() as u64),
            jobs: 2,
            // No wall-clock budget: the seed range bounds the runs.
            budget: None,
            repeat: 1,
            shrink_budget_runs: 0,
            shrunk_dir: None,
            guided: None,
        };
        let h = hunt::hunt_bug(searched, bug, &options);
        match h.first_found() {
            Some(found) => assert!(!found.fired.is_empty(), "{bug}: found without an invariant"),
            None => missed.push(bug),
        }
    }
    assert!(missed.is_empty(), "not found within {RUNS_PER_BUG} runs: {missed:?}");
}

#[test]
fn a_hunt_refuses_a_scenario_written_for_the_bug() {
    let unfenced = load("scenarios/holder-pause-unfenced.toml");
    assert!(pick::written_for(&unfenced, "client-trusts-full-ttl").is_some(), "it expects a violation");
    let mut planted = load("scenarios/chaos-swarm.toml");
    planted.bugs = bugs("stale-follower-reads");
    assert!(pick::written_for(&planted, "stale-follower-reads").is_some());
    assert!(!pick::is_general_chaos(&planted));
    assert!(pick::written_for(&load("scenarios/chaos-swarm.toml"), "stale-follower-reads").is_none());
}

#[test]
fn a_shrunk_failure_is_a_failing_scenario_smaller_than_its_input() {
    let original = load("scenarios/chaos-swarm.toml");
    let bug = bugs("no-truncate-conflict");
    let seed = (0..20)
        .find(|seed| !run_seed(&original, *seed, &RunOptions { extra_bugs: bug, ..RunOptions::default() }).violations.is_empty())
        .expect("no-truncate-conflict fails some seed of chaos-swarm");
    let options = ShrinkOptions { extra_bugs: bug, budget_runs: 40, jobs: 2, invariant: None };
    let shrunk = shrink::shrink(&original, seed, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(shrunk.runs <= 40);
    assert_eq!(shrunk.before, Size::of(&chaos::explicit(&original, seed)), "before counts the drawn faults");
    assert!(shrunk.after.faults < shrunk.before.faults, "{} -> {}", shrunk.before, shrunk.after);
    assert!(shrunk.after.duration_ns <= shrunk.before.duration_ns && shrunk.after.clients <= shrunk.before.clients);
    assert_eq!(shrunk.scenario.chaos, None);

    let out = temp_dir("shrink").join("shrunk.toml");
    file::write(&shrunk, &root().join("scenarios/chaos-swarm.toml"), &out).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(text.starts_with("# Shrunk by `leasesim shrink` from "), "{text}");
    assert!(text.contains(&format!("# Replay: leasesim run {} --seed {seed}", out.display())), "{text}");
    assert!(text.contains("bugs = [\"no-truncate-conflict\"]"), "the planted bug is in the file:\n{text}");
    // The file alone (no --bug) fails the same way, through the CLI too.
    let again = scenario::load(&out).unwrap_or_else(|e| panic!("{e}"));
    let outcome = run_seed(&again, seed, &RunOptions::default());
    assert!(outcome.fired().contains(&shrunk.invariant.as_str()), "{:?}", outcome.fired());
    let (code, stdout) = leasesim(&["run", &out.display().to_string(), "--seed", &seed.to_string()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains(&shrunk.invariant), "{stdout}");
}

#[test]
fn shrinking_a_seed_that_fires_nothing_is_refused_with_the_reason() {
    let healthy = load("scenarios/registry-client-crash.toml");
    let error = shrink::shrink(&healthy, 0, &ShrinkOptions { budget_runs: 5, ..ShrinkOptions::default() }).expect_err("nothing fired");
    assert!(error.to_string().contains("fires no invariant"), "{error}");
    let (code, _) = leasesim(&["shrink", "scenarios/registry-client-crash.toml", "--seed", "0", "--out", "/dev/null"]);
    assert_eq!(code, 2);
}

#[test]
fn chaos_runs_replay_bit_for_bit_and_equal_their_explicit_form() {
    for file in ["scenarios/chaos-swarm.toml", "scenarios/chaos-nemesis.toml", "scenarios/chaos-failover.toml"] {
        let s = load(file);
        let seed = 3;
        let first = run_seed(&s, seed, &RunOptions::default());
        let second = run_seed(&s, seed, &RunOptions::default());
        assert_eq!(first.trace_digest, second.trace_digest, "{file}: same seed, same digest");
        assert_ne!(first.trace_digest, run_seed(&s, seed + 1, &RunOptions::default()).trace_digest, "{file}: the seed matters");
        // Written out and read back without chaos, the seed's run is the same run.
        let explicit = parse(&to_toml(&chaos::explicit(&s, seed)), file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(explicit.chaos, None);
        assert_eq!(run_seed(&explicit, seed, &RunOptions::default()).trace_digest, first.trace_digest, "{file}: explicit form");
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn merged_shards_equal_the_unsharded_sweep() {
    let dir = temp_dir("merge");
    let files = ["scenarios/registry-client-crash.toml", "scenarios/holder-pause-unfenced.toml"];
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", files[0], files[1], "--seeds", "0..6", "--jobs", "2", "--json"];
        args.extend_from_slice(extra);
        leasesim(&args)
    };
    let (all_code, all) = sweep(&[]);
    let (_, one) = sweep(&["--shard", "1/2"]);
    let (_, two) = sweep(&["--shard", "2/2"]);
    assert_eq!(all.lines().count(), 12);
    assert_eq!(one.lines().count() + two.lines().count(), 12);
    let (p_all, p_one, p_two) = (dir.join("all.jsonl"), dir.join("one.jsonl"), dir.join("two.jsonl"));
    write(&p_all, &all);
    write(&p_one, &one);
    write(&p_two, &two);
    let (code_all, table_all) = leasesim(&["merge", &p_all.display().to_string()]);
    let (code_merged, table_merged) = leasesim(&["merge", &p_two.display().to_string(), &p_one.display().to_string()]);
    assert_eq!(table_merged, table_all);
    assert_eq!((code_merged, code_all), (all_code, all_code), "merge judges like the sweep");
    assert!(table_all.contains("registry-client-crash") && table_all.contains("holder-pause-unfenced"), "{table_all}");

    let bad = dir.join("bad.jsonl");
    write(&bad, "{\"scenario\": 1}\n");
    let (code, _) = leasesim(&["merge", &bad.display().to_string()]);
    assert_eq!(code, 2, "a line that is not a run is bad input");
}

/// A small well-formedness check: every tag closes in order, attributes are
/// quoted, `&` starts a known entity, and no raw `<` hides in text.
fn well_formed(xml: &str) -> Result<usize, String> {
    let body = xml.strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n").ok_or("no XML declaration")?;
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    let mut elements = 0;
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open])?;
        let close = rest[open..].find('>').ok_or("unterminated tag")? + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().ok_or_else(|| format!("</{name}> closes nothing"))?;
            if top != name {
                return Err(format!("</{name}> closes <{top}>"));
            }
        } else {
            elements += 1;
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let name = tag.split_whitespace().next().ok_or("empty tag")?;
            if tag.matches('"').count() % 2 != 0 {
                return Err(format!("unbalanced quotes in <{tag}>"));
            }
            check_text(&tag.split('"').skip(1).step_by(2).collect::<Vec<_>>().join(""))?;
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[close + 1..];
    }
    check_text(rest)?;
    if stack.is_empty() {
        Ok(elements)
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text.contains('<') || text.contains('>') {
        return Err(format!("raw markup in text: {text:?}"));
    }
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity) {
            return Err(format!("bad entity {entity:?}"));
        }
    }
    Ok(())
}

#[test]
fn junit_is_well_formed_with_one_testcase_per_scenario() {
    let dir = temp_dir("junit");
    let report = dir.join("sweep.xml");
    // follower-expires-leases breaks chaos-swarm in every seed; the
    // registry scenario is left to pass or fail on its own.
    let (code, _) = leasesim(&[
        "sweep",
        "scenarios/registry-client-crash.toml",
        "scenarios/chaos-swarm.toml",
        "--seeds",
        "0..2",
        "--jobs",
        "2",
        "--bug",
        "follower-expires-leases",
        "--junit",
        &report.display().to_string(),
    ]);
    let xml = std::fs::read_to_string(&report).expect("junit written");
    well_formed(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert!(xml.contains("name=\"registry-client-crash\"") && xml.contains("name=\"chaos-swarm\""), "{xml}");
    assert_eq!(code, 1, "the sweep fails");
    assert!(xml.contains("<failure ") && xml.contains("type=\"expectation-not-met\""), "{xml}");
    assert!(xml.contains("replay: leasesim replay scenarios/chaos-swarm.toml --seed 0 --bug follower-expires-leases"), "{xml}");
    assert!(xml.contains("shrink: leasesim shrink scenarios/chaos-swarm.toml --seed 0"), "{xml}");
    assert!(well_formed("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a><b></a></b>").is_err(), "the checker rejects bad nesting");
    assert!(well_formed("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>x & y</a>").is_err(), "and raw ampersands");
}
