//! What travels between simulated processes (named by the judge's `Proc`,
//! addressed by `vocab::ProcAddr`). Messages are passed as values (madsim's
//! raw payloads), never serialized: the simulator measures the protocol,
//! not a codec.

use leasesim_core::raft::ConfChange;
use leasesim_core::server::PeerMessage;
use leasesim_core::service::{ClientRequest, ClientResponse};
use leasesim_core::ClientId;

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
}
