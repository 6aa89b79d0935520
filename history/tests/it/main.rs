//! leasesim-history's integration tests, one module per suite, in one test
//! binary: each file under tests/ used to be its own crate, compiled and
//! linked on its own. Run one suite with
//! `cargo test -p leasesim-history --release --test it props::`.
//!
//! The suites share one process and run side by side: they only read
//! their data (tests/data/) and check histories in memory.

mod support;

mod jepsen;
mod kv;
mod oracle;
mod porcupine_kv;
mod props;
