//! Failpoints: narrow-window crash and pause points inside the driver's
//! step, armed by a test runner through the control endpoint
//! (`POST /failpoint`), as etcd's gofail failpoints are. Several entries
//! may wait at once, each under the runner's id for it and with its
//! action. When the member reaches a point a *crash* entry waits at, it
//! writes a `crashed` line naming that entry to its event log (if it keeps
//! one) and SIGKILLs itself, exactly as the runner's own crash does; the
//! runner then restarts it from its data directory and arms the entries
//! still waiting again (a new process starts with none). At a *pause*
//! entry it writes a `paused` line naming the entry and stops itself with
//! SIGSTOP, as the runner's own pause does: the runner sees the process
//! stopped, reads which entry it named, and sends SIGCONT after the
//! fault's `for`; the member then goes on from the point where it stopped,
//! as the simulator's host sleeps at the point (`sim/src/host/mod.rs`
//! `reach`). At a *clock* entry it changes its own skewable clocks
//! (`clock.rs`) there and goes on, writing a `fault` line naming the entry
//! (stamped when the change was made, which the runner reads back to put
//! the change in the judge's model of that clock): the simulator's host
//! likewise changes the clock at the point, before the step reads it.
//!
//! The points and their spellings are the scenario format's
//! (`when = "after-send:vote-reply"`, see docs/): a crash after a write
//! and before its fsync, after the fsync and before any message leaves,
//! right after one kind of message left, or when a timer is due. A crash
//! between a vote reply leaving and anything else happening is a window
//! of microseconds that SIGKILL from outside never hits.
//!
//! An entry may wait in several members at once under a *claim*, a file
//! path: the simulator's `random-server` crash point fires in whichever
//! server reaches the point first (`sim/src/world/points.rs`), so the
//! runner arms it in every member with one claim path, and a member that
//! reaches the point fires only if it creates that file first
//! (`O_CREAT|O_EXCL`, atomic between processes on one machine). The
//! others drop the entry when they reach the point and find the file.
//! Without the claim, followers answering one heartbeat within
//! microseconds of each other would all die at one entry.
//!
//! Nothing is armed unless a runner asks through the control endpoint,
//! which exists only under `--unsafe-test-control-url`: a member started
//! without it has no way to reach one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::clock::{ClockChange, Skews};

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

/// What an entry does when its point is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// SIGKILL: the runner's crash.
    #[default]
    Crash,
    /// SIGSTOP until the runner's SIGCONT: the runner's pause.
    Pause,
    /// This change to the member's own clocks (`POST /clock`'s body).
    Clock(ClockChange),
}

impl Action {
    /// Serialized entries leave the default out: a crash entry reads as it
    /// did before pauses existed (`{"id": 3, "point": "after-sync"}`).
    pub fn is_crash(&self) -> bool {
        *self == Action::Crash
    }
}

/// One armed entry: the runner's id for it (a fault's number in its
/// timeline), its point and what it does there.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub id: u64,
    pub point: String,
    #[serde(default, skip_serializing_if = "Action::is_crash")]
    pub action: Action,
}

/// An entry that fired: its id and what the member must do now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fired {
    pub id: u64,
    pub action: Action,
}

/// One entry as the member holds it.
struct Waiting {
    id: u64,
    point: &'static str,
    action: Action,
    /// Shared with other members: it fires here only if this member
    /// creates this file first.
    claim: Option<PathBuf>,
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
    armed: Mutex<Vec<Waiting>>,
}

