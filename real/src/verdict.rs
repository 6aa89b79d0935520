//! The judge's verdict on a real run, told as `leasesim run` tells a
//! simulated one: the same first line, violations and `--json` object
//! (without the simulator's digest and event counts, which a real run does
//! not have), and the same rule for whether it is what the scenario
//! expects.
//!
//! An invariant whose rule reads the servers' own events (Raft's terms,
//! logs and votes, the lock table's grants and queues) cannot be judged
//! from what clients see. leasesim-node members report them
//! (`server_events.rs`), so against them those invariants are judged;
//! etcd reports none, so against etcd each is listed as "not judged:
//! needs …" rather than counted as passed.
//!
//! The end-of-run invariants read each member's state as the run ended
//! (`final_state.rs` asks every member for it after the clients stop):
//! - `liveness` is judged against leasesim-node: a leader in office with a
//!   majority on its term (every member's `Status`), acquires granted and
//!   abandoned leases ended (the members' lock and lease events), registry
//!   keys gone (the events, and the keys each member holds). Against etcd
//!   it is not: the grants and revocations are etcd's own events.
//! - `durability` and log-matching's end-of-run half read each member's
//!   final log, the term at every index: leasesim-node members report it
//!   (`GET /log`), so both are judged against them; etcd's `Status` gives
//!   only the last index and term, so durability is not judged against it
//!   (nor log-matching, which needs its events too). A running member whose
//!   log could not be read leaves durability unjudged, with why.
//!
//! `release-by-owner` compares the lock table's releaser with its holder
//! by client id. leasesim-node members run under `--unsafe-test-client-ids`
//! and the runner's lock clients name their scenario id on every Lock and
//! Unlock call, so the table's events name the client: judged against
//! leasesim-node; against etcd it needs the lock table's events, which
//! etcd does not report.

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;
use leasesim_judge::checkers::{NotJudged, RunRecord, TaskPace, Violation, ViolationJson, CHECKERS, FULL_LOG_CHECKERS};
use leasesim_judge::observe::{Event, ObsLog};
use leasesim_judge::vocab::{FinalServer, Proc, SimClock};
use leasesim_scenario::Scenario;
use serde::Serialize;

use crate::history::Committed;
use crate::Target;

/// Invariants whose inputs only the servers' own events give (Raft's
/// leaders, applied entries and votes; the lease and lock tables; the
/// lock clients' own ids in those tables, under `--unsafe-test-client-ids`).
const NEEDS_SERVER_EVENTS: [&str; 12] = [
    "election-safety",
    "log-matching",
    "state-machine-safety",
    "replica-divergence",
    "vote-durability",
    "keepalive-after-revoke",
    "fifo-order",
    "token-monotonic",
    "holder-lease",
    "promote-extension",
    "applied-twice",
    "release-by-owner",
];

/// Invariants that read every member's final log (the term at every
/// index), which only leasesim-node members report (`GET /log`).
const NEEDS_FINAL_LOG: [&str; 1] = ["durability"];

/// Invariants that read the lock table's grants and the leases' ends
/// besides the members' final state: judged where the members report those
/// events (leasesim-node).
const NEEDS_END_STATE_AND_EVENTS: [&str; 1] = ["liveness"];

/// Why `id` cannot be judged against `target`, or `None` if it can.
pub fn not_judged_because(id: &str, target: Target) -> Option<String> {
    if NEEDS_FINAL_LOG.contains(&id) && target == Target::Etcd {
        return Some(
            "every member's final log (the term at every index), which etcd members do not report (their Status gives \
             only the last index and term)"
                .to_string(),
        );
    }
    if NEEDS_END_STATE_AND_EVENTS.contains(&id) && target == Target::Etcd {
        return Some(
            "the servers' lock-grant and lease-revocation events (whether each acquire was granted and each abandoned \
             lease ended), which etcd members do not report"
                .to_string(),
        );
    }
    (NEEDS_SERVER_EVENTS.contains(&id) && target == Target::Etcd)
        .then(|| "the servers' Raft and lock-table events, which etcd members do not report".to_string())
}

