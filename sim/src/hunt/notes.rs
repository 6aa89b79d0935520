//! What the hunt's report says about a planted bug it did not find.
//!
//! Two kinds of note. *Unobservable*: the bug cannot show as a violation in
//! a simulated run, whatever the chaos (what it would need, and what the
//! engine or the checkers rule out); the hunt test does not expect those to
//! be found. *Rare*: the general scenarios do reach the bug, but only when
//! several independent draws line up, so a 60 s search may miss it; the
//! note says what must line up and where it was found. Either way the
//! report says "not found, because …" rather than only "not found".

/// The note for `bug`, if the bug is known to be out of the checkers' reach.
pub fn why_not_observable(bug: &str) -> Option<&'static str> {
    UNOBSERVABLE.iter().find(|(name, _)| *name == bug).map(|(_, note)| *note)
}

/// The note for `bug`, if it is reachable but rare in the general scenarios.
pub fn why_rare(bug: &str) -> Option<&'static str> {
    RARE.iter().find(|(name, _)| *name == bug).map(|(_, note)| *note)
}

/// What the report prints for a bug the hunt did not find.
pub fn not_found(bug: &str) -> &'static str {
    why_not_observable(bug).or_else(|| why_rare(bug)).unwrap_or("No note: the scenarios may lack the faults or the workload it needs.")
}

/// None today: every planted bug has been seen to fire an invariant from
/// the general scenarios (commit-old-term-by-counting, once listed here,
/// is found by chaos-failover's small batches, deep pipelines, clients
/// with several requests open and leader crashes about once a second).
const UNOBSERVABLE: &[(&str, &str)] = &[];

const RARE: &[(&str, &str)] = &[(
    "no-promote-extension",
    "Rare, not unobservable: a new leader that re-arms leases at now + TTL without etcd's Promote \
     extension ends a lease early only if all of these line up in one seed. Keep-alives are answered \
     without a read-index round and leases are leader-monotonic (a quarter of the knob draws). The \
     leader is cut off together with a lease holder (half of chaos-failover's leader isolations are zone \
     cuts that take the clients along; chaos-nemesis's partitions with clients do it when the leader is on \
     the minority side). The holder's keep-alive reaches the old leader more than TTL × drift_bound \
     after the new leader promoted and before check-quorum deposes the old one (a window of at most \
     the election timeout's spread). The new leader then survives a TTL with no crash, pause or \
     replacement of its own (a later leader would re-arm later), and the cut lasts that long. \
     `leasesim hunt --bug no-promote-extension --budget-seconds 600` finds it (lease-early-expiry).",
)];
