//! What the load generator saw, in the judge's vocabulary, and the judge's
//! verdict on it: the load holds a real cluster to the very checkers
//! (`leasesim-judge`) that judge the simulator, rather than to copies of
//! their rules.
//!
//! True time is `CLOCK_MONOTONIC`, which every process on one machine
//! shares (a leasesim-node member measures its leases on it too, unless a
//! test skews its clock source), counted from the load's start.
//!
//! Stamping error: an observation is stamped when the client reads that
//! clock, a little after the event it reports (a grant the cluster decided,
//! a write the data store took, happened somewhere between the request's
//! send and the stamp). The log states a bound on that error
//! ([`ObsLog::with_stamp_error`]): the slowest answer any observation came
//! from, and never less than [`MIN_STAMP_ERROR_NS`] for the client's own
//! scheduling. The checkers that compare instants judge conservatively
//! within it: a violation is reported only if it holds for every placement
//! of the events within their bounds, so a slow or loaded machine can hide
//! a violation but never invent one. Requests' send times and calls are
//! stamped before the request leaves, so the interval the judge sees
//! always contains the true one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use leasesim_core::service::{Op, Response};
use leasesim_core::ExpiryStrategy;
use leasesim_history::{KvInput, KvOutput};
use leasesim_judge::checkers::{RunRecord, Violation, CHECKERS};
use leasesim_judge::observe::{Event, Obs, ObsLog};
use leasesim_judge::vocab::{Proc, SimClock};

/// The least stamping error assumed: a client stamps an answer right after
/// its task wakes with it, and the scheduler's delay is not measured.
pub const MIN_STAMP_ERROR_NS: u64 = 1_000_000;

pub use crate::faults::event_log::monotonic_ns;

/// The observations of one load run, stamped in true time since it began.
pub struct Recorder {
    origin_ns: u64,
    obs: Mutex<Vec<Obs>>,
    slowest_answer_ns: AtomicU64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder { origin_ns: monotonic_ns(), obs: Mutex::default(), slowest_answer_ns: AtomicU64::new(0) }
    }
}

impl Recorder {
    /// `CLOCK_MONOTONIC` when the run began: true time 0 (to place the
    /// members' own event logs on the run's timeline).
    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// True time since the run began (stamp a request with it before it leaves).
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }

    /// Records what `client` just saw, stamped now; returns the stamp.
    pub fn record(&self, client: u64, event: Event) -> u64 {
        let at_ns = self.now_ns();
        self.obs.lock().expect("observations").push(Obs { at_ns, proc: Proc::Client(client), event });
        at_ns
    }

    /// Records what `proc` (a member, the data store, a fault) did, as the
    /// runner that made it happen saw it, stamped now; returns the stamp.
    pub fn record_as(&self, proc: Proc, event: Event) -> u64 {
        let at_ns = self.now_ns();
        self.obs.lock().expect("observations").push(Obs { at_ns, proc, event });
        at_ns
    }

    /// Records what `proc` did at true time `at_ns`, earlier than now: a
    /// client's pause at its point begins when its request left (its
    /// route closed its gate then), which the runner learns a poll later.
    pub fn record_as_at(&self, proc: Proc, at_ns: u64, event: Event) -> u64 {
        self.obs.lock().expect("observations").push(Obs { at_ns, proc, event });
        at_ns
    }

    /// Records what an answer to a request sent at `sent_ns` showed: the
    /// answer's round trip bounds how long before the stamp it happened.
    pub fn answered(&self, client: u64, sent_ns: u64, event: Event) -> u64 {
        self.answered_at(client, sent_ns, self.now_ns(), event)
    }

    /// [`Recorder::answered`] for an answer that arrived at `arrived_ns`
    /// and was read later: a paused client reads an answer only once
    /// resumed (`leasesim-real`'s gate), but what it shows happened before
    /// it arrived, so it is stamped then, and the stated error counts the
    /// round trip to its arrival, not the pause. Stamped at the reading,
    /// one paused answer would widen the whole run's error to the pause
    /// and hide any violation closer than that (reports/sim-vs-real.md,
    /// "Client pauses").
    pub fn answered_at(&self, client: u64, sent_ns: u64, arrived_ns: u64, event: Event) -> u64 {
        self.obs.lock().expect("observations").push(Obs { at_ns: arrived_ns, proc: Proc::Client(client), event });
        self.slowest_answer_ns.fetch_max(arrived_ns.saturating_sub(sent_ns), Ordering::Relaxed);
        arrived_ns
    }

    /// The log, in true-time order, with its stamping error stated.
    pub fn into_log(self) -> ObsLog {
        let mut obs = self.obs.into_inner().expect("observations");
        obs.sort_by_key(|o| o.at_ns);
        let error_ns = self.slowest_answer_ns.into_inner().max(MIN_STAMP_ERROR_NS);
        ObsLog::from(obs).with_stamp_error(error_ns)
    }
}

/// The judge's word for a KV operation the load sends (`None` for the
/// lease operations, which the `kv` workload does not send).
pub fn kv_op(input: &KvInput) -> Option<Op> {
    Some(match input.clone() {
        KvInput::Get { key } => Op::Get { key },
        KvInput::Put { key, value, lease } => Op::Put { key, value, lease },
        KvInput::Delete { key } => Op::Delete { key },
        KvInput::Cas { key, expected, value, lease } => Op::Cas { key, expected, value, lease },
        _ => return None,
    })
}

