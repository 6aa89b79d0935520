//! What the service observably did when it applied an entry (requests run,
//! leases granted and ended, locks queued and handed over), defined once.
//!
//! The state machine reports these as [`Effect::Event`](super::Effect) and
//! the server wraps each, unchanged, into a
//! [`ServerEvent::Service`](crate::server::ServerEvent) with the index of the
//! entry that caused it. Before, the server's events repeated these nine
//! variants with an `index` field added and `process.rs` copied them field
//! by field; a fact added here now reaches the checkers without a second
//! edit.

use serde::{Deserialize, Serialize};

use crate::types::{ClientId, LeaseId};

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

/// One fact of one applied entry, the same on every server that applies it
/// (except `LeaseRevoked` under `leader-stamped-wall` or the planted bug
/// `follower_expires_leases`, where a server's own clock decides).
///
/// Not `Hash` on its own: the wrappers feed it to their digests in the
/// layout `event_digest` keeps (new variants go at its end).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServiceEvent {
    /// A client request was executed (first time for this `(client, seq)`).
    RequestApplied {
        client: ClientId,
        seq: u64,
    },
    /// A retried request was answered from the session record, not executed
    /// again.
    RequestDeduplicated {
        client: ClientId,
        seq: u64,
    },
    LeaseGranted {
        lease: LeaseId,
        ttl_ns: u64,
    },
    /// The lease ended in this entry, deleting `deleted_keys` (as text, for
    /// the checkers and traces; a key that is not UTF-8, which only etcd
    /// clients of the real node write, is shown lossily); with the planted bug
    /// `follower_expires_leases`, at a server's local expiry.
    LeaseRevoked {
        lease: LeaseId,
        cause: RevokeCause,
        deleted_keys: Vec<String>,
    },
    /// `leader-stamped-wall`: a keep-alive entry moved the stamped expiry.
    LeaseRefreshed {
        lease: LeaseId,
        expiry_wall_ns: u64,
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
    /// A waiter left a queue without the lock (its lease ended).
    LockWaiterDropped {
        key: String,
        client: ClientId,
        seq: u64,
        lease: LeaseId,
    },
}
