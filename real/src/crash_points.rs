//! Crash points played for real (`when = "after-send:vote-reply"` on a
//! crash fault): at the fault's `at` the runner resolves its selector and
//! arms that failpoint in the member through its control endpoint, as an
//! entry under the fault's number; the member SIGKILLs itself when it
//! reaches a point an entry waits at (leasesim-node's
//! `faults/failpoint.rs`, as etcd's gofail failpoints), writing a
//! `crashed` line that names the entry to its event log first. The runner
//! sees it gone within [`POLL_NS`], reads which entry fired, records that
//! fault, and restarts the member from its data directory after the
//! fault's `for` (or when the settle phase heals), as for any crash. A
//! point not reached before the fault phase ends is disarmed and recorded
//! as skipped.
//!
//! As in the simulator's world (`sim/src/world/points.rs`), every armed
//! fault waits until reached, several at once on one member, and survives
//! the member's crash and restart: a new process starts with none armed,
//! so the runner arms its pending entries again once its control endpoint
//! answers (a member down or paused when its fault is armed gets it the
//! same way, on its restart or resume). What the simulator does not have:
//! between a restarted member's start and its control endpoint's first
//! answer (milliseconds) it passes its points unarmed.
//!
//! `random-server` waits, as in the simulator, in every member at once
//! (one entry under one claim file, `failpoint.rs`; a member down or
//! paused gets it when it is up again) and fires in whichever reaches the
//! point first; the runner records that member and disarms the entry in
//! the others. One difference from the simulator is left, printed as a
//! note: `leader` and `follower` are resolved when the fault is armed, not
//! when a process reaches the point (`leader` is the leader at `at`, not
//! whichever leader first reaches it).
//!
//! A pause at a member's point (`pause = "s2"` with `when`) is armed the
//! same way as an entry whose action is `pause`: the member writes a
//! `paused` line naming it and stops itself (SIGSTOP) at the point; the
//! runner sees it stopped (`/proc/PID/stat` state `T`) within [`POLL_NS`],
//! reads which entry it named, records that fault, takes the member for
//! paused and sends SIGCONT after the fault's `for` (or when the settle
//! phase heals). The member then goes on from the point, as the
//! simulator's host does after sleeping there (`sim/src/host/mod.rs`
//! `reach`). Where it differs: the simulator's pause starts at the
//! point's instant and lasts exactly `for`; here `for` is counted from
//! when the runner saw the stop (up to [`POLL_NS`] later, more on a
//! loaded machine), so the pause lasts that much longer; the member's own
//! `paused` line carries the point's true instant for the judge.
//!
//! A clock fault at a member's point (`clock = "s1"` with `when = "timer"`)
//! is an entry whose action is the clock change: the member changes its
//! own skewable clocks there and goes on, writing a `fault` line that
//! names the entry, stamped when it made the change. The runner reads the
//! lines as they come (every [`POLL_NS`]) and puts the change in the
//! judge's model of that clock, and in the skews a restart restores, at
//! that stamp: as in the simulator, where the host changes the clock at
//! the point before the step reads it.
//!
//! A client's point (`after-send:request`) is seen by the client's routes
//! (`routes.rs`), which cut the client off the moment a request has left
//! it; the runner then aborts its task, as for any client crash, and
//! starts it afresh after `for`. A pause there is carried out by the
//! route in that same instant: it closes the client's gate (`gate.rs`)
//! and stamps when; the runner, a poll later, records the fault and the
//! client's `paused` at that stamp and opens the gate `for` after it (or
//! when the settle phase heals, as the simulator's pause never outlasts
//! the fault phase), recording `resumed` then. `random-client` waits for
//! whichever client sends first, as in the simulator; `holder:KEY` is
//! resolved when armed, as a member's selector is.
//!
//! A client's crash, pause or clock fault at `timer` waits where the
//! client's own timers end (`timer_points.rs`); the runner records it, a
//! poll later, at the instant the client acted there, and kills a client
//! crashed there (its gate shut it meanwhile) or resumes one paused
//! there `for` after that instant.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use leasesim_core::duration::format_duration;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc as JudgeProc;
use leasesim_node::faults::failpoint::Action;
use leasesim_scenario::{FaultAction, MessageKind, Point, Scenario, ScheduledFault, Selector};

