//! The multi-instance lease design's workloads in whole simulated runs: the
//! task invariants fire on the planted bug they exist for and stay silent on a
//! healthy engine that is put through crashes, pauses and a worker acting on a
//! wrong belief; the singleton overlaps only when an instance's clock breaks
//! the stated assumption.

use std::ops::Range;
use std::path::Path;

use leasesim::run::{run_seed, RunOptions, RunOutcome};
use leasesim_core::bugs::Bugs;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::{TaskStep, TaskVerdict};
use leasesim_scenario::{self as scenario, Scenario};

fn load(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn options(bug: Option<&str>) -> RunOptions {
    let mut bugs = Bugs::default();
    if let Some(bug) = bug {
        bugs.enable(bug).expect("a known bug");
    }
    RunOptions { extra_bugs: bugs, keep_observations: true, ..RunOptions::default() }
}

fn runs(scenario: &Scenario, seeds: Range<u64>, options: &RunOptions) -> Vec<RunOutcome> {
    seeds.map(|seed| run_seed(scenario, seed, options)).collect()
}

/// Invariants fired over the runs, deduplicated, in order of first firing.
fn fired(runs: &[RunOutcome]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for v in runs.iter().flat_map(|r| &r.violations) {
        if !ids.contains(&v.invariant) {
            ids.push(v.invariant.clone());
        }
    }
    ids
}

fn count(runs: &[RunOutcome], pick: impl Fn(&Event) -> bool) -> usize {
    runs.iter().flat_map(|r| &r.obs).filter(|o| pick(&o.event)).count()
}

fn is_stale_completion_refused(event: &Event) -> bool {
    matches!(event, Event::TaskWriteRefused { step: TaskStep::Complete, verdict: TaskVerdict::StaleToken { .. }, .. })
}

#[test]
fn a_completion_unchecked_against_its_token_fires_task_once() {
    let scenario = load("task-worker-slow-clock.toml");
    let buggy = runs(&scenario, 0..6, &options(Some("completion-without-token-check")));
    assert_eq!(fired(&buggy), vec!["task-once".to_string()]);
    let violation = buggy.iter().flat_map(|r| &r.violations).next().expect("fired above");
    assert!(violation.detail.contains("newer claim"), "{}", violation.detail);
    assert!(!violation.assumptions_held, "the slow worker clock breaks the 1% drift bound");
}

#[test]
fn with_the_token_check_stale_completions_are_rejected_and_nothing_fires() {
    let scenario = load("task-worker-slow-clock.toml");
    let healthy = runs(&scenario, 0..6, &options(None));
    assert!(fired(&healthy).is_empty(), "fired {:?}", fired(&healthy));
    // The scenario does produce the hazard: stale completions reach the
    // store, which turns them away by their token.
    assert!(count(&healthy, is_stale_completion_refused) > 0, "no stale completion reached the store");
}

#[test]
fn crashed_and_paused_workers_lose_no_task() {
    let scenario = load("task-workers-crash-pause.toml");
    let healthy = runs(&scenario, 0..3, &options(None));
    assert!(fired(&healthy).is_empty(), "fired {:?}", fired(&healthy));
    for run in &healthy {
        let created: std::collections::BTreeSet<u64> =
            run.obs.iter().filter_map(|o| if let Event::TaskCreated { task } = o.event { Some(task) } else { None }).collect();
        let completed: std::collections::BTreeSet<u64> = run
            .obs
            .iter()
            .filter_map(|o| match o.event {
                Event::TaskWriteAccepted { task, step: TaskStep::Complete, .. } => Some(task),
                _ => None,
            })
            .collect();
        assert_eq!(created.len(), 30, "seed {}: the generator creates every task despite its crash", run.seed);
        assert_eq!(created, completed, "seed {}", run.seed);
    }
    assert!(count(&healthy, |e| matches!(e, Event::TaskAbandoned { .. })) > 0, "the faults never made a worker give up a task");
}

#[test]
fn a_singleton_overlaps_only_when_an_instance_clock_breaks_the_assumption() {
    let failover = runs(&load("singleton-failover.toml"), 0..3, &options(None));
    assert!(fired(&failover).is_empty(), "fired {:?}", fired(&failover));
    assert!(count(&failover, |e| matches!(e, Event::SingletonStarted { .. })) >= 6, "no takeover after the holder failed");
    let slow = runs(&load("singleton-slow-clock.toml"), 0..8, &options(None));
    assert_eq!(fired(&slow), vec!["singleton-overlap".to_string()]);
    assert!(slow.iter().flat_map(|r| &r.violations).all(|v| !v.assumptions_held));
    assert!(count(&slow, |e| matches!(e, Event::StoreRejected { .. })) > 0, "the store never fenced the stale holder out");
}

#[test]
fn task_lost_fires_when_no_worker_can_finish_in_time() {
    // Both workers' clocks run at a tenth of true speed: their keep-alives
    // come too rarely to keep a lease (one every 6.7 s for a 2 s TTL), so
    // every claim ends long before its 20 s or more of work does, and the
    // tasks are still undone long after their deadline.
    let text = r#"
name = "workers-too-slow"
duration = "10s"
settle = "30s"
[cluster]
servers = 3
drift_bound = 0.01
[clocks.c2]
drift = -0.9
[clocks.c3]
drift = -0.9
[[workload]]
kind = "task"
clients = 3
ttl = "2s"
tasks = 10
task_every = "100ms"
work = ["2s", "3s"]
"#;
    let scenario = scenario::parse(text, "workers-too-slow.toml").unwrap_or_else(|e| panic!("{e}"));
    let slow = runs(&scenario, 0..2, &options(None));
    assert_eq!(fired(&slow), vec!["task-lost".to_string()]);
    assert!(slow.iter().flat_map(|r| &r.violations).all(|v| !v.assumptions_held), "a 90% slow clock breaks the 1% bound");
}
