//! Faults armed at a client's `timer` point, played where the simulator
//! plays them. In the simulator a client reaches `timer` when one of its
//! own deadlines falls due (`sim/src/host/mod.rs`: `Timer::Due`, then
//! `reach(.., Point::Timer)` before the step reads its clock); chaos draws
//! crashes, pauses and clock jumps there for `random-client`. The runner's
//! clients have no loop of deadlines: each of their timers is a sleep on
//! the client's own clock (`gate::Pass::sleep`: think, hold, keep-alive,
//! poll and retry pauses) or a watch's check tick, and each of those ends
//! at [`gate::Pass::timer`](crate::gate::Pass::timer), which asks here
//! whether a fault waits for that client. A request's timeout is not one:
//! the client's next step after it is a retry pause, which is.
//!
//! What a fault does there is the simulator's `reach`: a pause closes the
//! client's gate in that instant (the runner opens it `for` later); a
//! crash closes it for good (the runner kills the task a poll later, as a
//! client crashed at `after-send:request` is, and starts a fresh one after
//! `for`); a clock fault changes the client's clock there, before the
//! client reads it, stamped under the clock's own lock
//! (`ClientClock::apply_fault`), so the judge's model of the clock takes
//! its changes in the order the clock did. The first client the selector
//! names to reach the point takes the fault, once: `random-client` is any.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What an armed fault does when a client reaches its timer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimerAction {
    Crash,
    Pause,
    Clock { drift: Option<f64>, jump_ns: Option<i64> },
}

impl TimerAction {
    pub fn name(&self) -> &'static str {
        match self {
            TimerAction::Crash => "crash",
            TimerAction::Pause => "pause",
            TimerAction::Clock { .. } => "clock",
        }
    }
}

/// A fault waiting at the clients' `timer` point.
#[derive(Clone, Debug, PartialEq)]
pub struct TimerPoint {
    /// The fault's order in the timeline (its undo's key).
    pub order: usize,
    /// Its line in the file (0: drawn by `[chaos]`).
    pub line: usize,
    /// The client it waits for (`None`: any, `random-client`).
    pub client: Option<u64>,
    pub for_ns: Option<u64>,
    pub action: TimerAction,
}

/// A client that reached its timer and carried out `point` there.
#[derive(Clone, Debug)]
pub struct TimerReached {
    pub point: TimerPoint,
    pub client: u64,
    /// True time since the run began, when it acted there.
    pub at_ns: u64,
    /// A clock change the client's clock refused (it was not made).
    pub refused: Option<String>,
}

/// The points armed, and those reached and not yet recorded by the runner.
#[derive(Default)]
pub struct TimerPoints {
    armed: Mutex<Vec<TimerPoint>>,
    /// How many are armed: every timer of every client reads only this
    /// when none is.
    count: AtomicUsize,
    reached: Mutex<Vec<TimerReached>>,
}

impl TimerPoints {
    pub fn arm(&self, point: TimerPoint) {
        let mut armed = self.armed.lock().expect("timer points");
        armed.push(point);
        self.count.store(armed.len(), Ordering::SeqCst);
    }

    pub fn any_armed(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Client `client` reached its timer: the first point armed for it is
    /// handed to `act`, which carries it out and says when it did (`None`:
    /// it could not act, and the point stays armed for the next client).
    /// The list stays locked until the point is in the reached list, so
    /// that [`TimerPoints::disarm`] then [`TimerPoints::take_reached`]
    /// sees every point that fired.
    pub fn reach(&self, client: u64, act: impl FnOnce(&TimerPoint) -> Option<(u64, Option<String>)>) -> bool {
        let mut armed = self.armed.lock().expect("timer points");
        let Some(at) = armed.iter().position(|p| p.client.is_none_or(|c| c == client)) else { return false };
        let Some((at_ns, refused)) = act(&armed[at]) else { return false };
        let point = armed.remove(at);
        self.count.store(armed.len(), Ordering::SeqCst);
        self.reached.lock().expect("timer points").push(TimerReached { point, client, at_ns, refused });
        true
    }

    /// The points reached since the last call.
    pub fn take_reached(&self) -> Vec<TimerReached> {
        std::mem::take(&mut *self.reached.lock().expect("timer points"))
    }

    /// The points nobody reached, disarmed.
    pub fn disarm(&self) -> Vec<TimerPoint> {
        let mut armed = self.armed.lock().expect("timer points");
        self.count.store(0, Ordering::SeqCst);
        std::mem::take(&mut *armed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(order: usize, client: Option<u64>) -> TimerPoint {
        TimerPoint { order, line: 0, client, for_ns: None, action: TimerAction::Pause }
    }

    #[test]
    fn the_first_point_for_a_client_fires_once_and_one_that_could_not_act_stays_armed() {
        let points = TimerPoints::default();
        points.arm(point(1, Some(2)));
        points.arm(point(2, None));
        // c1 is not c2: it takes the `random-client` one; it could not act.
        assert!(!points.reach(1, |p| {
            assert_eq!(p.order, 2);
            None
        }));
        assert!(points.take_reached().is_empty() && points.any_armed());
        assert!(points.reach(1, |_| Some((5, None))));
        assert!(points.reach(2, |p| Some((7, (p.order == 1).then(|| "first".into())))));
        assert!(!points.reach(2, |_| Some((9, None))), "each fires once");
        let reached = points.take_reached();
        let got: Vec<(usize, u64, u64)> = reached.iter().map(|r| (r.point.order, r.client, r.at_ns)).collect();
        assert_eq!(got, [(2, 1, 5), (1, 2, 7)]);
        assert_eq!(reached[1].refused.as_deref(), Some("first"));
        assert!(!points.any_armed());
        points.arm(point(3, Some(4)));
        assert_eq!(points.disarm(), [point(3, Some(4))]);
        assert!(!points.any_armed() && !points.reach(4, |_| Some((1, None))));
    }
}
