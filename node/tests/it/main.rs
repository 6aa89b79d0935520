//! leasesim-node's integration tests, one module per suite, in one test
//! binary. Each file under tests/ used to be its own crate, and each
//! compiled and linked the same tokio, tonic and hyper client code again:
//! 28 binaries took about 450 s of build time. One binary builds that code
//! once. Run one suite with `cargo test -p leasesim-node --test it tls::`.
//!
//! The suites now share one process and run on the test harness's threads
//! side by side, where the old binaries ran one after another. They start
//! real processes on ports from `common::free_port` (unique within this
//! process) and in their own temp dirs; the few whose verdict rests on a
//! time margin take `common::timing_lock` (see there).

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
mod join;
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