impl Failpoints {
    /// Arms entry `id` at `point` to do `action` there (an entry of that
    /// id armed before is replaced, and counts as armed now), shared under
    /// `claim` if given; an unknown name is refused with the list of known
    /// ones.
    pub fn arm(&self, id: u64, point: &str, action: Action, claim: Option<PathBuf>) -> Result<(), String> {
        let point = POINTS
            .iter()
            .copied()
            .find(|p| *p == point)
            .ok_or_else(|| format!("unknown failpoint `{point}` (known: {})", POINTS.join(", ")))?;
        if let Action::Clock(change) = &action {
            // Refused now rather than when reached, where only the event
            // log would tell (a rate's range and a step's direction depend
            // on the change alone; an absolute monotonic offset behind the
            // clock's own is refused when reached).
            Skews::default().apply(change, 0).map_err(|e| format!("clock action: {e}"))?;
        }
        let mut armed = self.armed.lock().expect("failpoints lock");
        armed.retain(|w| w.id != id);
        armed.push(Waiting { id, point, action, claim });
        self.any.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Disarms entry `id`, leaving the others; whether it was armed.
    pub fn disarm(&self, id: u64) -> bool {
        let mut armed = self.armed.lock().expect("failpoints lock");
        let before = armed.len();
        armed.retain(|w| w.id != id);
        self.any.store(!armed.is_empty(), Ordering::SeqCst);
        armed.len() < before
    }

    /// Every armed entry, oldest first.
    pub fn armed(&self) -> Vec<Entry> {
        let armed = self.armed.lock().expect("failpoints lock");
        armed.iter().map(|w| Entry { id: w.id, point: w.point.to_string(), action: w.action }).collect()
    }

    /// The first entry armed at `point` that fires here, taken out (it
    /// fires once; the others stay armed); `None` when none does. A shared
    /// entry another member claimed first is dropped on the way, as the
    /// simulator's list no longer holds a fault that fired.
    pub fn reached(&self, point: &str) -> Option<Fired> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let mut armed = self.armed.lock().expect("failpoints lock");
        let fired = loop {
            let Some(at) = armed.iter().position(|w| w.point == point) else { break None };
            let waiting = armed.remove(at);
            if waiting.claim.as_deref().is_none_or(|path| claimed_here(path, waiting.id)) {
                break Some(Fired { id: waiting.id, action: waiting.action });
            }
        };
        self.any.store(!armed.is_empty(), Ordering::SeqCst);
        fired
    }
}

