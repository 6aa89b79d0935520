//! The frozen predictive model: for each cell, the probability that a run
//! shows two overlapping lock beliefs, computed from the cell's inputs
//! alone (drifts, TTL, keep-alive, margin, latency, hold, pause schedule
//! and length, duration), never from a run's measurements. It exists so
//! that the study's prediction can be written down and committed before
//! the seeds that test it run (`leasesim study SPEC --forecast`), and then
//! set against the observed frequency (`calibration.csv`, `calibration.svg`).
//! The per-run analysis of [`super::theory`] is a consistency check, not a
//! prediction: it reads each run's own hand-overs.
//!
//! The model (reports/clock-skew-study.md, "The frozen model"):
//!
//! * A hand-over by expiry overlaps when the old holder's belief outlasts
//!   the new holder's grant reply: `D < X`, with
//!   `X = T_c/(1+ρ_c) − T/(1+ρ_s)` (belief span minus lease span, fastest
//!   server ρ_s, slowest client ρ_c) and `D` the sum of [`DELAY_HOPS`]
//!   one-way hops, each 2 ms (madsim's 1 ms per send and per receive) plus
//!   a latency uniform over the scenario's range: the keep-alive reaching
//!   the leader, the expiry's append and its acknowledgement, and the
//!   grant's reply to the waiter.
//! * With probability `p_lag` the pause starts while a keep-alive is in
//!   flight (its round trip, 4 hops through a read-index round or 2
//!   without, over the keep-alive interval); the lease then ends one
//!   keep-alive interval K later than the belief's anchor implies and the
//!   hand-over overlaps only when `D < X − K`.
//! * A pause finds a holder with probability `E[hold] / (E[hold] + 4 hops)`
//!   (between two holds the lock is in flight for a release's round and
//!   the grant's reply).
//! * The number of pauses N is the number of `pause_at + u + j·every`
//!   below the duration, with u the run's random phase, uniform over the
//!   phase window; a run overlaps unless every pause avoids it:
//!   `P = E_u[1 − (1 − p_hit · p_handover)^N]`.
//!
//! One structural choice was made on data that predates the forecast:
//! [`DELAY_HOPS`] = 4 for both leader-monotonic and writer-clock (on
//! drift-margin-edge's 3,840 runs, seeds 0..3840, 4 hops fit better than 3
//! or 5 by likelihood; writer-clock's path reads as longer). Cells outside
//! the model's scope get no forecast and say why.

use leasesim_core::ExpiryStrategy;
use serde::Serialize;

use super::grid::CellParams;
use super::spec::{PauseDistribution, StudySpec};
use super::theory::drift_at;
use leasesim_scenario::{BeliefFrom, FaultAction, Process, Scenario, Selector, WorkloadKind};

/// The model's name, written beside every forecast so a reader can tell
/// which frozen model a file holds.
pub const MODEL: &str = "frozen-v1";

/// One-way hops between the keep-alive's send and the waiter's grant reply.
pub const DELAY_HOPS: u32 = 4;

/// madsim's fixed cost of one hop: 1 ms per send and 1 ms per receive.
const HOP_FIXED_NS: f64 = 2_000_000.0;

/// A cell's forecast, with every intermediate figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Forecast {
    pub model: &'static str,
    /// X: belief span minus lease span, in ns (overlap when the delay is
    /// shorter).
    pub window_ns: f64,
    /// P(D < X) for one hand-over without renewal lag.
    pub p_delay_short: f64,
    pub p_lag: f64,
    pub p_hit: f64,
    /// P(one pause produces an overlapping hand-over).
    pub p_pause: f64,
    /// Expected number of pauses per run.
    pub expected_pauses: f64,
    /// P(a run shows lock-belief-overlap): the prediction.
    pub p_overlap_run: f64,
}

