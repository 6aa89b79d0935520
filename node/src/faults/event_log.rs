//! The member's own events for a test runner (`--unsafe-test-event-log
//! FILE`): what core reports after every batch (`ServerEvent`s: Raft's
//! leaders and applied entries, the lease and lock tables' changes,
//! keep-alive answers), the votes it grants, and the instant a failpoint
//! kills it, one JSON line each, a `leasesim_judge::observe::EventLine`
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
//! Stamping: each line carries `mono_ns`, `CLOCK_MONOTONIC` when it was
//! written (true time for every process on the machine, never the
//! member's skewable clock), and `error_ns`, how long before that the
//! batch that produced it began: the event happened within
//! `[mono_ns - error_ns, mono_ns]`.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use leasesim_core::server::ServerEvent;
use leasesim_core::{NodeId, Term};
use leasesim_judge::observe::{Event, EventLine};

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
    /// The member kills itself at a failpoint.
    Crashed,
}

impl Logged<'_> {
    fn to_event(&self) -> Event {
        match self {
            Logged::Server(event) => Event::Server { event: (*event).clone() },
            Logged::VoteGranted { term, candidate } => Event::VoteGranted { term: *term, candidate: *candidate },
            Logged::Crashed => Event::Crashed,
        }
    }
}

/// The open event log.
pub struct EventLog {
    file: File,
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
        Ok(EventLog { file })
    }

    /// Writes `events`, stamped now, as having happened since
    /// `batch_start_ns` (one write for the whole batch). A failed write
    /// only loses the test's evidence, never the member's state: it is
    /// logged, not fatal.
    pub fn write(&mut self, batch_start_ns: u64, events: &[Logged<'_>]) {
        if events.is_empty() {
            return;
        }
        let mono_ns = monotonic_ns();
        let error_ns = mono_ns.saturating_sub(batch_start_ns);
        let mut bytes = Vec::new();
        for event in events {
            bytes.extend(EventLine { mono_ns, error_ns, event: event.to_event() }.to_json_line());
        }
        if let Err(e) = self.file.write_all(&bytes) {
            tracing::warn!("--unsafe-test-event-log: cannot write: {e}");
        }
    }
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
        log.write(start_ns, &[Logged::Server(&leader), Logged::VoteGranted { term: 4, candidate: 2 }, Logged::Crashed]);
        log.write(start_ns, &[]);
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["event"]["kind"], "server");
        assert_eq!(lines[0]["event"]["event"], serde_json::to_value(&leader).expect("serializes"));
        assert_eq!(lines[1]["event"], json!({ "kind": "vote-granted", "term": 4, "candidate": 2 }));
        assert_eq!(lines[2]["event"], json!({ "kind": "crashed" }));
        let mono_ns = lines[0]["mono_ns"].as_u64().expect("a stamp");
        assert!(mono_ns >= start_ns && lines[0]["error_ns"].as_u64() == Some(mono_ns - start_ns));
    }
}
