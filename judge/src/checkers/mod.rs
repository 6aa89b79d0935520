//! Checkers: one invariant per file, each citing where its rule comes from,
//! each judging the whole run after it ends from the observations (stamped
//! with true time: simulated, or one real process's monotonic clock) and
//! the clocks' histories — never from a node's own clock.
//!
//! Every violation says whether the run stayed inside the assumptions the
//! design states (every clock's rate error within `drift_bound`; for
//! wall-clock strategies, no wall-clock steps): a violation inside them is a
//! **bug**, outside them **assumption broken**.

mod applied_twice;
mod durability;
mod election_safety;
mod fencing_order;
mod fifo_order;
mod holder_lease;
mod keepalive_after_revoke;
mod lease_early_expiry;
mod linearizable;
mod liveness;
pub mod liveness_bounds;
pub mod liveness_margin;
mod lock_belief_overlap;
mod log_matching;
mod promote_extension;
mod release_by_owner;
mod replica_divergence;
mod singleton_overlap;
mod state_machine_safety;
mod task_lost;
mod task_once;
mod token_monotonic;
mod txn_linearizable;
mod vote_durability;
mod watch_delivery;

pub mod facts;

pub use lock_belief_overlap::{belief_windows, Interval as BeliefWindow};
pub use task_lost::TaskPace;

use std::collections::BTreeMap;

use leasesim_core::{fmt_secs, ExpiryStrategy, NodeId};
use serde::Serialize;

use crate::observe::ObsLog;
use crate::vocab::{FinalServer, Proc, SimClock};

/// Everything a checker may look at.
pub struct RunRecord<'a> {
    pub obs: &'a ObsLog,
    pub clocks: &'a BTreeMap<Proc, SimClock>,
    pub drift_bound: f64,
    pub expiry: ExpiryStrategy,
    pub election_timeout_max_ns: u64,
    pub settle_at_ns: u64,
    pub end_ns: u64,
    pub servers: &'a BTreeMap<NodeId, FinalServer>,
    /// Registry client → TTL of its leases.
    pub registry_ttl_ns: &'a BTreeMap<u64, u64>,
    /// Lock workload bounds for liveness: (clients, hold max, ttl).
    pub lock_wait_bound_ns: u64,
    /// How long the log may take to commit every request the clients can
    /// have outstanding before a new entry (liveness's recovery slack adds
    /// it): that many entries, a round trip per batch in flight. 0 where it
    /// is not derived (real runs, core's harness).
    pub commit_backlog_ns: u64,
    /// The task workload's pace, if the scenario has one (`task-lost`).
    pub task_pace: Option<TaskPace>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub invariant: &'static str,
    pub at_ns: u64,
    pub detail: String,
    pub assumptions_held: bool,
}

impl Violation {
    pub fn at(&self) -> String {
        fmt_secs(self.at_ns)
    }
}

/// A violation as a run's JSON line, its report and its JUnit case carry it,
/// alike for a simulated run and a real one: the time as text beside the
/// nanoseconds, and the id owned (read back from files, it is not static).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ViolationJson {
    pub invariant: String,
    pub at: String,
    pub at_ns: u64,
    pub detail: String,
    pub assumptions_held: bool,
}

impl From<&Violation> for ViolationJson {
    fn from(v: &Violation) -> Self {
        ViolationJson {
            invariant: v.invariant.to_string(),
            at: v.at(),
            at_ns: v.at_ns,
            detail: v.detail.clone(),
            assumptions_held: v.assumptions_held,
        }
    }
}

