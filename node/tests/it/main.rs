//! leasesim-node's integration tests, one module per suite, in one test
//! binary. Each file under tests/ used to be its own crate, and each
//! compiled and linked the same tokio, tonic and hyper client code again:
//! 28 binaries took about 450 s of build time. One binary builds that code
//! once. Run one suite with `cargo test -p leasesim-node --test it tls::`.
//!
//! The suites now share one process and run on the test harness's threads
//! side by side, where the old binaries ran one after another, so no two
//! of them may ever be handed the same port. Every port this process picks
//! comes from `common::free_port`, whose one counter never repeats and
//! stays below the kernel's ephemeral range (which `:0` binds and outgoing
//! connections draw from); `leasesim-node local` picks its ports in a
//! process of its own, so each `local` gets a loopback address of its own
//! (`common::own_host`) that no other cluster binds. Each suite keeps its
//! own temp dirs. The few whose verdict rests on a time margin take
//! `common::timing_lock` (see there).

mod common;

mod auth;
mod auto_compaction;
mod backup;
mod bad_requests;
mod client_libraries;
mod clock_skew;
mod conformance;
mod crash_loop;
mod data_model;
mod disk_full;
mod disk_quota;
mod etcdctl;
mod held_sync;
mod join;
mod latency;
mod lease_reads;
mod link_faults;
mod local_load;
mod log_view;
mod maintenance;
mod membership;
mod module_graph;
mod planted;
mod restarts;
mod sigkill;
mod snapshot_behind;
mod tls;
mod txn;
mod watch_bursts;
mod watch_history;
mod ws_lock;
