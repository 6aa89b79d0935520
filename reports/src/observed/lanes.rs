//! One lane per process: its role spans (leader, follower, crashed),
//! pauses and its clocks' errors against true time, from the observations
//! and the clock history either world recorded.

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_judge::observe::{Event, Obs};
use leasesim_judge::vocab::{Proc, SimClock};

use crate::model::{ClockPoint, ClockTrace, Lane, LaneKind, LaneMark, Role, RoleSpan, Span};

pub(super) fn lane(proc: Proc, clock: &SimClock, obs: &[Obs], end_ns: u64, wall_epoch_ns: u64) -> Lane {
    let kind = match proc {
        Proc::Server(_) => LaneKind::Server,
        Proc::Client(_) => LaneKind::Client,
        _ => LaneKind::Store,
    };
    let running = if kind == LaneKind::Server { Role::Follower } else { Role::Up };
    let mut roles: Vec<RoleSpan> = Vec::new();
    let mut paused: Vec<Span> = Vec::new();
    let (mut role, mut since_ns) = (running, 0u64);
    let mut paused_since: Option<u64> = None;
    let switch = |roles: &mut Vec<RoleSpan>, role: &mut Role, since_ns: &mut u64, next: Role, at_ns: u64| {
        if *role != next {
            if at_ns > *since_ns {
                roles.push(RoleSpan { start_ns: *since_ns, end_ns: at_ns, role: *role });
            }
            (*role, *since_ns) = (next, at_ns);
        }
    };
    for o in obs.iter().filter(|o| o.proc == proc) {
        let next = match &o.event {
            Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term }) } => Role::Leader { term: *term },
            Event::Server { event: ServerEvent::Raft(RaftEvent::SteppedDown { .. }) } => Role::Follower,
            Event::Restarted => running,
            Event::Crashed => {
                // A crash ends a pause: the process is gone, not stopped.
                if let Some(start_ns) = paused_since.take() {
                    paused.push(Span { start_ns, end_ns: o.at_ns });
                }
                Role::Down
            }
            Event::Paused => {
                paused_since.get_or_insert(o.at_ns);
                continue;
            }
            Event::Resumed => {
                if let Some(start_ns) = paused_since.take() {
                    paused.push(Span { start_ns, end_ns: o.at_ns });
                }
                continue;
            }
            _ => continue,
        };
        switch(&mut roles, &mut role, &mut since_ns, next, o.at_ns);
    }
    roles.push(RoleSpan { start_ns: since_ns, end_ns: end_ns.max(since_ns), role });
    if let Some(start_ns) = paused_since {
        paused.push(Span { start_ns, end_ns });
    }
    let (clock, marks) = clock_trace(clock, end_ns, wall_epoch_ns);
    Lane { name: proc.to_string(), kind, roles, paused, clock, marks }
}

/// Errors against `wall_epoch_ns + true time` (the wall clocks' common
/// reading at true time 0) at every segment boundary (just before and just after, so a
/// jump draws as a vertical step) and at both ends.
fn clock_trace(clock: &SimClock, end_ns: u64, wall_epoch_ns: u64) -> (ClockTrace, Vec<LaneMark>) {
    let segments = clock.segments();
    let mono_zero = i128::from(clock.mono_at(0));
    let point = |at_ns: u64, mono_ns: i128, wall_minus_mono_ns: i64| ClockPoint {
        at_ns,
        wall_error_ns: (mono_ns + i128::from(wall_minus_mono_ns) - i128::from(wall_epoch_ns) - i128::from(at_ns)) as i64,
        mono_error_ns: (mono_ns - mono_zero - i128::from(at_ns)) as i64,
    };
    let mut points = Vec::new();
    let mut marks = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        if s.true_start_ns > end_ns {
            break;
        }
        if let Some(prev) = i.checked_sub(1).map(|j| &segments[j]) {
            points.push(point(s.true_start_ns, i128::from(s.mono_start_ns), prev.wall_minus_mono_ns));
            if s.wall_minus_mono_ns != prev.wall_minus_mono_ns {
                let jump = s.wall_minus_mono_ns - prev.wall_minus_mono_ns;
                let label = format!("wall clock stepped {}", crate::units::signed_duration(jump));
                marks.push(LaneMark { at_ns: s.true_start_ns, kind: "jump".into(), label });
            }
            if s.drift != prev.drift {
                let label = format!("clock rate now {} (was {})", crate::units::percent(s.drift), crate::units::percent(prev.drift));
                marks.push(LaneMark { at_ns: s.true_start_ns, kind: "drift".into(), label });
            }
        }
        points.push(point(s.true_start_ns, i128::from(s.mono_start_ns), s.wall_minus_mono_ns));
    }
    let last = segments.iter().rev().find(|s| s.true_start_ns <= end_ns).unwrap_or(&segments[0]);
    points.push(point(end_ns, i128::from(clock.mono_at(end_ns)), last.wall_minus_mono_ns));
    (ClockTrace { points, max_abs_drift: clock.max_abs_drift_until(end_ns) }, marks)
}
