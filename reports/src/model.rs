//! The run timeline as plain data: what one seed did, already reduced to
//! spans and instants in true time, ready to draw.
//!
//! The simulator fills it from its observations and clocks; the renderers
//! only read it. Keeping it plain (serde, no simulator types) lets this
//! crate build and be tested without madsim, and lets a test build a small
//! run by hand.

use serde::{Deserialize, Serialize};

/// One seed of one scenario, ready to draw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub scenario: String,
    pub file: String,
    pub seed: u64,
    /// `ok` or `violation`.
    pub verdict: String,
    /// Whether the run is what the scenario's `[expect]` allows.
    pub expected: bool,
    pub trace_digest: String,
    /// The command that re-runs this seed.
    pub replay: String,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub events: u64,
    /// A real run's facts line (target, real time, stamping error), shown
    /// instead of the simulated time, events and digest; `None` for a
    /// simulated run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_facts: Option<String>,
    /// Where the timeline ends (true time).
    pub end_ns: u64,
    /// Where the fault phase ends and every fault is healed.
    pub settle_at_ns: u64,
    /// The clock-rate error the design assumes (scenario `drift_bound`).
    pub drift_bound: f64,
    /// One lane per process, servers first.
    pub lanes: Vec<Lane>,
    /// Faults that cut links (partition, isolate, block), as bands.
    pub link_faults: Vec<LinkFault>,
    /// Faults that are instants or affect no lane (membership asks, loss
    /// changes, skipped faults).
    pub fault_notes: Vec<FaultNote>,
    pub locks: Vec<LockTrack>,
    pub violations: Vec<ViolationMark>,
    /// Every observation, one line each, for the "near this instant" panel.
    pub trace: Vec<TraceLine>,
    /// Caveats about how this view was built (shown on the page).
    pub notes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneKind {
    Server,
    Client,
    Store,
}

/// A process over the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lane {
    /// As scenarios name it: `s1`, `c2`, `store`.
    pub name: String,
    pub kind: LaneKind,
    /// Consecutive, non-overlapping spans covering the run.
    pub roles: Vec<RoleSpan>,
    /// When the process was paused (its clock kept running).
    pub paused: Vec<Span>,
    pub clock: ClockTrace,
    /// Instants worth a marker on this lane (clock jumps, drift changes).
    pub marks: Vec<LaneMark>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "role")]
pub enum Role {
    /// A server that leads (as far as it knows) in `term`.
    Leader {
        term: u64,
    },
    Follower,
    /// Running; used for clients and the store, which have no Raft role.
    Up,
    /// Crashed (killed), until restarted.
    Down,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleSpan {
    pub start_ns: u64,
    pub end_ns: u64,
    pub role: Role,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A process's clocks against true time: both errors are piecewise linear,
/// so the points at segment boundaries (two at one instant for a jump) and
/// at the ends draw them exactly.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockTrace {
    pub points: Vec<ClockPoint>,
    /// The largest |drift| the clock ran at.
    pub max_abs_drift: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockPoint {
    pub at_ns: u64,
    /// Wall clock minus (the common wall epoch + true time): offset, drift
    /// and jumps together.
    pub wall_error_ns: i64,
    /// Monotonic time elapsed minus true time elapsed: drift alone.
    pub mono_error_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaneMark {
    pub at_ns: u64,
    /// `jump`, `drift`, `crash-note`: decides the marker's shape.
    pub kind: String,
    pub label: String,
}

/// A partition, isolation or one-way block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkFault {
    pub start_ns: u64,
    pub end_ns: u64,
    /// As the trace told it: `partition [s1,s3] | [s2,s4,s5]`.
    pub label: String,
    /// The processes to shade: the cut-off side (the smaller group of a
    /// partition, the isolated process, the blocked sender).
    pub procs: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultNote {
    pub at_ns: u64,
    pub label: String,
    /// Skipped faults say why; shown dimmed.
    pub skipped: bool,
}

/// One lock key: who the cluster says holds it, who believes they hold it,
/// and what the data store did with their writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LockTrack {
    pub key: String,
    /// The cluster's view: from the grant's first apply to its release.
    pub holds: Vec<Hold>,
    /// Each client's belief, in true time.
    pub beliefs: Vec<Belief>,
    pub writes: Vec<StoreWrite>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub client: u64,
    pub token: u64,
    pub lease: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// `released`, `lease expired`, `still held at the end`, …
    pub end: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Belief {
    pub client: u64,
    pub token: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// `released`, `timer lapsed`, `keep-alive refused`, `crashed`, …
    pub end: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreWrite {
    pub at_ns: u64,
    pub client: u64,
    pub token: u64,
    pub accepted: bool,
    /// For a rejection: the highest token the store had accepted.
    pub highest: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViolationMark {
    pub invariant: String,
    pub at_ns: u64,
    pub detail: String,
    /// Inside the stated assumptions: a bug; outside: assumption broken.
    pub assumptions_held: bool,
    /// Lanes the explanation names (`c1`, `s3`), marked on those lanes.
    pub procs: Vec<String>,
    /// Lock keys the explanation names, marked on those tracks.
    pub keys: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceLine {
    pub at_ns: u64,
    pub proc: String,
    pub text: String,
}

impl ViolationMark {
    /// `bug` or `assumption broken`, as the terminal says it.
    pub fn kind(&self) -> &'static str {
        if self.assumptions_held {
            "bug"
        } else {
            "assumption broken"
        }
    }
}
