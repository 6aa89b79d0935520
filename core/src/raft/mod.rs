//! Raft consensus as a pure state machine (Ongaro & Ousterhout 2014; Ongaro's
//! thesis 2014 for pre-vote, check-quorum, single-server membership changes
//! and read index).
//!
//! The node never reads a clock: each call carries `now_ns`, the node's own
//! monotonic clock. It never does IO: each call's effects are collected into
//! a [`Ready`] the host drains with [`RaftNode::take_ready`]. Its only
//! randomness (election jitter) comes from a ChaCha PRNG seeded by the host.
//!
//! One concept per file: `node` (state, API, term rules), `election`,
//! `replication`, `progress`, `log`, `membership`, `snapshot`, `read_index`,
//! `lease_read` (leader leases for reads), `transfer` (leadership transfer) and `invariants`; `types` holds the boundary types shared with the server
//! layer, and `persist` what a `PersistOp` does to a disk (every host's).

mod election;
mod invariants;
mod lease_read;
mod log;
mod membership;
mod node;
mod persist;
mod progress;
mod read_index;
mod replication;
mod snapshot;
mod transfer;
mod types;

#[cfg(test)]
mod fixture;

pub use node::RaftNode;
pub use types::*;
