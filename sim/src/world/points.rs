//! Faults waiting at a point of a process's step (`scenario::point`): the
//! injector arms them at their `at`; a process's host asks, at each point it
//! passes, whether one is aimed at it there, and the first that matches
//! fires, once.
//!
//! A crash cannot be carried out by the process itself (its task would have
//! to kill the node it runs on), so the host hands it to the injector and
//! stops: no simulated time passes between the point and the crash. Pauses
//! and clock jumps the host carries out in place.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use leasesim_judge::vocab::Proc;
use leasesim_scenario::{Point, Selector};

/// What an armed fault does when it fires.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PointAction {
    /// Down for `for_ns` (until the settle phase when `None`).
    Crash {
        for_ns: Option<u64>,
    },
    /// Stopped for `for_ns`, and never past the settle phase's start.
    Pause {
        for_ns: Option<u64>,
        settle_at_ns: u64,
    },
    Clock {
        drift: Option<f64>,
        jump_ns: Option<i64>,
    },
}

#[derive(Clone, Debug)]
pub struct Armed {
    /// The fault's number in the timeline (its undo uses it).
    pub fault: usize,
    pub selector: Selector,
    pub point: Point,
    pub action: PointAction,
}

/// A point crash the injector must carry out now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrashRequest {
    pub fault: usize,
    pub proc: Proc,
    pub point: Point,
    pub for_ns: Option<u64>,
}

#[derive(Default)]
pub struct Points {
    armed: Mutex<Vec<Armed>>,
    /// How many are armed: the hot path (every send of every step) reads
    /// only this.
    count: AtomicUsize,
    crashes: Mutex<Vec<CrashRequest>>,
    /// Wakes the injector for a crash request.
    pub wake: tokio::sync::Notify,
}

impl Points {
    pub fn arm(&self, armed: Armed) {
        let mut list = self.armed.lock().expect("single-threaded simulation");
        list.push(armed);
        self.count.store(list.len(), Ordering::Relaxed);
    }

    pub fn disarm_all(&self) {
        self.armed.lock().expect("single-threaded simulation").clear();
        self.count.store(0, Ordering::Relaxed);
    }

    pub fn any_armed(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// The first armed fault at `point` whose selector `matches` `proc`,
    /// taken out of the list (it fires once).
    pub fn take(&self, point: Point, matches: impl Fn(&Selector) -> bool) -> Option<Armed> {
        let mut list = self.armed.lock().expect("single-threaded simulation");
        let at = list.iter().position(|a| a.point == point && matches(&a.selector))?;
        let armed = list.remove(at);
        self.count.store(list.len(), Ordering::Relaxed);
        Some(armed)
    }

    pub fn request_crash(&self, request: CrashRequest) {
        self.crashes.lock().expect("single-threaded simulation").push(request);
        self.wake.notify_one();
    }

    pub fn take_crash_requests(&self) -> Vec<CrashRequest> {
        std::mem::take(&mut *self.crashes.lock().expect("single-threaded simulation"))
    }
}
