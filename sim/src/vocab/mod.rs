//! The words the simulator's layers share, so that data flows one way:
//! scenario → run → world and host (the processes) → observations →
//! checkers. The world and the hosts produce these, the observation log
//! carries them, the checkers judge them; none of those modules needs
//! another's internals to do so.
//!
//! - [`Proc`]: a process, as scenarios, traces and checkers name it;
//! - [`ProcMap`]: per-process state in vectors, for the world's lookups;
//! - [`SimClock`]: a process's clock and its whole history (the world runs
//!   it, the checkers map local deadlines back to true time with it);
//! - [`ServerProbe`], [`FinalServer`]: what a server reported while the run
//!   went on, and what it looked like when it ended;
//! - [`TaskStep`], [`TaskVerdict`]: the task rows' words;
//! - [`registry_key`]: the key a registry client registers under.

pub mod clock;
mod proc;
mod proc_map;
mod server;
mod task;

pub use clock::SimClock;
pub use proc::{Proc, PORT};
pub use proc_map::ProcMap;
pub use server::{FinalServer, ServerProbe};
pub use task::{TaskStep, TaskVerdict};

use leasesim_core::ClientId;

/// The key registry client `client` registers on its lease (the consistent-core
/// lease design's service discovery): the registry workload writes it,
/// `liveness` checks that it goes with the lease.
pub fn registry_key(client: ClientId) -> String {
    format!("/services/c{client}")
}
