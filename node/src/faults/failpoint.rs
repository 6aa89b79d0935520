//! Failpoints: narrow-window crash points inside the driver's step, armed
//! by a test runner through the control endpoint (`POST /failpoint`), as
//! etcd's gofail failpoints are. Several entries may wait at once, each
//! under the runner's id for it; when the member reaches a point an entry
//! waits at, it writes a `crashed` line naming that entry to its event log
//! (if it keeps one) and SIGKILLs itself, exactly as the runner's own
//! crash does; the runner then restarts it from its data directory and
//! arms the entries still waiting again (a new process starts with none).
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

/// One armed entry: the runner's id for it (a fault's number in its
/// timeline) and its point.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub id: u64,
    pub point: String,
}

/// The entries armed, in the order they were armed. Several at once, as
/// the simulator's world holds every fault waiting at a point
/// (`sim/src/world/points.rs`): a scenario arms a member's next crash
/// point while an earlier one still waits, and the one reached first must
/// fire and say which it was. A restarted process starts empty: the
/// runner arms its pending entries again.
#[derive(Default)]
pub struct Failpoints {
    /// Fast path: the driver checks this on every message without a lock.
    any: AtomicBool,
    armed: Mutex<Vec<(u64, &'static str)>>,
}

impl Failpoints {
    /// Arms entry `id` at `point` (an entry of that id armed before is
    /// replaced, and counts as armed now); an unknown name is refused
    /// with the list of known ones.
    pub fn arm(&self, id: u64, point: &str) -> Result<(), String> {
        let point = POINTS
            .iter()
            .copied()
            .find(|p| *p == point)
            .ok_or_else(|| format!("unknown failpoint `{point}` (known: {})", POINTS.join(", ")))?;
        let mut armed = self.armed.lock().expect("failpoints lock");
        armed.retain(|(armed_id, _)| *armed_id != id);
        armed.push((id, point));
        self.any.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Disarms entry `id`, leaving the others; whether it was armed.
    pub fn disarm(&self, id: u64) -> bool {
        let mut armed = self.armed.lock().expect("failpoints lock");
        let before = armed.len();
        armed.retain(|(armed_id, _)| *armed_id != id);
        self.any.store(!armed.is_empty(), Ordering::SeqCst);
        armed.len() < before
    }

    /// Every armed entry, oldest first.
    pub fn armed(&self) -> Vec<Entry> {
        let armed = self.armed.lock().expect("failpoints lock");
        armed.iter().map(|(id, point)| Entry { id: *id, point: point.to_string() }).collect()
    }

    /// The id of the first entry armed at `point`, taken out (it fires
    /// once; the others stay armed); `None` when none waits there.
    pub fn reached(&self, point: &str) -> Option<u64> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let mut armed = self.armed.lock().expect("failpoints lock");
        let at = armed.iter().position(|(_, p)| *p == point)?;
        let (id, _) = armed.remove(at);
        self.any.store(!armed.is_empty(), Ordering::SeqCst);
        Some(id)
    }
}

/// Kills this process as the runner's crash does (SIGKILL: no destructor,
/// no flush of anything not yet written).
pub fn die(point: &str, id: u64) -> ! {
    tracing::warn!("failpoint {point} reached (armed entry {id}): SIGKILL");
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
    fn each_entry_fires_once_and_only_where_it_was_armed() {
        let fp = Failpoints::default();
        assert_eq!(fp.reached("after-sync"), None);
        fp.arm(1, "after-send:vote-reply").expect("a known point");
        assert_eq!(fp.reached("after-sync"), None);
        assert_eq!(fp.reached("after-send:vote-reply"), Some(1));
        assert_eq!(fp.reached("after-send:vote-reply"), None, "fired once");
        fp.arm(2, "timer").expect("a known point");
        assert!(fp.disarm(2) && !fp.disarm(2));
        assert_eq!(fp.reached("timer"), None);
        let err = fp.arm(3, "after-send:vote").expect_err("unknown");
        assert!(err.contains("unknown failpoint `after-send:vote`") && err.contains("after-send:vote-reply"), "{err}");
        assert!(fp.armed().is_empty(), "a refused entry is not armed");
    }

    #[test]
    fn the_second_entry_reached_first_fires_alone_and_the_first_waits() {
        let fp = Failpoints::default();
        fp.arm(7, "after-send:append-reply").expect("a known point");
        fp.arm(9, "after-send:append").expect("a known point");
        assert_eq!(fp.reached("after-send:append"), Some(9), "the entry reached names itself, not the oldest");
        assert_eq!(fp.armed(), vec![Entry { id: 7, point: "after-send:append-reply".into() }], "the first still waits");
        // Two at one point fire in the order they were armed, one per
        // passage, as the simulator's list does.
        fp.arm(11, "after-send:append-reply").expect("a known point");
        assert_eq!(fp.reached("after-send:append-reply"), Some(7));
        fp.arm(11, "after-sync").expect("re-arming an id replaces its entry");
        assert_eq!(fp.reached("after-send:append-reply"), None);
        assert_eq!(fp.reached("after-sync"), Some(11));
        assert!(fp.armed().is_empty());
    }
}