/// The cell's forecast, or why the model does not cover it.
pub fn forecast(spec: &StudySpec, cell: &CellParams, s: &Scenario) -> Result<Forecast, &'static str> {
    if !matches!(s.cluster.lease_expiry, ExpiryStrategy::LeaderMonotonic | ExpiryStrategy::WriterClock) {
        return Err("strategy not modelled (only leader-monotonic and writer-clock)");
    }
    let lock = s
        .workloads
        .iter()
        .find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l),
            _ => None,
        })
        .ok_or("no lock workload")?;
    if lock.belief_from != BeliefFrom::Send {
        return Err("beliefs from the receipt are not modelled");
    }
    if spec.pause_distribution != PauseDistribution::Fixed {
        return Err("only fixed pause lengths are modelled");
    }
    let pause_ns = cell.pause_ns.unwrap_or(0);
    if pause_ns < lock.ttl_ns {
        return Err("pauses shorter than the TTL are not modelled");
    }
    if s.faults.iter().any(|f| matches!(f.action, FaultAction::Pause(Selector::Leader))) {
        return Err("leader pauses are not modelled here (leader_pause_forecast.rs is their model)");
    }
    if s.faults.iter().any(|f| !matches!(f.action, FaultAction::Pause(_))) {
        return Err("only holder pauses are modelled (no clock faults, crashes or network faults)");
    }
    let servers = (1..=s.cluster.servers).map(Process::Server);
    let rho_s = servers.map(|p| drift_at(s, p, 0)).fold(f64::NEG_INFINITY, f64::max);
    let rho_c = (1..=s.client_count()).map(|c| drift_at(s, Process::Client(c), 0)).fold(f64::INFINITY, f64::min);
    let (t, k) = (lock.ttl_ns as f64, lock.keepalive_ns as f64);
    let tc = t * (1.0 - lock.margin);
    let window_ns = tc / (1.0 + rho_c) - t / (1.0 + rho_s);
    let (lo, hi) = (s.network.latency_ns.0 as f64, s.network.latency_ns.1 as f64);
    let hop_mean = HOP_FIXED_NS + (lo + hi) / 2.0;
    let delay_cdf = |x: f64| sum_of_uniform_hops_cdf(x, DELAY_HOPS, HOP_FIXED_NS + lo, HOP_FIXED_NS + hi);
    let round_trip_hops = if s.cluster.keepalive_read_index { 4.0 } else { 2.0 };
    let p_lag = (round_trip_hops * hop_mean / k).min(1.0);
    let p_delay_short = delay_cdf(window_ns);
    let p_handover = (1.0 - p_lag) * p_delay_short + p_lag * delay_cdf(window_ns - k);
    let hold_mean = (lock.hold_ns.0 + lock.hold_ns.1) as f64 / 2.0;
    let p_hit = hold_mean / (hold_mean + 4.0 * hop_mean);
    let p_pause = p_hit * p_handover;
    let window = if spec.random_phase { spec.phase_window_ns } else { 0 };
    let counts = pause_count_distribution(spec.pause_at_ns, spec.pause_every_ns, window, s.duration_ns);
    let expected_pauses = counts.iter().enumerate().map(|(n, p)| n as f64 * p).sum();
    let p_overlap_run = counts.iter().enumerate().map(|(n, p)| p * (1.0 - (1.0 - p_pause).powi(n as i32))).sum();
    Ok(Forecast { model: MODEL, window_ns, p_delay_short, p_lag, p_hit, p_pause, expected_pauses, p_overlap_run })
}

/// P(sum of `n` independent uniforms on [lo, hi] < x): the Irwin–Hall
/// distribution, shifted and scaled.
pub fn sum_of_uniform_hops_cdf(x: f64, n: u32, lo: f64, hi: f64) -> f64 {
    let z = (x - n as f64 * lo) / (hi - lo);
    irwin_hall_cdf(z, n)
}

