//! Observations: what every process reports, stamped with true time
//! (simulated time in the simulator), for the checkers, the trace, the
//! reports and the simulator's digest of a run.
//!
//! Checkers judge only from these and from the clocks' histories, never
//! from a node's own view of time.

mod event_line;
mod log;

pub use event_line::EventLine;
pub use log::{ObsLog, IN_MEMORY_DEFAULT};

use std::hash::Hash;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_core::{ClientId, LeaseId, NodeId};
use serde::{Deserialize, Serialize};

use crate::vocab::Proc;
use crate::vocab::{TaskStep, TaskVerdict};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Obs {
    /// True time since the run started (simulated, in the simulator).
    pub at_ns: u64,
    pub proc: Proc,
    pub event: Event,
}

/// Why a client stopped believing it holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BeliefEnd {
    Released,
    KeepAliveRefused,
    /// Its own clock reached the end of the belief.
    TimerLapsed,
    /// The process crashed (the belief dies with it).
    Crashed,
}

/// Why a task worker gave up a task it had claimed (the multi-instance lease
/// design: "if the lease expires, the worker stops processing and abandons the
/// task").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskAbandon {
    KeepAliveRefused,
    /// Its own clock reached the end of its belief in the lease.
    TimerLapsed,
    /// The claim's answer came when the belief no longer held.
    ClaimedTooLate,
    /// The data store knew a newer claim's token.
    Superseded,
    /// The data store said the task is already done.
    AlreadyDone,
}

