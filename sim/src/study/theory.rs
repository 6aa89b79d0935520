//! The predicted verdict of a cell from the classic bounds, to set beside
//! the measured one (Gray & Cheriton 1989; Chubby's conservative client
//! lease). With ρ the largest clock-rate error, d the one-way delay bound, a
//! the check-to-act latency and P a pause, a client that trusts T_c of a
//! lease of T is safe when
//!
//! * its timer starts at the send:    T_c ≤ T(1−ρ)/(1+ρ) − (1−ρ)(a+P)
//! * its timer starts at the receipt: T_c ≤ (1−ρ)(T/(1+ρ) − d − a − P)
//!
//! Beliefs (who holds the lock) need the bound with a = P = 0: the belief
//! ends by the client's timer even while it is paused. Acting on the data
//! store needs the full bound, unless fencing rejects the late write. The
//! strategy that compares wall clocks (`leader-stamped-wall`) is also
//! unsafe when a wall-clock step or offset exceeds the slack the margin
//! leaves; the other two never read a wall clock across processes.

use leasesim_core::ExpiryStrategy;
use serde::Serialize;

use crate::scenario::{BeliefFrom, FaultAction, Scenario, WorkloadKind};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub rho: f64,
    pub ttl_ns: u64,
    pub trusted_ns: u64,
    pub delay_ns: u64,
    pub act_ns: u64,
    pub pause_ns: u64,
    /// Largest wall step or offset a wall-comparing strategy sees.
    pub wall_error_ns: u64,
    /// Beliefs never overlap and leases never expire early, by the bound.
    pub beliefs_safe: bool,
    /// Writes land while the lease holds (or fencing stops late ones).
    pub writes_safe: bool,
    pub verdict: &'static str,
}

pub fn predict(s: &Scenario) -> Option<Prediction> {
    let lock = s.workloads.iter().find_map(|w| match &w.kind {
        WorkloadKind::Lock(l) => Some(l),
        _ => None,
    })?;
    let rho = s
        .clocks
        .values()
        .map(|c| c.drift.abs())
        .chain(s.chaos.as_ref().map(|c| c.drift))
        .chain(s.faults.iter().filter_map(|f| match f.action {
            FaultAction::Clock { drift: Some(d), .. } => Some(d.abs()),
            _ => None,
        }))
        .fold(0.0_f64, f64::max);
    let t = lock.ttl_ns as f64;
    let tc = t * (1.0 - lock.margin);
    // madsim charges at least 1 ms per send and per receive.
    let d = (s.network.latency_ns.1 + 2_000_000) as f64;
    let a = lock.hold_ns.1 as f64 + d;
    let pause = s.faults.iter().filter(|f| matches!(f.action, FaultAction::Pause(_))).filter_map(|f| f.for_ns).max().unwrap_or(0) as f64;
    let bound = |a: f64, p: f64| match lock.belief_from {
        BeliefFrom::Send => t * (1.0 - rho) / (1.0 + rho) - (1.0 - rho) * (a + p),
        BeliefFrom::Receipt => (1.0 - rho) * (t / (1.0 + rho) - d - a - p),
    };
    let belief_slack = bound(0.0, 0.0) - tc;
    let jumps = s.faults.iter().filter_map(|f| match f.action {
        // Either direction: a step forward ends leases at once on the
        // leader; a step back stamps expiries the other servers' clocks
        // have already passed.
        FaultAction::Clock { jump_ns: Some(j), .. } => Some(j.unsigned_abs()),
        _ => None,
    });
    let offsets =
        s.clocks.iter().filter(|(p, _)| matches!(p, crate::scenario::Process::Server(_))).map(|(_, c)| c.offset_ns.unsigned_abs());
    let wall_error_ns = jumps.chain(offsets).max().unwrap_or(0);
    let wall_safe = s.cluster.lease_expiry != ExpiryStrategy::LeaderStampedWall || (wall_error_ns as f64) <= belief_slack.max(0.0);
    let beliefs_safe = belief_slack >= 0.0 && wall_safe;
    // Fencing rejects every late write; without it the write must land
    // inside the lease, check-to-act latency and pause included.
    let writes_safe = lock.fenced || (beliefs_safe && tc <= bound(a, pause));
    Some(Prediction {
        rho,
        ttl_ns: lock.ttl_ns,
        trusted_ns: tc as u64,
        delay_ns: d as u64,
        act_ns: a as u64,
        pause_ns: pause as u64,
        wall_error_ns,
        beliefs_safe,
        writes_safe,
        verdict: if beliefs_safe && writes_safe { "safe" } else { "unsafe" },
    })
}