/// P(sum of `n` independent U[0, 1] < z).
pub fn irwin_hall_cdf(z: f64, n: u32) -> f64 {
    if z <= 0.0 {
        return 0.0;
    }
    if z >= n as f64 {
        return 1.0;
    }
    let factorial: f64 = (1..=n).map(f64::from).product();
    let mut sum = 0.0;
    let mut choose = 1.0;
    for k in 0..=z.floor() as u32 {
        let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
        sum += sign * choose * (z - k as f64).powi(n as i32);
        choose = choose * f64::from(n - k) / f64::from(k + 1);
    }
    (sum / factorial).clamp(0.0, 1.0)
}

/// P(N = n) for n = 0, 1, …: N counts the pauses `at + u + j·every` that
/// start before `duration`, u uniform on [0, window) (0: u = 0).
pub fn pause_count_distribution(at_ns: u64, every_ns: u64, window_ns: u64, duration_ns: u64) -> Vec<f64> {
    // P(N > j) = P(at + u + j·every < duration) = the share of the window
    // below duration − at − j·every.
    let share_above = |j: u64| -> f64 {
        let room = duration_ns as f64 - at_ns as f64 - (j * every_ns.max(1)) as f64;
        if window_ns == 0 {
            return if room > 0.0 { 1.0 } else { 0.0 };
        }
        (room / window_ns as f64).clamp(0.0, 1.0)
    };
    let mut out = Vec::new();
    let mut j = 0;
    loop {
        let (more, next) = (if j == 0 { 1.0 } else { share_above(j - 1) }, share_above(j));
        out.push(more - next);
        if next <= 0.0 {
            return out;
        }
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irwin_hall_matches_known_values() {
        // One uniform: the identity on [0, 1].
        assert!((irwin_hall_cdf(0.3, 1) - 0.3).abs() < 1e-12);
        // Two: the triangle, 0.5 at the middle, z²/2 below it.
        assert!((irwin_hall_cdf(1.0, 2) - 0.5).abs() < 1e-12);
        assert!((irwin_hall_cdf(0.5, 2) - 0.125).abs() < 1e-12);
        // Four: symmetric about 2; 1/24 at z = 1 (z⁴/4!).
        assert!((irwin_hall_cdf(2.0, 4) - 0.5).abs() < 1e-12);
        assert!((irwin_hall_cdf(1.0, 4) - 1.0 / 24.0).abs() < 1e-12);
        assert!((irwin_hall_cdf(3.0, 4) - 23.0 / 24.0).abs() < 1e-12);
        assert_eq!(irwin_hall_cdf(-1.0, 4), 0.0);
        assert_eq!(irwin_hall_cdf(5.0, 4), 1.0);
    }

    #[test]
    fn four_hops_of_3_to_12_ms_have_their_median_at_30_ms() {
        let cdf = |x_ms: f64| sum_of_uniform_hops_cdf(x_ms * 1e6, 4, 3e6, 12e6);
        assert!((cdf(30.0) - 0.5).abs() < 1e-12);
        assert_eq!(cdf(12.0), 0.0);
        assert_eq!(cdf(48.0), 1.0);
    }

    #[test]
    fn pause_counts_follow_the_phase_window() {
        // Pauses at 3 s + u + 6 s·j, u in [0, 6 s), before 20 s: three when
        // u < 5 s, two otherwise.
        let p = pause_count_distribution(3_000_000_000, 6_000_000_000, 6_000_000_000, 20_000_000_000);
        assert_eq!(p.len(), 4);
        assert!(p[0].abs() < 1e-12 && p[1].abs() < 1e-12);
        assert!((p[2] - 1.0 / 6.0).abs() < 1e-12 && (p[3] - 5.0 / 6.0).abs() < 1e-12);
        // Fixed phase: exactly three.
        assert_eq!(pause_count_distribution(3_000_000_000, 6_000_000_000, 0, 20_000_000_000), vec![0.0, 0.0, 0.0, 1.0]);
    }
}
