//! KV clients with several requests in flight (`in_flight`, the swarm knob
//! `kv_in_flight`): each client really keeps that many operations open at
//! its peak and never more, a healthy cluster stays linearizable under
//! them, and a planted stale-read bug is still caught; a bad value is a
//! load error at its line and column.

use std::collections::BTreeMap;

use leasesim::run::{run_seed, RunOptions, RunOutcome};
use leasesim_core::bugs::Bugs;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::{parse, Scenario, WorkloadKind};

/// Three servers and four KV clients; a follower is cut off together with
/// two clients for a while, so requests pile up and clients switch servers.
fn scenario(in_flight: u64) -> Scenario {
    let text = format!(
        r#"name = "kv-in-flight"
duration = "8s"
settle = "3s"

[cluster]
servers = 3
client_timeout = "50ms"

[network]
latency = ["1ms", "5ms"]

[[workload]]
kind = "kv"
clients = 4
keys = 2
interval = ["1ms", "10ms"]
in_flight = {in_flight}

[[fault]]
at = "2s"
partition = [["follower", "c1", "c2"], ["s1", "s2", "s3", "c3", "c4"]]
for = "3s"
"#
    );
    parse(&text, "kv-in-flight.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn run(scenario: &Scenario, seed: u64, bug: Option<&str>) -> RunOutcome {
    let mut bugs = Bugs::default();
    if let Some(bug) = bug {
        bugs.enable(bug).expect("a known bug");
    }
    run_seed(scenario, seed, &RunOptions { extra_bugs: bugs, keep_observations: true, ..RunOptions::default() })
}

/// The most operations each client had called and not seen answered at
/// once (a crash forgets a client's open operations).
fn peak_open(outcome: &RunOutcome) -> BTreeMap<u64, usize> {
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut peak: BTreeMap<u64, usize> = BTreeMap::new();
    for o in &outcome.obs {
        let Proc::Client(c) = o.proc else { continue };
        let n = open.entry(c).or_default();
        match &o.event {
            Event::KvCall { .. } => *n += 1,
            Event::KvReturn { .. } => *n -= 1,
            Event::Crashed => *n = 0,
            _ => continue,
        }
        let p = peak.entry(c).or_default();
        *p = (*p).max(*n);
    }
    peak
}

#[test]
fn each_client_reaches_its_in_flight_peak_and_never_more() {
    for in_flight in [1, 2, 4, 8] {
        let s = scenario(in_flight);
        let outcome = run(&s, 1, None);
        let peak = peak_open(&outcome);
        assert_eq!(peak.len(), 4, "in_flight {in_flight}: every client called something");
        for (client, p) in peak {
            assert_eq!(p as u64, in_flight, "in_flight {in_flight}: c{client} peaked at {p} open operations");
        }
    }
}

#[test]
fn healthy_runs_with_several_requests_in_flight_are_linearizable() {
    for in_flight in [2, 8] {
        let s = scenario(in_flight);
        for seed in 0..4 {
            let outcome = run(&s, seed, None);
            assert!(outcome.violations.is_empty(), "in_flight {in_flight} seed {seed}: {:?}", outcome.fired());
            assert!(outcome.obs.iter().filter(|o| matches!(o.event, Event::KvReturn { .. })).count() > 100, "operations were answered");
        }
    }
}

#[test]
fn stale_follower_reads_are_caught_with_four_in_flight() {
    let s = scenario(4);
    let caught: Vec<u64> = (0..6).filter(|seed| run(&s, *seed, Some("stale-follower-reads")).fired().contains(&"linearizable")).collect();
    assert!(!caught.is_empty(), "stale follower reads went unnoticed in seeds 0..6");
}

#[test]
fn the_knob_lands_in_every_kv_workload() {
    let s = leasesim_scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/chaos-failover.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut drawn = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let knobs = leasesim::run::knobs::draw(&s, seed).expect("chaos-failover draws knobs");
        let explicit = leasesim::run::chaos::explicit(&s, seed);
        for w in &explicit.workloads {
            if let WorkloadKind::Kv(kv) = &w.kind {
                assert_eq!(kv.in_flight, knobs.kv_in_flight, "seed {seed}");
            }
        }
        assert_eq!(explicit.cluster.max_in_flight_appends, knobs.max_in_flight_appends, "seed {seed}");
        drawn.insert((knobs.kv_in_flight, knobs.max_in_flight_appends));
    }
    let kv: std::collections::BTreeSet<u64> = drawn.iter().map(|d| d.0).collect();
    let appends: std::collections::BTreeSet<u64> = drawn.iter().map(|d| d.1).collect();
    assert_eq!(kv, [1, 2, 4, 8].into(), "kv_in_flight draws");
    assert_eq!(appends, [1, 2, 4, 16].into(), "max_in_flight_appends draws");
}

#[test]
fn a_bad_in_flight_is_an_error_at_its_value() {
    for (value, message) in
        [("0", "`in_flight` = 0 is outside 1..=16"), ("17", "`in_flight` = 17 is outside 1..=16"), ("\"4\"", "`in_flight`")]
    {
        let text = format!("name = \"x\"\nduration = \"5s\"\n[[workload]]\nkind = \"kv\"\nclients = 1\nin_flight = {value}\n");
        let error = parse(&text, "t.toml").expect_err("a bad in_flight");
        let headline = error.headline();
        assert!(headline.starts_with("t.toml:6:13: "), "{value}: {headline}");
        assert!(headline.contains(message), "{value}: {headline}");
    }
    let text = "name = \"x\"\nduration = \"5s\"\n[cluster]\nmax_in_flight_appends = 0\n";
    let headline = parse(text, "t.toml").expect_err("a bad depth").headline();
    assert!(headline.starts_with("t.toml:4:25: ") && headline.contains("outside 1..=1000"), "{headline}");
}
