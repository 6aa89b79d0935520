//! `[chaos]`: seeded random faults on top of the timeline. Each kind is a
//! Poisson process with the given mean interval; targets are drawn among the
//! scenario's processes. With `swarm = true`, each seed first scales every
//! rate by its own draw in [0, 1] — some seeds get no crashes at all, some
//! many — because a uniform mix of every fault hides bugs that need one
//! kind alone (swarm testing; Groce et al. 2012, TigerBeetle's VOPR).
//!
//! The draws become explicit faults (`Selector::Server(n)`, …), so a failing
//! run can be written back as a plain scenario by `shrink`.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::scenario::{Chaos, ChaosRate, FaultAction, Scenario, Selector};

/// One drawn fault: (at, action, for).
pub type Drawn = (u64, FaultAction, Option<u64>);

/// The chaos settings this seed runs with (after the swarm draw).
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    pub partitions: Option<ChaosRate>,
    pub crashes: Option<ChaosRate>,
    pub pauses: Option<ChaosRate>,
    pub clock_jumps: Option<(u64, (i64, i64))>,
    pub drift: f64,
}

pub fn rates(chaos: &Chaos, rng: &mut ChaCha8Rng) -> Rates {
    let mut scale = |on: bool| -> f64 {
        if !on {
            1.0
        } else {
            rng.gen_range(0.0..=1.0)
        }
    };
    let swarm = chaos.swarm;
    let mut scaled = |rate: Option<ChaosRate>| -> Option<ChaosRate> {
        let rate = rate?;
        let factor = scale(swarm);
        // A factor near zero means "none of this kind in this seed".
        (factor > 0.05).then(|| ChaosRate { mean_interval_ns: (rate.mean_interval_ns as f64 / factor) as u64, ..rate })
    };
    let partitions = scaled(chaos.partitions);
    let crashes = scaled(chaos.crashes);
    let pauses = scaled(chaos.pauses);
    let clock_jumps = chaos.clock_jumps.and_then(|j| {
        let factor = if swarm { rng.gen_range(0.0..=1.0) } else { 1.0 };
        (factor > 0.05).then(|| ((j.mean_interval_ns as f64 / factor) as u64, j.jump_ns))
    });
    let drift = if swarm { chaos.drift * rng.gen_range(0.0..=1.0) } else { chaos.drift };
    Rates { partitions, crashes, pauses, clock_jumps, drift }
}

fn arrivals(mean_ns: u64, duration_ns: u64, rng: &mut ChaCha8Rng) -> Vec<u64> {
    let mut at_ns = 0u64;
    let mut out = Vec::new();
    loop {
        let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
        at_ns = at_ns.saturating_add((-u.ln() * mean_ns as f64) as u64);
        if at_ns >= duration_ns {
            return out;
        }
        out.push(at_ns);
    }
}

fn draw_for(range: (u64, u64), rng: &mut ChaCha8Rng) -> u64 {
    if range.0 >= range.1 {
        range.0
    } else {
        rng.gen_range(range.0..=range.1)
    }
}

/// Draws this seed's chaos faults, in time order.
pub fn draw(scenario: &Scenario, rates: &Rates, rng: &mut ChaCha8Rng) -> Vec<Drawn> {
    let servers: Vec<Selector> = (1..=scenario.cluster.servers).map(Selector::Server).collect();
    let clients: Vec<Selector> = (1..=scenario.client_count()).map(Selector::Client).collect();
    let everyone: Vec<Selector> = servers.iter().chain(clients.iter()).cloned().collect();
    let duration_ns = scenario.duration_ns;
    let mut drawn = Vec::new();
    if let Some(rate) = rates.partitions {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let mut shuffled = servers.clone();
            shuffled.shuffle(rng);
            let cut = rng.gen_range(1..shuffled.len().max(2));
            let (a, b) = shuffled.split_at(cut.min(shuffled.len()));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let action = FaultAction::Partition(vec![sorted(a), sorted(b)]);
            drawn.push((at_ns, action, Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some(rate) = rates.crashes {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            drawn.push((at_ns, FaultAction::Crash(target), Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some(rate) = rates.pauses {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            drawn.push((at_ns, FaultAction::Pause(target), Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some((mean_ns, (lo, hi))) = rates.clock_jumps {
        for at_ns in arrivals(mean_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            let jump_ns = if lo >= hi { lo } else { rng.gen_range(lo..=hi) };
            drawn.push((at_ns, FaultAction::Clock { target, drift: None, jump_ns: Some(jump_ns) }, None));
        }
    }
    drawn.sort_by_key(|(at, _, _)| *at);
    drawn
}

fn sorted(group: &[Selector]) -> Vec<Selector> {
    let mut group = group.to_vec();
    group.sort_by_key(|s| match s {
        Selector::Server(n) => *n,
        _ => u64::MAX,
    });
    group
}
