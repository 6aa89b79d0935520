//! The second frozen model: the probability that a run of an unfenced lock
//! workload shows a stale write accepted after a newer one
//! (`fencing-order`) when its holder is paused for a fixed length shorter
//! than the TTL. It exists because the first model ([`super::forecast`])
//! covers only pauses longer than the TTL, where every paused holder loses
//! its lease; around the T − T/3 threshold the outcome turns on where in
//! its keep-alive and hold cycles the pause lands, and on how late the
//! leader acts on an expired lease, and that is what a real etcd can test.
//! Computed from the cell's inputs only and committed before the runs that
//! test it (`leasesim study SPEC --forecast-stale-writes`).
//!
//! The model (reports/clock-skew-study.md, "Paused holder on real etcd"),
//! for one pause of length p that lands while a client holds the lock:
//!
//! * φ ~ U[0, K): time since the holder's last keep-alive was sent (K the
//!   keep-alive interval). The leader's lease ends T after that keep-alive
//!   arrives, i.e. T − φ + one hop after the pause starts.
//! * r ~ U[0, h), h ~ U[hold]: the holder's work left when it froze; its
//!   write lands p + r + one hop after the pause starts.
//! * L: the leader's lag in acting on a deadline. leasesim's leader
//!   proposes `Expire` at the deadline (L = 0); etcd 3.4's lessor checks
//!   every 500 ms (`lease/lessor.go:621` at v3.4.23), L ~ U[0, 500 ms).
//! * After the lease ends: the expiry commits (append and acknowledgement,
//!   two hops), the waiter's grant arrives (one hop), it works h' ~ U[hold]
//!   and its write lands (one hop).
//! * The stale write lands after the new holder's exactly when
//!   φ + r − h' − L − 4 hops > T − p. Each hop is 2 ms (madsim's send and
//!   receive cost) plus a latency uniform over the scenario's range, as in
//!   the first model.
//! * A pause lands while a client holds with probability
//!   `E[hold] / (E[hold] + 4 hops)`, and a run has N pauses (the first
//!   model's `pause_count_distribution`); P = E[1 − (1 − p_hit·p_pause)^N].
//!
//! What it ignores, on purpose: keep-alive answers delayed by the leader's
//! read-index round, a waiter not yet queued when the lease ends (think
//! times are short next to the hold), and elections (none are forced).

use std::fmt::Write as _;

use serde::Serialize;

use super::forecast::pause_count_distribution;
use super::grid::CellParams;
use super::spec::{PauseDistribution, StudySpec};
use leasesim_core::ExpiryStrategy;
use leasesim_scenario::{FaultAction, Scenario, WorkloadKind};

/// The model's name, written beside every forecast.
pub const MODEL: &str = "frozen-v2-stale-write";

/// etcd 3.4's lessor loop period (`lease/lessor.go:621`, v3.4.23).
pub const ETCD_REVOKE_PERIOD_NS: u64 = 500_000_000;

/// One-way hops between the lease's end and the new holder's write,
/// counted net of the stale write's own hop (see the module comment).
const HOPS: u32 = 4;

/// madsim's fixed cost of one hop, as in the first model.
const HOP_FIXED_NS: u64 = 2_000_000;

/// The grid of the numeric convolution: 0.5 ms.
const BIN_NS: f64 = 500_000.0;

/// A cell's forecast for one expiry lag `L`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StaleWriteForecast {
    pub model: &'static str,
    /// The upper end of the leader's expiry lag L ~ U[0, this) (0: none).
    pub revoke_period_ns: u64,
    /// P(a pause that finds a holder makes its write stale).
    pub p_pause: f64,
    /// P(a pause finds a holder).
    pub p_hit: f64,
    pub expected_pauses: f64,
    /// P(a run shows fencing-order): the prediction.
    pub p_run: f64,
}