use crate::routes::ClientPoint;
use crate::schedule::{origin, Player, Undo};
use crate::selectors::Who;
use crate::timer_points::{TimerAction, TimerPoint};

/// How often the runner looks whether an armed member died or stopped at
/// its point, or a client reached its point.
pub const POLL_NS: u64 = 10_000_000;

/// The one point a client reaches.
pub const CLIENT_POINT: Point = Point::AfterSend(MessageKind::Request);

/// The members a crash point waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// The member its selector named when it was armed.
    In(usize),
    /// Every member, until one reaches it (`random-server`).
    AnyMember,
}

/// A crash or pause point armed, waiting to be reached.
pub struct Armed {
    waits: Waits,
    point: Point,
    /// What the member does there.
    action: Action,
    /// The fault's order in the timeline (its undo's key), and the id of
    /// its entry in the members.
    order: usize,
    for_ns: Option<u64>,
    /// Where the fault comes from, for the run's log (`line 12`, `[chaos]`).
    origin: String,
    /// The file a member must create first to fire the entry: it decides
    /// which member fires one that waits in several (`Waits::AnyMember`),
    /// and the runner takes it to disarm the entry in a stopped member.
    claim: Option<PathBuf>,
    /// A clock fault's drift and jump, for the judge's model.
    clock: (Option<f64>, Option<i64>),
    /// The members whose current process holds it (a restart empties a
    /// member; a member down or paused is armed later).
    holders: BTreeSet<usize>,
}

impl Armed {
    fn waits_in(&self, i: usize) -> bool {
        match self.waits {
            Waits::In(member) => member == i,
            Waits::AnyMember => true,
        }
    }

    /// Whether member `i`'s current process must still be sent it.
    fn due_in(&self, i: usize) -> bool {
        self.waits_in(i) && !self.holders.contains(&i)
    }

    /// Member `i`'s process was started again: it holds none.
    fn restarted(&mut self, i: usize) {
        self.holders.remove(&i);
    }

    /// The fault's name in the run's log.
    fn verb(&self) -> &'static str {
        match self.action {
            Action::Crash => "crash",
            Action::Pause => "pause",
            Action::Clock(_) => "clock",
        }
    }

    /// Whom it waits in, for the run's log.
    fn whom(&self) -> String {
        match self.waits {
            Waits::In(i) => format!("s{}", i + 1),
            Waits::AnyMember => "any member".into(),
        }
    }

    /// The run's log's words for nobody having reached it.
    fn nobody(&self) -> String {
        match self.waits {
            Waits::In(i) => format!("s{} never reached", i + 1),
            Waits::AnyMember => "no member reached".into(),
        }
    }
}

/// Which of `armed` member `i` fired when it named entry `id` with
/// `action` as it died or stopped: one that waits in it, that its process
/// held, and that does that. `None` for an entry that fired already, in
/// this member or another (a claim that failed let two members fire one
/// entry), or that it never held.
fn fired_by(armed: &[Armed], i: usize, id: u64, action: Action) -> Option<usize> {
    armed.iter().position(|a| a.order as u64 == id && a.action == action && a.waits_in(i) && a.holders.contains(&i))
}

/// Whether the runner may ask member `i` anything now: a process down,
/// paused, or stopped at a pause point it has not yet seen answers
/// nothing (its control endpoint would hold the request for 5 s).
fn answers(proc: &mut crate::procs::Proc) -> bool {
    proc.alive() && !proc.is_paused() && !proc.stopped_itself()
}

