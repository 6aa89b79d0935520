//! leasesim-real's integration tests, one module per suite, in one test
//! binary: each file under tests/ used to be its own crate, compiled and
//! linked on its own. Run one suite with
//! `cargo test -p leasesim-real --release --test it real_runs::`.
//!
//! The suites now share one process and run on the test harness's threads
//! side by side, where the old binaries ran one after another. Every run
//! is a `leasesim-real` child process with its own temp directory and its
//! own ports (`real/src/procs.rs`: below the kernel's ephemeral range, each
//! process walking from a place its pid picks), as when the tests of one
//! file ran side by side before.

mod common;

mod client_clocks;
mod compare;
mod final_state_runs;
mod membership_runs;
mod real_runs;
mod singleton_runs;
mod task_runs;
mod watch_txn_runs;