/// The forecast of one cell under expiry lag U[0, `revoke_period_ns`), or
/// why the model does not cover the cell.
pub fn forecast(spec: &StudySpec, cell: &CellParams, s: &Scenario, revoke_period_ns: u64) -> Result<StaleWriteForecast, &'static str> {
    if s.cluster.lease_expiry != ExpiryStrategy::LeaderMonotonic {
        return Err("strategy not modelled (only leader-monotonic)");
    }
    let lock = s.workloads.iter().find_map(|w| match &w.kind {
        WorkloadKind::Lock(l) => Some(l),
        _ => None,
    });
    let lock = lock.ok_or("no lock workload")?;
    if lock.fenced {
        return Err("fenced stores reject stale writes (the model predicts unfenced runs)");
    }
    if spec.pause_distribution != PauseDistribution::Fixed {
        return Err("only fixed pause lengths are modelled");
    }
    let pause_ns = cell.pause_ns.ok_or("no pause axis")?;
    if pause_ns == 0 || pause_ns >= lock.ttl_ns {
        return Err("only pauses shorter than the TTL are modelled (the first model covers longer ones)");
    }
    if s.faults.iter().any(|f| !matches!(f.action, FaultAction::Pause(_))) || !s.clocks.is_empty() {
        return Err("only holder pauses are modelled (no clock faults, crashes or network faults)");
    }
    let hop = (HOP_FIXED_NS + s.network.latency_ns.0, HOP_FIXED_NS + s.network.latency_ns.1);
    let p_pause = p_stale(lock.ttl_ns, lock.keepalive_ns, lock.hold_ns, pause_ns, revoke_period_ns, hop);
    let hold_mean = (lock.hold_ns.0 + lock.hold_ns.1) as f64 / 2.0;
    let p_hit = hold_mean / (hold_mean + f64::from(HOPS) * (hop.0 + hop.1) as f64 / 2.0);
    let window = if spec.random_phase { spec.phase_window_ns } else { 0 };
    let counts = pause_count_distribution(spec.pause_at_ns, spec.pause_every_ns, window, s.duration_ns);
    let expected_pauses = counts.iter().enumerate().map(|(n, p)| n as f64 * p).sum();
    let p_run = counts.iter().enumerate().map(|(n, p)| p * (1.0 - (1.0 - p_hit * p_pause).powi(n as i32))).sum();
    Ok(StaleWriteForecast { model: MODEL, revoke_period_ns, p_pause, p_hit, expected_pauses, p_run })
}

/// Every cell's forecast as CSV, for leasesim (no expiry lag) and for etcd
/// 3.4 (its lessor's 500 ms loop), computed before any run.
pub fn forecast_csv(spec: &StudySpec, base: &Scenario) -> String {
    let mut out = format!(
        "# frozen forecast of study {} (model {MODEL}); from the cells' inputs only\n\
         cell,pause_ms,p_pause_leasesim,p_run_leasesim,p_pause_etcd,p_run_etcd,p_hit,expected_pauses,scope\n",
        spec.name
    );
    for (i, cell) in super::grid::cells(spec).iter().enumerate() {
        let s = super::grid::apply(base, spec, cell);
        let pause_ms = cell.pause_ns.map_or(String::new(), |v| format!("{}", v as f64 / 1e6));
        match (forecast(spec, cell, &s, 0), forecast(spec, cell, &s, ETCD_REVOKE_PERIOD_NS)) {
            (Ok(l), Ok(e)) => {
                let _ = writeln!(
                    out,
                    "{i},{pause_ms},{:.6},{:.6},{:.6},{:.6},{:.6},{:.4},",
                    l.p_pause, l.p_run, e.p_pause, e.p_run, l.p_hit, l.expected_pauses
                );
            }
            (Err(why), _) | (_, Err(why)) => {
                let _ = writeln!(out, "{i},{pause_ms},,,,,,,{why}");
            }
        }
    }
    out
}

/// P(φ + r − h' − L − hops > T − p), by convolving the densities on a
/// 0.5 ms grid. `hold` and `hop` are (low, high) ranges in ns.
pub fn p_stale(ttl_ns: u64, keepalive_ns: u64, hold: (u64, u64), pause_ns: u64, revoke_period_ns: u64, hop: (u64, u64)) -> f64 {
    // Each term as a density over bins, with the bin of its least value.
    let mut sum = Density::uniform(0, keepalive_ns);
    sum = sum.plus(&Density::remaining_hold(hold));
    sum = sum.plus(&Density::uniform(hold.0, hold.1).negated());
    sum = sum.plus(&Density::uniform(0, revoke_period_ns).negated());
    for _ in 0..HOPS {
        sum = sum.plus(&Density::uniform(hop.0, hop.1).negated());
    }
    sum.p_above(ttl_ns as f64 - pause_ns as f64)
}

