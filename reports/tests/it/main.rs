//! leasesim-reports' integration tests, one module per suite, in one test
//! binary: each file under tests/ used to be its own crate, compiled and
//! linked on its own. Run one suite with
//! `cargo test -p leasesim-reports --release --test it pages::`.
//!
//! The suites share one process and run side by side: none sets an
//! environment variable or the working directory, and the browser test's
//! files live in a temp directory of its own.

mod common;

mod browser;
mod pages;
mod timeline_golden;