/// A real run's outcome (the JSON line of `--json`).
#[derive(Serialize)]
pub struct Outcome {
    pub scenario: String,
    pub file: String,
    pub seed: u64,
    pub target: &'static str,
    /// `ok` or `violation`.
    pub verdict: &'static str,
    pub violations: Vec<ViolationJson>,
    pub expected: bool,
    pub expected_violations: Vec<String>,
    pub not_judged: Vec<NotJudged>,
    /// How late an observation may have been stamped (the judge is
    /// conservative within it).
    pub stamp_error_ns: u64,
    pub real_seconds: f64,
    pub observations: usize,
    pub bugs: Vec<String>,
    /// What the fault timeline did, with when (true time).
    pub faults: Vec<String>,
    pub notes: Vec<String>,
    /// The timing figures the simulator measures too (`compare`).
    pub measures: leasesim_judge::measures::Measures,
}

/// The faults the run played or skipped, as `at: what` lines.
pub fn faults_played(log: &ObsLog) -> Vec<String> {
    log.iter()
        .filter_map(|o| match &o.event {
            Event::Fault { action } => Some(format!("{}: {action}", fmt_secs(o.at_ns))),
            Event::FaultSkipped { action, why } => Some(format!("{}: skipped {action}: {why}", fmt_secs(o.at_ns))),
            _ => None,
        })
        .collect()
}

/// What the run gives the judge besides its log.
pub struct Judging<'a> {
    pub scenario: &'a Scenario,
    pub target: Target,
    /// Every server's and client's clock as the run skewed it (true time
    /// otherwise).
    pub clocks: BTreeMap<Proc, SimClock>,
    /// The committed history of changes read after a run with watches
    /// (`history.rs`), or why it could not be; `None` without watches.
    pub history: Option<Committed>,
    /// Every member's state as the run ended (`final_state.rs`).
    pub finals: BTreeMap<u64, FinalServer>,
    /// Running members whose final log could not be read, with why.
    pub log_gaps: Vec<String>,
}

/// What the judge's `servers` holds for a real run: each member's end
/// state as it answered (`finals`, with its log against leasesim-node),
/// and the committed history as the member asked gave it (all
/// `watch-delivery` reads) under s1.
fn final_servers(history: &Option<Committed>, finals: &BTreeMap<u64, FinalServer>) -> BTreeMap<u64, FinalServer> {
    let mut servers = finals.clone();
    if let Some(Ok(changes)) = history {
        let s1 = servers.entry(1).or_insert_with(|| crate::final_state::final_server(true, None, Vec::new()));
        s1.changes = changes.clone();
    }
    servers
}

/// Why watch-delivery or durability cannot be judged: its truth could
/// not be read (the committed history; a running member's log, without
/// which every entry would look lost).
fn truth_missing(id: &str, j: &Judging<'_>) -> Option<String> {
    match &j.history {
        Some(Err(why)) if id == "watch-delivery" => return Some(why.clone()),
        _ => {}
    }
    (NEEDS_FINAL_LOG.contains(&id) && !j.log_gaps.is_empty())
        .then(|| format!("every running member's final log, and these could not be read: {}", j.log_gaps.join("; ")))
}

/// What `task-lost` needs of the task workload, as the simulator gives it
/// (`sim/src/run/mod.rs`): its workers (every client but the generator).
fn task_pace(s: &Scenario) -> Option<TaskPace> {
    s.workloads.iter().find_map(|w| match &w.kind {
        leasesim_scenario::WorkloadKind::Task(t) => Some(TaskPace::new(w.clients - 1, t.ttl_ns, t.work_ns.1, t.poll_ns.1)),
        _ => None,
    })
}

/// Judges `log` with every checker that can be fed from it.
pub fn judge(log: &ObsLog, j: &Judging<'_>) -> (Vec<Violation>, Vec<NotJudged>) {
    let s = j.scenario;
    let mut clocks = j.clocks.clone();
    for o in log.iter() {
        clocks.entry(o.proc).or_insert_with(|| SimClock::new(0, 0, 0.0));
    }
    let registry_ttl_ns = s.registry_ttls_ns();
    let servers = final_servers(&j.history, &j.finals);
    let run = RunRecord {
        obs: log,
        clocks: &clocks,
        drift_bound: s.cluster.drift_bound,
        expiry: s.cluster.lease_expiry,
        election_timeout_max_ns: s.cluster.election_timeout_ns.1,
        settle_at_ns: s.duration_ns,
        end_ns: s.duration_ns + s.settle_ns,
        servers: &servers,
        registry_ttl_ns: &registry_ttl_ns,
        lock_wait_bound_ns: s.lock_wait_bound_ns(),
        commit_backlog_ns: 0,
        task_pace: task_pace(s),
    };
    let mut violations = Vec::new();
    let mut not_judged = Vec::new();
    for (id, check) in CHECKERS.iter().chain(FULL_LOG_CHECKERS) {
        match not_judged_because(id, j.target).or_else(|| truth_missing(id, j)) {
            Some(needs) => not_judged.push(NotJudged { invariant: id, needs }),
            None => {
                let judgement = check(&run);
                violations.extend(judgement.violations);
                not_judged.extend(judgement.not_judged);
            }
        }
    }
    violations.sort_by(|a, b| (a.at_ns, a.invariant).cmp(&(b.at_ns, b.invariant)));
    (violations, not_judged)
}

