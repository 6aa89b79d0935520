//! leasesim-core: a lease and lock service on a Raft "consistent core",
//! written as pure state machines.
//!
//! Nothing in this crate reads a clock, draws ambient randomness, does IO,
//! spawns or awaits. Every input carries the node's own clock readings
//! (`now_ns`, monotonic; `wall_ns` where a strategy needs it), every output is
//! data the host carries out (messages, persist operations, replies, the next
//! deadline). That is what lets `leasesim` (the `sim/` crate) replay any run
//! bit for bit from a seed. `core/clippy.toml` enforces it (disallowed methods and types).
//!
//! Layers, bottom up:
//! - [`raft`]: consensus, generic over the command and snapshot types.
//! - [`service`]: the replicated state machine (KV, leases, locks, sessions).
//! - [`server`]: one server process = Raft + state machine + the leader's
//!   lease deadlines; answers client requests.
//! - [`client`]: the client library logic (leader discovery, retries,
//!   keep-alive, the client's belief in its lease).
//! - [`bugs`]: planted bugs, off unless a test or scenario turns them on.
//! - [`seed`]: one random stream per purpose, derived from the run's seed.
//! - [`duration`]: duration strings (`"250ms"`), read and written exactly,
//!   for every program that takes a duration from a person.

/// An engine invariant, checked at the end of a step: on in debug builds and
/// in every simulation build (`--cfg madsim`, so release sweeps too), where
/// stopping at the step that broke an invariant is worth its small cost;
/// off in a plain release build of the library.
macro_rules! invariant {
    ($($arg:tt)*) => {
        if cfg!(any(debug_assertions, madsim)) {
            assert!($($arg)*);
        }
    };
}

/// `assert_eq!` under the same rule as [`invariant!`].
macro_rules! invariant_eq {
    ($($arg:tt)*) => {
        if cfg!(any(debug_assertions, madsim)) {
            assert_eq!($($arg)*);
        }
    };
}

pub mod bugs;
pub mod byte_hash;
pub mod client;
pub mod duration;
pub mod raft;
pub mod seed;
pub mod server;
pub mod service;
pub mod types;

pub use types::*;
