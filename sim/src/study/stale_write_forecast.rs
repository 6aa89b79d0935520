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
//! * φ: time since the holder's last keep-alive was sent when it froze.
//!   The leader re-arms the lease for T when it answers that keep-alive:
//!   one hop after the send on etcd (its lessor answers at once), three
//!   on leasesim with `keepalive_read_index` (the default: the leader
//!   confirms its leadership with a heartbeat round first). The lease
//!   ends T − φ + those hops after the pause starts.
//! * The holder's work is a deadline on its own monotonic clock, which runs
//!   on while it is frozen: a pause longer than the hold finds the work
//!   done when it resumes, and the write is sent at once (it lands p + one
//!   hop after the pause starts).
//! * L: the leader's lag in acting on a deadline. leasesim's leader
//!   proposes `Expire` at the deadline (L = 0); etcd 3.4's lessor checks
//!   every 500 ms (`lease/lessor.go:621` at v3.4.23), L ~ U[0, 500 ms).
//! * After the lease ends: the expiry commits (append and acknowledgement,
//!   two hops), the waiter's grant arrives (one hop), it works h' ~ U[hold]
//!   and its write lands (one hop).
//! * So the stale write lands after the new holder's exactly when
//!   h' + L + (a + 3) hops < φ − (T − p), a the keep-alive's hops above
//!   (the old write's own hop cancels the new write's). Each hop is 2 ms
//!   (madsim's send and receive cost) plus a latency uniform over the
//!   scenario's range.
//! * A pause lands while a client holds with probability
//!   `E[hold] / (E[hold] + 4 hops)`.
//! * The pauses of one run are not independent: keep-alives go every K on
//!   a fixed grid, so pause j of a run falls at φ_j = (φ_0 + j·every) mod K
//!   (with `every` a multiple of K, every pause of a run has the same φ).
//!   φ_0 is uniform over [0, K) through the run's random phase u, which
//!   also sets the number of pauses:
//!   P = E_u[1 − Π_j (1 − p_hit · P(h' + L + 4 hops < φ_j − (T − p)))].
//!
//! History: `frozen-v2-stale-write` (commit 937b2c8, its forecast kept in
//! reports/studies/real-paused-holder-forecast-v2.csv) drew φ and the
//! work left r afresh for every pause and re-armed the lease one hop after
//! the keep-alive's send; the traces of the simulator's runs of
//! real-paused-holder (seeds 310000..310120) showed all three wrong (the
//! write is sent at resume, a run's pauses share φ, and leasesim re-arms
//! after a read-index round). This `frozen-v3` was written from those
//! simulated runs, so they are a consistency check of it, not a test; it
//! was committed before the seeds that test it ran.
//!
//! What it ignores, on purpose: keep-alive answers delayed by the leader's
//! read-index round, a waiter not yet queued when the lease ends (think
//! times are short next to the hold), and elections (none are forced).

use serde::Serialize;

use super::grid::CellParams;
use super::spec::{PauseDistribution, StudySpec};
use leasesim_core::ExpiryStrategy;
use leasesim_scenario::{FaultAction, Scenario, WorkloadKind};

/// The model's name, written beside every forecast.
pub const MODEL: &str = "frozen-v3-stale-write";

/// etcd 3.4's lessor loop period (`lease/lessor.go:621`, v3.4.23).
pub const ETCD_REVOKE_PERIOD_NS: u64 = 500_000_000;

/// One-way hops from the lease's end to the new holder's write, net of
/// the stale write's own hop: the expiry's append and acknowledgement, the
/// grant (see the module comment).
const HOPS_AFTER_END: u32 = 3;

/// Who answers the keep-alives: the hops from a keep-alive's send to the
/// leader re-arming its lease, and the leader's lag in acting on a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// leasesim's engine (the simulator, leasesim-node): the scenario's
    /// `keepalive_read_index` decides, and the leader acts at the deadline.
    Leasesim,
    /// etcd 3.4: keep-alives answered at once; expiry checked every 500 ms.
    Etcd,
}

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
    /// One-way hops from a keep-alive's send to the lease re-armed.
    pub keepalive_hops: u32,
    /// P(a pause that finds a holder makes its write stale).
    pub p_pause: f64,
    /// P(a pause finds a holder).
    pub p_hit: f64,
    pub expected_pauses: f64,
    /// P(a run shows fencing-order): the prediction.
    pub p_run: f64,
}

