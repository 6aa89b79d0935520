//! The member's own events for a test runner (`--unsafe-test-event-log
//! FILE`): what core reports after every batch (`ServerEvent`s: Raft's
//! leaders and applied entries, the lease and lock tables' changes,
//! keep-alive answers), the votes it grants, and the instant a failpoint
//! kills or stops it (naming the armed entry that fired, so that a runner
//! with several armed knows which one it was), one JSON line each, a `leasesim_judge::observe::EventLine`
//! (the judge's own vocabulary; the runner reads the same type), so that a runner can judge the
//! invariants that need a server's view (election safety, log matching,
//! vote durability, FIFO lock grants…) on a real cluster.
//!
//! Why a file and not a stream on the control endpoint: lines written
//! before a SIGKILL (the runner's crash, or a failpoint's) are in the
//! kernel's page cache and survive it, a paused or partitioned member
//! needs no connection kept up, and the runner reads the files once the
//! run is over (the judge works after the run anyway). Each batch's lines
//! go out in one append write(2), so a line is never torn by a kill
//! between lines; a kill inside the call can leave a torn last line, which
//! the reader drops.
//!
//! Stamping: each line carries `mono_ns`, `CLOCK_MONOTONIC` read when it
//! was stamped (true time for every process on the machine, never the
//! member's skewable clock), and `error_ns`: the event happened within
//! `[mono_ns - error_ns, mono_ns]`. A server event is stamped as the
//! driver produces it, right after the one input (or timer) that produced
//! it, with the error that step's duration ([`EventLog::step_began`],
//! [`EventLog::step_ended`]): not once per batch after its fsync, because a
//! batch handles up to hundreds of inputs and on a loaded machine took up
//! to half a second, which the judge must then grant every event (it
//! judges conservatively within the error). Votes and a failpoint's crash
//! are stamped when they are written, with the batch's error.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use leasesim_core::server::ServerEvent;
use leasesim_core::{NodeId, Term};
use leasesim_judge::observe::{Event, EventLine};
use serde::{Deserialize, Serialize};

use super::failpoint::{Action, Entry};

/// `CLOCK_MONOTONIC` now, in nanoseconds: true time for every process on
/// this machine.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC is always readable on Linux");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// One event of a batch, before it is stamped.
pub enum Logged<'a> {
    Server(&'a ServerEvent),
    /// A granted vote (not a pre-vote), as the reply leaves.
    VoteGranted {
        term: Term,
        candidate: NodeId,
    },
}

impl Logged<'_> {
    fn to_event(&self) -> Event {
        match self {
            Logged::Server(event) => Event::Server { event: (*event).clone() },
            Logged::VoteGranted { term, candidate } => Event::VoteGranted { term: *term, candidate: *candidate },
        }
    }
}

/// The line a failpoint's crash or pause writes: the judge's `crashed` or
/// `paused` line, plus the entry that fired under `failpoint` (the judge's
/// reader ignores a field it does not know; the runner reads it back with
/// [`fired`]).
#[derive(Serialize, Deserialize)]
struct CrashedLine {
    #[serde(flatten)]
    line: EventLine,
    failpoint: Entry,
}

/// The failpoint entry the member named in the last line of its event log
/// at `path`, if that line is a failpoint's crash or pause: a dying or
/// stopping member writes it last (the driver is the log's only writer,
/// and kills or stops the process right after), so a runner that sees the
/// member gone or stopped reads here which of its armed entries fired.
/// `None` for any other last line: the member died otherwise, or was
/// killed or stopped from outside.
pub fn fired(path: &Path) -> Result<Option<Entry>, String> {
    use std::io::{Read, Seek, SeekFrom};
    /// Far more than one line: the tail holds the last line whole.
    const TAIL: u64 = 4096;
    let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let len = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(last) = tail.strip_suffix('\n').and_then(|t| t.rsplit('\n').next()) else { return Ok(None) };
    let named = |c: &CrashedLine| match c.failpoint.action {
        Action::Crash => c.line.event == Event::Crashed,
        Action::Pause => c.line.event == Event::Paused,
        Action::Clock(_) => false,
    };
    Ok(serde_json::from_str::<CrashedLine>(last).ok().filter(named).map(|c| c.failpoint))
}

