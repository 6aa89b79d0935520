//! Snapshots written behind the apply thread. Serializing and fsyncing a
//! large state took seconds (a 4.9 s p99 stall in the bench): done on the
//! driver's thread, every client waited for it. The driver hands a
//! snapshot it took itself to this writer's thread and goes on applying;
//! the log still holds every entry the snapshot covers, so nothing is lost
//! if the process dies before the write is done. Once the writer reports
//! the snapshot renamed into place, the driver's [`super::Storage`] drops
//! the covered entries and rewrites its log.

use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use leasesim_core::raft::Snapshot;
use leasesim_core::service::SharedState;
use leasesim_core::LogIndex;

use super::{invalid, record, write_atomically, SNAPSHOT, SNAPSHOT_TMP};

/// `--unsafe-test-hold-snapshot-writes`: while a file of this name is in
/// the data directory, the writer waits before writing (a test counts what
/// the member applies meanwhile).
pub const HOLD_FILE: &str = "hold-snapshot-writes";

/// A write the writer finished.
pub(super) struct Done {
    pub last_index: LogIndex,
    pub result: io::Result<()>,
    /// Given back when the write failed, for a retry after freeing space.
    pub snapshot: Option<Snapshot<SharedState>>,
}

/// The writer thread and its two channels.
pub(super) struct SnapshotWriter {
    jobs: Option<mpsc::Sender<Snapshot<SharedState>>>,
    done: mpsc::Receiver<Done>,
    in_flight: usize,
    thread: Option<JoinHandle<()>>,
}

impl SnapshotWriter {
    pub fn start(dir: PathBuf, hold: bool) -> io::Result<SnapshotWriter> {
        let (jobs, inbox) = mpsc::channel::<Snapshot<SharedState>>();
        let (report, done) = mpsc::channel();
        let thread = std::thread::Builder::new().name("snapshot-writer".into()).spawn(move || {
            for snapshot in inbox {
                while hold && dir.join(HOLD_FILE).exists() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let last_index = snapshot.last_index;
                let result = write_snapshot(&dir, &snapshot);
                let snapshot = result.is_err().then_some(snapshot);
                if report.send(Done { last_index, result, snapshot }).is_err() {
                    return;
                }
            }
        })?;
        Ok(SnapshotWriter { jobs: Some(jobs), done, in_flight: 0, thread: Some(thread) })
    }

    /// Queues `snapshot` for writing; writes happen in the order queued.
    pub fn submit(&mut self, snapshot: Snapshot<SharedState>) -> io::Result<()> {
        let jobs = self.jobs.as_ref().expect("the writer runs until dropped");
        jobs.send(snapshot).map_err(|_| io::Error::other("the snapshot writer stopped"))?;
        self.in_flight += 1;
        Ok(())
    }

    /// A finished write, if one is waiting.
    pub fn try_done(&mut self) -> Option<Done> {
        let done = self.done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(done)
    }

    /// The next finished write, waiting for it; `None` when none is queued.
    pub fn wait_done(&mut self) -> Option<Done> {
        if self.in_flight == 0 {
            return None;
        }
        let done = self.done.recv().ok()?;
        self.in_flight -= 1;
        Some(done)
    }

    /// Snapshots queued or being written.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

impl Drop for SnapshotWriter {
    /// Lets a queued write finish, so a reopened directory (a test's
    /// restart in the same process) never races it.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serializes `snapshot` and replaces the directory's snapshot file with it
/// (write, fsync, rename, fsync the directory).
pub(super) fn write_snapshot(dir: &std::path::Path, snapshot: &Snapshot<SharedState>) -> io::Result<()> {
    let bytes = bincode::serialize(snapshot).map_err(invalid)?;
    write_atomically(dir, SNAPSHOT_TMP, SNAPSHOT, &record::encode(&bytes))
}