/// A discrete density: `mass[i]` is the probability of the bin starting at
/// `(first + i) · BIN_NS`.
#[derive(Clone, Debug)]
struct Density {
    first: i64,
    mass: Vec<f64>,
}

impl Density {
    /// U[lo, hi); a point mass at `lo` when the range is empty.
    fn uniform(lo: u64, hi: u64) -> Density {
        let first = (lo as f64 / BIN_NS).floor() as i64;
        let bins = (((hi as f64 - lo as f64) / BIN_NS).round() as usize).max(1);
        Density { first, mass: vec![1.0 / bins as f64; bins] }
    }

    /// r = U · h with U ~ U[0, 1) and h ~ U[hold]: the work left at a
    /// uniformly placed instant of a uniformly long hold.
    fn remaining_hold(hold: (u64, u64)) -> Density {
        let outer = Density::uniform(hold.0, hold.1);
        let mut mass = vec![0.0; outer.first as usize + outer.mass.len()];
        for (i, m) in outer.mass.iter().enumerate() {
            let bins = (outer.first as usize + i).max(1);
            for slot in mass.iter_mut().take(bins) {
                *slot += m / bins as f64;
            }
        }
        Density { first: 0, mass }
    }

    fn negated(&self) -> Density {
        let mut mass = self.mass.clone();
        mass.reverse();
        Density { first: -(self.first + self.mass.len() as i64 - 1), mass }
    }

    fn plus(&self, other: &Density) -> Density {
        let mut mass = vec![0.0; self.mass.len() + other.mass.len() - 1];
        for (i, a) in self.mass.iter().enumerate() {
            for (j, b) in other.mass.iter().enumerate() {
                mass[i + j] += a * b;
            }
        }
        Density { first: self.first + other.first, mass }
    }

    /// P(X > x), a bin counting by its midpoint.
    fn p_above(&self, x_ns: f64) -> f64 {
        let above = |i: usize| ((self.first + i as i64) as f64 + 0.5) * BIN_NS > x_ns;
        self.mass.iter().enumerate().filter(|(i, _)| above(*i)).map(|(_, m)| m).sum::<f64>().clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const HOP: (u64, u64) = (3 * MS, 12 * MS);

    #[test]
    fn a_density_keeps_its_mass_through_sums_and_negation() {
        let d = Density::uniform(0, 600 * MS)
            .plus(&Density::remaining_hold((100 * MS, 300 * MS)))
            .plus(&Density::uniform(0, 500 * MS).negated());
        assert!((d.mass.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((Density::uniform(0, 10 * MS).p_above(5.0 * MS as f64) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_pause_shorter_than_the_lease_left_is_never_stale() {
        // The lease has at least T − K left; with the new holder's least
        // work the stale write needs p > T − K − max r + min h' + 4 hops.
        let p = p_stale(2000 * MS, 667 * MS, (100 * MS, 300 * MS), 1000 * MS, 0, HOP);
        assert_eq!(p, 0.0);
    }

    #[test]
    fn a_pause_past_every_margin_is_always_stale() {
        let p = p_stale(2000 * MS, 667 * MS, (100 * MS, 300 * MS), 1990 * MS, 0, (0, 0));
        assert!(p > 0.3, "{p}");
        let long = p_stale(2000 * MS, 667 * MS, (100 * MS, 100 * MS), 1990 * MS, 0, (0, 0));
        assert!(long > p, "less work for the new holder, more stale writes: {long} vs {p}");
    }

    #[test]
    fn the_probability_grows_with_the_pause_and_falls_with_the_leaders_lag() {
        let at = |pause_ms: u64, lag_ms: u64| p_stale(2000 * MS, 667 * MS, (100 * MS, 300 * MS), pause_ms * MS, lag_ms * MS, HOP);
        let mut last = 0.0;
        for pause_ms in [1200, 1400, 1600, 1800] {
            let p = at(pause_ms, 0);
            assert!(p >= last, "P rises with the pause: {p} after {last}");
            assert!(at(pause_ms, 500) <= p, "etcd's 500 ms lessor loop only delays expiry");
            last = p;
        }
        assert!(at(1800, 0) - at(1800, 500) > 0.1, "the lag matters near the edge");
    }
}
