//! One server process: Raft, the state machine and the leader's lease
//! deadlines, answering client requests.
//!
//! [`Server`] is sans-IO like the rest of the crate: the host passes each
//! input with this process's [`Clocks`] and carries out the
//! [`ServerOutput`] (persist, then send). One concept per file: `process`
//! (the input loop and apply), `requests` (client paths), `expiry` (who
//! expires leases and when), `deadlines` (the leader's priority queue),
//! `reads` (read-index waits), `event` (observations for checkers).

mod config;
pub mod deadlines;
mod event;
mod expiry;
mod output;
mod planted_kv;
mod process;
mod reads;
mod requests;

pub use config::{Clocks, ServerConfig};
pub use event::{fingerprint, ServerEvent};
pub use output::ServerOutput;
pub use process::Server;

use crate::raft::Message;
use crate::service::{Command, SharedState};

/// What servers send each other.
pub type PeerMessage = Message<Command, SharedState>;
