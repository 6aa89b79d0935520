//! `[chaos]`: seeded random faults on top of the timeline. Each kind is a
//! Poisson process with the given mean interval; targets are drawn among the
//! scenario's processes (or named by role: `leader`, `holder:KEY`). With
//! `swarm = true`, each seed first scales every rate by its own draw in
//! [0, 1] — some seeds get no crashes at all, some many — because a uniform
//! mix of every fault hides bugs that need one kind alone (swarm testing;
//! Groce et al. 2012, TigerBeetle's VOPR).
//!
//! Chaos is decided before the run, from its own random stream, and comes
//! out as plain scenario parts: explicit faults and each clock's drift. A
//! run of a chaos scenario *is* the run of [`explicit`]'s scenario (the
//! simulator runs that one), so `shrink` can write a failing seed's chaos
//! back as an ordinary file that replays bit for bit.

use std::collections::BTreeMap;

use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::ExpiryStrategy;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::scenario::{Chaos, ChaosRate, ClockSpec, Fault, FaultAction, MessageKind, Point, Process, Scenario, Selector};

/// The chaos settings this seed runs with (after the swarm draw).
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    pub partitions: Option<ChaosRate>,
    pub crashes: Option<ChaosRate>,
    pub pauses: Option<ChaosRate>,
    pub clock_jumps: Option<(u64, (i64, i64))>,
    pub leader_crashes: Option<ChaosRate>,
    pub leader_isolations: Option<ChaosRate>,
    pub slow_links: Option<(ChaosRate, (u64, u64))>,
    pub crash_points: Option<ChaosRate>,
    pub pause_points: Option<ChaosRate>,
    pub timer_jumps: Option<(u64, (i64, i64))>,
    pub holder_pauses: Option<ChaosRate>,
    pub membership_ns: Option<u64>,
    pub partition_replacements: f64,
    pub partition_clients: f64,
    pub leader_isolation_clients: f64,
    pub drift: f64,
}

/// What chaos decided for one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    pub rates: Rates,
    /// In time order; `line` is 0 (they were never written in a file).
    pub faults: Vec<Fault>,
    /// Drawn rate error of every process the file gives no `[clocks.X]`
    /// (empty when the drift rate is zero: those clocks stay exact).
    pub drifts: BTreeMap<Process, f64>,
}

/// What `[chaos]` decides for `seed`; `None` without a `[chaos]` table.
pub fn decide(scenario: &Scenario, seed: u64) -> Option<Decided> {
    let chaos = scenario.chaos.as_ref()?;
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, Stream::Chaos, 0));
    let rates = rates(chaos, &mut rng);
    let faults = draw(scenario, &rates, &mut rng);
    let mut drifts = BTreeMap::new();
    if rates.drift > 0.0 {
        for p in scenario.processes() {
            let drift = rng.gen_range(-rates.drift..=rates.drift);
            if !scenario.clocks.contains_key(&p) {
                drifts.insert(p, drift);
            }
        }
    }
    Some(Decided { rates, faults, drifts })
}

/// The scenario without `[chaos]` that runs exactly like `seed` of this
/// one: the drawn faults appended to the timeline (after the file's own, so
/// faults at one instant fire in the same order) and the drawn drifts pinned
/// as `[clocks.X] drift`. A scenario without chaos comes back unchanged.
pub fn explicit(scenario: &Scenario, seed: u64) -> Scenario {
    let mut out = scenario.clone();
    let Some(mut decided) = decide(scenario, seed) else { return out };
    if let Some(knobs) = super::knobs::draw(scenario, seed) {
        super::knobs::apply(&mut out, &knobs);
    }
    // Chaos stays inside the expiry strategy's assumptions, as the judge
    // states them: writer-clock trusts each writer's wall clock to measure
    // its own leases, and a client whose wall clock steps forward ends its
    // own leases early by design (chaos-nemesis seed 755 drew a +0.9 s step
    // of a lock holder's clock). Under writer-clock, drawn steps of a
    // client's wall clock go backward — the direction the strategy claims
    // to survive — and servers' steps keep their drawn direction.
    if out.cluster.lease_expiry == ExpiryStrategy::WriterClock {
        for fault in &mut decided.faults {
            if let FaultAction::Clock {
                target: Selector::Client(_) | Selector::RandomClient | Selector::Holder(_),
                jump_ns: Some(jump_ns),
                ..
            } = &mut fault.action
            {
                *jump_ns = -jump_ns.abs();
            }
        }
    }
    out.chaos = None;
    out.faults.extend(decided.faults);
    for (p, drift) in decided.drifts {
        out.clocks.insert(p, ClockSpec { drift, offset_ns: 0 });
    }
    out
}

