//! What the checkers learn about a server besides its observations: its
//! last self-report while the run went on, and its state when it ended.

use leasesim_core::raft::{RaftNode, Role};
use leasesim_core::service::{Command, SharedState};
use leasesim_core::Term;

/// What a server last reported about itself (for selectors and liveness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerProbe {
    pub role: Role,
    pub term: Term,
    pub commit_index: u64,
}

impl ServerProbe {
    /// What a server's Raft node says about itself now.
    pub fn of(raft: &RaftNode<Command, SharedState>) -> Self {
        ServerProbe { role: raft.role(), term: raft.term(), commit_index: raft.commit_index() }
    }
}

/// What a server looked like when the run ended (for the end-of-run checks).
#[derive(Clone, Debug)]
pub struct FinalServer {
    pub up: bool,
    pub voter: bool,
    pub probe: Option<ServerProbe>,
    pub first_index: u64,
    /// (index, term) of every entry still in its in-memory log.
    pub log_terms: Vec<(u64, u64)>,
    /// Keys present in its state machine.
    pub keys: Vec<String>,
    /// Its store's history of changes, oldest first (the run's committed
    /// history as far as it applied it): filled only when a watch workload
    /// runs, which `watch-delivery` judges against it.
    pub changes: Vec<leasesim_core::service::kv::Change>,
}
