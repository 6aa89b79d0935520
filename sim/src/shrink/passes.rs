//! The reductions a shrink tries, each keeping a candidate only if the same
//! seed still fires the target invariant (a removal changes what the seed's
//! randomness does afterwards, so "same seed, same invariant" is the test,
//! not "same trace").
//!
//! Cheapest and biggest first: cut the run short just after the violation,
//! then remove faults (delta debugging: halves, quarters, … single faults),
//! then drop workloads and clients, voters and spares, then halve each
//! fault's `for`, then simplify what is left (pinned clocks, loss).

use super::renumber::{keep_clients, keep_voters, without_spares};
use super::runner::Runner;
use crate::run::RunOutcome;
use leasesim_scenario::Scenario;

const NS_PER_MS: u64 = 1_000_000;
const STEP_NS: u64 = 100 * NS_PER_MS;

/// The current smallest failing scenario and its run.
pub struct Best {
    pub scenario: Scenario,
    pub outcome: RunOutcome,
}

impl Best {
    fn take(&mut self, found: Option<(Scenario, RunOutcome)>) -> bool {
        match found {
            Some((scenario, outcome)) => {
                self.scenario = scenario;
                self.outcome = outcome;
                true
            }
            None => false,
        }
    }

    /// When the target first fired in the best run.
    fn fired_at_ns(&self, target: &str) -> u64 {
        self.outcome.violations.iter().find(|v| v.invariant == target).map_or(self.scenario.duration_ns, |v| v.at_ns)
    }
}

fn round_up(ns: u64) -> u64 {
    ns.div_ceil(STEP_NS) * STEP_NS
}

/// `s` with its fault phase cut to `duration_ns` (faults after it go).
fn with_duration(s: &Scenario, duration_ns: u64) -> Scenario {
    let mut out = s.clone();
    out.duration_ns = duration_ns;
    out.faults.retain(|f| f.at_ns <= duration_ns);
    out
}

/// Shorter fault and settle phases, shortest first.
pub fn shorten_phases(runner: &mut Runner, best: &mut Best) -> bool {
    let d = best.scenario.duration_ns;
    let at_ns = best.fired_at_ns(&runner.target);
    let mut lengths: Vec<u64> = [round_up(at_ns) + STEP_NS, round_up(d / 8), round_up(d / 4), round_up(d / 2), round_up(d / 4 * 3)]
        .into_iter()
        .filter(|l| *l > 0 && *l < d)
        .collect();
    lengths.sort_unstable();
    lengths.dedup();
    let candidates = lengths.iter().map(|l| with_duration(&best.scenario, *l)).collect();
    let mut progress = best.take(runner.first_failing(candidates));
    let settle = best.scenario.settle_ns;
    let mut settles: Vec<u64> = [0, round_up(settle / 4), round_up(settle / 2)].into_iter().filter(|l| *l < settle).collect();
    settles.dedup();
    let candidates = settles
        .iter()
        .map(|l| {
            let mut s = best.scenario.clone();
            s.settle_ns = *l;
            s
        })
        .collect();
    progress |= best.take(runner.first_failing(candidates));
    progress
}

/// Delta debugging over the fault list: remove chunks of halving size.
pub fn remove_faults(runner: &mut Runner, best: &mut Best) -> bool {
    let mut progress = false;
    let mut chunk = best.scenario.faults.len().div_ceil(2);
    while chunk >= 1 && !best.scenario.faults.is_empty() && !runner.exhausted() {
        let n = best.scenario.faults.len();
        let candidates: Vec<Scenario> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let mut s = best.scenario.clone();
                s.faults.drain(start..(start + chunk).min(n));
                s
            })
            .collect();
        if best.take(runner.first_failing(candidates)) {
            progress = true;
            chunk = chunk.min(best.scenario.faults.len().div_ceil(2)).max(1);
            continue;
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    progress
}

/// Whole workloads first, then halves of one, then one client fewer.
pub fn remove_clients(runner: &mut Runner, best: &mut Best) -> bool {
    let mut progress = false;
    loop {
        let s = &best.scenario;
        let mut candidates: Vec<Scenario> = (0..s.workloads.len()).filter_map(|i| keep_clients(s, i, 0)).collect();
        for (i, w) in s.workloads.iter().enumerate() {
            candidates.extend(keep_clients(s, i, (w.clients / 2).max(1)));
            candidates.extend(keep_clients(s, i, w.clients.saturating_sub(1).max(1)));
        }
        if candidates.is_empty() || !best.take(runner.first_failing(candidates)) {
            return progress;
        }
        progress = true;
    }
}

/// Fewer voters (keeping a majority-friendly odd count), then no spares.
pub fn remove_servers(runner: &mut Runner, best: &mut Best) -> bool {
    let mut progress = false;
    loop {
        let s = &best.scenario;
        let voters = s.cluster.servers;
        let counts: std::collections::BTreeSet<u64> = [1, 3, voters.saturating_sub(2)].into_iter().collect();
        let mut candidates: Vec<Scenario> = counts.into_iter().filter_map(|v| keep_voters(s, v)).collect();
        candidates.extend(without_spares(s));
        if candidates.is_empty() || !best.take(runner.first_failing(candidates)) {
            return progress;
        }
        progress = true;
    }
}

/// Halves each fault's `for` (to whole milliseconds), one fault at a time.
pub fn shorten_fors(runner: &mut Runner, best: &mut Best) -> bool {
    let mut progress = false;
    loop {
        let s = &best.scenario;
        let candidates: Vec<Scenario> = (0..s.faults.len())
            .filter_map(|i| {
                let for_ns = s.faults[i].for_ns?;
                let half = (for_ns / 2 / NS_PER_MS) * NS_PER_MS;
                (half > 0 && half < for_ns).then(|| {
                    let mut c = s.clone();
                    c.faults[i].for_ns = Some(half);
                    c
                })
            })
            .collect();
        if candidates.is_empty() || !best.take(runner.first_failing(candidates)) {
            return progress;
        }
        progress = true;
    }
}

/// Exact clocks, a loss-free network and fault times in whole
/// milliseconds, if the failure does not need them.
pub fn simplify(runner: &mut Runner, best: &mut Best) -> bool {
    let mut candidates = Vec::new();
    let to_ms = |ns: u64| ns.div_ceil(NS_PER_MS) * NS_PER_MS;
    let ragged = |ns: &u64| !ns.is_multiple_of(NS_PER_MS);
    if best.scenario.faults.iter().any(|f| ragged(&f.at_ns) || f.for_ns.as_ref().is_some_and(ragged)) {
        let mut s = best.scenario.clone();
        for f in &mut s.faults {
            f.at_ns = to_ms(f.at_ns).min(s.duration_ns);
            f.for_ns = f.for_ns.map(to_ms);
        }
        candidates.push(s);
    }
    let mut progress = best.take(runner.first_failing(candidates));
    let mut candidates = Vec::new();
    if !best.scenario.clocks.is_empty() {
        let mut s = best.scenario.clone();
        s.clocks.clear();
        candidates.push(s);
    }
    progress |= best.take(runner.first_failing(candidates));
    let network = &best.scenario.network;
    if network.loss > 0.0 || network.duplicate > 0.0 {
        let mut s = best.scenario.clone();
        s.network.loss = 0.0;
        s.network.duplicate = 0.0;
        progress |= best.take(runner.first_failing(vec![s]));
    }
    progress
}