impl RunRecord<'_> {
    /// Whether every clock stayed within the stated assumptions up to
    /// `true_ns`: rate error within `drift_bound`; under `leader-stamped-wall`
    /// (which compares wall clocks) no wall-clock step anywhere; under
    /// `writer-clock` (which trusts each writer's wall clock to measure its
    /// own leases) no client's wall clock stepping forward — such a writer
    /// ends its own leases early by design (chaos-nemesis seed 755 drew it).
    pub fn assumptions_held_until(&self, true_ns: u64) -> bool {
        self.clocks.iter().all(|(proc, c)| {
            let stepped = match self.expiry {
                ExpiryStrategy::LeaderStampedWall => c.wall_jumped_until(true_ns),
                ExpiryStrategy::WriterClock => matches!(proc, Proc::Client(_)) && c.wall_jumped_forward_until(true_ns),
                ExpiryStrategy::LeaderMonotonic => false,
            };
            c.max_abs_drift_until(true_ns) <= self.drift_bound + 1e-12 && !stepped
        })
    }

    pub fn violation(&self, invariant: &'static str, at_ns: u64, detail: String) -> Violation {
        Violation { invariant, at_ns, detail, assumptions_held: self.assumptions_held_until(at_ns) }
    }
}

/// An invariant a run was not (wholly) judged on, and what judging it would
/// need: said in the run's output, never passed as "ok" in silence. A real
/// run says it of what its target cannot report; a checker says it of what
/// it could not decide (a search that spent its step budget).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotJudged {
    pub invariant: &'static str,
    pub needs: String,
}

/// What checkers concluded on a run: the violations they found, and what
/// they could not decide.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Judgement {
    pub violations: Vec<Violation>,
    pub not_judged: Vec<NotJudged>,
}

impl From<Vec<Violation>> for Judgement {
    /// A checker that always decides: what it found is all it says.
    fn from(violations: Vec<Violation>) -> Self {
        Judgement { violations, not_judged: Vec::new() }
    }
}

impl Judgement {
    /// Adds another checker's conclusions.
    pub fn extend(&mut self, other: Judgement) {
        self.violations.extend(other.violations);
        self.not_judged.extend(other.not_judged);
    }
}

/// A checker's rule.
pub type Check = fn(&RunRecord<'_>) -> Judgement;

/// A checker that always decides, as a [`Check`].
macro_rules! decides {
    ($checker:ident) => {
        |run: &RunRecord<'_>| -> Judgement { $checker::check(run).into() }
    };
}

/// Every checker, with its invariant id (SCENARIO-FORMAT.md).
pub const CHECKERS: &[(&str, Check)] = &[
    ("election-safety", decides!(election_safety)),
    ("log-matching", decides!(log_matching)),
    ("state-machine-safety", decides!(state_machine_safety)),
    ("replica-divergence", decides!(replica_divergence)),
    ("vote-durability", decides!(vote_durability)),
    ("durability", decides!(durability)),
    ("lease-early-expiry", decides!(lease_early_expiry)),
    ("keepalive-after-revoke", decides!(keepalive_after_revoke)),
    ("lock-belief-overlap", decides!(lock_belief_overlap)),
    ("fencing-order", decides!(fencing_order)),
    ("token-monotonic", decides!(token_monotonic)),
    ("fifo-order", decides!(fifo_order)),
    ("release-by-owner", decides!(release_by_owner)),
    ("holder-lease", decides!(holder_lease)),
    ("promote-extension", decides!(promote_extension)),
    ("liveness", decides!(liveness)),
    ("linearizable", linearizable::judge_run),
    ("linearizable", txn_linearizable::judge_run),
    ("watch-delivery", decides!(watch_delivery)),
    ("task-once", decides!(task_once)),
    ("task-lost", decides!(task_lost)),
    ("singleton-overlap", decides!(singleton_overlap)),
];

/// Checkers that read events the simulator's sweeps do not keep
/// (`Event::for_traces_only`): judged where a run keeps every server event
/// (core's service harness, real runs against leasesim-node), never by the
/// simulator, whose verdicts must not depend on whether a run kept its
/// trace (`sim/tests/it/checker_inputs.rs`).
pub const FULL_LOG_CHECKERS: &[(&str, Check)] = &[("applied-twice", decides!(applied_twice))];

/// Runs every checker; violations sorted by time.
pub fn check_all(run: &RunRecord<'_>) -> Judgement {
    let mut judgement = Judgement::default();
    for (_, check) in CHECKERS {
        judgement.extend(check(run));
    }
    judgement.violations.sort_by(|a, b| (a.at_ns, a.invariant).cmp(&(b.at_ns, b.invariant)));
    judgement
}

#[cfg(test)]
pub(crate) mod testing;
