//! The leader-lease reads model (`frozen-v1-lease-read`): the probability
//! that a run serves a stale read from a leader lease (thesis §6.4.1,
//! core/src/raft/lease_read.rs) when the leader's clock runs slower than
//! the cluster's `drift_bound` assumes and a partition then cuts the leader
//! off from its peers but not from the clients. Computed from the cell's
//! inputs alone (`leasesim study SPEC --forecast-lease-reads`) and
//! committed before the seeds of reports/studies/leader-lease-reads.toml
//! test it; reports/leader-lease-reads.md compares the two.
//!
//! One modelled run, true time, the partition at 0:
//! * **The lease.** The leader's heartbeats leave every `heartbeat` on its
//!   clock (rate 1 + d_l, d_l the cell's `leader_clock_drift`), the last
//!   one at −U[0, period). A round counts when the faster follower's
//!   acknowledgement (two hops) is back before 0; the lease runs from the
//!   latest such round's send for L = T (1 − b) / (1 + b) on the leader's
//!   clock, T the election timeout's low end and b the bound.
//! * **The election.** Each follower (rate 1 + d_f) last heard the leader
//!   one hop after the last message it was sent before 0: the later of the
//!   last heartbeat and the last append, appends leaving at the clients'
//!   write rate (a kv operation writes two times in three), the last at
//!   −U[0, 1 / rate). Its timer fires U[T, 2T] on its clock after that,
//!   and it refuses (pre-)votes for T on its clock after it. A
//!   follower whose timer fires asks the other for a pre-vote, which
//!   arrives a hop later and is refused inside the other's vote lease (the
//!   asker then draws a new timer); otherwise pre-vote reply, vote request
//!   and vote reply follow (three hops) and it leads.
//! * **The write.** The new leader commits its Noop (two hops). A write
//!   of the clients outside the old leader's group reaches it
//!   U[0, client_timeout) after it took office (their requests to the old
//!   leader are lost and retried elsewhere after their timeout), commits
//!   two hops after it arrives (or after the Noop) and its answer takes a
//!   hop: the write is complete at w.
//! * **The stale read.** A Get sent after w that reaches the old leader a
//!   hop later, before its lease ends, is answered from the old state:
//!   `linearizable` fires. The readers are the first kv workload's
//!   clients, partitioned with the old leader; their Gets reach it as a
//!   Poisson stream of rate λ = clients × 1/3 (a kv operation is a Get one
//!   time in three) / mean interval × 1/2 (their timeouts point them at
//!   the unreachable servers part of the time: a frozen guess of half). So
//!   P(stale | W) = 1 − exp(−λ W), W = lease end − hop − w.
//!
//! Ignored on purpose: messages in flight at 0 (taken as lost), lost
//! messages, elections needing more than one vote round, the old leader's
//! step-down (check-quorum acts only after 2T on its clock, later than any
//! lease), and every client's actual position (the λ guess). Hops are 2 ms
//! (madsim's send and receive cost, as in the other models) plus a latency
//! uniform over the scenario's range. A Monte Carlo of [`SAMPLES`]
//! modelled runs per cell with the models' fixed generator.

use serde::Serialize;

use super::grid::CellParams;
use super::model_runner::{cells_csv, for_each_run, SplitMix};
use super::spec::StudySpec;
use leasesim_scenario::{FaultAction, Process, Scenario, Selector, WorkloadKind};

/// The model's name, written beside every forecast.
pub const MODEL: &str = "frozen-v1-lease-read";

/// Modelled runs per cell, and the model's own generator seed.
pub const SAMPLES: u32 = 20_000;
const MODEL_SEED: u64 = 0x2710_0027_0004;

/// madsim's fixed cost of one hop, as in the other models.
const HOP_FIXED_NS: f64 = 2_000_000.0;

/// A cell's forecast.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeaseReadForecast {
    pub model: &'static str,
    /// P(the old leader's lease outlasts the new leader's first write).
    pub p_window: f64,
    /// P(a run serves a stale read): `linearizable` fires.
    pub p_stale_run: f64,
    /// Mean window (lease end − hop − write complete) where positive, ms.
    pub window_mean_ms: f64,
}

/// The cell's inputs, in ns (rates as 1 + drift).
struct Inputs {
    lease: f64,
    election: f64,
    heartbeat: f64,
    leader_rate: f64,
    follower_rate: f64,
    hop: (f64, f64),
    client_timeout: f64,
    read_rate_per_ns: f64,
    /// Mean gap between two appends the clients' writes cause.
    append_gap: f64,
}

fn inputs(s: &Scenario) -> Result<Inputs, &'static str> {
    if !s.cluster.lease_reads {
        return Err("lease_reads is off: reads go through the read index");
    }
    if s.cluster.servers != 3 || s.cluster.spares != 0 {
        return Err("the model has two followers: three servers, no spares");
    }
    let partitions = s.faults.iter().filter(|f| matches!(f.action, FaultAction::Partition(_))).count();
    let leader_drift = s.faults.iter().find_map(|f| match f.action {
        FaultAction::Clock { target: Selector::Leader, drift: Some(d), .. } => Some(d),
        _ => None,
    });
    let (Some(leader_drift), 1) = (leader_drift, partitions) else {
        return Err("the model needs one clock fault setting the leader's drift and one partition");
    };
    let drifts: Vec<f64> = (1..=3).map(|n| s.clocks.get(&Process::Server(n)).map_or(0.0, |c| c.drift)).collect();
    if drifts.iter().any(|d| *d != drifts[0]) {
        return Err("the followers' drift must be the same on every server");
    }
    let kv: Vec<(f64, f64)> = s
        .workloads
        .iter()
        .filter_map(|w| match &w.kind {
            WorkloadKind::Kv(kv) => Some((w.clients as f64, (kv.interval_ns.0 + kv.interval_ns.1) as f64 / 2.0)),
            _ => None,
        })
        .collect();
    let Some(&(readers, read_interval)) = kv.first() else { return Err("no kv workload") };
    let (lo, hi) = (HOP_FIXED_NS + s.network.latency_ns.0 as f64, HOP_FIXED_NS + s.network.latency_ns.1 as f64);
    let write_rate: f64 = kv.iter().map(|(clients, interval)| clients * 2.0 / 3.0 / (interval + lo + hi)).sum();
    let (b, t) = (s.cluster.drift_bound, s.cluster.election_timeout_ns.0 as f64);
    Ok(Inputs {
        lease: t * (1.0 - b) / (1.0 + b),
        election: t,
        heartbeat: s.cluster.heartbeat_ns as f64,
        leader_rate: 1.0 + leader_drift,
        follower_rate: 1.0 + drifts[0],
        hop: (lo, hi),
        client_timeout: s.cluster.client_timeout_ns as f64,
        read_rate_per_ns: readers / 3.0 / read_interval / 2.0,
        append_gap: 1.0 / write_rate,
    })
}

