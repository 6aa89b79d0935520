//! The data that crosses the Raft core's boundary: log entries, messages,
//! persist operations and the `Ready` batch the host carries out.
//!
//! Ordering rule (the durability contract, Raft §5 "persistent state"): the
//! host must make every [`PersistOp`] of a [`Ready`] durable (written and
//! synced, in order) *before* it sends any of that `Ready`'s messages, because
//! those messages (vote grants, append acknowledgements) promise that the
//! state is on disk. Every change of term, vote or log leaves in the same
//! `Ready` as the messages that depend on it. Apply `install` and
//! `committed` after persisting too: with a single voter an entry can be
//! committed in the very `Ready` that appends it, and a client must not hear
//! of it before it is durable.
//!
//! After a crash, the host rebuilds the node with
//! [`super::RaftNode::restore`] from exactly what it persisted (a
//! [`Persisted`]); the commit index is not persisted and restarts at the
//! snapshot, and the first `Ready` carries the snapshot in `install`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::types::{LogIndex, NodeId, Term};

/// What a log entry carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Payload<C> {
    /// Appended by every new leader so it can commit an entry of its own term
    /// (Raft §5.4.2, §8).
    Noop,
    /// A single-server membership change (Raft thesis §4.3). Takes effect
    /// when appended, not when committed.
    Config(ConfChange),
    /// An application command.
    Command(C),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry<C> {
    pub term: Term,
    pub index: LogIndex,
    pub payload: Payload<C>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConfChange {
    AddServer(NodeId),
    RemoveServer(NodeId),
}

/// A snapshot: the state machine as of `last_index`, plus the configuration
/// in force there. `S` is the application's state (the simulator's disk
/// stores values; the real node serializes them to its data directory).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot<S> {
    pub last_index: LogIndex,
    pub last_term: Term,
    pub voters: BTreeSet<NodeId>,
    pub data: S,
}

/// Term and vote: what must survive a crash besides the log (Raft Figure 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardState {
    pub term: Term,
    pub voted_for: Option<NodeId>,
}

/// One durable write. Applied in order by the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PersistOp<C, S> {
    SetHardState(HardState),
    /// Remove every entry with index >= the given one.
    TruncateFrom(LogIndex),
    /// Append entries (contiguous, following the current last entry).
    Append(Vec<Entry<C>>),
    /// Save a snapshot and drop the log entries it covers (index <=
    /// `last_index`); entries after it are kept.
    SaveSnapshot(Snapshot<S>),
}

/// Everything a node persisted, as handed back to [`super::RaftNode::restore`]
/// after a restart. A node rebuilds from this and nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persisted<C, S> {
    pub hard_state: HardState,
    pub snapshot: Option<Snapshot<S>>,
    /// Entries after the snapshot, contiguous.
    pub entries: Vec<Entry<C>>,
}

impl<C, S> Default for Persisted<C, S> {
    fn default() -> Self {
        Persisted { hard_state: HardState::default(), snapshot: None, entries: Vec::new() }
    }
}

/// Peer messages. Every message carries the sender's term.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message<C, S> {
    /// Pre-vote (thesis §9.6) when `pre_vote` is true: asks whether the peer
    /// would vote, without anyone changing term. `transfer`: the candidate
    /// campaigns because the leader handed over (thesis §3.10), so voters
    /// answer although their vote lease holds.
    RequestVote {
        term: Term,
        pre_vote: bool,
        last_log_index: LogIndex,
        last_log_term: Term,
        transfer: bool,
    },
    VoteResponse {
        term: Term,
        pre_vote: bool,
        granted: bool,
    },
    /// `read_ctx` rides on heartbeats for read-index confirmation (thesis §6.4).
    AppendEntries {
        term: Term,
        prev_log_index: LogIndex,
        prev_log_term: Term,
        entries: Vec<Entry<C>>,
        leader_commit: LogIndex,
        read_ctx: u64,
    },
    /// On success, `match_index` is the last index known to match the
    /// leader's log. On failure, `match_index` echoes the rejected
    /// `prev_log_index` (so the leader can drop stale rejections) and
    /// `conflict_index`/`conflict_term` let the leader skip a whole term per
    /// round trip (fast backtracking, the Raft lock-service design / thesis
    /// §5.3): the follower's term at `prev_log_index` and the first index it
    /// holds of that term, or (`conflict_term: None`) its last index + 1 when
    /// its log is shorter.
    AppendResponse {
        term: Term,
        success: bool,
        match_index: LogIndex,
        conflict_index: LogIndex,
        conflict_term: Option<Term>,
        read_ctx: u64,
    },
    /// Boxed: the snapshot holds the whole state machine, and inline it
    /// set the size of every message (a move of any message copied it).
    InstallSnapshot {
        term: Term,
        snapshot: Box<Snapshot<S>>,
    },
    InstallSnapshotResponse {
        term: Term,
        last_index: LogIndex,
    },
    /// Leadership transfer (thesis §3.10): the leader tells the target,
    /// whose log it has brought up to date, to campaign at once.
    TimeoutNow {
        term: Term,
    },
}

impl<C, S> Message<C, S> {
    pub fn term(&self) -> Term {
        match self {
            Message::RequestVote { term, .. }
            | Message::VoteResponse { term, .. }
            | Message::AppendEntries { term, .. }
            | Message::AppendResponse { term, .. }
            | Message::InstallSnapshot { term, .. }
            | Message::InstallSnapshotResponse { term, .. }
            | Message::TimeoutNow { term } => *term,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Follower,
    PreCandidate,
    Candidate,
    Leader,
}

/// Observations for the host and the checkers (not needed for correctness).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RaftEvent {
    BecameLeader {
        term: Term,
    },
    SteppedDown {
        term: Term,
    },
    /// A membership change was appended (in force from now on this node).
    ConfigChanged {
        voters: BTreeSet<NodeId>,
    },
}

/// A read-index request that is now safe to serve once the local state
/// machine has applied `index` (thesis §6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReady {
    pub ctx: u64,
    pub index: LogIndex,
}

