//! A pure, deterministic in-memory Raft cluster for tests, examples and
//! benchmarks: seeded message loss, duplication, delay and reordering,
//! partitions, crashes that lose everything not on a node's disk, restarts
//! through `RaftNode::restore`, skewed per-node clocks, proposals,
//! membership changes, compaction and reads — with Raft's safety properties
//! checked after every input and violations returned as values.
//!
//! Use it by hand ([`Cluster`]: "fire node 1's timeout, deliver everything")
//! or from a [`Schedule`] (seed + knobs + timed faults) run by
//! [`run_schedule`], which ends with a liveness check once faults heal.

mod checker;
mod cluster;
mod disk;
mod host;
mod network;
mod schedule;
mod sim;
mod toy;

pub use checker::{check_log_matching, Checker, TestNode, Violation, ViolationKind};
pub use cluster::{Cluster, ClusterOptions, Stats};
pub use disk::Disk;
pub use host::brief;
pub use network::{Envelope, NetFaults, Network, TestMessage};
pub use schedule::{run_schedule, run_schedule_traced, Fault, RunSummary, Schedule, LIVENESS_ELECTION_TIMEOUTS};
pub use toy::ToyState;
