//! What applying one entry did, as data: answers owed to clients and the
//! facts the checkers judge (grants, revocations, lock hand-overs).
//!
//! The state machine never sends anything itself; it returns effects and the
//! server decides what to do with them: only the leader turns `Reply` into a
//! message to the client, and every server turns the rest into
//! `ServerEvent`s stamped with the entry's index.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::service::Response;
use crate::types::{ClientId, LeaseId, LogIndex};

/// Why a lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RevokeCause {
    /// A client's `LeaseRevoke`.
    Revoke,
    /// An `Expire` entry (the leader's deadline passed), or, with the planted
    /// bug `follower_expires_leases`, a server's own local decision.
    Expire,
    /// `leader-stamped-wall`: this server's wall clock passed the stamp.
    WallClockExpiry,
}

/// Why a held lock was let go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReleaseCause {
    /// A `LockRelease` from client `by`.
    Release { by: ClientId },
    /// The holder's lease ended.
    LeaseEnded,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// An answer owed to `(client, seq)`; sent by the leader only.
    Reply {
        client: ClientId,
        seq: u64,
        body: Response,
    },
    /// A request was executed (first time for this `(client, seq)`).
    RequestApplied {
        client: ClientId,
        seq: u64,
    },
    /// A request was found in the session record and not executed again.
    RequestDeduplicated {
        client: ClientId,
        seq: u64,
    },
    LeaseGranted {
        lease: LeaseId,
        ttl_ns: u64,
    },
    LeaseRevoked {
        lease: LeaseId,
        cause: RevokeCause,
        deleted_keys: Vec<Vec<u8>>,
    },
    /// `leader-stamped-wall`: a keep-alive moved the stamped expiry.
    LeaseRefreshed {
        lease: LeaseId,
        expiry_wall_ns: u64,
    },
    /// `writer-clock`: `client` claimed or extended a lease, acknowledging
    /// its clock; the leader re-arms the leases that client wrote.
    WriterWrote {
        client: ClientId,
    },
    /// `writer-clock`: a plain keep-alive renewed `lease`, which now has no
    /// writer: the leader re-arms it for its TTL from now, on its own clock.
    LeaseRenewed {
        lease: LeaseId,
    },
    LockQueued {
        key: String,
        client: ClientId,
        seq: u64,
        lease: LeaseId,
    },
    LockGranted {
        key: String,
        client: ClientId,
        seq: u64,
        lease: LeaseId,
        token: u64,
    },
    LockReleased {
        key: String,
        client: ClientId,
        token: u64,
        cause: ReleaseCause,
    },
    /// A waiter left the queue without the lock because its lease ended.
    LockWaiterDropped {
        key: String,
        client: ClientId,
        seq: u64,
        lease: LeaseId,
    },
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

    pub fn push(&mut self, effect: Effect) {
        self.effects.push(effect);
    }
}