/// The cell's forecast, or why the model does not cover it.
pub fn forecast(s: &Scenario) -> Result<LeaseReadForecast, &'static str> {
    let inp = inputs(s)?;
    let (mut windows, mut stale, mut window_sum) = (0u32, 0.0_f64, 0.0_f64);
    for_each_run(MODEL_SEED, SAMPLES, |rng| {
        let w = one_run(&inp, rng);
        if w > 0.0 {
            windows += 1;
            window_sum += w;
            stale += 1.0 - (-inp.read_rate_per_ns * w).exp();
        }
    });
    let n = f64::from(SAMPLES);
    Ok(LeaseReadForecast {
        model: MODEL,
        p_window: f64::from(windows) / n,
        p_stale_run: stale / n,
        window_mean_ms: if windows == 0 { 0.0 } else { window_sum / f64::from(windows) / 1e6 },
    })
}

/// One modelled run: the window (ns) in which a Get sent to the old
/// leader is answered stale; at most 0 when there is none.
fn one_run(inp: &Inputs, rng: &mut SplitMix) -> f64 {
    let period = inp.heartbeat / inp.leader_rate;
    let last_send = -rng.uniform(0.0, period);
    // Rounds from the latest back; three are plenty (a round trip is far
    // shorter than a period).
    let sends: Vec<f64> = (0..3).map(|k| last_send - k as f64 * period).collect();
    let acked = sends.iter().copied().find(|&s| {
        let rtt = (0..2).map(|_| rng.hop(inp.hop) + rng.hop(inp.hop)).fold(f64::INFINITY, f64::min);
        s + rtt < 0.0
    });
    let Some(lease_start) = acked else { return 0.0 };
    let lease_end = lease_start + inp.lease / inp.leader_rate;
    // Each follower's last receipt before 0: a heartbeat or an append.
    let last_append = -rng.uniform(0.0, inp.append_gap);
    let receipts: Vec<f64> = (0..2)
        .map(|_| {
            let heard = |sent: f64, rng: &mut SplitMix| Some(sent + rng.hop(inp.hop)).filter(|r| *r < 0.0);
            let beat = sends.iter().find_map(|&s| heard(s, rng)).unwrap_or(sends[2]);
            heard(last_append, rng).map_or(beat, |a| a.max(beat))
        })
        .collect();
    let elected = election(inp, rng, &receipts);
    let noop_committed = elected + rng.hop(inp.hop) + rng.hop(inp.hop);
    let write_arrives = elected + rng.uniform(0.0, inp.client_timeout);
    let complete = write_arrives.max(noop_committed) + rng.hop(inp.hop) + rng.hop(inp.hop) + rng.hop(inp.hop);
    lease_end - rng.hop(inp.hop) - complete
}

/// When the first follower to win its pre-vote and vote takes office.
fn election(inp: &Inputs, rng: &mut SplitMix, receipts: &[f64]) -> f64 {
    let timer = |rng: &mut SplitMix| rng.uniform(inp.election, 2.0 * inp.election) / inp.follower_rate;
    let vote_lease_end = |i: usize| receipts[i] + inp.election / inp.follower_rate;
    let mut fires = [receipts[0] + timer(rng), receipts[1] + timer(rng)];
    loop {
        let i = if fires[0] <= fires[1] { 0 } else { 1 };
        let asked_at = fires[i] + rng.hop(inp.hop);
        if asked_at >= vote_lease_end(1 - i) {
            return asked_at + rng.hop(inp.hop) + rng.hop(inp.hop) + rng.hop(inp.hop);
        }
        fires[i] += timer(rng);
    }
}

/// Every cell's forecast as CSV, computed before any run.
pub fn forecast_csv(spec: &StudySpec, base: &Scenario) -> String {
    let header = format!(
        "# frozen forecast of study {} (model {MODEL}, {SAMPLES} modelled runs per cell); from the cells' inputs only\n\
         cell,election_timeout_ms,drift_bound,leader_clock_drift,p_window,p_stale_run,window_mean_ms,scope\n",
        spec.name
    );
    cells_csv(spec, base, header, |cell: &CellParams, s| {
        let t = s.cluster.election_timeout_ns.0 as f64 / 1e6;
        let d = cell.leader_clock_drift.map_or(String::new(), |v| v.to_string());
        match forecast(s) {
            Ok(f) => format!("{t},{},{d},{:.4},{:.4},{:.1},", s.cluster.drift_bound, f.p_window, f.p_stale_run, f.window_mean_ms),
            Err(why) => format!("{t},{},{d},,,,{why}", s.cluster.drift_bound),
        }
    })
}