pub fn rates(chaos: &Chaos, rng: &mut ChaCha8Rng) -> Rates {
    let swarm = chaos.swarm;
    // A factor near zero means "none of this kind in this seed"; with
    // `swarm_off`, a coin leaves the kind out as well (drawn only then, so
    // scenarios without it keep their streams).
    let mut factor = || -> Option<f64> {
        let f = if swarm { rng.gen_range(0.0..=1.0) } else { 1.0 };
        let left_out = swarm && chaos.swarm_off > 0.0 && rng.gen_bool(chaos.swarm_off);
        (f > 0.05 && !left_out).then_some(f)
    };
    let mut scaled = |rate: Option<ChaosRate>| -> Option<ChaosRate> {
        let rate = rate?;
        let f = factor()?;
        Some(ChaosRate { mean_interval_ns: (rate.mean_interval_ns as f64 / f) as u64, ..rate })
    };
    let partitions = scaled(chaos.partitions);
    let crashes = scaled(chaos.crashes);
    let pauses = scaled(chaos.pauses);
    let clock_jumps = scaled(chaos.clock_jumps.map(|j| ChaosRate { mean_interval_ns: j.mean_interval_ns, for_ns: (0, 0) }))
        .zip(chaos.clock_jumps)
        .map(|(rate, j)| (rate.mean_interval_ns, j.jump_ns));
    let leader_crashes = scaled(chaos.leader_crashes);
    let holder_pauses = scaled(chaos.holder_pauses);
    let membership_ns = scaled(chaos.membership_ns.map(|mean_interval_ns| ChaosRate { mean_interval_ns, for_ns: (0, 0) }))
        .map(|rate| rate.mean_interval_ns);
    // No draw when off, so scenarios without them keep their streams.
    let leader_isolations = chaos.leader_isolations.and_then(|r| scaled(Some(r)));
    let slow_links = chaos.slow_links.and_then(|(r, by)| scaled(Some(r)).map(|r| (r, by)));
    let crash_points = chaos.crash_points.and_then(|r| scaled(Some(r)));
    let pause_points = chaos.pause_points.and_then(|r| scaled(Some(r)));
    let timer_jumps = chaos.timer_jumps.and_then(|j| {
        scaled(Some(ChaosRate { mean_interval_ns: j.mean_interval_ns, for_ns: (0, 0) })).map(|r| (r.mean_interval_ns, j.jump_ns))
    });
    let drift = if swarm { chaos.drift * rng.gen_range(0.0..=1.0) } else { chaos.drift };
    let partition_replacements = chaos.partition_replacements;
    Rates {
        partitions,
        crashes,
        pauses,
        clock_jumps,
        leader_crashes,
        leader_isolations,
        slow_links,
        crash_points,
        pause_points,
        timer_jumps,
        holder_pauses,
        membership_ns,
        partition_replacements,
        partition_clients: chaos.partition_clients,
        leader_isolation_clients: chaos.leader_isolation_clients,
        drift,
    }
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

fn fault(at_ns: u64, action: FaultAction, for_ns: Option<u64>) -> Fault {
    Fault { at_ns, action, for_ns, line: 0, when: None }
}

/// Draws this seed's chaos faults, in time order (a stable sort: faults at
/// one instant keep the order they were drawn in).
pub fn draw(scenario: &Scenario, rates: &Rates, rng: &mut ChaCha8Rng) -> Vec<Fault> {
    let servers: Vec<Selector> = (1..=scenario.cluster.servers).map(Selector::Server).collect();
    let clients: Vec<Selector> = (1..=scenario.client_count()).map(Selector::Client).collect();
    let everyone: Vec<Selector> = servers.iter().chain(clients.iter()).cloned().collect();
    let duration_ns = scenario.duration_ns;
    let mut drawn = Vec::new();
    let replaceable = Replaceable::draw(scenario, rng);
    if let Some(rate) = rates.partitions {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let mut shuffled = servers.clone();
            shuffled.shuffle(rng);
            let cut = rng.gen_range(1..shuffled.len().max(2));
            let (a, b) = shuffled.split_at(cut.min(shuffled.len()));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let (mut a, mut b) = (sorted(a), sorted(b));
            if rates.partition_clients > 0.0 && rng.gen_bool(rates.partition_clients) {
                // Clients too: one that lands with a minority reaches only
                // servers that may still believe they lead.
                for c in &clients {
                    if rng.gen_bool(0.5) {
                        a.push(c.clone())
                    } else {
                        b.push(c.clone())
                    }
                }
            }
            let action = FaultAction::Partition(vec![a, b]);
            drawn.push(fault(at_ns, action, Some(draw_for(rate.for_ns, rng))));
            if rates.partition_replacements > 0.0 && rng.gen_bool(rates.partition_replacements) {
                // Failover automation reacts while the cut is fresh: within
                // two election timeouts, often before a new leader exists.
                let delay_ns = rng.gen_range(0..=2 * scenario.cluster.election_timeout_ns.1);
                let at_ns = (at_ns + delay_ns).min(duration_ns);
                drawn.extend(replaceable.replacement(at_ns, rng));
            }
        }
    }
    if let Some(rate) = rates.crashes {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            drawn.push(fault(at_ns, FaultAction::Crash(target), Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some(rate) = rates.pauses {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            drawn.push(fault(at_ns, FaultAction::Pause(target), Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some((mean_ns, (lo, hi))) = rates.clock_jumps {
        for at_ns in arrivals(mean_ns, duration_ns, rng) {
            let target = everyone.choose(rng).cloned().expect("a scenario has servers");
            let jump_ns = if lo >= hi { lo } else { rng.gen_range(lo..=hi) };
            drawn.push(fault(at_ns, FaultAction::Clock { target, drift: None, jump_ns: Some(jump_ns) }, None));
        }
    }
    if let Some(rate) = rates.leader_crashes {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            drawn.push(fault(at_ns, FaultAction::Crash(Selector::Leader), Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some(rate) = rates.holder_pauses {
        // `holder:` names a lock's holder or a singleton role's.
        let keys: Vec<&str> = scenario.lock_keys().into_iter().chain(scenario.singleton_roles()).collect();
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let Some(key) = keys.choose(rng) else { break };
            let action = FaultAction::Pause(Selector::Holder(key.to_string()));
            drawn.push(fault(at_ns, action, Some(draw_for(rate.for_ns, rng))));
        }
    }
    if let Some(mean_ns) = rates.membership_ns {
        for at_ns in arrivals(mean_ns, duration_ns, rng) {
            drawn.extend(replaceable.replacement(at_ns, rng));
        }
    }
    if let Some(rate) = rates.leader_isolations {
        // Two one-way blocks resolved at one instant: the leader to every
        // server, and every server to the leader; clients reach everyone.
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let for_ns = Some(draw_for(rate.for_ns, rng));
            if rates.leader_isolation_clients > 0.0 && rng.gen_bool(rates.leader_isolation_clients) {
                // A zone cut off with the leader: the clients are drawn to
                // its side or the others'. The other side names every
                // server, spares included (they may have joined); the
                // leader, named by role, stays on its own side.
                let mut zone = vec![Selector::Leader];
                let mut rest: Vec<Selector> = (1..=scenario.cluster.servers + scenario.cluster.spares).map(Selector::Server).collect();
                for c in &clients {
                    if rng.gen_bool(0.5) {
                        zone.push(c.clone())
                    } else {
                        rest.push(c.clone())
                    }
                }
                drawn.push(fault(at_ns, FaultAction::Partition(vec![zone, rest]), for_ns));
                continue;
            }
            drawn.push(fault(at_ns, FaultAction::Block { from: Selector::Leader, to: servers.clone() }, for_ns));
            for s in &servers {
                drawn.push(fault(at_ns, FaultAction::Block { from: s.clone(), to: vec![Selector::Leader] }, for_ns));
            }
        }
    }
    if let Some((rate, by_ns)) = rates.slow_links {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let from = [Selector::Leader, Selector::RandomServer].choose(rng).cloned().expect("two");
            let action = FaultAction::Delay { from, to: servers.clone(), by_ns: draw_for(by_ns, rng) };
            drawn.push(fault(at_ns, action, Some(draw_for(rate.for_ns, rng))));
        }
    }
    let points = Point::all();
    if let Some(rate) = rates.crash_points {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let point = *points.choose(rng).expect("points exist");
            let target = point_target(point, rng);
            let mut f = fault(at_ns, FaultAction::Crash(target), Some(draw_for(rate.for_ns, rng)));
            f.when = Some(point);
            drawn.push(f);
        }
    }
    if let Some(rate) = rates.pause_points {
        for at_ns in arrivals(rate.mean_interval_ns, duration_ns, rng) {
            let point = *points.choose(rng).expect("points exist");
            let target = point_target(point, rng);
            let mut f = fault(at_ns, FaultAction::Pause(target), Some(draw_for(rate.for_ns, rng)));
            f.when = Some(point);
            drawn.push(f);
        }
    }
    if let Some((mean_ns, (lo, hi))) = rates.timer_jumps {
        for at_ns in arrivals(mean_ns, duration_ns, rng) {
            let target = [Selector::Leader, Selector::RandomServer, Selector::RandomClient].choose(rng).cloned().expect("three");
            let jump_ns = if lo >= hi { lo } else { rng.gen_range(lo..=hi) };
            let mut f = fault(at_ns, FaultAction::Clock { target, drift: None, jump_ns: Some(jump_ns) }, None);
            f.when = Some(Point::Timer);
            drawn.push(f);
        }
    }
    drawn.sort_by_key(|f| f.at_ns);
    drawn
}

/// Who node replacements may add and remove. A replacement adds a spare
/// and removes a server at one instant, as an operator swapping a machine
/// does: the second change reaches the leader while the first is still
/// uncommitted, which a correct leader refuses (thesis §4.1) and says so in
/// the trace.
///
/// Only a minority of the original voters is ever removed (drawn once per
/// seed); spares come and go freely. Clients know only the original voters
/// and a removed server no longer learns who leads, so a cluster that
/// replaced all of them would strand every client: an operator's mistake,
/// not a fault the service must survive.
struct Replaceable {
    spares: Vec<u64>,
    removable: Vec<u64>,
}

impl Replaceable {
    fn draw(scenario: &Scenario, rng: &mut ChaCha8Rng) -> Replaceable {
        let cluster = &scenario.cluster;
        let spares: Vec<u64> = (cluster.servers + 1..=cluster.servers + cluster.spares).collect();
        if spares.is_empty() {
            // No draw: scenarios without spares keep their random stream.
            return Replaceable { spares, removable: Vec::new() };
        }
        let mut originals: Vec<u64> = (1..=cluster.servers).collect();
        originals.shuffle(rng);
        originals.truncate(((cluster.servers - 1) / 2) as usize);
        let removable = originals.into_iter().chain(spares.iter().copied()).collect();
        Replaceable { spares, removable }
    }

    /// One replacement at `at_ns` (an add alone when nothing may go).
    fn replacement(&self, at_ns: u64, rng: &mut ChaCha8Rng) -> Vec<Fault> {
        let Some(&added) = self.spares.choose(rng) else { return Vec::new() };
        let others: Vec<u64> = self.removable.iter().copied().filter(|n| *n != added).collect();
        let mut out = vec![fault(at_ns, FaultAction::Add(added), None)];
        if let Some(&removed) = others.choose(rng) {
            out.push(fault(at_ns, FaultAction::Remove(Selector::Server(removed)), None));
        }
        out
    }
}

/// Who a point fault is aimed at: any client for a client's point; the
/// leader, a follower or any server otherwise (matched when a process
/// reaches the point).
fn point_target(point: Point, rng: &mut ChaCha8Rng) -> Selector {
    if point == Point::AfterSend(MessageKind::Request) {
        return Selector::RandomClient;
    }
    if point == Point::Timer {
        return [Selector::Leader, Selector::Follower, Selector::RandomClient].choose(rng).cloned().expect("three");
    }
    [Selector::Leader, Selector::Follower, Selector::RandomServer].choose(rng).cloned().expect("three")
}

fn sorted(group: &[Selector]) -> Vec<Selector> {
    let mut group = group.to_vec();
    group.sort_by_key(|s| match s {
        Selector::Server(n) => *n,
        _ => u64::MAX,
    });
    group
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chaotic() -> Scenario {
        let text = "name = \"c\"\nduration = \"20s\"\n[cluster]\nservers = 3\nspares = 2\n\
                    [[workload]]\nkind = \"lock\"\nclients = 2\nkeys = [\"a\"]\nttl = \"1s\"\n\
                    [clocks.c1]\noffset = \"1s\"\n\
                    [chaos]\ncrashes = \"2s\"\nleader_crashes = \"3s\"\nholder_pauses = \"3s\"\nmembership = \"4s\"\ndrift = 0.01\n";
        crate::scenario::parse(text, "c.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_same_seed_decides_the_same_and_another_differs() {
        let s = chaotic();
        assert_eq!(decide(&s, 7), decide(&s, 7));
        assert_ne!(decide(&s, 7), decide(&s, 8));
        assert_eq!(decide(&explicit(&s, 7), 7), None, "the explicit scenario has no chaos left");
    }

    #[test]
    fn explicit_pins_drawn_drifts_except_where_the_file_set_a_clock() {
        let s = chaotic();
        let e = explicit(&s, 3);
        assert_eq!(e.clocks[&Process::Client(1)], s.clocks[&Process::Client(1)], "the file's own clock is kept");
        let pinned: Vec<f64> = e.clocks.iter().filter(|(p, _)| **p != Process::Client(1)).map(|(_, c)| c.drift).collect();
        assert_eq!(pinned.len(), s.processes().len() - 1);
        assert!(pinned.iter().all(|d| d.abs() <= 0.01), "{pinned:?}");
        assert!(e.faults.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
    }

    #[test]
    fn role_kinds_come_out_as_role_selectors_and_replacements_in_pairs() {
        let e = explicit(&chaotic(), 11);
        let has = |f: &dyn Fn(&FaultAction) -> bool| e.faults.iter().any(|x| f(&x.action));
        assert!(has(&|a| *a == FaultAction::Crash(Selector::Leader)));
        assert!(has(&|a| *a == FaultAction::Pause(Selector::Holder("a".into()))));
        let adds: Vec<&Fault> = e.faults.iter().filter(|f| matches!(f.action, FaultAction::Add(_))).collect();
        assert!(!adds.is_empty());
        for add in adds {
            let removed_then = e.faults.iter().any(|f| f.at_ns == add.at_ns && matches!(f.action, FaultAction::Remove(_)));
            assert!(removed_then, "a replacement is an add and a remove at {}", add.at_ns);
        }
    }
}
