//! The watch and txn workloads end to end: under the failover chaos of
//! `scenarios/chaos-watch-txn.toml` a healthy cluster is clean and the
//! workloads really ran (watches delivered events and resumed, txns were
//! answered); each of the two planted bugs written for them is caught by
//! its invariant; a seed replays to the same digest; the bundled examples
//! fail as they say.

use std::path::{Path, PathBuf};

use leasesim::run::{run_seed, RunOptions, RunOutcome};
use leasesim_core::bugs::Bugs;
use leasesim_core::service::{Op, Response};
use leasesim_judge::observe::Event;
use leasesim_scenario as scenario;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(file: &str, seed: u64, bug: Option<&str>) -> RunOutcome {
    let s = scenario::load(&root().join("scenarios").join(file)).unwrap_or_else(|e| panic!("{e}"));
    let mut extra_bugs = Bugs::default();
    if let Some(bug) = bug {
        extra_bugs.enable(bug).expect("a known bug");
    }
    run_seed(&s, seed, &RunOptions { extra_bugs, keep_observations: true, ..RunOptions::default() })
}

fn count(outcome: &RunOutcome, what: impl Fn(&Event) -> bool) -> usize {
    outcome.obs.iter().filter(|o| what(&o.event)).count()
}

#[test]
fn a_healthy_cluster_delivers_every_watch_event_and_keeps_txns_atomic() {
    let mut resumes = 0;
    for seed in 0..3 {
        let outcome = run("chaos-watch-txn.toml", seed, None);
        assert!(outcome.fired().is_empty(), "seed {seed}: {:?}", outcome.violations);
        let events = count(&outcome, |e| matches!(e, Event::WatchEvent { .. }));
        let opened = count(&outcome, |e| matches!(e, Event::WatchOpened { .. }));
        let resumed = count(&outcome, |e| matches!(e, Event::WatchResumed { .. }));
        let txns = count(&outcome, |e| matches!(e, Event::KvReturn { response: Response::Txn(_), .. }));
        let calls = count(&outcome, |e| matches!(e, Event::KvCall { op: Op::Txn(_), .. }));
        assert!(opened >= 5 && events > 500, "seed {seed}: {opened} watches, {events} events");
        resumes += resumed;
        assert!(txns > 200 && calls >= txns, "seed {seed}: {txns} txns answered of {calls}");
    }
    // Swarm testing may leave a seed without faults; not all three.
    assert!(resumes > 0, "the chaos made no watch resume");
}

#[test]
fn a_watch_that_skips_an_event_on_a_leader_change_is_caught() {
    let outcome = run("chaos-watch-txn.toml", 0, Some("watch-skips-event-on-leader-change"));
    assert_eq!(outcome.fired(), vec!["watch-delivery"], "{:?}", outcome.violations);
}

#[test]
fn a_txn_applied_in_two_entries_is_caught() {
    let outcome = run("chaos-watch-txn.toml", 0, Some("txn-in-two-entries"));
    assert!(outcome.fired().contains(&"linearizable"), "{:?}", outcome.violations);
}

#[test]
fn the_same_seed_gives_the_same_digest() {
    let (a, b) = (run("chaos-watch-txn.toml", 4, None), run("chaos-watch-txn.toml", 4, None));
    assert!(!a.trace_digest.is_empty());
    assert_eq!(a.trace_digest, b.trace_digest);
    assert_ne!(a.trace_digest, run("chaos-watch-txn.toml", 5, None).trace_digest, "a digest that ignores the seed proves nothing");
}

#[test]
fn the_bundled_examples_fail_with_their_bug() {
    for (file, invariant) in [("watch-skip-leader-change.toml", "watch-delivery"), ("txn-split-entries.toml", "linearizable")] {
        let s = scenario::load(&root().join("scenarios").join(file)).unwrap();
        let fired: Vec<&str> = (s.seeds.start..s.seeds.end)
            .flat_map(|seed| run(file, seed, None).fired().into_iter().map(str::to_string).collect::<Vec<_>>())
            .map(|f| if f == invariant { invariant } else { "other" })
            .collect();
        assert!(fired.contains(&invariant), "{file}: {fired:?}");
        assert!(!fired.contains(&"other"), "{file}: only {invariant} may fire");
    }
}