/// The forecast of one cell on `target`, or why the model does not cover
/// the cell.
pub fn forecast(spec: &StudySpec, cell: &CellParams, s: &Scenario, target: Target) -> Result<StaleWriteForecast, &'static str> {
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
    if pause_ns < lock.hold_ns.1 {
        return Err("pauses shorter than the longest hold are not modelled (the write would wait for the work left)");
    }
    let hop = (HOP_FIXED_NS + s.network.latency_ns.0, HOP_FIXED_NS + s.network.latency_ns.1);
    let (keepalive_hops, revoke_period_ns) = match target {
        Target::Leasesim if s.cluster.keepalive_read_index => (3, 0),
        Target::Leasesim => (1, 0),
        Target::Etcd => (1, ETCD_REVOKE_PERIOD_NS),
    };
    let delay = delay_density(lock.hold_ns, revoke_period_ns, keepalive_hops + HOPS_AFTER_END, hop);
    // A pause at phase φ is stale when the new holder's delay is shorter
    // than φ − (T − p).
    let stale_at = |phi_ns: f64| delay.p_below(phi_ns - (lock.ttl_ns as f64 - pause_ns as f64));
    let k_ns = lock.keepalive_ns as f64;
    let p_pause = (0..PHASE_STEPS).map(|i| stale_at((i as f64 + 0.5) * k_ns / PHASE_STEPS as f64)).sum::<f64>() / PHASE_STEPS as f64;
    let hold_mean = (lock.hold_ns.0 + lock.hold_ns.1) as f64 / 2.0;
    let p_hit = hold_mean / (hold_mean + 4.0 * (hop.0 + hop.1) as f64 / 2.0);
    let (p_run, expected_pauses) = over_run_phases(spec, s.duration_ns, k_ns, |phi_ns| p_hit * stale_at(phi_ns));
    Ok(StaleWriteForecast { model: MODEL, revoke_period_ns, keepalive_hops, p_pause, p_hit, expected_pauses, p_run })
}

/// Steps of the numeric integrals over a phase.
const PHASE_STEPS: u32 = 2000;

/// E_u[1 − Π_j (1 − p(φ_j))] and E_u[N] over the run's random phase u
/// (uniform over the phase window; 0 with fixed phases): pause j falls at
/// `pause_at + u + j·every`, at keep-alive phase φ_j = that time mod K.
fn over_run_phases(spec: &StudySpec, duration_ns: u64, k_ns: f64, p: impl Fn(f64) -> f64) -> (f64, f64) {
    let window_ns = if spec.random_phase { spec.phase_window_ns as f64 } else { 0.0 };
    let steps = if window_ns > 0.0 { PHASE_STEPS } else { 1 };
    let (mut p_run, mut pauses) = (0.0, 0.0);
    for i in 0..steps {
        let u_ns = if window_ns > 0.0 { (i as f64 + 0.5) * window_ns / steps as f64 } else { 0.0 };
        let mut safe = 1.0;
        let mut at_ns = spec.pause_at_ns as f64 + u_ns;
        while at_ns < duration_ns as f64 {
            safe *= 1.0 - p(at_ns.rem_euclid(k_ns));
            pauses += 1.0;
            at_ns += spec.pause_every_ns.max(1) as f64;
        }
        p_run += 1.0 - safe;
    }
    (p_run / steps as f64, pauses / steps as f64)
}

/// The density of h' + L + `hops` hops: the new holder's work, the
/// leader's expiry lag and the hops that decide the race.
fn delay_density(hold: (u64, u64), revoke_period_ns: u64, hops: u32, hop: (u64, u64)) -> Density {
    let mut sum = Density::uniform(hold.0, hold.1);
    sum = sum.plus(&Density::uniform(0, revoke_period_ns));
    for _ in 0..hops {
        sum = sum.plus(&Density::uniform(hop.0, hop.1));
    }
    sum
}