/// Whether this member is the first to reach a shared entry: it creates
/// the claim file, atomically. A claim that fails otherwise than by the
/// file existing (a runner that named no writable directory) fires all
/// the same and says so in the member's log: a second member firing the
/// entry is then reported by the runner as an error, where dropping the
/// entry would pass for a point nobody reached.
fn claimed_here(path: &Path, id: u64) -> bool {
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => {
            tracing::error!("failpoint entry {id}: cannot claim {}: {e}; firing unclaimed", path.display());
            true
        }
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

/// Stops this process as the runner's pause does (SIGSTOP, which stops
/// every thread and cannot be caught); returns once the runner's SIGCONT
/// resumed it, and the caller goes on from the point.
pub fn stop(point: &str, id: u64) {
    tracing::warn!("failpoint {point} reached (armed entry {id}): SIGSTOP until the runner's SIGCONT");
    // SAFETY: raise(3) with a signal that cannot be caught or ignored.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
    tracing::warn!("failpoint {point} (armed entry {id}): resumed");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(id: u64) -> Fired {
        Fired { id, action: Action::Crash }
    }

    #[test]
    fn each_entry_fires_once_and_only_where_it_was_armed() {
        let fp = Failpoints::default();
        assert_eq!(fp.reached("after-sync"), None);
        fp.arm(1, "after-send:vote-reply", Action::Crash, None).expect("a known point");
        assert_eq!(fp.reached("after-sync"), None);
        assert_eq!(fp.reached("after-send:vote-reply"), Some(crash(1)));
        assert_eq!(fp.reached("after-send:vote-reply"), None, "fired once");
        fp.arm(2, "timer", Action::Crash, None).expect("a known point");
        assert!(fp.disarm(2) && !fp.disarm(2));
        assert_eq!(fp.reached("timer"), None);
        let err = fp.arm(3, "after-send:vote", Action::Crash, None).expect_err("unknown");
        assert!(err.contains("unknown failpoint `after-send:vote`") && err.contains("after-send:vote-reply"), "{err}");
        assert!(fp.armed().is_empty(), "a refused entry is not armed");
    }

    #[test]
    fn the_second_entry_reached_first_fires_alone_and_the_first_waits() {
        let fp = Failpoints::default();
        fp.arm(7, "after-send:append-reply", Action::Crash, None).expect("a known point");
        fp.arm(9, "after-send:append", Action::Crash, None).expect("a known point");
        assert_eq!(fp.reached("after-send:append"), Some(crash(9)), "the entry reached names itself, not the oldest");
        assert_eq!(
            fp.armed(),
            vec![Entry { id: 7, point: "after-send:append-reply".into(), action: Action::Crash }],
            "the first still waits"
        );
        // Two at one point fire in the order they were armed, one per
        // passage, as the simulator's list does.
        fp.arm(11, "after-send:append-reply", Action::Crash, None).expect("a known point");
        assert_eq!(fp.reached("after-send:append-reply"), Some(crash(7)));
        fp.arm(11, "after-sync", Action::Crash, None).expect("re-arming an id replaces its entry");
        assert_eq!(fp.reached("after-send:append-reply"), None);
        assert_eq!(fp.reached("after-sync"), Some(crash(11)));
        assert!(fp.armed().is_empty());
    }

    #[test]
    fn a_shared_entry_fires_in_the_first_member_to_reach_it_and_is_dropped_by_the_others() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let claim = dir.path().join("5");
        // Three members' failpoints, as three processes hold them: entry 5
        // shared under one claim, and member b's own entry 6 behind it at
        // the same point.
        let (a, b, c) = (Failpoints::default(), Failpoints::default(), Failpoints::default());
        for member in [&a, &b, &c] {
            member.arm(5, "after-send:append-reply", Action::Crash, Some(claim.clone())).expect("a known point");
        }
        b.arm(6, "after-send:append-reply", Action::Crash, None).expect("a known point");
        assert_eq!(c.reached("after-send:append-reply"), Some(crash(5)), "the first to reach it fires");
        assert!(claim.exists(), "and claimed it");
        assert_eq!(a.reached("after-send:append-reply"), None, "claimed by another: not fired again");
        assert!(a.armed().is_empty(), "and dropped, as fired entries are");
        assert_eq!(b.reached("after-send:append-reply"), Some(crash(6)), "the claimed entry steps aside for b's own");
        assert!(b.armed().is_empty());
        // A claim that cannot be made for another reason fires (the
        // runner then sees two members die at one entry and says so).
        a.arm(7, "timer", Action::Crash, Some(dir.path().join("no-such-dir").join("7"))).expect("a known point");
        assert_eq!(a.reached("timer"), Some(crash(7)));
    }

    #[test]
    fn a_pause_entry_fires_as_a_pause_once_and_is_told_from_a_crash_in_json() {
        let fp = Failpoints::default();
        fp.arm(3, "after-sync", Action::Pause, None).expect("a known point");
        fp.arm(4, "after-sync", Action::Crash, None).expect("a known point");
        let listed = serde_json::to_value(fp.armed()).expect("serializes");
        assert_eq!(
            listed,
            serde_json::json!([{ "id": 3, "point": "after-sync", "action": "pause" }, { "id": 4, "point": "after-sync" }]),
            "a crash entry reads as before pauses existed"
        );
        assert_eq!(fp.reached("after-sync"), Some(Fired { id: 3, action: Action::Pause }), "oldest first, with its action");
        assert_eq!(fp.reached("after-sync"), Some(crash(4)));
        assert_eq!(fp.reached("after-sync"), None, "each fired once");
        // A runner that names no action arms a crash, as before.
        let entry: Entry = serde_json::from_str(r#"{"id": 5, "point": "timer"}"#).expect("parses");
        assert_eq!(entry.action, Action::Crash);
        let paused: Entry = serde_json::from_str(r#"{"id": 5, "point": "timer", "action": "pause"}"#).expect("parses");
        assert_eq!(paused.action, Action::Pause);
        assert!(serde_json::from_str::<Entry>(r#"{"id": 5, "point": "timer", "action": "nap"}"#).is_err(), "an unknown action");
    }

    #[test]
    fn a_clock_entry_carries_its_change_and_a_bad_change_is_refused_when_armed() {
        let fp = Failpoints::default();
        let entry: Entry =
            serde_json::from_str(r#"{"id": 2, "point": "timer", "action": {"clock": {"wall": {"step_ms": 1000}}}}"#).expect("parses");
        let Action::Clock(change) = entry.action else { panic!("a clock action: {entry:?}") };
        assert_eq!(change.wall.and_then(|w| w.step_ms), Some(1000));
        fp.arm(2, "timer", entry.action, None).expect("a good change");
        assert_eq!(fp.reached("timer"), Some(Fired { id: 2, action: entry.action }));
        let back = ClockChange { monotonic: Some(super::super::clock::SkewChange { step_ms: Some(-5), ..Default::default() }), wall: None };
        let err = fp.arm(3, "timer", Action::Clock(back), None).expect_err("the monotonic clock only steps forward");
        assert!(err.starts_with("clock action: monotonic:"), "{err}");
        assert!(fp.armed().is_empty());
    }
}
