//! The scenario's `[[fault]]` timeline, played for real at its `at` times
//! (true time since the run began) and undone after its `for`: crash =
//! SIGKILL, then a restart from the same data directory; pause =
//! SIGSTOP/SIGCONT for a member or the data store (which a crash restarts
//! on its files, as a member on its data directory), the client's gate
//! for a client; a
//! client's crash aborts its task and starts a fresh one after `for`;
//! partitions, isolation, blocks, delays and loss on the link proxies;
//! clock changes through the member's control endpoint; `messages` faults
//! on Raft kinds aimed on every peer link proxy, and on client kinds on
//! the runner's clients (`clients/aimed.rs`); `add` and `remove` asked of
//! the leader (`membership.rs`). When the fault phase ends, everything is
//! healed (the simulator's settle phase).
//!
//! Each fault, and each one skipped because its selector matched nobody
//! then, is recorded in the run's log (`Fault`, `FaultSkipped`,
//! `Crashed`, `Paused`…), so the verdict's evidence shows what was done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use leasesim_core::duration::format_duration;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::{Proc as JudgeProc, SimClock};
use leasesim_node::faults::aimed::{AimedFault, FrameEffect, FrameKind};
use leasesim_node::faults::proxy::LinkFault;
use leasesim_scenario::{FaultAction, MessageEffect, MessageFault, Scenario, ScheduledFault, Selector};
use rand_chacha::ChaCha8Rng;

use crate::clients::tasks::Clients;
use crate::clients::Ctx;
use crate::cluster::Cluster;
use crate::gate::Gate;
use crate::membership::{Change, Leader};
use crate::selectors::{resolve, Who};

/// What undoes a fault that was played.
pub(crate) enum Undo {
    Restart(usize),
    /// Start the data store again on its files.
    RestartStore,
    /// Start a fresh client of this id (`clients/tasks.rs`).
    RestartClient(u64),
    Resume(Who),
    /// Open the gate of this client, closed at its point (`routes.rs`).
    ResumeAtPoint(u64),
    /// Put these directed links back to the base fault (and mend the
    /// clients' routes among them, if the fault cut them).
    Links {
        links: Vec<(Who, Who)>,
        cut: bool,
    },
    /// Stop the `messages` fault of this order.
    Unaim(usize),
}

pub struct Player<'a> {
    pub scenario: &'a Scenario,
    pub cluster: &'a mut Cluster,
    pub ctx: &'a Arc<Ctx>,
    pub gates: &'a [Gate],
    /// Faults waiting at the clients' `timer` point (`timer_points.rs`).
    pub timer_points: &'a crate::timer_points::TimerPoints,
    pub rng: ChaCha8Rng,
    /// The servers' and clients' clocks as played (the judge maps the
    /// clients' deadlines back to true time with them, and reads the
    /// assumptions from them).
    pub clocks: BTreeMap<JudgeProc, SimClock>,
    /// Whom the current fault's selectors named (`leader=s2`).
    pub resolved: Vec<String>,
    /// Crash points armed and not yet reached (`crash_points.rs`).
    pub armed: Vec<crate::crash_points::Armed>,
    /// `messages` faults on Raft kinds in force, by order (every peer
    /// link carries them all).
    pub aimed: Vec<(usize, AimedFault)>,
    pub clients: &'a mut Clients,
    /// Membership changes asked and not yet answered (`membership.rs`).
    pub asked: Vec<tokio::task::JoinHandle<()>>,
    /// Clock faults (member, drift, jump) drawn for a member while it was
    /// stopped: played when it runs again (`Player::clock`).
    pub deferred_clocks: Vec<(usize, Option<f64>, Option<i64>)>,
    /// How far each member's event log was read for clock entries
    /// (`crash_points.rs`).
    pub clock_lines_read: Vec<u64>,
}

