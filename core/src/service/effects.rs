//! What applying one entry did, as data: answers owed to clients and the
//! facts the checkers judge (grants, revocations, lock hand-overs).
//!
//! The state machine never sends anything itself; it returns effects and the
//! server decides what to do with them: only the leader turns `Reply` into a
//! message to the client, every server wraps each `Event` into a
//! `ServerEvent` stamped with the entry's index, and the leader re-arms its
//! lease deadlines on the `writer-clock` effects.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use crate::service::event_digest::hash_in_effect;
use crate::service::{Response, ServiceEvent};
use crate::types::{ClientId, LeaseId, LogIndex};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// An answer owed to `(client, seq)`; sent by the leader only.
    Reply { client: ClientId, seq: u64, body: Response },
    /// A fact the checkers judge; every server turns it into a
    /// `ServerEvent` stamped with the entry's index.
    Event(ServiceEvent),
    /// `writer-clock`: `client` claimed or extended a lease, acknowledging
    /// its clock; the leader re-arms the leases that client wrote.
    WriterWrote { client: ClientId },
    /// `writer-clock`: a plain keep-alive renewed `lease`, which now has no
    /// writer: the leader re-arms it for its TTL from now, on its own clock.
    LeaseRenewed { lease: LeaseId },
}

/// By hand, for the replicas' applied-state chain: the bytes the flat enum
/// (events inlined) fed, so that chain stays what it was (`event_digest`).
impl Hash for Effect {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Effect::Reply { client, seq, body } => {
                state.write_isize(0);
                (client, seq, body).hash(state);
            }
            Effect::Event(event) => hash_in_effect(event, state),
            Effect::WriterWrote { client } => {
                state.write_isize(6);
                client.hash(state);
            }
            Effect::LeaseRenewed { lease } => {
                state.write_isize(7);
                lease.hash(state);
            }
        }
    }
}

impl From<ServiceEvent> for Effect {
    fn from(event: ServiceEvent) -> Self {
        Effect::Event(event)
    }
}

/// Collects the effects of one entry, and the keys whose queue head may
/// need granting once the entry's operation is done.
#[derive(Debug)]
pub(crate) struct Batch {
    pub index: LogIndex,
    pub effects: Vec<Effect>,
    /// Keys whose lock became free or gained a waiter in this entry.
    pub dirty_keys: BTreeSet<String>,
}

impl Batch {
    pub fn new(index: LogIndex) -> Self {
        Batch { index, effects: Vec::new(), dirty_keys: BTreeSet::new() }
    }

    pub fn push(&mut self, effect: impl Into<Effect>) {
        self.effects.push(effect.into());
    }
}
