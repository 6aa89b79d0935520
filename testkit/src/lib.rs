//! A pure, deterministic in-memory Raft cluster for tests, examples and
//! benchmarks: seeded message loss, duplication, delay and reordering,
//! partitions, crashes that lose everything not on a node's disk, restarts
//! through `RaftNode::restore`, skewed per-node clocks, proposals,
//! membership changes, compaction and reads — with Raft's safety properties
//! checked after every input and violations returned as values.
//!
//! Use it by hand ([`RaftCluster`]: "fire node 1's timeout, deliver everything")
//! or from a [`Schedule`] (seed + knobs + timed faults) run by
//! [`run_schedule`], which ends with a liveness check once faults heal.
//!
//! It is a crate of its own, apart from `leasesim-core`, so that the engine
//! a server ships (`leasesim-node`) does not link test machinery: core's
//! integration tests and example take it as a dev-dependency, and the
//! simulator's `leasesim bench` uses it to measure the bare engine. Like
//! core it is pure (its `clippy.toml` is core's): every run is a function
//! of its seed.

mod checker;
mod cluster;
mod disk;
mod host;
mod network;
mod schedule;
mod sim;
mod toy;

pub use checker::{check_log_matching, RaftChecker, RaftViolation, RaftViolationKind, TestNode};
pub use cluster::{RaftCluster, RaftClusterOptions, Stats};
pub use disk::TestDisk;
pub use host::brief;
pub use network::{Envelope, NetFaults, TestMessage, TestNetwork};
pub use schedule::{run_schedule, run_schedule_traced, RunSummary, Schedule, ScheduledFault, LIVENESS_ELECTION_TIMEOUTS};
pub use toy::ToyState;