impl Player<'_> {
    /// Plays every fault and heals at the end of the fault phase; the
    /// servers' clocks as played, or the first error that stopped it (a
    /// member that would not restart).
    pub async fn play(mut self) -> Result<BTreeMap<JudgeProc, SimClock>, String> {
        let mut faults: Vec<&ScheduledFault> = self.scenario.faults.iter().collect();
        faults.sort_by_key(|f| f.at_ns);
        // (when, order) → what to undo then.
        let mut undos: BTreeMap<(u64, usize), Undo> = BTreeMap::new();
        let mut next = faults.into_iter().enumerate().peekable();
        loop {
            let next_undo = undos.keys().next().copied();
            let next_fault_ns = next.peek().map(|(_, f)| f.at_ns);
            // While a crash or pause point is armed, look every POLL_NS
            // whether its member died or stopped there.
            let poll_ns = self.any_armed().then(|| self.ctx.seen.now_ns() + crate::crash_points::POLL_NS);
            let Some(due_ns) = [next_undo.map(|(undo_ns, _)| undo_ns), next_fault_ns, poll_ns].into_iter().flatten().min() else {
                break;
            };
            if due_ns >= self.scenario.duration_ns {
                break;
            }
            self.sleep_until(due_ns).await;
            self.watch_armed(&mut undos).await?;
            if let Some(key) = next_undo.filter(|(undo_ns, _)| *undo_ns == due_ns) {
                let undo = undos.remove(&key).expect("just seen");
                self.undo(undo).await?;
            } else if next_fault_ns != Some(due_ns) {
                continue;
            } else if let Some((order, fault)) = next.next() {
                if let Some(point) = fault.when {
                    self.arm(order, fault, point).await?;
                } else if let Some(undo) = self.fire(order, fault).await? {
                    // Without `for`, it lasts until the settle phase heals it.
                    let until_ns = fault.for_ns.map_or(u64::MAX, |for_ns| fault.at_ns + for_ns);
                    undos.insert((until_ns, order), undo);
                }
            }
        }
        self.sleep_until(self.scenario.duration_ns).await;
        self.watch_armed(&mut undos).await?;
        let paused = self.disarm_unreached().await?;
        // A client whose route paused it after the last look and before
        // the disarm: recorded, and resumed with the rest by the heal.
        self.watch_clients(&mut undos);
        self.heal(undos.into_values().collect()).await?;
        self.disarm_resumed(paused).await?;
        self.await_answers().await;
        self.client_clocks_into_model();
        Ok(self.clocks)
    }

    /// Every client's clock faults into the judge's model of its clock, in
    /// the order its clock made them (from the timeline or at its timer
    /// point): the two are made by different tasks, and the model's
    /// history only grows.
    fn client_clocks_into_model(&mut self) {
        for c in 1..=self.scenario.client_count() {
            for (at_ns, drift, jump_ns) in self.ctx.clock(c).faults() {
                self.judge_clock_at(at_ns, JudgeProc::Client(c), drift, jump_ns);
            }
        }
    }

    async fn sleep_until(&self, at_ns: u64) {
        let now_ns = self.ctx.seen.now_ns();
        if at_ns > now_ns {
            tokio::time::sleep(Duration::from_nanos(at_ns - now_ns)).await;
        }
    }

    pub(crate) fn note(&self, proc: JudgeProc, event: Event) {
        self.ctx.seen.record_as(proc, event);
    }

    pub(crate) async fn who(&mut self, selector: &Selector, fault: &ScheduledFault) -> Option<Who> {
        match resolve(selector, self.cluster, self.ctx, self.scenario.client_count(), &mut self.rng).await {
            Ok(who) => {
                self.resolved.push(if selector.to_string() == who.to_string() { who.to_string() } else { format!("{selector}={who}") });
                Some(who)
            }
            Err(why) => {
                let action = format!("{}: {} {selector}", origin(fault), fault.action.name());
                self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
                None
            }
        }
    }

    /// Plays one fault; what undoes it (`None`: skipped, or not undone).
    async fn fire(&mut self, order: usize, fault: &ScheduledFault) -> Result<Option<Undo>, String> {
        self.resolved.clear();
        let undo = match &fault.action {
            FaultAction::Crash(s) => match self.who(s, fault).await {
                Some(Who::Server(i)) => {
                    self.cluster.members[i].proc.kill();
                    self.note(server(i), Event::Crashed);
                    Some(Undo::Restart(i))
                }
                Some(Who::Client(c)) => self.clients.crash(c).then_some(Undo::RestartClient(c)),
                Some(Who::Store) => {
                    self.cluster.store.kill();
                    self.note(JudgeProc::Store, Event::Crashed);
                    Some(Undo::RestartStore)
                }
                None => None,
            },
            FaultAction::Pause(s) => match self.who(s, fault).await {
                Some(who) => {
                    self.set_paused(who, true)?;
                    Some(Undo::Resume(who))
                }
                None => None,
            },
            FaultAction::Clock { target, drift, jump_ns } => {
                self.clock(target, *drift, *jump_ns, fault).await?;
                None
            }
            FaultAction::Loss(p) => {
                Some(self.links(all_links(self.cluster.members.len()), LinkFault { loss: *p, ..self.cluster.base_link })?)
            }
            FaultAction::Messages(m) => {
                self.resolved.push(format!("{}={}", m.kind, m.effect.key()));
                self.aim(order, *m)?;
                Some(Undo::Unaim(order))
            }
            FaultAction::Add(n) => {
                let peer = self.cluster.members[*n as usize - 1].peer_addr;
                self.resolved.push(format!("s{n}"));
                self.membership(fault, Change::Add(*n, peer)).await;
                None
            }
            FaultAction::Remove(s) => {
                if let Some(Who::Server(i)) = self.who(s, fault).await {
                    self.membership(fault, Change::Remove(i as u64 + 1)).await;
                }
                None
            }
            action => self.network(action, fault).await?,
        };
        let once = matches!(fault.action, FaultAction::Clock { .. } | FaultAction::Add(_) | FaultAction::Remove(_));
        if undo.is_some() || once && !self.resolved.is_empty() {
            let lasts = fault.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let action = format!("{}: {} {}{lasts}", origin(fault), fault.action.name(), self.resolved.join(" "));
            self.note(JudgeProc::Admin, Event::Fault { action });
        }
        Ok(undo)
    }

    /// Asks whoever leads now for `change` (nobody leads: skipped, as the
    /// simulator skips it); the answer is recorded when it comes.
    async fn membership(&mut self, fault: &ScheduledFault, change: Change) {
        let Some(i) = self.cluster.leader().await else {
            let action = format!("{}: {}", origin(fault), fault.action.name());
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why: "no leader to ask".into() });
            self.resolved.clear();
            return;
        };
        let member = &self.cluster.members[i];
        let leader = Leader { n: i as u64 + 1, peer: member.peer_addr, client: member.client_addr.clone() };
        self.resolved.push(format!("(ask s{})", leader.n));
        self.asked.push(crate::membership::ask(self.ctx, leader, change));
    }

    /// Waits for the membership changes still unanswered, until the clients
    /// stop; one still unanswered then is dropped (its change may yet
    /// commit), and the log says so.
    async fn await_answers(&mut self) {
        for mut task in std::mem::take(&mut self.asked) {
            let left = self.ctx.until.saturating_duration_since(std::time::Instant::now());
            if tokio::time::timeout(left, &mut task).await.is_err() {
                task.abort();
                // Dropped once cancelled, with its hold on the run's context.
                let _ = task.await;
                let why = "no answer before the run ended".to_string();
                self.note(JudgeProc::Admin, Event::FaultSkipped { action: "a membership change".into(), why });
            }
        }
    }

    /// A clock fault: on a member through its control endpoint, on a client
    /// on its own clock; either way, in the judge's model of that clock.
    ///
    /// A member stopped (paused, by the runner or at a pause point) answers
    /// nothing: its change is played when it is resumed or restarted, in
    /// the judge's model too, so that the model stays the member's clock.
    /// The simulator changes a paused process's clock at once; the two
    /// differ only in the rate over the rest of the pause, when the
    /// process reads no clock, which shifts its readings after it by the
    /// change of rate times that time.
    async fn clock(&mut self, target: &Selector, drift: Option<f64>, jump_ns: Option<i64>, fault: &ScheduledFault) -> Result<(), String> {
        if matches!(target, Selector::Store) {
            // The data store reads no clock (`refuse.rs` notes it).
            return Ok(());
        }
        let change = crate::clients::clock::from_fault(drift, jump_ns);
        let proc = match self.who(target, fault).await {
            Some(Who::Server(i)) if self.stopped(i) => {
                self.deferred_clocks.push((i, drift, jump_ns));
                self.resolved.push("(played when it runs again)".into());
                return Ok(());
            }
            Some(Who::Server(i)) => {
                self.cluster.set_clock(i, &change).await?;
                server(i)
            }
            Some(Who::Client(c)) => {
                // In the clock's log, which the judge's model is built
                // from after the run (`client_clocks_into_model`).
                self.ctx.clock(c).apply_fault(drift, jump_ns).map_err(|e| format!("c{c}'s clock: {e}"))?;
                return Ok(());
            }
            // The data store reads no clock (`refuse.rs` notes it).
            Some(Who::Store) | None => return Ok(()),
        };
        self.judge_clock(proc, drift, jump_ns);
        Ok(())
    }

    /// The change in the judge's model of `proc`'s clock, now.
    fn judge_clock(&mut self, proc: JudgeProc, drift: Option<f64>, jump_ns: Option<i64>) {
        self.judge_clock_at(self.ctx.seen.now_ns(), proc, drift, jump_ns);
    }

    /// The change in the judge's model of `proc`'s clock, at true time
    /// `now_ns` (a member's clock entry's stamp, a poll ago).
    pub(crate) fn judge_clock_at(&mut self, now_ns: u64, proc: JudgeProc, drift: Option<f64>, jump_ns: Option<i64>) {
        let clock = self.clocks.entry(proc).or_insert_with(|| crate::clients::clock::judged(None));
        if let Some(d) = drift {
            clock.set_drift(now_ns, d);
        }
        if let Some(j) = jump_ns {
            clock.jump_wall(now_ns, j);
        }
    }

    /// Whether member `i` runs but is stopped (it answers nothing).
    fn stopped(&self, i: usize) -> bool {
        let proc = &self.cluster.members[i].proc;
        proc.is_running() && (proc.is_paused() || proc.stopped_itself())
    }

    /// Member `i` runs again: the clock faults drawn for it while it was
    /// stopped are played now, in order.
    async fn play_deferred_clocks(&mut self, i: usize) -> Result<(), String> {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred_clocks).into_iter().partition(|(j, ..)| *j == i);
        self.deferred_clocks = later;
        for (_, drift, jump_ns) in now {
            self.cluster.set_clock(i, &crate::clients::clock::from_fault(drift, jump_ns)).await?;
            self.judge_clock(server(i), drift, jump_ns);
            let action = format!("clock s{} (drawn while it was stopped)", i + 1);
            self.note(JudgeProc::Admin, Event::Fault { action });
        }
        Ok(())
    }

    /// Partitions, isolation, blocks and delays: the directed links they
    /// cut or slow, resolved as the simulator resolves them
    /// (`sim/src/run/faults.rs`): a selector in a group or a block's `to`
    /// that matches nobody now is left out, a `from` or an isolated
    /// process that matches nobody skips the fault.
    async fn network(&mut self, action: &FaultAction, fault: &ScheduledFault) -> Result<Option<Undo>, String> {
        let cut = LinkFault { cut: true, ..LinkFault::default() };
        let (links, link_fault) = match action {
            FaultAction::Partition(groups) => (between(&self.sides(groups).await), cut),
            FaultAction::Isolate(s) => {
                let Some(p) = self.who(s, fault).await else { return Ok(None) };
                let others = self.everyone().into_iter().filter(|q| *q != p);
                (others.flat_map(|q| [(p, q), (q, p)]).collect(), cut)
            }
            FaultAction::Block { from, to } | FaultAction::Delay { from, to, .. } => {
                let Some(a) = self.who(from, fault).await else { return Ok(None) };
                let mut links = Vec::new();
                for s in to {
                    if let Some(b) = self.quietly(s).await {
                        links.extend((a != b).then_some((a, b)));
                    }
                }
                let link_fault = match action {
                    FaultAction::Delay { by_ns, .. } => {
                        let base = self.cluster.base_link;
                        LinkFault { jitter_ms: base.jitter_ms + by_ns / 1_000_000, ..base }
                    }
                    _ => cut,
                };
                (links, link_fault)
            }
            other => unreachable!("{} is not a network fault", other.name()),
        };
        Ok(Some(self.links(links, link_fault)?))
    }

    /// A partition's groups as they resolve now. A process a role names
    /// (`leader`, `holder:KEY`, …) is on that side only, even where another
    /// group names it by name, as in the simulator.
    async fn sides(&mut self, groups: &[Vec<Selector>]) -> Vec<Vec<Who>> {
        let mut named: Vec<Vec<(Who, bool)>> = Vec::new();
        for group in groups {
            let mut side = Vec::new();
            for s in group {
                if let Some(who) = self.quietly(s).await {
                    side.push((who, s.is_fixed()));
                }
            }
            named.push(side);
        }
        let by_role: Vec<Who> = named.iter().flatten().filter(|(_, fixed)| !fixed).map(|(p, _)| *p).collect();
        let keep = |(p, fixed): &(Who, bool)| !fixed || !by_role.contains(p);
        named.into_iter().map(|side| side.iter().filter(|p| keep(p)).map(|(p, _)| *p).collect()).collect()
    }

    /// Whom `selector` names now, noted in the fault's line; `None` (and
    /// no skip noted) if nobody: the caller leaves it out.
    async fn quietly(&mut self, selector: &Selector) -> Option<Who> {
        let who = resolve(selector, self.cluster, self.ctx, self.scenario.client_count(), &mut self.rng).await.ok()?;
        self.resolved.push(if selector.to_string() == who.to_string() { who.to_string() } else { format!("{selector}={who}") });
        Some(who)
    }

    /// Every process of the run: the members, spares included, the
    /// clients and the store.
    fn everyone(&self) -> Vec<Who> {
        let servers = (0..self.cluster.members.len()).map(Who::Server);
        let clients = (1..=self.scenario.client_count()).map(Who::Client);
        servers.chain(clients).chain([Who::Store]).collect()
    }

    /// Sets `fault` on each of `links`: a member-to-member link on its
    /// proxy, a client's (cuts only: `refuse.rs`) on its route.
    fn links(&self, links: Vec<(Who, Who)>, fault: LinkFault) -> Result<Undo, String> {
        for (from, to) in &links {
            if let (Who::Server(a), Who::Server(b)) = (from, to) {
                self.cluster.set_link(*a, *b, fault)?;
            }
        }
        // A run whose faults cut a client's link has routes (`routes::needed`).
        let cut = fault.cut;
        if let Some(routes) = self.cluster.routes.as_ref().filter(|_| cut) {
            routes.cut(&links);
        }
        Ok(Undo::Links { links, cut })
    }

    pub(crate) fn set_paused(&mut self, who: Who, paused: bool) -> Result<(), String> {
        match who {
            Who::Server(i) => {
                let proc = &mut self.cluster.members[i].proc;
                if !proc.is_running() {
                    return Ok(());
                }
                proc.set_paused(paused)?;
            }
            Who::Client(c) => self.gates[c as usize - 1].set_paused(paused),
            Who::Store if !self.cluster.store.is_running() => return Ok(()),
            Who::Store => self.cluster.store.set_paused(paused)?,
        }
        let proc = match who {
            Who::Server(i) => server(i),
            Who::Client(c) => JudgeProc::Client(c),
            Who::Store => JudgeProc::Store,
        };
        self.note(proc, if paused { Event::Paused } else { Event::Resumed });
        Ok(())
    }

    async fn undo(&mut self, undo: Undo) -> Result<(), String> {
        match undo {
            Undo::Restart(i) => {
                self.cluster.restart(i).await?;
                self.note(server(i), Event::Restarted);
                self.play_deferred_clocks(i).await?;
                // The simulator's armed faults outlive a crash; a new
                // process has none.
                self.rearm(i).await;
            }
            Undo::RestartStore => {
                self.cluster.store.restart()?;
                self.note(JudgeProc::Store, Event::Restarted);
            }
            Undo::Resume(who) => {
                self.set_paused(who, false)?;
                if let Who::Server(i) = who {
                    self.play_deferred_clocks(i).await?;
                    // Entries armed while it was stopped.
                    self.send_armed(i).await;
                }
            }
            Undo::ResumeAtPoint(c) => {
                // A client crashed meanwhile was restarted with its gate
                // open: its pause ended with its process.
                if self.gates[c as usize - 1].release_point() && self.clients.is_up(c) {
                    self.note(JudgeProc::Client(c), Event::Resumed);
                }
            }
            Undo::RestartClient(c) => {
                // A fresh client is not paused (as the simulator's restart),
                // and its routes carry again if a point cut it off.
                self.gates[c as usize - 1].reset();
                if let Some(routes) = &self.cluster.routes {
                    routes.revive(c);
                }
                self.clients.restart(c);
            }
            Undo::Links { links, cut } => {
                for (from, to) in &links {
                    if let (Who::Server(a), Who::Server(b)) = (from, to) {
                        self.cluster.set_link(*a, *b, self.cluster.base_link)?;
                    }
                }
                if let Some(routes) = self.cluster.routes.as_ref().filter(|_| cut) {
                    routes.mend(&links);
                }
            }
            Undo::Unaim(order) => {
                self.ctx.aims.stop(order);
                self.aimed.retain(|(o, _)| *o != order);
                self.cluster.aim_links(&self.aimed.iter().map(|(_, f)| *f).collect::<Vec<_>>())?;
            }
        }
        Ok(())
    }

    /// A `messages` fault: on every peer link for a Raft kind, on the
    /// runner's clients for a client kind (`refuse.rs` let only those in).
    fn aim(&mut self, order: usize, m: MessageFault) -> Result<(), String> {
        let Some(kind) = FrameKind::parse(m.kind.name()) else {
            self.ctx.aims.aim(order, m);
            return Ok(());
        };
        let ms = |ns: u64| ns / 1_000_000;
        let effect = match m.effect {
            MessageEffect::Delay(ns) => FrameEffect::DelayMs(ms(ns)),
            MessageEffect::Reorder(ns) => FrameEffect::ReorderMs(ms(ns)),
            MessageEffect::Drop(p) => FrameEffect::Drop(p),
            MessageEffect::Duplicate(ns) => FrameEffect::DuplicateMs(ms(ns)),
        };
        self.aimed.push((order, AimedFault { kind, effect }));
        self.cluster.aim_links(&self.aimed.iter().map(|(_, f)| *f).collect::<Vec<_>>())
    }

    /// The settle phase: every fault still in force is undone.
    async fn heal(&mut self, undos: Vec<Undo>) -> Result<(), String> {
        self.note(JudgeProc::Admin, Event::SettleBegins);
        for undo in undos {
            self.undo(undo).await?;
        }
        self.cluster.heal_links()
    }
}

