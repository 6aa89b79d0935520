//! The replicated lease table: which leases exist, their TTL, the keys
//! attached to them and, per expiry strategy, what the log says about their
//! expiry.
//!
//! What is *not* here matters as much: under `leader-monotonic` no server keeps
//! a deadline in replicated state, because a deadline on one process's
//! monotonic clock means nothing on another's (the consistent-core lease
//! design: "only the leader tracks the lease timeouts"); the leader keeps those
//! in
//! `server::deadlines`. Under `leader-stamped-wall` the leader's absolute wall
//! expiry *is* replicated (the Raft lock-service design), and each server
//! judges it against its own wall clock.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::types::{ClientId, LeaseId, LogIndex};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    pub id: LeaseId,
    pub ttl_ns: u64,
    /// Index of the grant entry.
    pub granted_index: LogIndex,
    /// Keys attached to this lease; deleted with it.
    pub keys: BTreeSet<Vec<u8>>,
    /// `leader-stamped-wall` only: the absolute wall-clock expiry stamped by
    /// the leader (its wall clock + TTL at proposal), extended by refreshes.
    pub expiry_wall_ns: Option<u64>,
    /// `leader-monotonic` with checkpointing: the remaining TTL the last
    /// leader recorded through the log (etcd's lease checkpoints). A new
    /// leader re-arms with this instead of the full TTL. `None`: never
    /// checkpointed or reset by a keep-alive (the full TTL applies).
    pub checkpoint_remaining_ns: Option<u64>,
    /// `writer-clock` only: the client whose clock the expiry is written in
    /// (the holder, the Juju lease design's "writer" of the lease document).
    pub writer: Option<ClientId>,
    /// `writer-clock` only: the expiry on the writer's own wall clock.
    pub expiry_writer_ns: Option<u64>,
    /// `writer-clock` only: the entry that last renewed this lease without
    /// a writer's reading (its grant, or a plain keep-alive). Such a lease
    /// has no writer: its expiry is the leader's measured TTL from that
    /// entry, and an expiry proposed before a later renewal must not end it.
    #[serde(default)]
    pub renewed_index: LogIndex,
}

/// All live leases, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Leases {
    leases: BTreeMap<LeaseId, Lease>,
}

impl Leases {
    pub fn get(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    pub fn contains(&self, id: LeaseId) -> bool {
        self.leases.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.leases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// Leases in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Lease> {
        self.leases.values()
    }

    pub fn ids(&self) -> Vec<LeaseId> {
        self.leases.keys().copied().collect()
    }

    /// The id for a grant at `index` that did not ask for one: the index
    /// itself, or the next free id above it if a client asked for that number
    /// explicitly earlier. Deterministic, so every server picks the same.
    pub(crate) fn free_id_from(&self, index: LogIndex) -> LeaseId {
        let mut id = index.max(1);
        while self.leases.contains_key(&id) {
            id += 1;
        }
        id
    }

    pub(crate) fn insert(&mut self, lease: Lease) {
        let previous = self.leases.insert(lease.id, lease);
        invariant!(previous.is_none(), "grants check for duplicates first");
    }

    pub(crate) fn remove(&mut self, id: LeaseId) -> Option<Lease> {
        self.leases.remove(&id)
    }

    pub(crate) fn get_mut(&mut self, id: LeaseId) -> Option<&mut Lease> {
        self.leases.get_mut(&id)
    }

    /// Leases whose stamped wall expiry is at or before `wall_ns`, in id
    /// order (`leader-stamped-wall`: this server's own judgement).
    pub(crate) fn wall_expired(&self, wall_ns: u64) -> Vec<LeaseId> {
        self.leases.values().filter(|l| l.expiry_wall_ns.is_some_and(|e| e <= wall_ns)).map(|l| l.id).collect()
    }
}
