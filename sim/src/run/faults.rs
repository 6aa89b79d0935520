//! The fault injector: carries out the scenario's timeline (and the faults
//! chaos drew) at their true times, undoes each after its `for`, and heals
//! everything when the settle phase begins.
//!
//! Selectors are resolved when the fault fires (`leader` is whoever leads
//! then); the undo acts on what was resolved, not on a fresh resolution.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use leasesim_core::raft::ConfChange;
use madsim::runtime::Handle;
use madsim::task::NodeId as SimNodeId;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::world::points::{Armed, CrashRequest, PointAction};
use crate::world::wire::Wire;
use crate::world::World;
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_judge::vocab::Proc;
use leasesim_scenario::{FaultAction, MessageEffect, Point, Scenario, Selector};

/// Something the injector does at a true time.
#[derive(Clone, Debug)]
pub enum Step {
    Fire { id: usize, action: FaultAction, for_ns: Option<u64> },
    Undo { id: usize },
}

/// What a fired fault did, so its undo can reverse exactly that.
#[derive(Clone, Debug)]
enum Done {
    Links(Vec<(Proc, Proc)>),
    Slowed(Vec<(Proc, Proc)>, u64),
    Crashed(Proc),
    Paused(Proc),
    Loss(f64),
    Aimed,
    Nothing,
}

pub struct Injector {
    handle: Handle,
    world: Arc<World>,
    scenario: Arc<Scenario>,
    ids: BTreeMap<Proc, SimNodeId>,
    rng: ChaCha8Rng,
    crashed: BTreeSet<Proc>,
    paused: BTreeSet<Proc>,
    active: BTreeMap<usize, Done>,
}

impl Injector {
    pub fn new(handle: Handle, world: Arc<World>, scenario: Arc<Scenario>, ids: BTreeMap<Proc, SimNodeId>, rng: ChaCha8Rng) -> Self {
        Injector { handle, world, scenario, ids, rng, crashed: BTreeSet::new(), paused: BTreeSet::new(), active: BTreeMap::new() }
    }

    pub fn crashed(&self) -> &BTreeSet<Proc> {
        &self.crashed
    }

    fn note(&self, action: String) {
        self.world.record(Proc::Admin, Event::Fault { action });
    }

    fn skip(&self, action: String, why: String) {
        self.world.record(Proc::Admin, Event::FaultSkipped { action, why });
    }

    fn servers(&self) -> Vec<Proc> {
        (1..=self.scenario.cluster.servers + self.scenario.cluster.spares).map(Proc::Server).collect()
    }

    fn clients(&self) -> Vec<Proc> {
        (1..=self.scenario.client_count()).map(Proc::Client).collect()
    }

    /// Resolves a selector now; `None` when it matches nothing.
    fn resolve(&mut self, selector: &Selector) -> Option<Proc> {
        match selector {
            Selector::Server(n) => Some(Proc::Server(*n)),
            Selector::Client(n) => Some(Proc::Client(*n)),
            Selector::Store => Some(Proc::Store),
            Selector::Leader => self.world.leader().map(Proc::Server),
            Selector::Holder(key) => self.world.holder(key).map(Proc::Client),
            Selector::Follower => {
                let leader = self.world.leader().map(Proc::Server);
                let followers: Vec<Proc> =
                    (1..=self.scenario.cluster.servers).map(Proc::Server).filter(|p| Some(*p) != leader && self.world.is_up(*p)).collect();
                followers.choose(&mut self.rng).copied()
            }
            Selector::RandomServer => self.servers().choose(&mut self.rng).copied(),
            Selector::RandomClient => self.clients().choose(&mut self.rng).copied(),
        }
    }

    /// Kills every node once the run has been recorded. madsim keeps a
    /// runtime's unfinished tasks in a queue that the tasks' own wakers point
    /// back to, so a runtime dropped with live tasks leaks them (and through
    /// them the whole world: disks, logs, observations) — a sweep then grows
    /// by megabytes per run. Killed nodes' tasks are dropped by the executor
    /// on its next turn, which the caller must give it.
    pub fn kill_everything(&self) {
        for id in self.ids.values() {
            self.handle.kill(*id);
        }
    }

    fn all_procs(&self) -> Vec<Proc> {
        self.ids.keys().copied().filter(|p| *p != Proc::Admin).collect()
    }

    fn block_links(&mut self, links: &[(Proc, Proc)]) {
        self.world.network().cut(links);
    }