/// Takes an entry's claim in the members' place (the file they must
/// create first to fire it): one already taken was claimed by a member.
fn take_claim(path: &std::path::Path) -> Result<(), String> {
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Whether some crash point sits between a write and its fsync: the
/// members must then lose unsynced writes on a kill, as the simulator's
/// disk does.
pub fn loses_unsynced(s: &Scenario) -> bool {
    s.faults.iter().any(|f| matches!(f.when, Some(Point::AfterWrite | Point::SnapshotInstall | Point::MembershipChange)))
}

impl Player<'_> {
    /// Arms `fault`'s point in the member its selector names now, or in
    /// every member for `random-server` (at once, or when a member is up
    /// again: `send_armed`).
    pub(crate) async fn arm(&mut self, order: usize, fault: &ScheduledFault, point: Point) -> Result<(), String> {
        let (selector, action, clock) = match &fault.action {
            FaultAction::Crash(selector) => (selector, Action::Crash, (None, None)),
            FaultAction::Pause(selector) => (selector, Action::Pause, (None, None)),
            FaultAction::Clock { target, drift, jump_ns } => {
                (target, Action::Clock(crate::clients::clock::from_fault(*drift, *jump_ns)), (*drift, *jump_ns))
            }
            other => unreachable!("refuse.rs lets only crashes, pauses and clock faults wait for a point, not {}", other.name()),
        };
        // The log line names whom this fault's selector picked, not the last ones'.
        self.resolved.clear();
        if point == CLIENT_POINT {
            return self.arm_client(order, fault, selector).await;
        }
        if point == Point::Timer && crate::routes::is_clientish(selector) {
            return self.arm_client_timer(order, fault, selector).await;
        }
        let (waits, claim) = match selector {
            // Whichever member reaches it first, as the simulator matches
            // it (`sim/src/world/mod.rs` `selects`).
            Selector::RandomServer => {
                self.resolved.push(selector.to_string());
                (Waits::AnyMember, self.cluster.claim_path(order)?)
            }
            _ => match self.who(selector, fault).await {
                Some(Who::Server(i)) => (Waits::In(i), self.cluster.claim_path(order)?),
                Some(who) => {
                    unreachable!("{who}: a server's selector names a server (clients' points are armed above, the store's refused)")
                }
                None => return Ok(()),
            },
        };
        // Every entry has a claim file, also one waiting in one member:
        // a member stopped when the fault phase ends cannot be asked to
        // disarm it, so the runner takes the claim in its place, and the
        // member drops the entry should it reach the point once resumed
        // (`disarm_unreached`). Without it, chaos-nemesis seed 3 had a
        // member resumed in the settle phase die at an entry of the fault
        // phase, and stay down.
        let claim = Some(claim);
        let (holders, for_ns) = (BTreeSet::new(), fault.for_ns);
        let armed = Armed { waits, point, action, order, for_ns, origin: origin(fault), claim, clock, holders };
        let logged = format!("{}: {} {} armed at {point} (#{order})", origin(fault), armed.verb(), self.resolved.join(" "));
        self.note(JudgeProc::Admin, Event::Fault { action: logged });
        self.armed.push(armed);
        for i in 0..self.cluster.members.len() {
            self.send_armed(i).await;
        }
        Ok(())
    }

    /// Arms in member `i` every entry its process does not hold yet, if it
    /// runs and is not paused or stopped at a point (a stopped process
    /// answers nothing; it is armed when resumed). Its control endpoint may not listen yet (a
    /// fresh restart): `arm_failpoint_when_up` waits for it. An entry the
    /// member refuses is skipped, with the reason; one lost because the
    /// member died meanwhile waits for its restart.
    pub(crate) async fn send_armed(&mut self, i: usize) {
        if !self.armed.iter().any(|a| a.due_in(i)) || !answers(&mut self.cluster.members[i].proc) {
            return;
        }
        let mut refused = Vec::new();
        for at in 0..self.armed.len() {
            let armed = &self.armed[at];
            if !armed.due_in(i) {
                continue;
            }
            let (id, point) = (armed.order as u64, armed.point.to_string());
            match self.cluster.arm_failpoint_when_up(i, id, Some((&point, armed.action)), armed.claim.as_deref()).await {
                Ok(()) => {
                    self.armed[at].holders.insert(i);
                }
                Err(_) if !self.cluster.members[i].proc.alive() => break,
                Err(why) => refused.push((at, why)),
            }
        }
        for (at, why) in refused.into_iter().rev() {
            let armed = self.armed.remove(at);
            self.disarm_in_holders(&armed, None).await;
            let action = format!("{}: {} s{} at {} (#{})", armed.origin, armed.verb(), i + 1, armed.point, armed.order);
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
    }

    /// Member `i` was started again: its new process holds none of the
    /// entries; arms every one that waits in it.
    pub(crate) async fn rearm(&mut self, i: usize) {
        self.armed.iter_mut().for_each(|a| a.restarted(i));
        self.send_armed(i).await;
    }

    /// Disarms `armed` in every member whose process holds it, but
    /// `except` (the one it fired in). A member paused or stopped
    /// meanwhile keeps it: its claim is taken, so it can never fire there.
    async fn disarm_in_holders(&mut self, armed: &Armed, except: Option<usize>) {
        for &j in armed.holders.iter().filter(|j| Some(**j) != except) {
            if answers(&mut self.cluster.members[j].proc) {
                // A member that died meanwhile holds nothing; the claim
                // keeps any other from firing it.
                let _ = self.cluster.arm_failpoint_when_up(j, armed.order as u64, None, None).await;
            }
        }
    }

    /// Arms a client's point on the clients' routes (`routes::needed`
    /// gave this run routes).
    async fn arm_client(&mut self, order: usize, fault: &ScheduledFault, selector: &Selector) -> Result<(), String> {
        let client = match selector {
            Selector::RandomClient => None,
            other => match self.who(other, fault).await {
                Some(Who::Client(c)) => Some(c),
                Some(who) => {
                    // The simulator arms it and nobody reaches it: only
                    // clients send requests.
                    let action = format!("{}: {} {who} at {CLIENT_POINT}", origin(fault), fault.action.name());
                    let why = format!("{who} sends no client request, so it never reaches {CLIENT_POINT}");
                    self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
                    return Ok(());
                }
                None => return Ok(()),
            },
        };
        let routes = self.cluster.routes.as_ref().ok_or("a client's point in a run without client routes")?;
        let pause = matches!(fault.action, FaultAction::Pause(_));
        routes.arm(ClientPoint { order, line: fault.line, client, for_ns: fault.for_ns, pause })?;
        let whom = client.map_or("the first client".to_string(), |c| format!("c{c}"));
        let verb = fault.action.name();
        self.note(JudgeProc::Admin, Event::Fault { action: format!("{}: {verb} {whom} armed at {CLIENT_POINT}", origin(fault)) });
        Ok(())
    }

    /// Arms a fault at the clients' `timer` point (`timer_points.rs`):
    /// `random-client` waits for any client, `holder:KEY` is resolved now.
    async fn arm_client_timer(&mut self, order: usize, fault: &ScheduledFault, selector: &Selector) -> Result<(), String> {
        let client = match selector {
            Selector::RandomClient => None,
            other => match self.who(other, fault).await {
                Some(Who::Client(c)) => Some(c),
                Some(who) => unreachable!("{who}: a client's selector names a client"),
                None => return Ok(()),
            },
        };
        let action = match fault.action {
            FaultAction::Crash(_) => TimerAction::Crash,
            FaultAction::Pause(_) => TimerAction::Pause,
            FaultAction::Clock { drift, jump_ns, .. } => TimerAction::Clock { drift, jump_ns },
            ref other => unreachable!("refuse.rs lets only crashes, pauses and clock faults wait for a point, not {}", other.name()),
        };
        self.timer_points.arm(TimerPoint { order, line: fault.line, client, for_ns: fault.for_ns, action });
        let whom = client.map_or("the first client".to_string(), |c| format!("c{c}"));
        let armed = format!("{}: {} {whom} armed at {} (#{order})", origin(fault), action.name(), Point::Timer);
        self.note(JudgeProc::Admin, Event::Fault { action: armed });
        Ok(())
    }

    /// Records every client that reached its timer point since the last
    /// look, at the instant it acted there: a paused one is resumed `for`
    /// after it, a crashed one killed now and restarted `for` after it (it
    /// has done nothing since: its gate is shut), a clock change is in its
    /// clock's log already (`ClientClock::apply_fault`).
    fn watch_client_timers(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) {
        for reached in self.timer_points.take_reached() {
            let (c, point, at_ns) = (reached.client, &reached.point, reached.at_ns);
            let lasts = point.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let from = if point.line == 0 { "[chaos]".to_string() } else { format!("line {}", point.line) };
            let action = format!("{from}: {} c{c} at {}{lasts} (#{})", point.action.name(), Point::Timer, point.order);
            if let Some(why) = reached.refused {
                self.ctx.seen.record_as_at(JudgeProc::Admin, at_ns, Event::FaultSkipped { action, why });
                continue;
            }
            self.ctx.seen.record_as_at(JudgeProc::Admin, at_ns, Event::Fault { action });
            let until_ns = point.for_ns.map_or(u64::MAX, |for_ns| at_ns + for_ns);
            match point.action {
                TimerAction::Pause => {
                    self.ctx.seen.record_as_at(JudgeProc::Client(c), at_ns, Event::Paused);
                    undos.insert((until_ns, point.order), Undo::ResumeAtPoint(c));
                }
                TimerAction::Crash if self.clients.crash(c) => {
                    undos.insert((until_ns, point.order), Undo::RestartClient(c));
                }
                // Crashed by another fault meanwhile: its restart resets the gate.
                TimerAction::Crash | TimerAction::Clock { .. } => {}
            }
        }
    }

    /// Whether some crash point, a member's or a client's, waits.
    pub(crate) fn any_armed(&self) -> bool {
        !self.armed.is_empty() || self.cluster.routes.as_ref().is_some_and(|r| r.armed()) || self.timer_points.any_armed()
    }

    /// Crashes every client that reached its crash point, and schedules
    /// its restart; records every client its route paused at its point
    /// (its gate is closed since), and schedules its resume.
    pub(crate) fn watch_clients(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) {
        self.watch_client_timers(undos);
        let Some(routes) = &self.cluster.routes else { return };
        for reached in routes.take_reached() {
            let (c, point) = (reached.client, &reached.point);
            let lasts = point.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let from = if point.line == 0 { "[chaos]".to_string() } else { format!("line {}", point.line) };
            if point.pause {
                // Stamped when the request left, not at this poll.
                let at_ns = reached.at_ns.saturating_sub(self.ctx.seen.origin_ns());
                let action = format!("{from}: pause c{c} at {CLIENT_POINT}{lasts} (#{})", point.order);
                self.ctx.seen.record_as_at(JudgeProc::Admin, at_ns, Event::Fault { action });
                self.ctx.seen.record_as_at(JudgeProc::Client(c), at_ns, Event::Paused);
                let until_ns = point.for_ns.map_or(u64::MAX, |for_ns| at_ns + for_ns);
                undos.insert((until_ns, point.order), Undo::ResumeAtPoint(c));
                continue;
            }
            if !self.clients.crash(c) {
                continue;
            }
            let now_ns = self.ctx.seen.now_ns();
            let action = format!("{from}: crash c{c} at {CLIENT_POINT}{lasts}");
            self.note(JudgeProc::Admin, Event::Fault { action });
            let until_ns = point.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns);
            undos.insert((until_ns, point.order), Undo::RestartClient(c));
        }
    }

    /// Records every armed member that died or stopped at one of its
    /// points, under the entry it named in its event log, and schedules
    /// its restart or resume; its other entries wait for it, and an entry
    /// it shared is disarmed in the others. A member gone or stopped with
    /// entries armed that names none of them was stopped by something
    /// else: an error, not a fault played.
    pub(crate) async fn watch_armed(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) -> Result<(), String> {
        self.watch_clients(undos);
        self.watch_clock_entries().await?;
        let members: BTreeSet<usize> = self.armed.iter().flat_map(|a| a.holders.iter().copied()).collect();
        for i in members {
            if let Some(status) = self.cluster.members[i].proc.exited() {
                self.cluster.members[i].proc.kill(); // reaps it; its data directory stays
                let at = self.fired_in(i, Action::Crash, &format!("exited ({status})"))?;
                let key = self.record_fired(i, at).await;
                undos.insert(key, Undo::Restart(i));
            } else if self.cluster.members[i].proc.stopped_itself() {
                let at = self.fired_in(i, Action::Pause, "stopped itself")?;
                self.cluster.members[i].proc.take_as_paused();
                let key = self.record_fired(i, at).await;
                undos.insert(key, Undo::Resume(Who::Server(i)));
            }
        }
        Ok(())
    }

    /// Records the clock entries members reached since the last look,
    /// each at the instant its member's event log stamped it (a member
    /// goes on after one, so every new line is read, not only the last).
    async fn watch_clock_entries(&mut self) -> Result<(), String> {
        let clocks = self.armed.iter().filter(|a| matches!(a.action, Action::Clock(_)));
        let members: BTreeSet<usize> = clocks.flat_map(|a| a.holders.iter().copied()).collect();
        for i in members {
            let Some(path) = self.cluster.members[i].events.clone() else { continue };
            let from = self.clock_lines_read[i];
            let (found, next) = leasesim_node::faults::event_log::clocks_fired(&path, from)?;
            self.clock_lines_read[i] = next;
            for line in found {
                // An entry recorded before (a line read again after a
                // restart cannot be: the file only grows) is none of these.
                let Some(at) = fired_by(&self.armed, i, line.entry.id, line.entry.action) else { continue };
                let armed = self.armed.remove(at);
                self.disarm_in_holders(&armed, Some(i)).await;
                let action = format!("{}: clock s{} at {} (failpoint #{})", armed.origin, i + 1, armed.point, armed.order);
                if !line.applied {
                    let why = "the member refused the change (its log says why)".to_string();
                    self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
                    continue;
                }
                let Action::Clock(change) = armed.action else { unreachable!("a clock entry") };
                self.cluster.note_clock(i, &change, line.mono_ns)?;
                let at_ns = line.mono_ns.saturating_sub(self.ctx.seen.origin_ns());
                self.judge_clock_at(at_ns, crate::schedule::server(i), armed.clock.0, armed.clock.1);
                self.note(JudgeProc::Admin, Event::Fault { action });
            }
        }
        Ok(())
    }

    /// Which armed entry member `i`, which `how` (died, stopped), fired:
    /// the one its event log's last line names, doing `action`.
    fn fired_in(&self, i: usize, action: Action, how: &str) -> Result<usize, String> {
        let member = &self.cluster.members[i];
        let named = match &member.events {
            Some(path) => leasesim_node::faults::event_log::fired(path)?,
            None => None,
        };
        named.as_ref().and_then(|e| fired_by(&self.armed, i, e.id, action)).ok_or_else(|| {
            let named = named.map_or("none of them".into(), |e| format!("entry #{} ({:?}), which it did not hold armed", e.id, e.action));
            format!("s{} {how} with failpoints armed, and its event log names {named}; its log ends:\n{}", i + 1, member.proc.log_tail(15))
        })
    }

    /// Records that member `i` fired `self.armed[at]` (disarmed in the
    /// others that hold it); the key of its undo: after its `for`, counted
    /// from now, or with the settle phase.
    async fn record_fired(&mut self, i: usize, at: usize) -> (u64, usize) {
        let armed = self.armed.remove(at);
        self.disarm_in_holders(&armed, Some(i)).await;
        let now_ns = self.ctx.seen.now_ns();
        let lasts = armed.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
        let action = format!("{}: {} s{} at {}{lasts} (failpoint #{})", armed.origin, armed.verb(), i + 1, armed.point, armed.order);
        self.note(JudgeProc::Admin, Event::Fault { action });
        (armed.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns), armed.order)
    }

    /// Disarms the points nobody reached before the fault phase ended.
    /// A paused member cannot be asked: its entries' claims are taken in
    /// its place (it can never fire them), and they are returned, to be
    /// disarmed once the settle phase resumed it (`disarm_resumed`).
    pub(crate) async fn disarm_unreached(&mut self) -> Result<Vec<(usize, u64)>, String> {
        self.resume_stopped_at_end().await?;
        for point in self.timer_points.disarm() {
            let whom = point.client.map_or("no client".to_string(), |c| format!("c{c} never"));
            let from = if point.line == 0 { "[chaos]".to_string() } else { format!("line {}", point.line) };
            let action = format!("{from}: {} at {} (#{})", point.action.name(), Point::Timer, point.order);
            let why = format!("{whom} reached its timer before the fault phase ended");
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        for point in self.cluster.routes.as_ref().map(|r| r.disarm()).unwrap_or_default() {
            let whom = point.client.map_or("no client".to_string(), |c| format!("c{c} never"));
            let from = if point.line == 0 { "[chaos]".to_string() } else { format!("line {}", point.line) };
            let verb = if point.pause { "pause" } else { "crash" };
            let action = format!("{from}: {verb} at {CLIENT_POINT} (#{})", point.order);
            let why = format!("{whom} sent a request before the fault phase ended");
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        let mut later = Vec::new();
        for armed in std::mem::take(&mut self.armed) {
            let (whom, id) = (armed.whom(), armed.order as u64);
            let action = format!("{}: {} {whom} at {} (#{id})", armed.origin, armed.verb(), armed.point);
            let mut failed = Vec::new();
            // A claim taken with no death recorded: the member that took
            // it was crashed or paused by another fault before it acted
            // there (the simulator's crash comes at the point's instant).
            let claimed = armed.claim.as_ref().is_some_and(|path| path.exists());
            for &i in &armed.holders {
                if !self.cluster.members[i].proc.alive() {
                    // Crashed by another fault and not restarted: its
                    // process, and what it held, is gone.
                    continue;
                } else if self.cluster.members[i].proc.is_paused() {
                    // It cannot be asked until resumed: the claim it must
                    // take to fire is taken now, so it never does.
                    if let Some(path) = armed.claim.as_deref().filter(|_| !claimed) {
                        take_claim(path).map_err(|e| format!("s{}: cannot disarm #{id}: {e}", i + 1))?;
                    }
                    later.push((i, id));
                } else if let Err(e) = self.cluster.arm_failpoint_when_up(i, id, None, None).await {
                    failed.push(format!("s{}: {e}", i + 1));
                }
            }
            let why = match (claimed, failed.is_empty()) {
                (true, _) => format!("a member claimed {} but was stopped by another fault before it acted there", armed.point),
                (false, true) => format!("{} {} before the fault phase ended", armed.nobody(), armed.point),
                (false, false) => format!("{} {} and could not be disarmed: {}", armed.nobody(), armed.point, failed.join("; ")),
            };
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        Ok(later)
    }

    /// Members that stopped at a pause point after the last look, as the
    /// fault phase ended: recorded, and resumed at once (the simulator's
    /// pause never lasts past the settle phase's start).
    async fn resume_stopped_at_end(&mut self) -> Result<(), String> {
        let members: BTreeSet<usize> = self.armed.iter().flat_map(|a| a.holders.iter().copied()).collect();
        for i in members {
            if self.cluster.members[i].proc.stopped_itself() {
                let at = self.fired_in(i, Action::Pause, "stopped itself")?;
                self.cluster.members[i].proc.take_as_paused();
                self.record_fired(i, at).await;
                self.set_paused(Who::Server(i), false)?;
            }
        }
        Ok(())
    }

    /// Disarms the entries of members that were paused when the fault
    /// phase ended, now that the settle phase resumed them.
    pub(crate) async fn disarm_resumed(&mut self, later: Vec<(usize, u64)>) -> Result<(), String> {
        for (i, id) in later {
            if self.cluster.members[i].proc.is_running() {
                self.cluster.arm_failpoint_when_up(i, id, None, None).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed(waits: Waits, order: usize) -> Armed {
        let point = Point::AfterSend(MessageKind::AppendReply);
        let (origin, holders) = ("[chaos]".into(), BTreeSet::new());
        Armed { waits, point, action: Action::Crash, order, for_ns: None, origin, claim: None, clock: (None, None), holders }
    }

    #[test]
    fn a_random_server_entry_waits_in_every_member_and_again_in_one_restarted() {
        let mut any = armed(Waits::AnyMember, 4);
        assert!((0..3).all(|i| any.due_in(i)), "due in every member, a spare's too");
        any.holders.extend([0, 2]); // s2 was down or paused when it was armed
        assert_eq!((any.due_in(0), any.due_in(1), any.due_in(2)), (false, true, false));
        any.restarted(2);
        assert!(any.due_in(2), "a restarted member's new process holds none");
        let one = armed(Waits::In(1), 5);
        assert_eq!((one.due_in(0), one.due_in(1), one.due_in(2)), (false, true, false), "a resolved one waits in its member only");
        assert_eq!((any.nobody(), one.nobody()), ("no member reached".into(), "s2 never reached".into()));
    }

    #[test]
    fn the_member_that_fired_a_shared_entry_is_recorded_and_no_other_can_be_after_it() {
        let mut list = vec![armed(Waits::In(0), 1), armed(Waits::AnyMember, 2)];
        list[0].holders.insert(0);
        list[1].holders.extend([0, 1, 2]);
        // s3 died naming #2: the shared entry, fired by s3.
        assert_eq!(fired_by(&list, 2, 2, Action::Crash), Some(1));
        // s3 naming #1, which waits in s1 only, is no entry of its own.
        assert_eq!(fired_by(&list, 2, 1, Action::Crash), None);
        let fired = list.remove(1);
        assert_eq!(fired.holders.iter().filter(|j| **j != 2).count(), 2, "disarmed in the two others");
        // Had a failed claim let s2 fire it too, its death names an entry
        // no longer armed: an error, never a second point reached.
        assert_eq!(fired_by(&list, 1, 2, Action::Crash), None);
        // A member whose process never held the entry (its restart was not
        // yet armed) cannot have fired it.
        let mut later = armed(Waits::AnyMember, 3);
        later.holders.insert(0);
        assert_eq!(fired_by(&[later], 1, 3, Action::Crash), None);
    }

    #[test]
    fn a_stop_names_a_pause_entry_and_a_death_a_crash_entry_never_the_other() {
        let mut pause = armed(Waits::In(1), 6);
        pause.action = Action::Pause;
        pause.holders.insert(1);
        let list = [pause];
        assert_eq!(fired_by(&list, 1, 6, Action::Pause), Some(0));
        // A member that died naming a pause entry did not die of it.
        assert_eq!(fired_by(&list, 1, 6, Action::Crash), None);
        assert_eq!((list[0].verb(), armed(Waits::In(0), 1).verb()), ("pause", "crash"));
    }
}
