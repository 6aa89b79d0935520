//! leasesim-judge: every invariant leasesim checks, written once.
//!
//! The simulator, core's service harness and the load that drives real
//! clusters (`leasesim-node load`) used to carry their own copies of the
//! rules, and the copies drifted. This crate holds the one copy: the
//! [`checkers`], the [`observe`]d events they judge (each stamped with true
//! time: simulated time in the simulator, one process's monotonic clock on a
//! real machine) and the words both share ([`vocab`]). It links neither
//! madsim nor tokio (`tests/no_runtime.rs` holds it to that), so the
//! simulator, built on madsim's tokio, and the node, built on real tokio,
//! can both feed it.

pub mod checkers;
pub mod measures;
pub mod observe;
pub mod rate;
pub mod vocab;
