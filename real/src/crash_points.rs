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
//! One difference from the simulator, printed as a note: the selector is
//! resolved when the fault is armed, not when a process reaches the point
//! (`leader` is the leader at `at`, not whichever leader first reaches it).
//!
//! A client's point (`after-send:request`) is seen by the client's routes
//! (`routes.rs`), which cut the client off the moment a request has left
//! it; the runner then aborts its task, as for any client crash, and
//! starts it afresh after `for`. `random-client` waits for whichever
//! client sends first, as in the simulator; `holder:KEY` is resolved when
//! armed, as a member's selector is.

use std::collections::BTreeMap;

use leasesim_core::duration::format_duration;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc as JudgeProc;
use leasesim_scenario::{FaultAction, MessageKind, Point, Scenario, ScheduledFault, Selector};

use crate::routes::ClientPoint;
use crate::schedule::{origin, Player, Undo};
use crate::selectors::Who;

/// How often the runner looks whether an armed member died or a client
/// reached its point.
pub const POLL_NS: u64 = 10_000_000;

/// The one point a client reaches.
pub const CLIENT_POINT: Point = Point::AfterSend(MessageKind::Request);

/// A crash point armed in a member, waiting to be reached.
pub struct Armed {
    member: usize,
    point: Point,
    /// The fault's order in the timeline (its undo's key), and the id of
    /// its entry in the member.
    order: usize,
    for_ns: Option<u64>,
    /// Where the fault comes from, for the run's log (`line 12`, `[chaos]`).
    origin: String,
    /// Whether the member's current process holds it (a restart empties
    /// the member; a member down or paused is armed later).
    sent: bool,
}

/// Whether some crash point sits between a write and its fsync: the
/// members must then lose unsynced writes on a kill, as the simulator's
/// disk does.
pub fn loses_unsynced(s: &Scenario) -> bool {
    s.faults.iter().any(|f| matches!(f.when, Some(Point::AfterWrite | Point::SnapshotInstall | Point::MembershipChange)))
}

