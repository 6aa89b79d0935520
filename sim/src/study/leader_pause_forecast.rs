//! The leader-pause model (`frozen-v1-leader-pause`): what a pause of the
//! Raft leader (SIGSTOP-like: its clock keeps running) does to a lock
//! holder's lease, with lease checkpoints on and off, computed from the
//! cell's inputs alone so that it can be committed
//! (`leasesim study SPEC --forecast-leader-pause`) before the seeds of
//! reports/studies/leader-pause-checkpoint.toml test it. The question is
//! etcd's known one: without checkpoints a new leader restarts every
//! lease's full TTL (`Promote`), so a lease outlives its dead holder; with
//! them it carries over the remaining TTL last logged.
//!
//! The study pauses the lock holder for good (longer than any lease) and,
//! at the same instant 0, the leader for P. One modelled run:
//! * **The holder's last keep-alive.** Sends lie on a grid K apart at a
//!   phase uniform against 0. One sent at s reaches the leader a hop later
//!   and is confirmed by a read-index round (the fastest follower's round
//!   trip, with `keepalive_read_index`), which renews the lease; the reply
//!   takes a hop. A reply after 0 is never read (the holder is frozen), so
//!   the holder's belief, and the invariants' anchor, count from the
//!   previous send (the renewal lag). A step that straddles 0 waits out
//!   the leader's pause.
//! * **The election.** The leader's last heartbeat left at −U[0, hb); each
//!   follower's timer, drawn in the election range, runs from its receipt.
//!   The first to fire wins a pre-vote and a vote round (4 hops) and leads
//!   at t_p, unless the resumed leader's heartbeat reached it first (fire
//!   after P + a hop: no election, and the old leader keeps its deadline).
//! * **The new leader's deadline** (`Promote`): t_p + extension (the top of
//!   the election range) + the remaining TTL in its applied state: the full
//!   TTL without checkpoints, or when the last applied entry for the lease
//!   is a keep-alive's reset; else the last applied checkpoint's remaining
//!   TTL (the old deadline minus the checkpoint's time). Checkpoints lie on
//!   a grid C apart at a uniform phase, resets at the renewals of a
//!   checkpointed lease; an entry proposed at x is applied on a follower
//!   when it learns the commit: after a round trip, with the leader's next
//!   heartbeat, one hop later. Later entries are in its log but applied
//!   only after it took office, too late for `Promote`.
//! * **The hand-over**: the lease ends at that deadline; the waiter's grant
//!   follows the `Expire` round (3 hops). `gap` = grant − the holder's
//!   belief end (its anchor + TTL(1 − margin)), the figure handovers.csv
//!   records: how long the lease outlived its holder's belief. A negative
//!   gap is `lock-belief-overlap`; a lease ending sooner than TTL / (1 +
//!   drift_bound) after the anchor is `lease-early-expiry`.
//! * **A holder to pause**: as in frozen-v1, a pause finds the lock held
//!   with probability E[hold] / (E[hold] + 4 hops); otherwise the run has
//!   no hand-over by expiry.
//!
//! Ignored on purpose: the waiter's own retries (its acquire may sit on the
//! paused leader until its client timeout), elections that need a second
//! round, messages overtaking each other, and drift (cells with drift are
//! out of scope). The model is a Monte Carlo of [`SAMPLES`] modelled runs
//! per cell with a fixed generator of its own (the same inputs give the
//! same CSV on every machine).

use serde::Serialize;

use super::grid::CellParams;
use super::model_runner::{cells_csv, for_each_run, SplitMix};
use super::spec::StudySpec;
use leasesim_core::ExpiryStrategy;
use leasesim_scenario::{Scenario, WorkloadKind};

/// The model's name, written beside every forecast.
pub const MODEL: &str = "frozen-v1-leader-pause";

/// Modelled runs per cell, and the model's own generator seed.
pub const SAMPLES: u32 = 20_000;
const MODEL_SEED: u64 = 0x2710_0027_1e4d;

/// madsim's fixed cost of one hop, as in the other models.
const HOP_FIXED_NS: f64 = 2_000_000.0;

/// A cell's forecast: probabilities per run, gap quantiles over modelled
/// hand-overs by expiry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeaderPauseForecast {
    pub model: &'static str,
    /// P(a new leader took office during the pause).
    pub p_election: f64,
    /// P(a run has a hand-over by expiry from the paused holder).
    pub p_expiry_handover: f64,
    pub p_overlap_run: f64,
    pub p_early_expiry_run: f64,
    /// Quantiles (10 %, 50 %, 90 %) and mean of the gap, in ms.
    pub gap_ms: [f64; 4],
}

