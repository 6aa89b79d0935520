//! What travels between simulated processes (named by the judge's `Proc`,
//! addressed by `vocab::ProcAddr`). Messages are passed as values (madsim's
//! raw payloads), never serialized: the simulator measures the protocol,
//! not a codec.

use leasesim_core::raft::ConfChange;
use leasesim_core::server::PeerMessage;
use leasesim_core::service::kv::{Change, KeyRange};
use leasesim_core::service::{ClientRequest, ClientResponse};
use leasesim_core::{ClientId, LogIndex, NodeId};

use leasesim_judge::vocab::{TaskStep, TaskVerdict};

/// A write to the data store, carrying the writer's fencing token (the Raft
/// lock-service design).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreWrite {
    pub client: ClientId,
    pub key: String,
    pub token: u64,
    pub request_id: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreReply {
    pub request_id: u64,
    pub accepted: bool,
}

/// A worker's write to a task row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskWrite {
    pub client: ClientId,
    pub task: u64,
    /// The claim's revision.
    pub token: u64,
    pub step: TaskStep,
    /// Names the write for its reply; a resend keeps it.
    pub request_id: u64,
}

/// The row's answer to a `TaskWrite`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskReply {
    pub request_id: u64,
    pub task: u64,
    pub verdict: TaskVerdict,
}

#[derive(Clone, Debug)]
pub enum Wire {
    Peer(PeerMessage),
    Request(ClientRequest),
    Response(ClientResponse),
    StoreWrite(StoreWrite),
    StoreReply(StoreReply),
    /// A task worker's fenced start or completion (the multi-instance lease
    /// design), and its answer.
    TaskWrite(TaskWrite),
    TaskReply(TaskReply),
    /// Operator → leader: propose a membership change.
    Admin(ConfChange),
    /// A watch client's request to its server (etcd's Watch stream), and
    /// the server's messages on a watch stream.
    Watch(WatchRequest),
    WatchReply(WatchReply),
}

/// What a watch client asks its server. `stream` names one attempt of a
/// watch: a resume opens a new stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchRequest {
    /// Open a stream on `range` from `start_revision` (0: the server's
    /// revision + 1, etcd's "now").
    Create {
        stream: u64,
        range: KeyRange,
        start_revision: LogIndex,
        prev_kv: bool,
    },
    /// Is the stream alive, and who leads? (etcd clients learn both from
    /// the gRPC stream and `WithRequireLeader`.)
    Check {
        stream: u64,
    },
    Cancel {
        stream: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchReply {
    /// The `seq`th message of a stream (from 0): the client reassembles
    /// them in order, as a TCP stream would deliver them.
    Stream { stream: u64, seq: u64, body: StreamBody },
    /// The answer to `Check`.
    Status { stream: u64, known: bool, leader: Option<NodeId> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamBody {
    /// The stream is open from `start_revision`.
    Created { start_revision: LogIndex },
    /// Changes of the range, in revision order.
    Events(Vec<Change>),
    /// The start is below the compaction; the stream is closed.
    Compacted { compact_revision: LogIndex },
}
