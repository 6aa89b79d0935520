//! Processes, as scenarios, traces and checkers name them (`s3`, `c2`,
//! `store`). How the simulator addresses each is the simulator's business
//! (`sim/src/vocab/addr.rs`).

use std::fmt;

use leasesim_core::{ClientId, NodeId};
use serde::{Deserialize, Serialize};

/// A process, as scenarios name it: `s3`, `c2`, `store`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Proc {
    Server(NodeId),
    Client(ClientId),
    Store,
    /// The operator: the fault injector's voice for membership changes.
    Admin,
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proc::Server(n) => write!(f, "s{n}"),
            Proc::Client(n) => write!(f, "c{n}"),
            Proc::Store => write!(f, "store"),
            Proc::Admin => write!(f, "admin"),
        }
    }
}
