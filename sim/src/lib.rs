//! leasesim: the deterministic simulation testbed for leasesim-core.
//!
//! Every server, client and the data store runs as a madsim node ([`host`],
//! [`workload`]) in a shared [`world`] of skewed clocks, disks and a faulty
//! network; a scenario file (read by `leasesim-scenario`, a crate without a
//! runtime, so that real runs can read the same files) drives the faults
//! ([`run`]); the judge
//! (`leasesim-judge`, shared with core's service harness and real runs)
//! judges the run against true simulated time from its observed events.
//! Data flows one way — scenario → run → world and host → observations →
//! the judge's checkers — and the words those layers share live in the
//! judge's `vocab`, besides the simulator's own ([`vocab`]).

// The simulator exists only under `--cfg madsim` (see main.rs); the JSON
// error reports are plain code.
#[cfg(madsim)]
pub mod cli;
#[cfg(madsim)]
pub mod host;
#[cfg(madsim)]
pub mod hunt;
pub mod json_error;
#[cfg(madsim)]
pub mod run;
#[cfg(madsim)]
pub mod shrink;
#[cfg(madsim)]
pub mod study;
#[cfg(madsim)]
pub mod vocab;
#[cfg(madsim)]
pub mod workload;
#[cfg(madsim)]
pub mod world;