/// The wall clock's reading at true time 0 in the judge's clocks: only
/// differences between wall readings matter, and this leaves room for a
/// negative offset.
pub const WALL_BASE_NS: u64 = 1 << 60;

pub(crate) fn server(i: usize) -> JudgeProc {
    JudgeProc::Server(i as u64 + 1)
}

fn all_links(n: usize) -> Vec<(Who, Who)> {
    (0..n).flat_map(|a| (0..n).filter(move |b| *b != a).map(move |b| (Who::Server(a), Who::Server(b)))).collect()
}

/// Every directed link between two different sides.
fn between(sides: &[Vec<Who>]) -> Vec<(Who, Who)> {
    let mut links = Vec::new();
    for (x, side) in sides.iter().enumerate() {
        for (_, other) in sides.iter().enumerate().filter(|(y, _)| *y != x) {
            links.extend(side.iter().flat_map(|a| other.iter().filter(move |b| *b != a).map(move |b| (*a, *b))));
        }
    }
    links
}

/// Where a fault came from, for the run's log: its line in the file, or
/// `[chaos]` for one the seed's chaos drew (line 0).
pub(crate) fn origin(fault: &ScheduledFault) -> String {
    if fault.line == 0 {
        "[chaos]".to_string()
    } else {
        format!("line {}", fault.line)
    }
}
