//! Crash points played for real (`when = "after-send:vote-reply"` on a
//! crash fault): at the fault's `at` the runner resolves its selector and
//! arms that failpoint in the member through its control endpoint; the
//! member SIGKILLs itself when it reaches the point (leasesim-node's
//! `faults/failpoint.rs`, as etcd's gofail failpoints), writing a `crashed`
//! line to its event log first. The runner sees it gone within
//! [`POLL_NS`], records the fault, and restarts it from its data directory
//! after the fault's `for` (or when the settle phase heals), as for any
//! crash. A point not reached before the fault phase ends is disarmed and
//! recorded as skipped.
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

/// A crash point armed in a member.
pub struct Armed {
    member: usize,
    point: Point,
    /// The fault's order in the timeline (its undo's key).
    order: usize,
    for_ns: Option<u64>,
    line: usize,
}

/// Whether some crash point sits between a write and its fsync: the
/// members must then lose unsynced writes on a kill, as the simulator's
/// disk does.
pub fn loses_unsynced(s: &Scenario) -> bool {
    s.faults.iter().any(|f| matches!(f.when, Some(Point::AfterWrite | Point::SnapshotInstall | Point::MembershipChange)))
}

impl Player<'_> {
    /// Arms `fault`'s point in the member its selector names now.
    pub(crate) async fn arm(&mut self, order: usize, fault: &ScheduledFault, point: Point) -> Result<(), String> {
        let FaultAction::Crash(selector) = &fault.action else { unreachable!("refuse.rs lets only crashes wait for a point") };
        // The log line names whom this fault's selector picked, not the last ones'.
        self.resolved.clear();
        if point == CLIENT_POINT {
            return self.arm_client(order, fault, selector).await;
        }
        let Some(Who::Server(i)) = self.who(selector, fault).await else { return Ok(()) };
        let action = format!("line {}: crash {} armed at {point}", fault.line, self.resolved.join(" "));
        if let Err(why) = self.cluster.arm_failpoint(i, Some(&point.to_string())).await {
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
            return Ok(());
        }
        self.note(JudgeProc::Admin, Event::Fault { action });
        self.armed.push(Armed { member: i, point, order, for_ns: fault.for_ns, line: fault.line });
        Ok(())
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

    /// Records every armed member that died at its point, and every client
    /// that reached its own, and schedules their restarts.
    pub(crate) fn watch_armed(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) {
        self.watch_clients(undos);
        let mut still = Vec::new();
        for armed in std::mem::take(&mut self.armed) {
            let proc = &mut self.cluster.members[armed.member].proc;
            if proc.exited().is_none() {
                still.push(armed);
                continue;
            }
            proc.kill(); // reaps it; its data directory stays
            let now_ns = self.ctx.seen.now_ns();
            let lasts = armed.for_ns.map_or(String::new(), |ns| format!(" for {}", format_duration(ns)));
            let action = format!("line {}: crash s{} at {}{lasts} (failpoint)", armed.line, armed.member + 1, armed.point);
            self.note(JudgeProc::Admin, Event::Fault { action });
            let until_ns = armed.for_ns.map_or(u64::MAX, |for_ns| now_ns + for_ns);
            undos.insert((until_ns, armed.order), Undo::Restart(armed.member));
        }
        self.armed = still;
    }

    /// Disarms the points nobody reached before the fault phase ended.
    pub(crate) async fn disarm_unreached(&mut self) {
        for point in self.cluster.routes.as_ref().map(|r| r.disarm()).unwrap_or_default() {
            let whom = point.client.map_or("no client".to_string(), |c| format!("c{c} never"));
            let action = format!("line {}: crash at {CLIENT_POINT}", point.line);
            let why = format!("{whom} sent a request before the fault phase ended");
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
        for armed in std::mem::take(&mut self.armed) {
            let action = format!("line {}: crash s{} at {}", armed.line, armed.member + 1, armed.point);
            let why = match self.cluster.arm_failpoint(armed.member, None).await {
                Ok(()) => format!("s{} never reached {} before the fault phase ended", armed.member + 1, armed.point),
                Err(e) => format!("s{} never reached {} and could not be disarmed: {e}", armed.member + 1, armed.point),
            };
            self.note(JudgeProc::Admin, Event::FaultSkipped { action, why });
        }
    }
}
