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
//! A client's point (`after-send:request`) is seen by the client's routes
//! (`routes.rs`), which cut the client off the moment a request has left
//! it; the runner then aborts its task, as for any client crash, and
//! starts it afresh after `for`. `random-client` waits for whichever
//! client sends first, as in the simulator; `holder:KEY` is resolved when
//! armed, as a member's selector is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

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

/// The members a crash point waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// The member its selector named when it was armed.
    In(usize),
    /// Every member, until one reaches it (`random-server`).
    AnyMember,
}

/// A crash point armed, waiting to be reached.
pub struct Armed {
    waits: Waits,
    point: Point,
    /// The fault's order in the timeline (its undo's key), and the id of
    /// its entry in the members.
    order: usize,
    for_ns: Option<u64>,
    /// Where the fault comes from, for the run's log (`line 12`, `[chaos]`).
    origin: String,
    /// The file whose creation decides which member fires an entry that
    /// waits in several (`Waits::AnyMember`).
    claim: Option<PathBuf>,
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

/// Which of `armed` member `i` fired when it named entry `id` as it died:
/// one that waits in it and that its process held. `None` for an entry
/// that fired already, in this member or another (a claim that failed
/// let two members fire one entry), or that it never held.
fn fired_by(armed: &[Armed], i: usize, id: u64) -> Option<usize> {
    armed.iter().position(|a| a.order as u64 == id && a.waits_in(i) && a.holders.contains(&i))
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
        let FaultAction::Crash(selector) = &fault.action else { unreachable!("refuse.rs lets only crashes wait for a point") };
        // The log line names whom this fault's selector picked, not the last ones'.
        self.resolved.clear();
        if point == CLIENT_POINT {
            return self.arm_client(order, fault, selector).await;
        }
        let (waits, claim) = match selector {
            // Whichever member reaches it first, as the simulator matches
            // it (`sim/src/world/mod.rs` `selects`).
            Selector::RandomServer => {
                self.resolved.push(selector.to_string());
                (Waits::AnyMember, Some(self.cluster.claim_path(order)?))
            }
            _ => match self.who(selector, fault).await {
                Some(Who::Server(i)) => (Waits::In(i), None),
                _ => return Ok(()),
            },
        };
        let action = format!("{}: crash {} armed at {point} (#{order})", origin(fault), self.resolved.join(" "));
        self.note(JudgeProc::Admin, Event::Fault { action });
        let holders = BTreeSet::new();
        self.armed.push(Armed { waits, point, order, for_ns: fault.for_ns, origin: origin(fault), claim, holders });
        for i in 0..self.cluster.members.len() {
            self.send_armed(i).await;
        }
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
        if !member.alive() || member.is_paused() || !self.armed.iter().any(|a| a.due_in(i)) {
            return;
        }
        let mut refused = Vec::new();
        for at in 0..self.armed.len() {
            let armed = &self.armed[at];
            if !armed.due_in(i) {
                continue;
            }
            let (id, point) = (armed.order as u64, armed.point.to_string());
            match self.cluster.arm_failpoint_when_up(i, id, Some(&point), armed.claim.as_deref()).await {
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
            let action = format!("{}: crash s{} at {} (#{})", armed.origin, i + 1, armed.point, armed.order);
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
    /// `except` (the one it fired in). A member paused meanwhile keeps it:
    /// its claim is taken, so it can never fire there.
    async fn disarm_in_holders(&mut self, armed: &Armed, except: Option<usize>) {
        for &j in armed.holders.iter().filter(|j| Some(**j) != except) {
            let proc = &mut self.cluster.members[j].proc;
            if proc.alive() && !proc.is_paused() {
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
    /// other entries wait for it, and an entry it shared is disarmed in the
    /// others. A member gone with entries armed that names none of them
    /// died of something else: an error, not a fault played.
    pub(crate) async fn watch_armed(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) -> Result<(), String> {
        self.watch_clients(undos);
        let members: BTreeSet<usize> = self.armed.iter().flat_map(|a| a.holders.iter().copied()).collect();
        for i in members {
            let member = &mut self.cluster.members[i];
            let Some(status) = member.proc.exited() else { continue };
            member.proc.kill(); // reaps it; its data directory stays
            let named = match &member.events {
                Some(path) => leasesim_node::faults::event_log::fired(path)?,
                None => None,
            };
            let Some(at) = named.as_ref().and_then(|e| fired_by(&self.armed, i, e.id)) else {
                let named = named.map_or("none of them".into(), |e| format!("entry #{}, which it did not hold armed", e.id));
                return Err(format!(
                    "s{} exited ({status}) with failpoints armed, and its event log names {named}; its log ends:\n{}",
                    i + 1,
                    member.proc.log_tail(15)
                ));
            };
            let armed = self.armed.remove(at);
            self.disarm_in_holders(&armed, Some(i)).await;
            let now_ns = self.ctx.seen.now_ns();
            let lasts = armed.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let action = format!("{}: crash s{} at {}{lasts} (failpoint #{})", armed.origin, i + 1, armed.point, armed.order);
            self.note(JudgeProc::Admin, Event::Fault { action });
            let until_ns = armed.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns);
            undos.insert((until_ns, armed.order), Undo::Restart(i));
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
            let (whom, id) = (armed.whom(), armed.order as u64);
            let action = format!("{}: crash {whom} at {} (#{id})", armed.origin, armed.point);
            let mut failed = Vec::new();
            for &i in &armed.holders {
                if !self.cluster.members[i].proc.alive() {
                    // Crashed by another fault and not restarted: its
                    // process, and what it held, is gone.
                    continue;
                } else if self.cluster.members[i].proc.is_paused() {
                    later.push((i, id));
                } else if let Err(e) = self.cluster.arm_failpoint_when_up(i, id, None, None).await {
                    failed.push(format!("s{}: {e}", i + 1));
                }
            }
            // A claim taken with no death recorded: the member that took
            // it was crashed or paused by another fault before it died
            // there (the simulator's crash comes at the point's instant).
            let claimed = armed.claim.as_ref().is_some_and(|path| path.exists());
            let why = match (claimed, failed.is_empty()) {
                (true, _) => format!("a member claimed {} but was stopped by another fault before it died there", armed.point),
                (false, true) => format!("{} {} before the fault phase ended", armed.nobody(), armed.point),
                (false, false) => format!("{} {} and could not be disarmed: {}", armed.nobody(), armed.point, failed.join("; ")),
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
        Armed { waits, point, order, for_ns: None, origin: "[chaos]".into(), claim: None, holders: BTreeSet::new() }
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
        assert_eq!(fired_by(&list, 2, 2), Some(1));
        // s3 naming #1, which waits in s1 only, is no entry of its own.
        assert_eq!(fired_by(&list, 2, 1), None);
        let fired = list.remove(1);
        assert_eq!(fired.holders.iter().filter(|j| **j != 2).count(), 2, "disarmed in the two others");
        // Had a failed claim let s2 fire it too, its death names an entry
        // no longer armed: an error, never a second point reached.
        assert_eq!(fired_by(&list, 1, 2), None);
        // A member whose process never held the entry (its restart was not
        // yet armed) cannot have fired it.
        let mut later = armed(Waits::AnyMember, 3);
        later.holders.insert(0);
        assert_eq!(fired_by(&[later], 1, 3), None);
    }
}
