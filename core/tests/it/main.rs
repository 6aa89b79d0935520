//! leasesim-core's integration tests, one module per suite, in one test
//! binary. Each file under tests/ used to be its own crate, compiled and
//! linked on its own (21 binaries, about 115 s of build time); one binary
//! links the core and its test harness once. Run one suite with
//! `cargo test -p leasesim-core --test it raft_safety::`.
//!
//! The suites are pure (no IO, no clocks, no shared state) and ran in
//! parallel threads before too, so sharing one process changes nothing.

mod service_harness;
mod service_support;

mod datadriven;
mod raft_compaction;
mod raft_election;
mod raft_membership;
mod raft_planted_bugs;
mod raft_random_schedules;
mod raft_read_index;
mod raft_replication;
mod raft_safety;
mod raft_transfer;
mod service_bugs;
mod service_cluster;
mod service_digest;
mod service_kv;
mod service_leases;
mod service_locks;
mod service_server;
mod service_sessions;
mod service_txn;
mod service_watch;
mod service_writer_clock;
