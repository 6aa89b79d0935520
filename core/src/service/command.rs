//! The service's wire vocabulary: what clients ask ([`Op`]), what the log
//! carries ([`Command`]) and what servers answer ([`Response`]).
//!
//! Every client request carries `(client, seq)` so the state machine can
//! answer a retried request from its session record instead of applying it
//! twice (Raft thesis §6.3).

use serde::{Deserialize, Serialize};

use crate::service::auth::{AuthAnswer, AuthError, AuthRequest};
use crate::service::txn::{KvError, TxnRequest, TxnResponse};
use crate::types::{ClientId, LeaseId, LogIndex, NodeId};

/// A client's request, as sent to a server.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClientRequest {
    pub client: ClientId,
    /// Per-client sequence number, starting at 1, one per distinct request.
    /// A retry reuses the sequence number of the request it retries.
    pub seq: u64,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Linearizable read (read index, thesis §6.4). Not logged.
    Get {
        key: String,
    },
    Put {
        key: String,
        value: String,
        lease: Option<LeaseId>,
    },
    Delete {
        key: String,
    },
    /// Compare-and-set: `expected: None` means "the key is absent".
    Cas {
        key: String,
        expected: Option<String>,
        value: String,
        lease: Option<LeaseId>,
    },
    /// Grant a lease. `id: None` lets the cluster choose (the grant's index).
    LeaseGrant {
        ttl_ns: u64,
        id: Option<LeaseId>,
    },
    LeaseRevoke {
        lease: LeaseId,
    },
    /// Renew. Under `leader-monotonic` answered by the leader alone, not
    /// logged; under `leader-stamped-wall` logged with a fresh stamp.
    LeaseKeepAlive {
        lease: LeaseId,
    },
    LeaseTimeToLive {
        lease: LeaseId,
    },
    LeaseList,
    /// `writer-clock` grant (the Juju lease design's ClaimLease): the lease lasts `ttl_ns`
    /// past `writer_wall_ns`, the claimant's own wall clock when it first
    /// sent this request. Other strategies treat it as a `LeaseGrant`.
    LeaseClaim {
        ttl_ns: u64,
        writer_wall_ns: u64,
    },
    /// `writer-clock` keep-alive (the Juju lease design's ExtendLease): expiry becomes
    /// `writer_wall_ns + TTL` on the holder's clock, never earlier than
    /// before. Other strategies treat it as a `LeaseKeepAlive`.
    LeaseExtend {
        lease: LeaseId,
        writer_wall_ns: u64,
    },
    /// Join the FIFO queue of `key`; answered once granted.
    LockAcquire {
        key: String,
        lease: LeaseId,
    },
    /// Release: only the holder, identified by its token.
    LockRelease {
        key: String,
        token: u64,
    },
    /// etcd's Txn (see `txn`): compares, then one branch of puts, deletes
    /// and ranges, applied as this one entry at one revision.
    Txn(TxnRequest),
    /// etcd's Compact: forget the history at and below `revision`.
    Compact {
        revision: LogIndex,
    },
    /// etcd's Auth service (users, roles, permissions; see `auth`). Logged,
    /// reads included. Never issued by the simulator.
    Auth(AuthRequest),
}

/// What the Raft log carries for the service.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Command {
    /// A client request. `stamp_wall_ns` is the proposing leader's wall clock
    /// at proposal (used by `leader-stamped-wall` for expiry stamps).
    Request { req: ClientRequest, stamp_wall_ns: u64 },
    /// The leader decided a lease expired (its deadline passed on its clock).
    Expire { lease: LeaseId },
    /// `leader-stamped-wall` keep-alive: new absolute expiry.
    Refresh { req: ClientRequest, lease: LeaseId, expiry_wall_ns: u64 },
    /// Remaining TTLs, so a new leader does not extend leases past what the
    /// old one promised (etcd lease checkpoints).
    Checkpoint { remaining: Vec<(LeaseId, u64)> },
    /// `writer-clock` expiry (the Juju lease design's ExpireLease), proposable by anyone:
    /// applies only if the lease still carries `expiry_ns` (no extension
    /// raced it) and the writer's time is known to be past it: its own
    /// latest acknowledged time, or `writer_ns`, the proposer's inference
    /// (an acknowledged writer time plus a duration the proposer measured on
    /// its own clock since it learned of that acknowledgement).
    WriterExpire { lease: LeaseId, expiry_ns: u64, writer_ns: u64 },
    /// `writer-clock` expiry of a lease no writer's reading is written in
    /// (granted or last renewed by a plain `LeaseGrant` / `LeaseKeepAlive`):
    /// the proposer measured its TTL on its own clock since the renewal at
    /// `renewed_index`. Applies only if no renewal came after that one.
    MeasuredExpire { lease: LeaseId, renewed_index: LogIndex },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Response {
    /// A write applied at `revision` (the entry's log index). A delete of an
    /// absent key changes nothing and reports the store's current revision.
    Done {
        revision: LogIndex,
    },
    /// `revision` is the key's modification revision (0 when absent).
    Value {
        value: Option<String>,
        revision: LogIndex,
    },
    /// `current` is the key's value after the operation (the new value on
    /// success, the unchanged one on failure); `revision` its modification
    /// revision (0 when absent).
    Cas {
        succeeded: bool,
        current: Option<String>,
        revision: LogIndex,
    },
    LeaseGranted {
        lease: LeaseId,
        ttl_ns: u64,
    },
    LeaseRevoked {
        lease: LeaseId,
    },
    /// A keep-alive that renewed the lease for `ttl_ns` from now.
    KeepAlive {
        lease: LeaseId,
        ttl_ns: u64,
    },
    TimeToLive {
        lease: LeaseId,
        remaining_ns: u64,
        granted_ttl_ns: u64,
        keys: Vec<Vec<u8>>,
    },
    Leases {
        ids: Vec<LeaseId>,
    },
    LockGranted {
        key: String,
        token: u64,
    },
    Released {
        key: String,
    },
    Txn(TxnResponse),
    /// A compaction at `revision` applied.
    Compacted {
        revision: LogIndex,
    },
    Error(ServiceError),
    Auth(AuthAnswer),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ServiceError {
    /// Ask `leader_hint` instead (if known).
    NotLeader {
        leader_hint: Option<NodeId>,
    },
    LeaseNotFound {
        lease: LeaseId,
    },
    /// TTL below the minimum elections allow (1.5 × election timeout).
    TtlTooShort {
        min_ns: u64,
    },
    DuplicateLease {
        lease: LeaseId,
    },
    NotLockHolder {
        key: String,
    },
    /// The request could not be completed (leadership lost mid-way, or a new
    /// leader has not yet committed an entry of its term); retry.
    Retry,
    /// This lease already waits in the queue of `key` under another request
    /// (a waiter queue holds each lease once).
    AlreadyQueued {
        key: String,
    },
    /// The session no longer holds the answer for this (old) sequence number,
    /// so the request cannot be told apart from a duplicate (Raft thesis
    /// §6.3: the state machine must not guess; the client gives up on it).
    SessionExpired,
    /// etcd's auth store refused the request.
    Auth(AuthError),
    /// etcd's KV checks refused the request (see `txn::KvError`).
    Kv(KvError),
}

/// A server's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClientResponse {
    pub client: ClientId,
    pub seq: u64,
    pub from: NodeId,
    pub body: Response,
}
