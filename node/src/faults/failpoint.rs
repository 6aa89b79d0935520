//! Failpoints: narrow-window crash points inside the driver's step, armed
//! by a test runner through the control endpoint (`POST /failpoint`), as
//! etcd's gofail failpoints are. When the member reaches the armed point
//! it writes a `crashed` line to its event log (if it keeps one) and
//! SIGKILLs itself, exactly as the runner's own crash does; the runner
//! then restarts it from its data directory.
//!
//! The points and their spellings are the scenario format's
//! (`when = "after-send:vote-reply"`, see docs/): a crash after a write
//! and before its fsync, after the fsync and before any message leaves,
//! right after one kind of message left, or when a timer is due. A crash
//! between a vote reply leaving and anything else happening is a window
//! of microseconds that SIGKILL from outside never hits.
//!
//! Nothing is armed unless a runner asks through the control endpoint,
//! which exists only under `--unsafe-test-control-url`: a member started
//! without it has no way to reach one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Every point a member can stop at, in the scenario format's spelling.
pub const POINTS: [&str; 12] = [
    "after-send:vote-request",
    "after-send:vote-reply",
    "after-send:append",
    "after-send:append-reply",
    "after-send:snapshot",
    "after-send:snapshot-reply",
    "after-send:client-reply",
    "after-write",
    "after-sync",
    "snapshot-install",
    "membership-change",
    "timer",
];

/// The point armed, if any (one at a time: a runner arms the next after
/// the member restarts).
#[derive(Default)]
pub struct Failpoints {
    /// Fast path: the driver checks this on every message without a lock.
    any: AtomicBool,
    armed: Mutex<Option<&'static str>>,
}

impl Failpoints {
    /// Arms `point` (`None`: disarms); an unknown name is refused with the
    /// list of known ones.
    pub fn arm(&self, point: Option<&str>) -> Result<(), String> {
        let point = match point {
            None => None,
            Some(name) => Some(
                POINTS
                    .iter()
                    .copied()
                    .find(|p| *p == name)
                    .ok_or_else(|| format!("unknown failpoint `{name}` (known: {})", POINTS.join(", ")))?,
            ),
        };
        *self.armed.lock().expect("failpoints lock") = point;
        self.any.store(point.is_some(), Ordering::SeqCst);
        Ok(())
    }

    pub fn armed(&self) -> Option<&'static str> {
        *self.armed.lock().expect("failpoints lock")
    }

    /// Whether `point` is armed; it is disarmed by being reached (it fires
    /// once).
    pub fn reached(&self, point: &str) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return false;
        }
        let mut armed = self.armed.lock().expect("failpoints lock");
        if *armed == Some(point) {
            *armed = None;
            self.any.store(false, Ordering::SeqCst);
            true
        } else {
            false
        }
    }
}

/// Kills this process as the runner's crash does (SIGKILL: no destructor,
/// no flush of anything not yet written).
pub fn die(point: &str) -> ! {
    tracing::warn!("failpoint {point} reached: SIGKILL");
    // SAFETY: kill(2) on our own pid with a signal that cannot be caught.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_fires_once_and_only_the_armed_one() {
        let fp = Failpoints::default();
        assert!(!fp.reached("after-sync"));
        fp.arm(Some("after-send:vote-reply")).expect("a known point");
        assert!(!fp.reached("after-sync"));
        assert!(fp.reached("after-send:vote-reply"));
        assert!(!fp.reached("after-send:vote-reply"), "fired once");
        fp.arm(Some("timer")).expect("a known point");
        fp.arm(None).expect("disarms");
        assert!(!fp.reached("timer"));
        let err = fp.arm(Some("after-send:vote")).expect_err("unknown");
        assert!(err.contains("unknown failpoint `after-send:vote`") && err.contains("after-send:vote-reply"), "{err}");
    }
}