/// The cell's inputs, in ns.
struct Inputs {
    pause: f64,
    checkpoint: Option<f64>,
    ttl: f64,
    keepalive: f64,
    belief: f64,
    election: (f64, f64),
    heartbeat: f64,
    hop: (f64, f64),
    read_index: bool,
    p_hit: f64,
    drift_bound: f64,
}

fn inputs(cell: &CellParams, s: &Scenario) -> Result<Inputs, &'static str> {
    if s.cluster.lease_expiry != ExpiryStrategy::LeaderMonotonic {
        return Err("only leader-monotonic is modelled (checkpoints are its mechanism)");
    }
    let pause = cell.leader_pause_ns.ok_or("no leader_pause axis")?;
    if cell.pause_ns.is_none_or(|p| p < 2 * s.duration_ns / 3) {
        return Err("the model needs the holder paused for good (a pause axis of at least two thirds of the duration)");
    }
    if s.clocks.values().any(|c| c.drift != 0.0 || c.offset_ns != 0) {
        return Err("clock drift and offsets are not modelled");
    }
    let lock = s
        .workloads
        .iter()
        .find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l),
            _ => None,
        })
        .ok_or("no lock workload")?;
    let lo = HOP_FIXED_NS + s.network.latency_ns.0 as f64;
    let hi = HOP_FIXED_NS + s.network.latency_ns.1 as f64;
    let hold_mean = (lock.hold_ns.0 + lock.hold_ns.1) as f64 / 2.0;
    Ok(Inputs {
        pause: pause as f64,
        checkpoint: s.cluster.checkpoint_interval_ns.map(|c| c as f64),
        ttl: lock.ttl_ns as f64,
        keepalive: lock.keepalive_ns as f64,
        belief: lock.ttl_ns as f64 * (1.0 - lock.margin),
        election: (s.cluster.election_timeout_ns.0 as f64, s.cluster.election_timeout_ns.1 as f64),
        heartbeat: s.cluster.heartbeat_ns as f64,
        hop: (lo, hi),
        read_index: s.cluster.keepalive_read_index,
        p_hit: hold_mean / (hold_mean + 4.0 * (lo + hi) / 2.0),
        drift_bound: s.cluster.drift_bound,
    })
}