/// A clock entry the member reached: when (`CLOCK_MONOTONIC`), which, and
/// whether its change was made (`false`: refused, the line's
/// `fault-skipped` says why).
#[derive(Clone, Debug, PartialEq)]
pub struct ClockFired {
    pub mono_ns: u64,
    pub entry: Entry,
    pub applied: bool,
}

/// The clock entries named in the event log at `path` from byte `from` on,
/// and the offset to read from next time (past the last whole line: a line
/// being written is read whole next time). A member that keeps running
/// writes more lines after a clock entry's, so the runner reads them as
/// they come, not only the last.
pub fn clocks_fired(path: &Path, from: u64) -> Result<(Vec<ClockFired>, u64), String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.seek(SeekFrom::Start(from)).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
    let mut fired = Vec::new();
    for line in String::from_utf8_lossy(&bytes[..whole]).lines() {
        // Cheap test first: most lines are server events.
        if !line.contains("\"clock\"") {
            continue;
        }
        let Ok(named) = serde_json::from_str::<CrashedLine>(line) else { continue };
        if matches!(named.failpoint.action, Action::Clock(_)) {
            let applied = matches!(named.line.event, Event::Fault { .. });
            fired.push(ClockFired { mono_ns: named.line.mono_ns, entry: named.failpoint, applied });
        }
    }
    Ok((fired, from + whole as u64))
}

/// One input or timer the driver handled: how many server events the
/// core's output held after it, and when it began and ended.
#[derive(Clone, Copy)]
struct Step {
    events_after: usize,
    start_ns: u64,
    end_ns: u64,
}

/// The open event log.
pub struct EventLog {
    file: File,
    /// CLOCK_MONOTONIC when the step under way began.
    step_start_ns: u64,
    /// The steps of this batch that produced events, in order.
    steps: Vec<Step>,
}

impl EventLog {
    /// Opens `path` for appending (a restarted member goes on after the
    /// lines of its earlier lives).
    pub fn open(path: &Path) -> Result<EventLog, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("--unsafe-test-event-log {}: {e}", path.display()))?;
        Ok(EventLog { file, step_start_ns: 0, steps: Vec::new() })
    }

    /// The driver is about to hand the core one input (or a timer).
    pub fn step_began(&mut self) {
        self.step_start_ns = monotonic_ns();
    }

    /// The core is done with it and its output holds `pending_events`
    /// server events (this batch's so far): the new ones are stamped now.
    pub fn step_ended(&mut self, pending_events: usize) {
        let before = self.steps.last().map_or(0, |s| s.events_after);
        if pending_events > before {
            self.steps.push(Step { events_after: pending_events, start_ns: self.step_start_ns, end_ns: monotonic_ns() });
        }
    }

    /// Writes the batch's server `events` (what the core's output held),
    /// each stamped by the step that produced it; an event no step claims
    /// (the core produced it outside a stamped step) is stamped now, as
    /// having happened since `batch_start_ns`.
    pub fn write_server_events(&mut self, batch_start_ns: u64, events: &[ServerEvent]) {
        let steps = std::mem::take(&mut self.steps);
        if events.is_empty() {
            return;
        }
        let now_ns = monotonic_ns();
        let mut bytes = Vec::new();
        let mut step = steps.iter().peekable();
        for (i, event) in events.iter().enumerate() {
            while step.next_if(|s| s.events_after <= i).is_some() {}
            let (mono_ns, error_ns) = match step.peek() {
                Some(s) => (s.end_ns, s.end_ns.saturating_sub(s.start_ns)),
                None => (now_ns, now_ns.saturating_sub(batch_start_ns)),
            };
            line_into(&mut bytes, mono_ns, error_ns, &Logged::Server(event));
        }
        self.append(&bytes);
    }

    /// Writes `events`, stamped now, as having happened since
    /// `batch_start_ns` (one write for the whole batch).
    pub fn write(&mut self, batch_start_ns: u64, events: &[Logged<'_>]) {
        if events.is_empty() {
            return;
        }
        let mono_ns = monotonic_ns();
        let error_ns = mono_ns.saturating_sub(batch_start_ns);
        let mut bytes = Vec::new();
        for event in events {
            line_into(&mut bytes, mono_ns, error_ns, event);
        }
        self.append(&bytes);
    }

    /// The member reached failpoint entry `entry` and did `event` there
    /// (`crashed`, `paused`: its last line before it; a clock change's
    /// `fault`, or `fault-skipped` if refused), stamped now, as having
    /// happened since `batch_start_ns`.
    pub fn write_fired(&mut self, batch_start_ns: u64, entry: Entry, event: Event) {
        let mono_ns = monotonic_ns();
        let line = EventLine { mono_ns, error_ns: mono_ns.saturating_sub(batch_start_ns), event };
        let mut bytes = serde_json::to_vec(&CrashedLine { line, failpoint: entry }).expect("a crashed line always serializes");
        bytes.push(b'\n');
        self.append(&bytes);
    }

    /// One append write(2) for a batch's lines. A failed write only loses
    /// the test's evidence, never the member's state: it is logged, not
    /// fatal.
    fn append(&mut self, bytes: &[u8]) {
        if let Err(e) = self.file.write_all(bytes) {
            tracing::warn!("--unsafe-test-event-log: cannot write: {e}");
        }
    }
}

