//! The words the observations and the checkers share, whoever produced the
//! observations (the simulator's world and hosts, the service harness, a
//! real run's clients):
//!
//! - [`Proc`]: a process, as scenarios, traces and checkers name it;
//! - [`SimClock`]: a process's clock and its whole history, so checkers can
//!   map a local deadline back to true time (a real run, which cannot skew
//!   clocks, gives every process an exact one);
//! - [`ServerProbe`], [`FinalServer`]: what a server reported while the run
//!   went on, and what it looked like when it ended;
//! - [`TaskStep`], [`TaskVerdict`], [`TaskRow`]: the task rows' words and their rule;
//! - [`registry_key`]: the key a registry client registers under.

pub mod clock;
mod proc;
mod server;
mod task;

pub use clock::SimClock;
pub use proc::Proc;
pub use server::{FinalServer, ServerProbe};
pub use task::{TaskRow, TaskStep, TaskVerdict};

use leasesim_core::ClientId;

/// The key registry client `client` registers on its lease (the consistent-core
/// lease design's service discovery): the registry workload writes it,
/// `liveness` checks that it goes with the lease.
pub fn registry_key(client: ClientId) -> String {
    format!("/services/c{client}")
}
