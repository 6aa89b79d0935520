//! What a server hands its host after an input.
//!
//! Ordering rule (Raft's durability contract, extended to clients): the host
//! makes every `persist` operation durable, in order, before it sends any of
//! the `messages` or `replies` of the same output, because a vote, an append
//! acknowledgement or an answer may rest on that state.

use crate::raft::PersistOp;
use crate::server::{PeerMessage, ServerEvent};
use crate::service::kv::Change;
use crate::service::{ClientResponse, Command, SharedState};
use crate::types::NodeId;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerOutput {
    /// Make durable first, in order.
    pub persist: Vec<PersistOp<Command, SharedState>>,
    /// Then send to peers.
    pub messages: Vec<(NodeId, PeerMessage)>,
    /// And to clients.
    pub replies: Vec<ClientResponse>,
    /// Observations for the checkers (not needed for correctness).
    pub events: Vec<ServerEvent>,
    /// Every key change the applied entries made, in revision order: what
    /// a host fans out to its watchers (etcd's Watch). Entries that an
    /// installed snapshot covered are not here (a `SnapshotInstalled`
    /// event says so); their changes are in the new state's history.
    pub changes: Vec<Change>,
}

impl ServerOutput {
    pub fn is_empty(&self) -> bool {
        self.persist.is_empty() && self.messages.is_empty() && self.replies.is_empty() && self.events.is_empty() && self.changes.is_empty()
    }
}