/// Every cell's forecast as CSV, for leasesim (no expiry lag) and for etcd
/// 3.4 (its lessor's 500 ms loop), computed before any run.
pub fn forecast_csv(spec: &StudySpec, base: &Scenario) -> String {
    let header = format!(
        "# frozen forecast of study {} (model {MODEL}); from the cells' inputs only\n\
         cell,pause_ms,p_pause_leasesim,p_run_leasesim,p_pause_etcd,p_run_etcd,p_hit,expected_pauses,scope\n",
        spec.name
    );
    super::model_runner::cells_csv(spec, base, header, |cell, s| {
        let pause_ms = cell.pause_ns.map_or(String::new(), |v| format!("{}", v as f64 / 1e6));
        match (forecast(spec, cell, s, Target::Leasesim), forecast(spec, cell, s, Target::Etcd)) {
            (Ok(l), Ok(e)) => {
                format!(
                    "{pause_ms},{:.6},{:.6},{:.6},{:.6},{:.6},{:.4},",
                    l.p_pause, l.p_run, e.p_pause, e.p_run, l.p_hit, l.expected_pauses
                )
            }
            (Err(why), _) | (_, Err(why)) => format!("{pause_ms},,,,,,,{why}"),
        }
    })
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

    fn plus(&self, other: &Density) -> Density {
        let mut mass = vec![0.0; self.mass.len() + other.mass.len() - 1];
        for (i, a) in self.mass.iter().enumerate() {
            for (j, b) in other.mass.iter().enumerate() {
                mass[i + j] += a * b;
            }
        }
        Density { first: self.first + other.first, mass }
    }

    /// P(X < x), a bin counting by its midpoint.
    fn p_below(&self, x_ns: f64) -> f64 {
        let below = |i: usize| ((self.first + i as i64) as f64 + 0.5) * BIN_NS < x_ns;
        // A fold from +0.0: an empty f64 sum is −0.0, printed "-0.000000".
        self.mass.iter().enumerate().filter(|(i, _)| below(*i)).fold(0.0, |sum, (_, m)| sum + m).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const HOP: (u64, u64) = (3 * MS, 12 * MS);

    #[test]
    fn a_density_keeps_its_mass_through_sums() {
        let d = delay_density((100 * MS, 300 * MS), 500 * MS, 4, HOP);
        assert!((d.mass.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((Density::uniform(0, 10 * MS).p_below(5.0 * MS as f64) - 0.5).abs() < 1e-9);
        // h' + 4 hops lies in [112, 348] ms without a lag.
        let d = delay_density((100 * MS, 300 * MS), 0, 4, HOP);
        assert_eq!(d.p_below(111.0 * MS as f64), 0.0);
        assert!(d.p_below(349.0 * MS as f64) > 1.0 - 1e-9);
    }

    fn spec(pause_at_ms: u64, every_ms: u64, window_ms: u64) -> StudySpec {
        let text = format!(
            "name = \"t\"\nbase = \"b.toml\"\nseeds = \"0..1\"\npause_at = \"{pause_at_ms}ms\"\npause_every = \"{every_ms}ms\"\n\
             fault_phase = \"random\"\nphase_window = \"{window_ms}ms\"\n[axes]\npause = [\"1s\"]\n"
        );
        super::super::spec::parse(&text, "t.toml").expect("a valid spec")
    }

    #[test]
    fn pauses_that_share_their_phase_are_one_chance_not_three() {
        // every = 3K: all pauses of a run fall at the same φ; a pause is
        // stale for φ in the top half of the cycle with certainty.
        let spec = spec(3000, 1800, 1800);
        let (p_run, pauses) = over_run_phases(&spec, 9_000 * MS, 600.0 * MS as f64, |phi| if phi > 300.0 * MS as f64 { 1.0 } else { 0.0 });
        assert!((p_run - 0.5).abs() < 1e-3, "{p_run}");
        // Pauses at 3.0 + u, 4.8 + u, 6.6 + u, and 8.4 + u when u < 0.6 s.
        assert!((pauses - (3.0 + 1.0 / 3.0)).abs() < 1e-3, "{pauses}");
    }

    #[test]
    fn the_leaders_lag_only_delays_the_new_holder() {
        let without = delay_density((100 * MS, 300 * MS), 0, 4, HOP);
        let etcd = delay_density((100 * MS, 300 * MS), 500 * MS, 4, HOP);
        for x_ms in [150.0, 250.0, 400.0, 600.0] {
            let x = x_ms * MS as f64;
            assert!(etcd.p_below(x) <= without.p_below(x), "at {x_ms} ms");
        }
        assert!(without.p_below(300.0 * MS as f64) - etcd.p_below(300.0 * MS as f64) > 0.3);
    }
}