/// The judge's word for a KV answer. Revisions are 0: the load keeps none,
/// and the linearizability checker reads only what the answer says
/// happened (`None`: an answer the `kv` workload never gets).
pub fn kv_response(output: &KvOutput) -> Option<Response> {
    Some(match output.clone() {
        KvOutput::Ok => Response::Done { revision: 0 },
        KvOutput::Value(value) => Response::Value { value, revision: 0 },
        KvOutput::Cas { succeeded } => Response::Cas { succeeded, current: None, revision: 0 },
        _ => return None,
    })
}

/// The judge's verdict on the invariants a workload can be judged by.
pub struct Judged {
    pub lines: Vec<String>,
    pub violations: Vec<Violation>,
}

/// Judges `log` by the judge's checkers for `invariants` (ids as in
/// scenarios). Every client's clock is `CLOCK_MONOTONIC` itself (exact),
/// and so are the members' when they run on this machine: no drift.
pub fn judge(log: &ObsLog, invariants: &[&str]) -> Judged {
    let clients: std::collections::BTreeSet<Proc> = log.iter().map(|o| o.proc).collect();
    let clocks: BTreeMap<Proc, SimClock> = clients.into_iter().map(|p| (p, SimClock::new(0, 0, 0.0))).collect();
    let end_ns = log.iter().last().map_or(0, |o| o.at_ns);
    let (servers, registry_ttl_ns) = (BTreeMap::new(), BTreeMap::new());
    let run = RunRecord {
        obs: log,
        clocks: &clocks,
        drift_bound: 0.0,
        expiry: ExpiryStrategy::LeaderMonotonic,
        election_timeout_max_ns: 0,
        settle_at_ns: end_ns,
        end_ns,
        servers: &servers,
        registry_ttl_ns: &registry_ttl_ns,
        lock_wait_bound_ns: 0,
        commit_backlog_ns: 0,
        task_pace: None,
    };
    let mut judged = Judged { lines: Vec::new(), violations: Vec::new() };
    let error_ms = log.stamp_error_ns() as f64 / 1e6;
    for (id, check) in CHECKERS.iter().filter(|(id, _)| invariants.contains(id)) {
        let found = check(&run);
        judged.lines.push(match (found.violations.len(), found.not_judged.first()) {
            (0, None) => format!("check {id}: ok (judged by leasesim-judge, stamping error {error_ms:.1} ms)"),
            (0, Some(n)) => format!("check {id}: not judged: needs {}", n.needs),
            (n, _) => format!("check {id}: {n} violations"),
        });
        judged.violations.extend(found.violations);
    }
    judged
}

#[cfg(test)]
mod tests {
    use leasesim_judge::observe::BeliefEnd;

    use super::*;

    /// An answer read long after it arrived (its client was paused) is
    /// stamped at its arrival, and only send-to-arrival counts as round
    /// trip: the stated error stays that round trip, not the pause.
    #[test]
    fn an_answer_read_late_is_stamped_at_its_arrival_and_its_wait_is_no_round_trip() {
        let recorder = Recorder::default();
        let ms = 1_000_000;
        // Sent at 10 ms, arrived at 13 ms, read whenever the test gets here.
        let at = recorder.answered_at(1, 10 * ms, 13 * ms, Event::LeaseSeenGone { lease: 7 });
        assert_eq!(at, 13 * ms);
        let log = recorder.into_log();
        assert_eq!(log.stamp_error_ns(), 3 * ms, "the round trip to the arrival, not to the read");
        let obs: Vec<_> = log.iter().map(|o| (o.at_ns, matches!(o.event, Event::LeaseSeenGone { lease: 7 }))).collect();
        assert_eq!(obs, vec![(13 * ms, true)]);
    }

    #[test]
    fn true_time_grows_and_the_log_states_its_stamping_error() {
        let recorder = Recorder::default();
        let sent_ns = recorder.now_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        recorder.answered(1, sent_ns, Event::LeaseSeenGone { lease: 7 });
        let log = recorder.into_log();
        assert!(log.stamp_error_ns() >= 20_000_000, "the 20 ms answer bounds the error: {}", log.stamp_error_ns());
        assert_eq!(Recorder::default().into_log().stamp_error_ns(), MIN_STAMP_ERROR_NS);
    }

    #[test]
    fn two_clients_believing_at_once_are_found_by_the_judge() {
        let belief = |token| Event::BeliefStarted { key: "load-lock".into(), lease: token, token, until_mono_ns: 60_000_000_000 };
        let ended = Event::BeliefEnded { key: "load-lock".into(), why: BeliefEnd::Released };
        let obs = |at_ns, client, event| Obs { at_ns, proc: Proc::Client(client), event };
        let handoff = |second_ns| {
            let log = vec![obs(1_000_000_000, 1, belief(5)), obs(2_000_000_000, 1, ended.clone()), obs(second_ns, 2, belief(9))];
            judge(&ObsLog::from(log).with_stamp_error(MIN_STAMP_ERROR_NS), &["lock-belief-overlap"])
        };
        assert!(handoff(2_100_000_000).violations.is_empty());
        let overlap = handoff(1_500_000_000);
        assert_eq!(overlap.violations.iter().map(|v| v.invariant).collect::<Vec<_>>(), vec!["lock-belief-overlap"]);
        assert_eq!(overlap.lines, vec!["check lock-belief-overlap: 1 violations"]);
    }
}