fn line_into(bytes: &mut Vec<u8>, mono_ns: u64, error_ns: u64, event: &Logged<'_>) {
    bytes.extend(EventLine { mono_ns, error_ns, event: event.to_event() }.to_json_line());
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::raft::RaftEvent;
    use serde_json::{json, Value};

    #[test]
    fn a_batch_is_written_as_stamped_json_lines_in_the_judges_vocabulary() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).expect("opens");
        let leader = ServerEvent::Raft(RaftEvent::BecameLeader { term: 4 });
        let start_ns = monotonic_ns();
        log.write(start_ns, &[Logged::Server(&leader), Logged::VoteGranted { term: 4, candidate: 2 }]);
        log.write(start_ns, &[]);
        assert_eq!(fired(&path), Ok(None), "no failpoint fired");
        let entry = Entry { id: 12, point: "after-sync".into(), action: Action::Crash };
        log.write_fired(start_ns, entry.clone(), Event::Crashed);
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["event"]["kind"], "server");
        assert_eq!(lines[0]["event"]["event"], serde_json::to_value(&leader).expect("serializes"));
        assert_eq!(lines[1]["event"], json!({ "kind": "vote-granted", "term": 4, "candidate": 2 }));
        assert_eq!(lines[2]["event"], json!({ "kind": "crashed" }));
        assert_eq!(lines[2]["failpoint"], json!({ "id": 12, "point": "after-sync" }));
        // The judge reads a crash, the runner which entry fired.
        assert_eq!(EventLine::parse(text.lines().nth(2).unwrap()).map(|l| l.event), Ok(Event::Crashed));
        assert_eq!(fired(&path), Ok(Some(entry)));
        log.write(start_ns, &[Logged::VoteGranted { term: 5, candidate: 1 }]);
        assert_eq!(fired(&path), Ok(None), "only a last line names the entry that killed the member");
        let mono_ns = lines[0]["mono_ns"].as_u64().expect("a stamp");
        assert!(mono_ns >= start_ns && lines[0]["error_ns"].as_u64() == Some(mono_ns - start_ns));
        // A pause entry's line is the judge's `paused`, naming the entry.
        let paused = Entry { id: 13, point: "timer".into(), action: Action::Pause };
        log.write_fired(start_ns, paused.clone(), Event::Paused);
        let text = std::fs::read_to_string(&path).expect("reads");
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).expect("a JSON line");
        assert_eq!(
            (&last["event"], &last["failpoint"]),
            (&json!({ "kind": "paused" }), &json!({ "id": 13, "point": "timer", "action": "pause" }))
        );
        assert_eq!(fired(&path), Ok(Some(paused)));
    }

    #[test]
    fn each_server_event_is_stamped_by_the_step_that_produced_it() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).expect("opens");
        let batch_start_ns = monotonic_ns();
        let events: Vec<ServerEvent> = (1..=4).map(|term| ServerEvent::Raft(RaftEvent::BecameLeader { term })).collect();
        // Step 1 produces events 0 and 1, step 2 none, then a slow step 3
        // produces event 2; event 3 comes from outside any step.
        log.step_began();
        log.step_ended(2);
        log.step_began();
        log.step_ended(2);
        std::thread::sleep(std::time::Duration::from_millis(30));
        log.step_began();
        std::thread::sleep(std::time::Duration::from_millis(20));
        log.step_ended(3);
        log.write_server_events(batch_start_ns, &events);
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        let stamp = |i: usize| (lines[i]["mono_ns"].as_u64().unwrap(), lines[i]["error_ns"].as_u64().unwrap());
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(stamp(0), stamp(1), "one step, one stamp");
        assert!(stamp(0).1 < 20_000_000, "the first step was quick: {:?}", stamp(0));
        assert!(stamp(2).0 >= stamp(0).0 + 50_000_000, "event 2 is stamped after the sleeps: {:?}", stamp(2));
        assert!((20_000_000..50_000_000).contains(&stamp(2).1), "its error is its own step's, not the batch's: {:?}", stamp(2));
        assert!(stamp(3).1 >= 50_000_000 && stamp(3).0 - stamp(3).1 == batch_start_ns, "unclaimed: the batch's error");
        // The steps are consumed: the next batch starts afresh.
        log.write_server_events(batch_start_ns, &events[..1]);
        let text = std::fs::read_to_string(&path).expect("reads");
        assert_eq!(text.lines().count(), 5);
    }

    #[test]
    fn clock_entries_are_read_as_they_come_and_a_half_written_line_waits() {
        use super::super::clock::{ClockChange, SkewChange};
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path).expect("opens");
        let start_ns = monotonic_ns();
        let change = ClockChange { monotonic: None, wall: Some(SkewChange { step_ms: Some(-3000), ..SkewChange::default() }) };
        let entry = Entry { id: 4, point: "timer".into(), action: Action::Clock(change) };
        log.write(start_ns, &[Logged::VoteGranted { term: 1, candidate: 1 }]);
        log.write_fired(start_ns, entry.clone(), Event::Fault { action: "clock at timer (failpoint #4)".into() });
        log.write(start_ns, &[Logged::VoteGranted { term: 2, candidate: 1 }]);
        assert_eq!(fired(&path), Ok(None), "a clock entry does not stop the member");
        let (found, next) = clocks_fired(&path, 0).expect("reads");
        assert_eq!(found.len(), 1);
        assert!(found[0].applied && found[0].entry == entry && found[0].mono_ns >= start_ns, "{found:?}");
        assert_eq!(next, std::fs::metadata(&path).unwrap().len(), "read to the end");
        // A refused one, and then a line cut short: read once it is whole.
        let refused = Entry { id: 5, ..entry };
        log.write_fired(start_ns, refused.clone(), Event::FaultSkipped { action: "clock at timer".into(), why: "no".into() });
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"mono_ns\": 1, \"clock\"").unwrap();
        let (found, later) = clocks_fired(&path, next).expect("reads");
        assert_eq!((found.len(), found[0].applied, &found[0].entry), (1, false, &refused));
        assert_eq!(later + 22, std::fs::metadata(&path).unwrap().len(), "the cut line is left for next time");
        assert_eq!(clocks_fired(&path, later).expect("reads").0, vec![]);
    }
}
