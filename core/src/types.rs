//! Identifiers and time units shared by every layer.
//!
//! Times are `u64` nanoseconds of one process's own clock; names end in
//! `_ns`. Monotonic readings are only comparable within one process; wall
//! readings are comparable across processes only as far as their clocks agree
//! (which is exactly what the clock-skew research measures).

use serde::{Deserialize, Serialize};

/// A Raft server, `s1`..`sN` in scenarios (NodeId 1..=N).
pub type NodeId = u64;
/// A Raft term.
pub type Term = u64;
/// A position in the Raft log; index 0 is the empty prefix.
pub type LogIndex = u64;
/// A client process, `c1`.. in scenarios (ClientId 1..).
pub type ClientId = u64;
/// A lease id. Granted leases get the log index of their grant entry unless
/// the client asks for a specific id.
pub type LeaseId = u64;

pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Formats nanoseconds as seconds with millisecond precision, e.g. `12.481s`.
pub fn fmt_secs(ns: u64) -> String {
    format!("{}.{:03}s", ns / NS_PER_SEC, (ns % NS_PER_SEC) / NS_PER_MS)
}

/// Which expiry strategy the servers run (a cluster-wide setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ExpiryStrategy {
    /// Only the leader tracks deadlines on its monotonic clock; expiry is a
    /// revoke proposed through the log; keep-alives are not logged.
    #[default]
    LeaderMonotonic,
    /// The leader stamps an absolute wall-clock expiry into the log; every
    /// server judges expiry against its own wall clock when applying.
    LeaderStampedWall,
    /// The Juju lease design (Juju's lease package): the holder writes its
    /// expiry in its own wall clock, the log keeps the latest time each client
    /// has acknowledged, and an expiry applies only once the writer's time, as
    /// known from its own acknowledgements plus elapsed durations, is past the
    /// expiry it wrote. No two clocks are ever compared.
    WriterClock,
}
