//! Lock queues: per key, the holder and a FIFO queue of waiters, all
//! replicated state so the order survives leader changes and restarts.
//!
//! The Raft lock-service design kept its queues in leader memory and lost them
//! on a leader crash ("the new leader is able to reconstruct a similar queue
//! ... even if the request order may differ"); here the queue is applied from
//! the log, so the order is the commit order on every server. The head of the
//! queue holds the lock; its fencing token is the index of the entry that
//! granted it, which is why tokens grow across leader changes and restarts
//! (Kleppmann, "How to do distributed locking").

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::types::{ClientId, LeaseId, LogIndex};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Holder {
    pub client: ClientId,
    /// The acquire request that was granted.
    pub seq: u64,
    pub lease: LeaseId,
    pub token: u64,
    /// Index of the entry that granted the lock.
    pub granted_index: LogIndex,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Waiter {
    pub client: ClientId,
    pub seq: u64,
    pub lease: LeaseId,
    /// Index of the acquire entry: the queue is ordered by it.
    pub queued_index: LogIndex,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LockQueue {
    pub holder: Option<Holder>,
    pub waiters: VecDeque<Waiter>,
    /// The highest token ever granted for this key (0: never granted). Kept
    /// after the queue empties so the next grant can be checked against it.
    pub last_token: u64,
}

impl LockQueue {
    pub fn is_waiting(&self, lease: LeaseId) -> bool {
        self.waiters.iter().any(|w| w.lease == lease)
    }
}

/// Every key's queue, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Locks {
    queues: BTreeMap<String, LockQueue>,
}

impl Locks {
    pub fn get(&self, key: &str) -> Option<&LockQueue> {
        self.queues.get(key)
    }

    pub fn holder(&self, key: &str) -> Option<&Holder> {
        self.queues.get(key).and_then(|q| q.holder.as_ref())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &LockQueue)> {
        self.queues.iter()
    }

    pub(crate) fn queue_mut(&mut self, key: &str) -> &mut LockQueue {
        self.queues.entry(key.to_string()).or_default()
    }

    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut LockQueue> {
        self.queues.get_mut(key)
    }

    /// Keys whose holder or waiters belong to `lease`.
    pub(crate) fn keys_of_lease(&self, lease: LeaseId) -> Vec<String> {
        self.queues
            .iter()
            .filter(|(_, q)| q.holder.as_ref().is_some_and(|h| h.lease == lease) || q.is_waiting(lease))
            .map(|(k, _)| k.clone())
            .collect()
    }
}