/// The batch of work a node hands its host after any input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready<C, S> {
    /// Make durable first, in order.
    pub persist: Vec<PersistOp<C, S>>,
    /// Then send.
    pub messages: Vec<(NodeId, Message<C, S>)>,
    /// Newly committed entries, in index order, to apply.
    pub committed: Vec<Entry<C>>,
    /// A snapshot received from the leader: replace the state machine with it
    /// before applying `committed`.
    /// Boxed, like the snapshot in a message: every `take_ready` moves
    /// a `Ready`, and inline the snapshot was most of its size.
    pub install: Option<Box<Snapshot<S>>>,
    pub reads: Vec<ReadReady>,
    /// Read-index requests that can no longer be served (leadership lost).
    pub reads_failed: Vec<u64>,
    pub events: Vec<RaftEvent>,
}

impl<C, S> Default for Ready<C, S> {
    fn default() -> Self {
        Ready {
            persist: Vec::new(),
            messages: Vec::new(),
            committed: Vec::new(),
            install: None,
            reads: Vec::new(),
            reads_failed: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<C, S> Ready<C, S> {
    pub fn is_empty(&self) -> bool {
        self.persist.is_empty()
            && self.messages.is_empty()
            && self.committed.is_empty()
            && self.install.is_none()
            && self.reads.is_empty()
            && self.reads_failed.is_empty()
            && self.events.is_empty()
    }
}

/// Static settings of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftConfig {
    pub id: NodeId,
    /// Initial voters: the cluster's genesis configuration, the same on every
    /// node (spares included), because the log records membership changes
    /// relative to it. A spare server starts with its own id absent from this
    /// set and stays passive until a leader adds it (it learns the current
    /// configuration from the log or a snapshot).
    pub voters: BTreeSet<NodeId>,
    pub election_timeout_min_ns: u64,
    pub election_timeout_max_ns: u64,
    pub heartbeat_ns: u64,
    /// Most entries in one AppendEntries.
    pub max_entries_per_append: usize,
    /// Pipelining depth: at most this many AppendEntries batches sent to one
    /// follower and not yet acknowledged (at least 1).
    pub max_in_flight_appends: usize,
    pub pre_vote: bool,
    pub check_quorum: bool,
    /// Leader leases for reads (thesis §6.4.1, lease_read.rs): the bound on
    /// every clock's rate error the lease assumes, in parts per million
    /// (below 1 000 000). `None` (the default): every read goes through
    /// the read index. Needs `check_quorum`, whose vote lease it relies on;
    /// without it the mode stays off.
    pub lease_read_drift_ppm: Option<u64>,
    /// The same leader lease kept for the service's keep-alives only: with a
    /// bound here the leader tracks its lease exactly as for lease reads
    /// (and with the larger of the two bounds when both are set), but reads
    /// still go through the read index unless `lease_read_drift_ppm` is set.
    /// The service answers a keep-alive from the leader's own deadlines
    /// (`ServerConfig::keepalive_read_index = false`) only while it holds
    /// (`RaftNode::holds_leader_lease`). `None`: not tracked. Needs
    /// `check_quorum`, like lease reads: without it the lease never holds,
    /// and such keep-alives are refused (`Retry`) rather than answered
    /// unguarded.
    pub keepalive_lease_drift_ppm: Option<u64>,
    /// Planted bugs (all off by default). Only the Raft ones matter here:
    /// `vote_without_log_check`, `commit_old_term_by_counting`,
    /// `reply_before_persist`, `no_truncate_conflict`,
    /// `leader_ignores_higher_term`, `unsafe_membership_change`.
    pub bugs: crate::bugs::Bugs,
}

impl RaftConfig {
    /// Settings with the usual defaults: election timeout 150..300 ms,
    /// heartbeat 50 ms, 64 entries per append, 4 appends in flight per follower, pre-vote and check-quorum on,
    /// no lease reads, no bugs. `voters` is the cluster's initial (genesis) configuration and
    /// must be the same on every node, spares included (see the field doc).
    pub fn new(id: NodeId, voters: BTreeSet<NodeId>) -> Self {
        RaftConfig {
            id,
            voters,
            election_timeout_min_ns: 150_000_000,
            election_timeout_max_ns: 300_000_000,
            heartbeat_ns: 50_000_000,
            max_entries_per_append: 64,
            max_in_flight_appends: 4,
            pre_vote: true,
            check_quorum: true,
            lease_read_drift_ppm: None,
            keepalive_lease_drift_ppm: None,
            bugs: crate::bugs::Bugs::default(),
        }
    }
}

/// Why a proposal was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeError {
    /// Not the leader; the best guess of who is, if any.
    NotLeader { leader_hint: Option<NodeId> },
    /// Membership change refused: another is still uncommitted, or the leader
    /// has not yet committed an entry of its term (thesis §4.1), or it would
    /// be a no-op (adding a voter / removing a non-voter).
    ConfChangeRefused,
    /// The leader is handing leadership to `target` (thesis §3.10) and
    /// accepts no proposal meanwhile.
    TransferInProgress { target: NodeId },
}

/// Why a leadership transfer was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferError {
    NotLeader {
        leader_hint: Option<NodeId>,
    },
    /// The target is this leader.
    AlreadyLeader,
    /// The target is not a voter of the configuration in force.
    NotAVoter,
    /// Another transfer is under way.
    InProgress {
        target: NodeId,
    },
}
