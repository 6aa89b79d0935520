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
//!
//! It lives in the scenario crate, which links neither madsim nor tokio, so
//! that the real runner (`leasesim-real`) plays, for real, the very fault
//! schedule the simulator draws for a seed: one seed, one schedule, two
//! worlds.

use std::collections::BTreeMap;

use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::ExpiryStrategy;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Chaos, ChaosJumps, ChaosRate, ClockSpec, FaultAction, MessageKind, Point, Process, Scenario, ScheduledFault, Selector};

/// What chaos decided for one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    /// The chaos this seed ran with: the file's, after the swarm draw.
    pub chaos: Chaos,
    /// In time order; `line` is 0 (they were never written in a file).
    pub faults: Vec<ScheduledFault>,
    /// Drawn rate error of every process the file gives no `[clocks.X]`
    /// (empty when the drift rate is zero: those clocks stay exact).
    pub drifts: BTreeMap<Process, f64>,
}

/// What `[chaos]` decides for `seed`; `None` without a `[chaos]` table.
pub fn decide(scenario: &Scenario, seed: u64) -> Option<Decided> {
    let chaos = scenario.chaos.as_ref()?;
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, Stream::Chaos, 0));
    let chaos = for_seed(chaos, &mut rng);
    let faults = draw(scenario, &chaos, &mut rng);
    let mut drifts = BTreeMap::new();
    if chaos.drift > 0.0 {
        for p in scenario.processes() {
            let drift = rng.gen_range(-chaos.drift..=chaos.drift);
            if !scenario.clocks.contains_key(&p) {
                drifts.insert(p, drift);
            }
        }
    }
    Some(Decided { chaos, faults, drifts })
}

/// The scenario without `[chaos]` that runs exactly like `seed` of this
/// one: the drawn faults appended to the timeline (after the file's own, so
/// faults at one instant fire in the same order) and the drawn drifts pinned
/// as `[clocks.X] drift`. A scenario without chaos comes back unchanged.
pub fn explicit(scenario: &Scenario, seed: u64) -> Scenario {
    let Some(decided) = decide(scenario, seed) else { return scenario.clone() };
    explicit_from(scenario, decided, crate::knobs::draw(scenario, seed).as_ref())
}