/// The cell's forecast, or why the model does not cover it.
pub fn forecast(cell: &CellParams, s: &Scenario) -> Result<LeaderPauseForecast, &'static str> {
    let inp = inputs(cell, s)?;
    let (mut elections, mut handovers, mut overlaps, mut early) = (0u32, 0u32, 0u32, 0u32);
    let mut gaps = Vec::with_capacity(SAMPLES as usize);
    for_each_run(MODEL_SEED, SAMPLES, |rng| {
        let run = one_run(&inp, rng);
        elections += u32::from(run.elected);
        if rng.uniform(0.0, 1.0) >= inp.p_hit {
            return;
        }
        handovers += 1;
        overlaps += u32::from(run.gap_ns < 0.0);
        early += u32::from(run.lease_end_ns < run.anchor_ns + inp.ttl / (1.0 + inp.drift_bound));
        gaps.push(run.gap_ns / 1e6);
    });
    gaps.sort_by(f64::total_cmp);
    let q = |p: f64| gaps.get(((gaps.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    let mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
    let n = f64::from(SAMPLES);
    Ok(LeaderPauseForecast {
        model: MODEL,
        p_election: f64::from(elections) / n,
        p_expiry_handover: f64::from(handovers) / n,
        p_overlap_run: f64::from(overlaps) / n,
        p_early_expiry_run: f64::from(early) / n,
        gap_ms: [q(0.1), q(0.5), q(0.9), mean],
    })
}

/// One modelled run's outcome, times from the pause (0), in ns.
struct RunOutcome {
    elected: bool,
    /// The send the holder's belief counts from.
    anchor_ns: f64,
    lease_end_ns: f64,
    gap_ns: f64,
}

/// The holder's keep-alives around 0: (renewal time on the leader, the
/// send the belief counts from), and every renewal before 0.
fn keepalives(inp: &Inputs, rng: &mut SplitMix) -> (f64, f64, Vec<f64>) {
    let last_send = -rng.uniform(0.0, inp.keepalive);
    let confirm = |rng: &mut SplitMix| if inp.read_index { fastest_round_trip(inp, rng) } else { 0.0 };
    let mut renewals = Vec::new();
    let (mut renewal, mut anchor) = (f64::NAN, f64::NAN);
    // Three earlier sends are plenty: the checkpoint grid reaches back C.
    for k in (0..4).rev() {
        let send = last_send - k as f64 * inp.keepalive;
        let arrive = send + rng.hop(inp.hop);
        let mut renewed = if arrive < 0.0 { arrive + confirm(rng) } else { inp.pause + confirm(rng) };
        if arrive < 0.0 && renewed >= 0.0 {
            renewed += inp.pause;
        }
        let answered = renewed + rng.hop(inp.hop) < 0.0;
        // Without an election the old leader renews after it resumes too.
        renewal = renewed;
        if renewed < 0.0 {
            renewals.push(renewed);
        }
        if answered {
            anchor = send;
        }
    }
    (renewal, anchor, renewals)
}

/// The round trip to the fastest of two followers (a majority of three).
fn fastest_round_trip(inp: &Inputs, rng: &mut SplitMix) -> f64 {
    let a = rng.hop(inp.hop) + rng.hop(inp.hop);
    let b = rng.hop(inp.hop) + rng.hop(inp.hop);
    a.min(b)
}

fn one_run(inp: &Inputs, rng: &mut SplitMix) -> RunOutcome {
    let (renewal, anchor, renewals) = keepalives(inp, rng);
    let heartbeat_sent = -rng.uniform(0.0, inp.heartbeat);
    let fires =
        (0..2).map(|_| heartbeat_sent + rng.hop(inp.hop) + rng.uniform(inp.election.0, inp.election.1)).fold(f64::INFINITY, f64::min);
    let elected = fires < inp.pause + rng.hop(inp.hop);
    let lease_end_ns = if elected {
        let took_office = fires + (0..4).map(|_| rng.hop(inp.hop)).sum::<f64>();
        let remaining = remaining_at_promote(inp, rng, &renewals, heartbeat_sent);
        took_office + inp.election.1 + remaining
    } else {
        (renewal + inp.ttl).max(inp.pause)
    };
    let grant = lease_end_ns + fastest_round_trip(inp, rng) + rng.hop(inp.hop);
    RunOutcome { elected, anchor_ns: anchor, lease_end_ns, gap_ns: grant - (anchor + inp.belief) }
}

/// The TTL the new leader re-arms with: the full TTL, or the remaining
/// TTL of the last checkpoint it applied before the pause (unless a
/// keep-alive's reset was applied after it).
fn remaining_at_promote(inp: &Inputs, rng: &mut SplitMix, renewals: &[f64], heartbeat_sent: f64) -> f64 {
    let Some(every) = inp.checkpoint else { return inp.ttl };
    let applied_by_follower = |x: f64, rng: &mut SplitMix| {
        let committed = x + fastest_round_trip(inp, rng);
        let next_heartbeat = heartbeat_sent + ((committed - heartbeat_sent) / inp.heartbeat).ceil() * inp.heartbeat;
        next_heartbeat + rng.hop(inp.hop) < 0.0
    };
    let phase = rng.uniform(0.0, every);
    let span = 4.0 * inp.keepalive;
    let mut entries: Vec<(f64, f64)> = Vec::new();
    let mut at = -phase;
    while at > -span {
        // The checkpoint's remaining TTL: the leader's deadline then.
        let last = renewals.iter().copied().filter(|r| *r <= at).fold(f64::NEG_INFINITY, f64::max);
        if last.is_finite() {
            entries.push((at, last + inp.ttl - at));
        }
        at -= every;
    }
    // A renewal of a lease checkpointed since its previous renewal logs a
    // reset to the full TTL.
    for w in renewals.windows(2) {
        let (prev, this) = (w[0], w[1]);
        if entries.iter().any(|(c, _)| *c > prev && *c < this) {
            entries.push((this, inp.ttl));
        }
    }
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut remaining = inp.ttl;
    for (x, rem) in entries {
        if applied_by_follower(x, rng) {
            remaining = rem;
        }
    }
    remaining
}

/// Every cell's forecast as CSV, computed before any run.
pub fn forecast_csv(spec: &StudySpec, base: &Scenario) -> String {
    let header = format!(
        "# frozen forecast of study {} (model {MODEL}, {SAMPLES} modelled runs per cell); from the cells' inputs only\n\
         cell,leader_pause_ms,checkpoint_ms,p_election,p_expiry_handover,p_overlap_run,p_early_expiry_run,gap_p10_ms,gap_p50_ms,gap_p90_ms,gap_mean_ms,scope\n",
        spec.name
    );
    cells_csv(spec, base, header, |cell, s| {
        let ms = |v: Option<u64>| v.map_or(String::new(), |v| format!("{}", v as f64 / 1e6));
        let (pause, every) = (ms(cell.leader_pause_ns), ms(cell.checkpoint_ns));
        match forecast(cell, s) {
            Ok(f) => {
                let [p10, p50, p90, mean] = f.gap_ms;
                format!(
                    "{pause},{every},{:.4},{:.4},{:.4},{:.4},{p10:.1},{p50:.1},{p90:.1},{mean:.1},",
                    f.p_election, f.p_expiry_handover, f.p_overlap_run, f.p_early_expiry_run
                )
            }
            Err(why) => format!("{pause},{every},,,,,,,,,{why}"),
        }
    })
}