    fn unblock_links(&mut self, links: &[(Proc, Proc)]) {
        self.world.network().mend(links);
    }

    pub fn fire(&mut self, id: usize, action: &FaultAction) {
        let text = describe(action);
        match self.carry_out(id, action, &text) {
            Ok(done) => {
                self.active.insert(id, done);
            }
            Err(why) => self.skip(text, why),
        }
    }

    /// Carries out `action` now: what it did (for its undo), or why it was
    /// skipped.
    fn carry_out(&mut self, id: usize, action: &FaultAction, text: &str) -> Result<Done, String> {
        const NO_MATCH: &str = "the selector matched no process";
        const NO_FROM: &str = "`from` matched no process";
        match action {
            FaultAction::Partition(groups) => Ok(self.partition(groups)),
            FaultAction::Isolate(selector) => {
                let p = self.resolve(selector).ok_or(NO_MATCH)?;
                let links: Vec<(Proc, Proc)> = self.all_procs().into_iter().filter(|q| *q != p).flat_map(|q| [(p, q), (q, p)]).collect();
                self.note(format!("isolate {p}"));
                self.block_links(&links);
                Ok(Done::Links(links))
            }
            FaultAction::Block { from, to } => {
                let (links, shown) = self.one_way_links(from, to).ok_or(NO_FROM)?;
                self.note(format!("block {shown}"));
                self.block_links(&links);
                Ok(Done::Links(links))
            }
            FaultAction::Delay { from, to, by_ns } => {
                let (links, shown) = self.one_way_links(from, to).ok_or(NO_FROM)?;
                self.note(format!("delay {shown} by up to {}", leasesim_core::fmt_secs(*by_ns)));
                self.world.network().slow(&links, *by_ns);
                Ok(Done::Slowed(links, *by_ns))
            }
            FaultAction::Crash(selector) => match self.resolve(selector).ok_or(NO_MATCH)? {
                p if self.crashed.contains(&p) => Err(format!("{p} is already down")),
                p => {
                    self.crash(p);
                    Ok(Done::Crashed(p))
                }
            },
            FaultAction::Pause(selector) => match self.resolve(selector).ok_or(NO_MATCH)? {
                p if self.paused.contains(&p) || self.crashed.contains(&p) => Err(format!("{p} is already paused or down")),
                p => {
                    self.handle.pause(self.ids[&p]);
                    self.paused.insert(p);
                    self.world.record(p, Event::Paused);
                    Ok(Done::Paused(p))
                }
            },
            FaultAction::Clock { target, drift, jump_ns } => {
                let p = self.resolve(target).ok_or(NO_MATCH)?;
                self.world.set_clock(p, *drift, *jump_ns);
                self.note(format!("clock of {p}: {}", text.trim_start_matches("clock ")));
                Ok(Done::Nothing)
            }
            FaultAction::Loss(p) => {
                let previous = self.world.network().loss();
                self.world.network().set_loss(*p);
                self.note(format!("loss {p}"));
                Ok(Done::Loss(previous))
            }
            FaultAction::Add(n) => {
                self.membership(text.to_string(), ConfChange::AddServer(*n));
                Ok(Done::Nothing)
            }
            FaultAction::Messages(fault) => {
                self.note(text.to_string());
                self.world.network().aim_at(id, *fault);
                Ok(Done::Aimed)
            }
            FaultAction::Remove(selector) => match self.resolve(selector) {
                Some(Proc::Server(n)) => {
                    self.membership(text.to_string(), ConfChange::RemoveServer(n));
                    Ok(Done::Nothing)
                }
                _ => Err("the selector matched no server".into()),
            },
        }
    }