/// [`explicit`] for chaos and knobs given rather than drawn: the guided hunt
/// (`hunt::guided`) mutates a seed's draw and runs what this makes of it,
/// under the same rules a drawn seed runs under.
pub fn explicit_from(scenario: &Scenario, mut decided: Decided, knobs: Option<&crate::knobs::Knobs>) -> Scenario {
    let mut out = scenario.clone();
    if let Some(knobs) = knobs {
        crate::knobs::apply(&mut out, knobs);
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

/// The chaos this seed runs with: the file's `[chaos]` with, under
/// `swarm`, each kind's mean interval stretched by the seed's own draw (or
/// the kind left out) and the drift scaled. The result's own `swarm` is off:
/// its draws are done.
pub fn for_seed(chaos: &Chaos, rng: &mut ChaCha8Rng) -> Chaos {
    let mut swarm = Swarm { chaos, rng };
    // The draws' order is part of every seed's stream: keep it. A kind that
    // is off draws nothing, so scenarios without it keep their streams.
    let partitions = swarm.rate(chaos.partitions);
    let crashes = swarm.rate(chaos.crashes);
    let pauses = swarm.rate(chaos.pauses);
    let clock_jumps = swarm.jumps(chaos.clock_jumps);
    let leader_crashes = swarm.rate(chaos.leader_crashes);
    let holder_pauses = swarm.rate(chaos.holder_pauses);
    let membership_ns = swarm.interval(chaos.membership_ns);
    let leader_isolations = swarm.rate(chaos.leader_isolations);
    let slow_links = chaos.slow_links.and_then(|(rate, by_ns)| Some((swarm.rate(Some(rate))?, by_ns)));
    let crash_points = swarm.rate(chaos.crash_points);
    let pause_points = swarm.rate(chaos.pause_points);
    let timer_jumps = swarm.jumps(chaos.timer_jumps);
    let drift = if chaos.swarm { chaos.drift * swarm.rng.gen_range(0.0..=1.0) } else { chaos.drift };
    Chaos {
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
        drift,
        swarm: false,
        swarm_off: 0.0,
        ..chaos.clone()
    }
}

/// The swarm draw of one seed: a factor in [0, 1] per kind that is on.
struct Swarm<'a> {
    chaos: &'a Chaos,
    rng: &'a mut ChaCha8Rng,
}

impl Swarm<'_> {
    /// A factor near zero means "none of this kind in this seed"; with
    /// `swarm_off`, a coin leaves the kind out as well (drawn only then, so
    /// scenarios without it keep their streams). Without `swarm`: 1.
    fn factor(&mut self) -> Option<f64> {
        let swarm = self.chaos.swarm;
        let f = if swarm { self.rng.gen_range(0.0..=1.0) } else { 1.0 };
        let left_out = swarm && self.chaos.swarm_off > 0.0 && self.rng.gen_bool(self.chaos.swarm_off);
        (f > 0.05 && !left_out).then_some(f)
    }

    /// A mean interval stretched by this kind's factor: rarer faults.
    fn interval(&mut self, mean_interval_ns: Option<u64>) -> Option<u64> {
        let mean_interval_ns = mean_interval_ns?;
        let f = self.factor()?;
        Some((mean_interval_ns as f64 / f) as u64)
    }

    fn rate(&mut self, rate: Option<ChaosRate>) -> Option<ChaosRate> {
        let rate = rate?;
        Some(ChaosRate { mean_interval_ns: self.interval(Some(rate.mean_interval_ns))?, ..rate })
    }

    fn jumps(&mut self, jumps: Option<ChaosJumps>) -> Option<ChaosJumps> {
        let jumps = jumps?;
        Some(ChaosJumps { mean_interval_ns: self.interval(Some(jumps.mean_interval_ns))?, ..jumps })
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

fn draw_jump(range: (i64, i64), rng: &mut ChaCha8Rng) -> i64 {
    if range.0 >= range.1 {
        range.0
    } else {
        rng.gen_range(range.0..=range.1)
    }
}

fn fault(at_ns: u64, action: FaultAction, for_ns: Option<u64>) -> ScheduledFault {
    ScheduledFault { at_ns, action, for_ns, line: 0, when: None }
}

/// Draws this seed's chaos faults, in time order (a stable sort: faults at
/// one instant keep the order they were drawn in).
pub fn draw(scenario: &Scenario, chaos: &Chaos, rng: &mut ChaCha8Rng) -> Vec<ScheduledFault> {
    let mut d = Draw::new(scenario, rng);
    // One kind after the other, in this order: the order is part of every
    // seed's random stream.
    if let Some(rate) = chaos.partitions {
        d.partitions(rate, chaos.partition_clients, chaos.partition_replacements);
    }
    if let Some(rate) = chaos.crashes {
        d.anyone(rate, FaultAction::Crash);
    }
    if let Some(rate) = chaos.pauses {
        d.anyone(rate, FaultAction::Pause);
    }
    if let Some(jumps) = chaos.clock_jumps {
        d.clock_jumps(jumps);
    }
    if let Some(rate) = chaos.leader_crashes {
        d.leader_crashes(rate);
    }
    if let Some(rate) = chaos.holder_pauses {
        d.holder_pauses(rate);
    }
    if let Some(mean_ns) = chaos.membership_ns {
        d.replacements(mean_ns);
    }
    if let Some(rate) = chaos.leader_isolations {
        d.leader_isolations(rate, chaos.leader_isolation_clients);
    }
    if let Some((rate, by_ns)) = chaos.slow_links {
        d.slow_links(rate, by_ns);
    }
    if let Some(rate) = chaos.crash_points {
        d.at_points(rate, FaultAction::Crash);
    }
    if let Some(rate) = chaos.pause_points {
        d.at_points(rate, FaultAction::Pause);
    }
    if let Some(jumps) = chaos.timer_jumps {
        d.timer_jumps(jumps);
    }
    d.drawn.sort_by_key(|f| f.at_ns);
    d.drawn
}

/// One seed's fault draw: whom faults may aim at, and what is drawn so far.
struct Draw<'a> {
    scenario: &'a Scenario,
    rng: &'a mut ChaCha8Rng,
    servers: Vec<Selector>,
    clients: Vec<Selector>,
    everyone: Vec<Selector>,
    replaceable: Replaceable,
    drawn: Vec<ScheduledFault>,
}

impl<'a> Draw<'a> {
    fn new(scenario: &'a Scenario, rng: &'a mut ChaCha8Rng) -> Draw<'a> {
        let servers: Vec<Selector> = (1..=scenario.cluster.servers).map(Selector::Server).collect();
        let clients: Vec<Selector> = (1..=scenario.client_count()).map(Selector::Client).collect();
        let everyone: Vec<Selector> = servers.iter().chain(clients.iter()).cloned().collect();
        let replaceable = Replaceable::draw(scenario, rng);
        Draw { scenario, rng, servers, clients, everyone, replaceable, drawn: Vec::new() }
    }

    /// When faults of a kind with this mean interval start, over the run.
    fn arrivals(&mut self, mean_ns: u64) -> Vec<u64> {
        arrivals(mean_ns, self.scenario.duration_ns, self.rng)
    }

    fn partitions(&mut self, rate: ChaosRate, with_clients: f64, replacements: f64) {
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let Some(groups) = self.partition_groups(with_clients) else { continue };
            let for_ns = draw_for(rate.for_ns, self.rng);
            self.drawn.push(fault(at_ns, FaultAction::Partition(groups), Some(for_ns)));
            if replacements > 0.0 && self.rng.gen_bool(replacements) {
                // Failover automation reacts while the cut is fresh: within
                // two election timeouts, often before a new leader exists.
                let delay_ns = self.rng.gen_range(0..=2 * self.scenario.cluster.election_timeout_ns.1);
                let at_ns = (at_ns + delay_ns).min(self.scenario.duration_ns);
                self.drawn.extend(self.replaceable.replacement(at_ns, self.rng));
            }
        }
    }

    /// The servers cut in two at a drawn point (`None` when one side came
    /// out empty), the clients spread over both sides with probability
    /// `with_clients`.
    fn partition_groups(&mut self, with_clients: f64) -> Option<Vec<Vec<Selector>>> {
        let mut shuffled = self.servers.clone();
        shuffled.shuffle(self.rng);
        let cut = self.rng.gen_range(1..shuffled.len().max(2));
        let (a, b) = shuffled.split_at(cut.min(shuffled.len()));
        if a.is_empty() || b.is_empty() {
            return None;
        }
        let (mut a, mut b) = (sorted(a), sorted(b));
        if with_clients > 0.0 && self.rng.gen_bool(with_clients) {
            // Clients too: one that lands with a minority reaches only
            // servers that may still believe they lead.
            self.spread_clients(&mut a, &mut b);
        }
        Some(vec![a, b])
    }

    /// Each client drawn to one side or the other, a fair coin each.
    fn spread_clients(&mut self, a: &mut Vec<Selector>, b: &mut Vec<Selector>) {
        for c in &self.clients {
            if self.rng.gen_bool(0.5) {
                a.push(c.clone())
            } else {
                b.push(c.clone())
            }
        }
    }

    /// Crashes or pauses of any process, server or client.
    fn anyone(&mut self, rate: ChaosRate, action: fn(Selector) -> FaultAction) {
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let target = self.everyone.choose(self.rng).cloned().expect("a scenario has servers");
            let for_ns = draw_for(rate.for_ns, self.rng);
            self.drawn.push(fault(at_ns, action(target), Some(for_ns)));
        }
    }

    fn clock_jumps(&mut self, jumps: ChaosJumps) {
        for at_ns in self.arrivals(jumps.mean_interval_ns) {
            let target = self.everyone.choose(self.rng).cloned().expect("a scenario has servers");
            let jump_ns = draw_jump(jumps.jump_ns, self.rng);
            self.drawn.push(fault(at_ns, FaultAction::Clock { target, drift: None, jump_ns: Some(jump_ns) }, None));
        }
    }

    fn leader_crashes(&mut self, rate: ChaosRate) {
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let for_ns = draw_for(rate.for_ns, self.rng);
            self.drawn.push(fault(at_ns, FaultAction::Crash(Selector::Leader), Some(for_ns)));
        }
    }

    fn holder_pauses(&mut self, rate: ChaosRate) {
        // `holder:` names a lock's holder or a singleton role's.
        let keys: Vec<&str> = self.scenario.lock_keys().into_iter().chain(self.scenario.singleton_roles()).collect();
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let Some(key) = keys.choose(self.rng) else { break };
            let action = FaultAction::Pause(Selector::Holder(key.to_string()));
            let for_ns = draw_for(rate.for_ns, self.rng);
            self.drawn.push(fault(at_ns, action, Some(for_ns)));
        }
    }

    fn replacements(&mut self, mean_ns: u64) {
        for at_ns in self.arrivals(mean_ns) {
            self.drawn.extend(self.replaceable.replacement(at_ns, self.rng));
        }
    }

    /// Two one-way blocks resolved at one instant: the leader to every
    /// server, and every server to the leader; clients reach everyone. With
    /// probability `with_clients`, a zone cut off instead (`leader_zone`).
    fn leader_isolations(&mut self, rate: ChaosRate, with_clients: f64) {
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let for_ns = Some(draw_for(rate.for_ns, self.rng));
            if with_clients > 0.0 && self.rng.gen_bool(with_clients) {
                let groups = self.leader_zone();
                self.drawn.push(fault(at_ns, FaultAction::Partition(groups), for_ns));
                continue;
            }
            let servers = self.servers.clone();
            self.drawn.push(fault(at_ns, FaultAction::Block { from: Selector::Leader, to: servers.clone() }, for_ns));
            for s in servers {
                self.drawn.push(fault(at_ns, FaultAction::Block { from: s, to: vec![Selector::Leader] }, for_ns));
            }
        }
    }

    /// A zone cut off with the leader: the clients are drawn to its side or
    /// the others'. The other side names every server, spares included
    /// (they may have joined); the leader, named by role, stays on its own
    /// side.
    fn leader_zone(&mut self) -> Vec<Vec<Selector>> {
        let cluster = &self.scenario.cluster;
        let mut zone = vec![Selector::Leader];
        let mut rest: Vec<Selector> = (1..=cluster.servers + cluster.spares).map(Selector::Server).collect();
        self.spread_clients(&mut zone, &mut rest);
        vec![zone, rest]
    }

    fn slow_links(&mut self, rate: ChaosRate, by_ns: (u64, u64)) {
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let from = [Selector::Leader, Selector::RandomServer].choose(self.rng).cloned().expect("two");
            let action = FaultAction::Delay { from, to: self.servers.clone(), by_ns: draw_for(by_ns, self.rng) };
            let for_ns = draw_for(rate.for_ns, self.rng);
            self.drawn.push(fault(at_ns, action, Some(for_ns)));
        }
    }

    /// Crashes or pauses at a fault point drawn among every point.
    fn at_points(&mut self, rate: ChaosRate, action: fn(Selector) -> FaultAction) {
        let points = Point::all();
        for at_ns in self.arrivals(rate.mean_interval_ns) {
            let point = *points.choose(self.rng).expect("points exist");
            let target = point_target(point, self.rng);
            let mut f = fault(at_ns, action(target), Some(draw_for(rate.for_ns, self.rng)));
            f.when = Some(point);
            self.drawn.push(f);
        }
    }

    fn timer_jumps(&mut self, jumps: ChaosJumps) {
        for at_ns in self.arrivals(jumps.mean_interval_ns) {
            let target = [Selector::Leader, Selector::RandomServer, Selector::RandomClient].choose(self.rng).cloned().expect("three");
            let jump_ns = draw_jump(jumps.jump_ns, self.rng);
            let mut f = fault(at_ns, FaultAction::Clock { target, drift: None, jump_ns: Some(jump_ns) }, None);
            f.when = Some(Point::Timer);
            self.drawn.push(f);
        }
    }
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
    fn replacement(&self, at_ns: u64, rng: &mut ChaCha8Rng) -> Vec<ScheduledFault> {
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
        crate::parse(text, "c.toml").unwrap_or_else(|e| panic!("{e}"))
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
        let adds: Vec<&ScheduledFault> = e.faults.iter().filter(|f| matches!(f.action, FaultAction::Add(_))).collect();
        assert!(!adds.is_empty());
        for add in adds {
            let removed_then = e.faults.iter().any(|f| f.at_ns == add.at_ns && matches!(f.action, FaultAction::Remove(_)));
            assert!(removed_then, "a replacement is an add and a remove at {}", add.at_ns);
        }
    }
}