impl Player<'_> {
    /// Arms `fault`'s point in the member its selector names now (at
    /// once, or when that member is up again: `send_armed`).
    pub(crate) async fn arm(&mut self, order: usize, fault: &ScheduledFault, point: Point) -> Result<(), String> {
        let FaultAction::Crash(selector) = &fault.action else { unreachable!("refuse.rs lets only crashes wait for a point") };
        // The log line names whom this fault's selector picked, not the last ones'.
        self.resolved.clear();
        if point == CLIENT_POINT {
            return self.arm_client(order, fault, selector).await;
        }
        let Some(Who::Server(i)) = self.who(selector, fault).await else { return Ok(()) };
        let action = format!("{}: crash {} armed at {point} (#{order})", origin(fault), self.resolved.join(" "));
        self.note(JudgeProc::Admin, Event::Fault { action });
        self.armed.push(Armed { member: i, point, order, for_ns: fault.for_ns, origin: origin(fault), sent: false });
        self.send_armed(i).await;
        Ok(())
    }

    /// Arms in member `i` every entry its process does not hold yet, if it
    /// runs and is not paused (a stopped process answers nothing; it is
    /// armed when resumed). Its control endpoint may not listen yet (a
    /// fresh restart): `arm_failpoint_when_up` waits for it. An entry the
    /// member refuses is skipped, with the reason; one lost because the
    /// member died meanwhile waits for its restart.
    pub(crate) async fn send_armed(&mut self, i: usize) {
        let member = &mut self.cluster.members[i].proc;
        if !member.alive() || member.is_paused() {
            return;
        }
        let mut refused = Vec::new();
        for at in 0..self.armed.len() {
            let armed = &self.armed[at];
            if armed.member != i || armed.sent {
                continue;
            }
            match self.cluster.arm_failpoint_when_up(i, armed.order as u64, Some(&armed.point.to_string())).await {
                Ok(()) => self.armed[at].sent = true,
                Err(_) if !self.cluster.members[i].proc.alive() => break,
                Err(why) => refused.push((at, why)),
            }
        }
        for (at, why) in refused.into_iter().rev() {
            let armed = self.armed.remove(at);
            let action = format!("{}: crash s{} at {} (#{})", armed.origin, i + 1, armed.point, armed.order);
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
    }

    /// Member `i` was started again: its new process holds none of its
    /// entries; arms them all.
    pub(crate) async fn rearm(&mut self, i: usize) {
        self.armed.iter_mut().filter(|a| a.member == i).for_each(|a| a.sent = false);
        self.send_armed(i).await;
    }

    /// Arms a client's point on the clients' routes (`routes::needed`
    /// gave this run routes).
    async fn arm_client(&mut self, order: usize, fault: &ScheduledFault, selector: &Selector) -> Result<(), String> {
        let client = match selector {
            Selector::RandomClient => None,
            other => match self.who(other, fault).await {
                Some(Who::Client(c)) => Some(c),
                _ => return Ok(()),
            },
        };
        let routes = self.cluster.routes.as_ref().ok_or("a client's point in a run without client routes")?;
        routes.arm(ClientPoint { order, line: fault.line, client, for_ns: fault.for_ns });
        let whom = client.map_or("the first client".to_string(), |c| format!("c{c}"));
        self.note(JudgeProc::Admin, Event::Fault { action: format!("{}: crash {whom} armed at {CLIENT_POINT}", origin(fault)) });
        Ok(())
    }

    /// Whether some crash point, a member's or a client's, waits.
    pub(crate) fn any_armed(&self) -> bool {
        !self.armed.is_empty() || self.cluster.routes.as_ref().is_some_and(|r| r.armed())
    }

    /// Crashes every client that reached its point, and schedules its
    /// restart.
    fn watch_clients(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) {
        let Some(routes) = &self.cluster.routes else { return };
        for reached in routes.take_reached() {
            let c = reached.client;
            if !self.clients.crash(c) {
                continue;
            }
            let now_ns = self.ctx.seen.now_ns();
            let lasts = reached.point.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let action = format!("line {}: crash c{c} at {CLIENT_POINT}{lasts}", reached.point.line);
            self.note(JudgeProc::Admin, Event::Fault { action });
            let until_ns = reached.point.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns);
            undos.insert((until_ns, reached.point.order), Undo::RestartClient(c));
        }
    }

    /// Records every armed member that died at one of its points, under
    /// the entry it named in its event log, and schedules its restart; its
    /// other entries wait for it. A member gone with entries armed that
    /// names none of them died of something else: an error, not a fault
    /// played.
    pub(crate) fn watch_armed(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) -> Result<(), String> {
        self.watch_clients(undos);
        let members: std::collections::BTreeSet<usize> = self.armed.iter().filter(|a| a.sent).map(|a| a.member).collect();
        for i in members {
            let member = &mut self.cluster.members[i];
            let Some(status) = member.proc.exited() else { continue };
            member.proc.kill(); // reaps it; its data directory stays
            let named = match &member.events {
                Some(path) => leasesim_node::faults::event_log::fired(path)?,
                None => None,
            };
            let Some(at) = named.and_then(|e| self.armed.iter().position(|a| a.member == i && a.order as u64 == e.id)) else {
                return Err(format!(
                    "s{} exited ({status}) with failpoints armed, and its event log names none of them; its log ends:\n{}",
                    i + 1,
                    member.proc.log_tail(15)
                ));
            };
            let armed = self.armed.remove(at);
            let now_ns = self.ctx.seen.now_ns();
            let lasts = armed.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let action = format!("{}: crash s{} at {}{lasts} (failpoint #{})", armed.origin, i + 1, armed.point, armed.order);
            self.note(JudgeProc::Admin, Event::Fault { action });
            let until_ns = armed.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns);
            undos.insert((until_ns, armed.order), Undo::Restart(armed.member));
        }
        Ok(())
    }

    /// Disarms the points nobody reached before the fault phase ended.
    /// A paused member cannot be asked: its entries are returned, to be
    /// disarmed once the settle phase resumed it (`disarm_resumed`).
    pub(crate) async fn disarm_unreached(&mut self) -> Vec<(usize, u64)> {
        for point in self.cluster.routes.as_ref().map(|r| r.disarm()).unwrap_or_default() {
            let whom = point.client.map_or("no client".to_string(), |c| format!("c{c} never"));
            let action = format!("line {}: crash at {CLIENT_POINT}", point.line);
            let why = format!("{whom} sent a request before the fault phase ended");
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        let mut later = Vec::new();
        for armed in std::mem::take(&mut self.armed) {
            let (s, id) = (armed.member + 1, armed.order as u64);
            let action = format!("{}: crash s{s} at {} (#{id})", armed.origin, armed.point);
            let proc = &self.cluster.members[armed.member].proc;
            let disarmed = match (armed.sent, proc.is_paused()) {
                // Nothing to disarm: the member's process never held it.
                (false, _) => Ok(()),
                (true, true) => {
                    later.push((armed.member, id));
                    Ok(())
                }
                (true, false) => self.cluster.arm_failpoint_when_up(armed.member, id, None).await,
            };
            let why = match disarmed {
                Ok(()) => format!("s{s} never reached {} before the fault phase ended", armed.point),
                Err(e) => format!("s{s} never reached {} and could not be disarmed: {e}", armed.point),
            };
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        later
    }

    /// Disarms the entries of members that were paused when the fault
    /// phase ended, now that the settle phase resumed them.
    pub(crate) async fn disarm_resumed(&mut self, later: Vec<(usize, u64)>) -> Result<(), String> {
        for (i, id) in later {
            if self.cluster.members[i].proc.is_running() {
                self.cluster.arm_failpoint_when_up(i, id, None).await?;
            }
        }
        Ok(())
    }
}