#[derive(Clone, Debug, PartialEq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    /// A server applied or decided something.
    Server {
        event: ServerEvent,
    },

    // Process lifecycle and faults, as the supervisor carried them out.
    Crashed,
    Restarted,
    Paused,
    Resumed,
    /// A fault fired (human-readable), or was skipped and why.
    Fault {
        action: String,
    },
    FaultSkipped {
        action: String,
        why: String,
    },
    SettleBegins,
    /// A server's granted vote (not a pre-vote) left it for `candidate`:
    /// recorded when the reply is sent, after the step's writes were synced.
    /// A candidate's vote for itself is recorded (with `candidate` = itself)
    /// when its first vote request of the election leaves.
    VoteGranted {
        term: u64,
        candidate: leasesim_core::NodeId,
    },

    // Client side: requests and replies that checkers reason about.
    /// A grant or keep-alive reply said the lease lives `ttl_ns` from when
    /// the answered copy of the request was sent (`sent_at_ns`, true time).
    LeaseAcked {
        lease: LeaseId,
        ttl_ns: u64,
        sent_at_ns: u64,
        keepalive: bool,
    },
    KeepAliveRefused {
        lease: LeaseId,
    },
    /// The client believes it holds `key` until its own monotonic clock
    /// reads `until_mono_ns` (extended by later `BeliefExtended`).
    BeliefStarted {
        key: String,
        lease: LeaseId,
        token: u64,
        until_mono_ns: u64,
    },
    BeliefExtended {
        key: String,
        until_mono_ns: u64,
    },
    BeliefEnded {
        key: String,
        why: BeliefEnd,
    },
    /// The holder checked its belief and starts its work.
    WorkStarted {
        key: String,
        token: u64,
    },
    /// An acquire request left the client (first send).
    AcquireSent {
        key: String,
        lease: LeaseId,
        seq: u64,
    },
    /// A registry client sent the put that attaches its key to `lease`
    /// (its fate is known only if `Registered` follows: the client may
    /// crash with the put applied and unanswered).
    RegisterSent {
        key: String,
        lease: LeaseId,
    },
    /// A registry client registered its key under its lease, by the put
    /// applied at `revision` (its log index).
    Registered {
        key: String,
        lease: LeaseId,
        revision: u64,
    },

    /// A KV client invoked an operation (sequence number names it).
    KvCall {
        seq: u64,
        op: leasesim_core::service::Op,
    },
    KvReturn {
        seq: u64,
        response: leasesim_core::service::Response,
    },

    // The data store (the Raft lock-service design).
    StoreAccepted {
        client: ClientId,
        key: String,
        token: u64,
    },
    StoreRejected {
        client: ClientId,
        key: String,
        token: u64,
        highest: u64,
    },

    // The multi-instance lease design's pattern: task workers and a singleton.
    /// The generator made `task` visible to the workers (`/tasks/count`
    /// reached it). May repeat after the generator restarts.
    TaskCreated {
        task: u64,
    },
    /// A worker's claim on `task` succeeded with the claim's revision as its
    /// token, and its belief in its lease held (until `until_mono_ns` on its
    /// own clock): it starts the task.
    TaskClaimed {
        task: u64,
        lease: LeaseId,
        token: u64,
        until_mono_ns: u64,
    },
    TaskAbandoned {
        task: u64,
        token: u64,
        why: TaskAbandon,
    },
    /// The data store took a worker's fenced start or completion.
    TaskWriteAccepted {
        client: ClientId,
        task: u64,
        token: u64,
        step: TaskStep,
    },
    TaskWriteRefused {
        client: ClientId,
        task: u64,
        token: u64,
        step: TaskStep,
        verdict: TaskVerdict,
    },
    /// An instance believes it runs the singleton `role` until its own
    /// clock reads `until_mono_ns` (extended by `SingletonExtended`).
    SingletonStarted {
        role: String,
        lease: LeaseId,
        token: u64,
        until_mono_ns: u64,
    },
    SingletonExtended {
        role: String,
        until_mono_ns: u64,
    },
    SingletonEnded {
        role: String,
        why: BeliefEnd,
    },

    /// A client saw `lease` gone (a read found its key no longer attached
    /// to it, or a keep-alive was answered "not found") although no client
    /// revoked it: the cluster ended it by expiry at or before this
    /// instant. Real runs record it, since they cannot observe the
    /// servers' own `LeaseRevoked` (the simulator never does).
    LeaseSeenGone {
        lease: LeaseId,
    },

    // The watch workload: etcd's Watch, as a client sees it.
    /// A watch client's watch `watch` began: it must see every committed
    /// change of the keys in `[key, range_end)` (etcd's range convention:
    /// `range_end` empty is the one key, `"\0"` every key from `key` on) at
    /// revisions `start_revision` and above, exactly once, in order.
    WatchOpened {
        watch: u64,
        key: String,
        range_end: String,
        start_revision: u64,
        prev_kv: bool,
        server: NodeId,
    },
    /// The watch went on at `server` from `from_revision` (its last seen
    /// revision + 1), as etcd clients resume, because of `why`.
    WatchResumed {
        watch: u64,
        server: NodeId,
        from_revision: u64,
        why: String,
    },
    /// One event the watch delivered: `value: None` is a delete; `prev` the
    /// value before (when the watch asked for it).
    WatchEvent {
        watch: u64,
        revision: u64,
        key: String,
        value: Option<String>,
        prev: Option<String>,
    },
    /// The server refused to resume the watch below its compaction: the
    /// watch ends here (etcd's compacted error).
    WatchCompacted {
        watch: u64,
        compact_revision: u64,
    },
}

impl Event {
    /// Whether this observation is for people only (traces, timelines) and
    /// no checker reads it. A sweep feeds such events into the run's digest
    /// but does not keep them: a run's memory is mostly its observation
    /// log, and these are a third of it. A checker must never read one of
    /// them (the simulator's `sim/tests/it/checker_inputs.rs` holds the
    /// checkers to that), or its verdict would depend on whether the run
    /// kept a trace. (The simulator also drops exact repeats of an applied
    /// entry: see its `world::Recorder::repeats_an_application`.)
    pub fn for_traces_only(&self) -> bool {
        matches!(
            self,
            Event::Server {
                event: ServerEvent::Service { event: ServiceEvent::RequestApplied { .. }, .. }
                    | ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { .. }, .. }
            }
        )
    }
}

impl Obs {
    /// Feeds the observation into the run's digest: its fields as `Hash`
    /// writes them (stable for one build, which is the determinism
    /// contract: same build + scenario + seed), never formatted text.
    pub fn digest_into(&self, hasher: &mut impl std::hash::Hasher) {
        self.at_ns.hash(hasher);
        self.proc.hash(hasher);
        self.event.hash(hasher);
    }
}
