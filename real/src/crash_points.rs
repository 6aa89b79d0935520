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

use std::collections::BTreeMap;

use leasesim_core::duration::format_duration;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc as JudgeProc;
use leasesim_scenario::{FaultAction, Point, Scenario, ScheduledFault};

use crate::schedule::{Player, Undo};
use crate::selectors::Who;

/// How often the runner looks whether an armed member died.
pub const POLL_NS: u64 = 10_000_000;

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

    /// Records every armed member that died at its point, and schedules
    /// its restart.
    pub(crate) fn watch_armed(&mut self, undos: &mut BTreeMap<(u64, usize), Undo>) {
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
