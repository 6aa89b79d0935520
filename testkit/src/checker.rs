//! The safety properties of Raft (paper Figure 3), checked by a god's-eye
//! observer after every input to every node:
//!
//! - Election Safety: at most one leader per term.
//! - Log Matching: two logs with an entry of the same index and term are
//!   identical up to it.
//! - Leader Completeness: a leader holds every entry committed in an earlier
//!   term.
//! - State Machine Safety: no two nodes apply different entries at one index
//!   (and their states agree there, snapshots included).
//! - Committed entries are never lost: a node's log never again ends below
//!   the highest index it has committed, crashes included.
//! - Read safety (thesis §6.4): a read index covers every entry committed
//!   before the read was requested.
//!
//! Violations come back as values so a test can assert that a planted bug is
//! caught.

use std::collections::BTreeMap;
use std::fmt;

use leasesim_core::raft::{Entry, RaftNode, Snapshot};
use leasesim_core::types::{fmt_secs, LogIndex, NodeId, Term};

use crate::toy::ToyState;

pub type TestNode = RaftNode<u64, ToyState>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RaftViolationKind {
    ElectionSafety,
    LogMatching,
    LeaderCompleteness,
    StateMachineSafety,
    /// A node's log no longer reaches an index it had committed: committed
    /// entries were truncated.
    CommittedEntryLost,
    /// The node's term, vote or log ran ahead of its disk after a Ready, or
    /// it asked the disk for an impossible write.
    Durability,
    StaleRead,
    Liveness,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftViolation {
    pub kind: RaftViolationKind,
    /// Global simulated time when it was seen.
    pub at_ns: u64,
    pub detail: String,
}

impl fmt::Display for RaftViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} violated at {}: {}", self.kind, fmt_secs(self.at_ns), self.detail)
    }
}

/// What the observer has learnt so far.
#[derive(Clone, Debug, Default)]
pub struct RaftChecker {
    /// Who led each term.
    leaders: BTreeMap<Term, NodeId>,
    /// Every entry some node applied, with the applier's term at the time:
    /// the entry was committed in that term or earlier.
    committed: BTreeMap<LogIndex, (Entry<u64>, Term)>,
    /// The toy state right after each applied index.
    states: BTreeMap<LogIndex, ToyState>,
    /// Highest index any node has applied (a read requested now must cover it).
    pub max_applied: LogIndex,
}

type Check = Result<(), (RaftViolationKind, String)>;

fn fail(kind: RaftViolationKind, detail: String) -> Check {
    Err((kind, detail))
}

impl RaftChecker {
    /// Election Safety, for a node that currently leads.
    pub fn on_leader(&mut self, id: NodeId, term: Term) -> Check {
        match self.leaders.insert(term, id) {
            Some(other) if other != id => fail(RaftViolationKind::ElectionSafety, format!("nodes {other} and {id} both led term {term}")),
            _ => Ok(()),
        }
    }

    /// Leader Completeness, for a node that just became leader.
    pub fn check_leader_completeness(&self, node: &TestNode) -> Check {
        for (index, (entry, committed_in)) in self.committed.range(node.first_index()..) {
            if *committed_in >= node.term() {
                continue;
            }
            if node.entry(*index) != Some(entry) {
                return fail(
                    RaftViolationKind::LeaderCompleteness,
                    format!(
                        "node {} leads term {} without the entry committed at index {index} by term {committed_in} \
                         ({entry:?}); it holds {:?}",
                        node.id(),
                        node.term(),
                        node.entry(*index)
                    ),
                );
            }
        }
        Ok(())
    }

    /// State Machine Safety: `entry` applied by `id` (in term `term`) right
    /// after `before`.
    pub fn on_apply(&mut self, id: NodeId, term: Term, before: &ToyState, entry: &Entry<u64>) -> Check {
        if entry.index != before.applied_index + 1 {
            return fail(
                RaftViolationKind::StateMachineSafety,
                format!("node {id} applied index {} right after {}", entry.index, before.applied_index),
            );
        }
        match self.committed.get(&entry.index) {
            Some((known, _)) if known != entry => {
                return fail(
                    RaftViolationKind::StateMachineSafety,
                    format!("node {id} applied {entry:?} at index {}, but {known:?} was applied there before", entry.index),
                );
            }
            Some(_) => {}
            None => {
                self.committed.insert(entry.index, (entry.clone(), term));
            }
        }
        self.max_applied = self.max_applied.max(entry.index);
        Ok(())
    }

    /// The state after an apply (or a snapshot install) must agree with every
    /// other node's state at that index.
    pub fn on_state(&mut self, id: NodeId, state: &ToyState) -> Check {
        match self.states.get(&state.applied_index) {
            Some(known) if known != state => fail(
                RaftViolationKind::StateMachineSafety,
                format!("node {id} state at index {} is {state:?}, another node had {known:?}", state.applied_index),
            ),
            Some(_) => Ok(()),
            None => {
                self.states.insert(state.applied_index, state.clone());
                Ok(())
            }
        }
    }

    pub fn on_install(&mut self, id: NodeId, snapshot: &Snapshot<ToyState>) -> Check {
        if snapshot.data.applied_index != snapshot.last_index {
            return fail(
                RaftViolationKind::StateMachineSafety,
                format!("node {id} got a snapshot at {} holding state at {}", snapshot.last_index, snapshot.data.applied_index),
            );
        }
        if let Some((entry, _)) = self.committed.get(&snapshot.last_index) {
            if entry.term != snapshot.last_term {
                return fail(
                    RaftViolationKind::StateMachineSafety,
                    format!(
                        "node {id} got a snapshot ending at {} with term {}, but the entry applied there has term {}",
                        snapshot.last_index, snapshot.last_term, entry.term
                    ),
                );
            }
        }
        self.max_applied = self.max_applied.max(snapshot.last_index);
        self.on_state(id, &snapshot.data)
    }

    /// Forgets history no node can ask about again (below every disk's
    /// snapshot), keeping memory bounded in long runs.
    pub fn prune_below(&mut self, index: LogIndex) {
        self.committed = self.committed.split_off(&index);
        self.states = self.states.split_off(&index);
    }
}

/// Log Matching between two nodes' in-memory logs: find the highest index
/// where both hold an entry of the same term; everything both hold up to it
/// must be identical.
pub fn check_log_matching(a: &TestNode, b: &TestNode) -> Check {
    let low = a.first_index().max(b.first_index());
    let high = a.last_index().min(b.last_index());
    let mut top = high;
    while top >= low && top > 0 {
        if a.entry_term(top).is_some() && a.entry_term(top) == b.entry_term(top) {
            break;
        }
        top -= 1;
    }
    if top < low {
        return Ok(());
    }
    for index in low..=top {
        let (ea, eb) = (a.entry(index), b.entry(index));
        if ea != eb {
            return fail(
                RaftViolationKind::LogMatching,
                format!(
                    "nodes {} and {} both hold an entry of term {:?} at index {top} but differ at index {index}: \
                     {ea:?} vs {eb:?}",
                    a.id(),
                    b.id(),
                    a.entry_term(top)
                ),
            );
        }
    }
    Ok(())
}