/// The text `leasesim run` prints for a run, for a real one.
pub fn print(o: &Outcome) {
    println!(
        "{} seed {} on {}: {} — {} violation(s); {:.1}s real, {} observations, stamping error {:.1} ms",
        o.scenario,
        o.seed,
        o.target,
        o.verdict,
        o.violations.len(),
        o.real_seconds,
        o.observations,
        o.stamp_error_ns as f64 / 1e6
    );
    for v in o.violations.iter().take(10) {
        let kind = if v.assumptions_held { "bug" } else { "assumption broken" };
        println!("  {} at {} [{kind}]: {}", v.invariant, v.at, v.detail);
    }
    if o.violations.len() > 10 {
        println!("  … and {} more", o.violations.len() - 10);
    }
    for fault in &o.faults {
        println!("  fault {fault}");
    }
    for n in &o.not_judged {
        println!("  not judged: {} (needs {})", n.invariant, n.needs);
    }
    for note in &o.notes {
        println!("  note: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_event_invariants_are_judged_against_leasesim_node_only() {
        let on = |target| CHECKERS.iter().chain(FULL_LOG_CHECKERS).filter(|(id, _)| not_judged_because(id, target).is_none()).count();
        for id in NEEDS_SERVER_EVENTS {
            assert_eq!(not_judged_because(id, Target::Node), None, "{id} is judged from the members' event logs");
            assert!(not_judged_because(id, Target::Etcd).is_some_and(|why| why.contains("etcd")), "{id}");
        }
        for id in NEEDS_FINAL_LOG.iter().chain(&NEEDS_END_STATE_AND_EVENTS) {
            assert_eq!(not_judged_because(id, Target::Node), None, "{id} is judged on leasesim-node");
            assert!(not_judged_because(id, Target::Etcd).is_some_and(|why| why.contains("etcd")), "{id}");
        }
        // Against leasesim-node every invariant is judged.
        assert_eq!(on(Target::Node), CHECKERS.len() + FULL_LOG_CHECKERS.len());
        let per_target = NEEDS_SERVER_EVENTS.len() + NEEDS_FINAL_LOG.len() + NEEDS_END_STATE_AND_EVENTS.len();
        assert_eq!(on(Target::Node) - on(Target::Etcd), per_target);
        // Every listed id is an invariant the judge has (a renamed checker
        // would otherwise be judged silently on etcd).
        let listed = NEEDS_SERVER_EVENTS.iter().chain(&NEEDS_FINAL_LOG).chain(&NEEDS_END_STATE_AND_EVENTS);
        for id in listed {
            assert!(CHECKERS.iter().chain(FULL_LOG_CHECKERS).any(|(c, _)| c == id), "{id} is no checker");
        }
    }

    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::ServiceEvent;
    use leasesim_judge::observe::Obs;

    const S: u64 = 1_000_000_000;

    /// A lock scenario of 4 s and 20 s of settle (every acquire's liveness
    /// deadline falls inside the run), 3 members.
    fn lock_scenario() -> Scenario {
        let text = r#"name = "real-liveness"
duration = "4s"
settle = "20s"
[cluster]
servers = 3
[[workload]]
kind = "lock"
clients = 1
keys = ["orders"]
ttl = "2s"
hold = ["100ms", "200ms"]
think = ["0ms", "100ms"]
"#;
        leasesim_scenario::parse(text, "real-liveness.toml").expect("a valid scenario")
    }

    /// Every member up, s2 leading term 4 (as `final_state::read` gives it).
    fn healthy_end() -> BTreeMap<u64, FinalServer> {
        let probe = |id| crate::final_state::probe_of(id, 2, 4, 90);
        (1..=3).map(|id| (id, crate::final_state::final_server(true, Some(probe(id)), Vec::new()))).collect()
    }

    fn liveness(log: Vec<Obs>, target: Target, finals: BTreeMap<u64, FinalServer>) -> (bool, bool) {
        let s = lock_scenario();
        let j = Judging { scenario: &s, target, clocks: BTreeMap::new(), history: None, finals, log_gaps: Vec::new() };
        let (violations, not_judged) = judge(&ObsLog::from(log), &j);
        (violations.iter().any(|v| v.invariant == "liveness"), not_judged.iter().any(|n| n.invariant == "liveness"))
    }

    /// c1's acquire of `orders` under lease 5 at 1 s; granted (under the
    /// API layer's session id, as leasesim-node's members report it) if
    /// `granted`.
    fn acquire_log(granted: bool) -> Vec<Obs> {
        let mut log = vec![Obs { at_ns: S, proc: Proc::Client(1), event: Event::AcquireSent { key: "orders".into(), lease: 5, seq: 1 } }];
        if granted {
            let event = ServiceEvent::LockGranted { key: "orders".into(), client: 900_001, seq: 7, lease: 5, token: 12 };
            let event = Event::Server { event: ServerEvent::Service { index: 12, event } };
            log.push(Obs { at_ns: S + S / 10, proc: Proc::Server(2), event });
        }
        log
    }

    #[test]
    fn liveness_is_judged_against_leasesim_node_from_its_events_and_end_state() {
        assert_eq!(liveness(acquire_log(true), Target::Node, healthy_end()), (false, false));
        // Planted: the acquire is never granted.
        assert_eq!(liveness(acquire_log(false), Target::Node, healthy_end()), (true, false));
        // Planted: no member leads when the run ends (s2 is down).
        let mut finals = healthy_end();
        finals.insert(2, crate::final_state::final_server(false, None, Vec::new()));
        assert_eq!(liveness(acquire_log(true), Target::Node, finals), (true, false));
    }

    /// s2 applied entries 1 and 2 of term 1; every member's final log as
    /// `terms` give it (as `final_state::with_log` fills it from `GET /log`).
    fn durability(terms: &[(u64, u64)], target: Target, log_gaps: Vec<String>) -> (bool, bool) {
        let s = lock_scenario();
        let applied = |index| {
            let event = ServerEvent::Applied { index, term: 1, fingerprint: index, state: 0 };
            Obs { at_ns: index * S, proc: Proc::Server(2), event: Event::Server { event } }
        };
        let view = leasesim_node::log_view::LogView {
            snapshot_index: 0,
            last_index: terms.len() as u64,
            commit_index: terms.len() as u64,
            runs: leasesim_node::log_view::runs(terms.iter().copied()),
        };
        let mut finals = healthy_end();
        finals.values_mut().for_each(|server| crate::final_state::with_log(server, &view));
        let j = Judging { scenario: &s, target, clocks: BTreeMap::new(), history: None, finals, log_gaps };
        let (violations, not_judged) = judge(&ObsLog::from(vec![applied(1), applied(2)]), &j);
        (violations.iter().any(|v| v.invariant == "durability"), not_judged.iter().any(|n| n.invariant == "durability"))
    }

    #[test]
    fn durability_is_judged_on_the_members_final_logs_unless_one_is_missing() {
        assert_eq!(durability(&[(1, 1), (2, 1), (3, 2)], Target::Node, Vec::new()), (false, false));
        // Planted: entry 2 of term 1 was applied, and the logs hold term 2 there.
        assert_eq!(durability(&[(1, 1), (2, 2)], Target::Node, Vec::new()), (true, false));
        // A running member's log could not be read: not judged, with why.
        assert_eq!(durability(&[(1, 1), (2, 2)], Target::Node, vec!["s3: no answer".into()]), (false, true));
        assert_eq!(durability(&[(1, 1), (2, 2)], Target::Etcd, Vec::new()), (false, true));
    }

    #[test]
    fn liveness_is_not_judged_against_etcd() {
        assert_eq!(liveness(acquire_log(false), Target::Etcd, healthy_end()), (false, true));
    }
}