    /// Cuts every link between two of `groups` as they resolve now. A
    /// process a role names (`leader`, `holder:KEY`, …) is on that side
    /// only, even where another group names it by name: `[["leader", "c1"],
    /// ["s1", "s2", "s3"]]` cuts whoever leads, with c1, from the other
    /// servers.
    fn partition(&mut self, groups: &[Vec<Selector>]) -> Done {
        let mut named: Vec<Vec<(Proc, bool)>> = Vec::new();
        for group in groups {
            named.push(group.iter().filter_map(|s| self.resolve(s).map(|p| (p, s.is_fixed()))).collect());
        }
        let by_role: BTreeSet<Proc> = named.iter().flatten().filter(|(_, fixed)| !fixed).map(|(p, _)| *p).collect();
        let resolved: Vec<Vec<Proc>> = named
            .into_iter()
            .map(|g| g.into_iter().filter(|(p, fixed)| !fixed || !by_role.contains(p)).map(|(p, _)| p).collect())
            .collect();
        let mut links = Vec::new();
        for (i, a) in resolved.iter().enumerate() {
            for (j, b) in resolved.iter().enumerate() {
                if i != j {
                    links.extend(a.iter().flat_map(|x| b.iter().filter(move |y| *y != x).map(move |y| (*x, *y))));
                }
            }
        }
        let shown: Vec<String> = resolved.iter().map(|g| g.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")).collect();
        self.note(format!("partition [{}]", shown.join("] | [")));
        self.block_links(&links);
        Done::Links(links)
    }

    /// The directed links from `from` to each of `to` as they resolve now
    /// (a process never to itself), and how the trace shows them; `None`
    /// when `from` matches nothing.
    fn one_way_links(&mut self, from: &Selector, to: &[Selector]) -> Option<(Vec<(Proc, Proc)>, String)> {
        let p = self.resolve(from)?;
        let targets: Vec<Proc> = to.iter().filter_map(|s| self.resolve(s)).filter(|q| *q != p).collect();
        let shown: Vec<String> = targets.iter().map(|q| q.to_string()).collect();
        Some((targets.iter().map(|q| (p, *q)).collect(), format!("{p} -> [{}]", shown.join(","))))
    }

    /// Arms fault `id` at `point` (`when = …`): the first process its
    /// selector names when it reaches the point gets it (`world::points`).
    pub fn arm(&mut self, id: usize, action: &FaultAction, for_ns: Option<u64>, point: Point) {
        let settle_at_ns = self.scenario.duration_ns;
        let (selector, armed) = match action {
            FaultAction::Crash(s) => (s, PointAction::Crash { for_ns }),
            FaultAction::Pause(s) => (s, PointAction::Pause { for_ns, settle_at_ns }),
            FaultAction::Clock { target, drift, jump_ns } => (target, PointAction::Clock { drift: *drift, jump_ns: *jump_ns }),
            other => unreachable!("the loader allows `when` only on crash, pause and clock faults, not {other:?}"),
        };
        self.note(format!("arm #{id}: {} when {point}", describe(action)));
        self.world.points.arm(Armed { fault: id, selector: selector.clone(), point, action: armed });
    }

    /// Carries out a crash a process reached at a point; returns when it
    /// restarts (`None`: with the settle phase).
    pub fn crash_at_point(&mut self, request: CrashRequest) -> Option<u64> {
        let p = request.proc;
        if self.crashed.contains(&p) {
            return None;
        }
        self.crash(p);
        self.active.insert(request.fault, Done::Crashed(p));
        request.for_ns.map(|for_ns| self.world.now_ns() + for_ns)
    }

    fn membership(&mut self, text: String, change: ConfChange) {
        match self.world.leader() {
            None => self.skip(text, "no leader to ask".into()),
            Some(leader) => {
                self.note(format!("ask s{leader}: {change:?}"));
                self.world.send(Proc::Admin, Proc::Server(leader), Wire::Admin(change));
            }
        }
    }

    fn crash(&mut self, p: Proc) {
        self.handle.kill(self.ids[&p]);
        self.world.network().crash(p);
        self.paused.remove(&p);
        self.crashed.insert(p);
        self.world.set_up(p, false);
        if let Proc::Server(n) = p {
            let lost = self.world.disk(n).crash();
            self.world.record(p, Event::Fault { action: format!("crash: {lost} unsynced disk writes lost") });
        }
        self.world.record(p, Event::Crashed);
        if let Proc::Client(c) = p {
            // A dead client believes nothing.
            for key in self.scenario.lock_keys() {
                if self.world.holder(key) == Some(c) {
                    self.world.set_holder(key, None);
                    self.world.record(p, Event::BeliefEnded { key: key.to_string(), why: BeliefEnd::Crashed });
                }
            }
        }
    }

    fn restart(&mut self, p: Proc) {
        if self.crashed.remove(&p) {
            self.handle.restart(self.ids[&p]);
            self.world.set_up(p, true);
            self.world.record(p, Event::Restarted);
        }
    }

    fn resume(&mut self, p: Proc) {
        if self.paused.remove(&p) {
            self.handle.resume(self.ids[&p]);
            self.world.record(p, Event::Resumed);
        }
    }

    pub fn undo(&mut self, id: usize) {
        match self.active.remove(&id) {
            Some(Done::Links(links)) => {
                self.unblock_links(&links);
                self.note(format!("heal links of fault #{id}"));
            }
            Some(Done::Slowed(links, by_ns)) => {
                self.world.network().unslow(&links, by_ns);
                self.note(format!("links of fault #{id} back to speed"));
            }
            Some(Done::Crashed(p)) => self.restart(p),
            Some(Done::Paused(p)) => self.resume(p),
            Some(Done::Loss(previous)) => {
                self.world.network().set_loss(previous);
                self.note(format!("loss back to {previous}"));
            }
            Some(Done::Aimed) => {
                self.world.network().stop_aiming(id);
                self.note(format!("messages of fault #{id} back to normal"));
            }
            Some(Done::Nothing) | None => {}
        }
    }

    /// The settle phase: every link unblocked, every process resumed and
    /// restarted, loss back to the scenario's. Clock changes stay.
    pub fn heal_all(&mut self) {
        self.world.network().mend_all();
        for p in self.paused.clone() {
            self.resume(p);
        }
        for p in self.crashed.clone() {
            self.restart(p);
        }
        self.world.network().set_loss(self.scenario.network.loss);
        self.world.points.disarm_all();
        self.active.clear();
        self.world.record(Proc::Admin, Event::SettleBegins);
    }
}

/// A one-line description of an action, as a trace shows it.
pub fn describe(action: &FaultAction) -> String {
    let sel = |s: &Selector| s.to_string();
    match action {
        FaultAction::Partition(groups) => {
            let shown: Vec<String> = groups.iter().map(|g| g.iter().map(sel).collect::<Vec<_>>().join(",")).collect();
            format!("partition [{}]", shown.join("] | ["))
        }
        FaultAction::Isolate(s) => format!("isolate {}", sel(s)),
        FaultAction::Block { from, to } => format!("block {} -> [{}]", sel(from), to.iter().map(sel).collect::<Vec<_>>().join(",")),
        FaultAction::Delay { from, to, by_ns } => {
            format!("delay {} -> [{}] by {}", sel(from), to.iter().map(sel).collect::<Vec<_>>().join(","), leasesim_core::fmt_secs(*by_ns))
        }
        FaultAction::Crash(s) => format!("crash {}", sel(s)),
        FaultAction::Pause(s) => format!("pause {}", sel(s)),
        FaultAction::Clock { target, drift, jump_ns } => {
            let mut parts = vec![format!("clock {}", sel(target))];
            if let Some(d) = drift {
                parts.push(format!("drift={d}"));
            }
            if let Some(j) = jump_ns {
                parts.push(format!("jump={}{}", if *j < 0 { "-" } else { "+" }, leasesim_core::fmt_secs(j.unsigned_abs())));
            }
            parts.join(" ")
        }
        FaultAction::Loss(p) => format!("loss {p}"),
        FaultAction::Add(n) => format!("add s{n}"),
        FaultAction::Remove(s) => format!("remove {}", sel(s)),
        FaultAction::Messages(m) => {
            let effect = match m.effect {
                MessageEffect::Delay(ns) => format!("delayed by {}", leasesim_core::fmt_secs(ns)),
                MessageEffect::Reorder(ns) => format!("reordered within {}", leasesim_core::fmt_secs(ns)),
                MessageEffect::Drop(p) => format!("dropped with probability {p}"),
                MessageEffect::Duplicate(ns) => format!("duplicated {} later", leasesim_core::fmt_secs(ns)),
            };
            format!("messages {} {effect}", m.kind)
        }
    }
}

/// Orders fires and undos by time (fires before undos at one instant; then
/// file order), so the injector's behaviour depends only on the scenario.
pub fn timeline(faults: &[(u64, FaultAction, Option<u64>)]) -> Vec<(u64, Step)> {
    let mut steps = Vec::new();
    for (id, (at_ns, action, for_ns)) in faults.iter().enumerate() {
        steps.push((*at_ns, 0, id, Step::Fire { id, action: action.clone(), for_ns: *for_ns }));
        if let Some(for_ns) = for_ns {
            steps.push((at_ns + for_ns, 1, id, Step::Undo { id }));
        }
    }
    steps.sort_by_key(|(at, kind, id, _)| (*at, *kind, *id));
    steps.into_iter().map(|(at, _, _, step)| (at, step)).collect()
}
