//! Invariant ids: the names `[expect] violations` may list.
//!
//! They are part of the contract (SCENARIO-FORMAT.md); checkers report
//! violations under exactly these ids, so an expectation naming any other
//! string could never be met and is rejected up front.

/// The ids of SCENARIO-FORMAT.md's table, in its order.
pub const INVARIANT_IDS: [&str; 13] = [
    "election-safety",
    "log-matching",
    "state-machine-safety",
    "durability",
    "lease-early-expiry",
    "keepalive-after-revoke",
    "lock-belief-overlap",
    "fencing-order",
    "token-monotonic",
    "fifo-order",
    "release-by-owner",
    "linearizable",
    "liveness",
];

/// Ids of leasesim's checkers beyond SCENARIO-FORMAT.md's table: replicas and
/// votes across crashes, then the multi-instance lease design's task workers
/// and singleton, then the watch workload's delivery
/// (docs/SCENARIO-EXTENSIONS.md), then the rules core's service harness
/// used to keep for itself (a lock granted under an ended lease; a new
/// leader expiring an inherited lease early). Not `applied-twice`: the
/// simulator never judges it (it reads events sweeps do not keep), so an
/// expectation naming it could never be met.
pub const EXTENSION_INVARIANT_IDS: [&str; 8] = [
    "replica-divergence",
    "vote-durability",
    "task-once",
    "task-lost",
    "singleton-overlap",
    "watch-delivery",
    "holder-lease",
    "promote-extension",
];

/// Whether a violation of `id` is a safety violation (something bad
/// happened: two leaders, two holders, a stale write, a diverged replica,
/// an early expiry) rather than a liveness one (something good did not
/// happen in time). Every id but `liveness` is safety; `engine-panic`, which
/// is no checker, counts as unsafe too. Studies judge a cell by this.
pub fn is_safety(id: &str) -> bool {
    id != "liveness"
}

/// Whether `id` is a documented invariant id or one of the extensions'.
pub fn is_known_invariant(id: &str) -> bool {
    all_ids().any(|known| known == id)
}

/// Every id an expectation may name.
pub fn all_ids() -> impl Iterator<Item = &'static str> {
    INVARIANT_IDS.into_iter().chain(EXTENSION_INVARIANT_IDS)
}
