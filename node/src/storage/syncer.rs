//! The log's fdatasync, off the driver's thread. With the fsync on the
//! driver's thread a batch cost its handling plus its fsync, and the driver
//! did nothing else meanwhile (12–22 puts per fsync, the driver busy 80–96 %
//! of the time, most of it waiting on the disk). Here the driver writes a
//! batch, asks for its sync and goes on gathering and stepping the next
//! batch while the disk works; it holds every output of a batch (acks,
//! votes, append replies, watch events) until the sync covering its writes
//! is reported done (Raft's rule: persist before you answer).
//!
//! A request names the file to sync and a sequence number; the thread
//! takes every request queued when it wakes and syncs them with one
//! fdatasync per file, then reports the highest number done. An
//! fdatasync makes durable every write issued before it was called, and
//! the driver issues a batch's writes before asking for its sync, so a
//! report of `n` covers every batch up to `n`: batches that queue while the
//! disk is busy share the next fsync (group commit across batches).

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc as tokio_mpsc;

/// `--unsafe-test-hold-syncs`: while a file of this name is in the data
/// directory, the syncer waits before each fdatasync (a test counts what
/// leaves the member meanwhile: nothing that needs the sync may).
pub const HOLD_FILE: &str = "hold-syncs";

/// One sync asked for: `file` holds the writes up to sequence `seq`.
struct Request {
    seq: u64,
    file: Arc<File>,
}

/// The sync thread, the channels to and from it, and where it stands.
pub(super) struct Syncer {
    requests: Option<mpsc::Sender<Request>>,
    reports: tokio_mpsc::UnboundedReceiver<io::Result<u64>>,
    /// The highest sequence number asked for (0: none yet).
    requested: u64,
    /// The highest sequence number reported durable.
    synced: u64,
    /// fdatasync calls made by the thread (for tests).
    fsyncs: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    pub fn start(dir: PathBuf, hold: bool) -> io::Result<Syncer> {
        let (requests, inbox) = mpsc::channel::<Request>();
        let (report, reports) = tokio_mpsc::unbounded_channel();
        let fsyncs = Arc::new(AtomicU64::new(0));
        let counted = fsyncs.clone();
        let thread = std::thread::Builder::new().name("wal-sync".into()).spawn(move || {
            while let Ok(first) = inbox.recv() {
                while hold && dir.join(HOLD_FILE).exists() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let mut queued = vec![first];
                queued.extend(inbox.try_iter());
                if report.send(sync_all(&queued, &counted)).is_err() {
                    return;
                }
            }
        })?;
        Ok(Syncer { requests: Some(requests), reports, requested: 0, synced: 0, fsyncs, thread: Some(thread) })
    }

    /// Asks for `file` to be synced; returns the sequence number whose
    /// report says so.
    pub fn request(&mut self, file: Arc<File>) -> io::Result<u64> {
        let requests = self.requests.as_ref().expect("the syncer runs until dropped");
        requests.send(Request { seq: self.requested + 1, file }).map_err(|_| io::Error::other("the log's sync thread stopped"))?;
        self.requested += 1;
        Ok(self.requested)
    }

    pub fn requested(&self) -> u64 {
        self.requested
    }

    pub fn synced(&self) -> u64 {
        self.synced
    }

    /// Waits for the next report and takes it in; `None` once the thread
    /// is gone. Cancel-safe (a dropped wait loses no report).
    pub async fn next_report(&mut self) -> Option<io::Result<u64>> {
        let report = self.reports.recv().await?;
        if let Ok(seq) = report {
            self.synced = self.synced.max(seq);
        }
        Some(report)
    }

    /// The same, blocking (outside an async runtime: tests).
    pub fn wait_report(&mut self) -> Option<io::Result<u64>> {
        let report = self.reports.blocking_recv()?;
        if let Ok(seq) = report {
            self.synced = self.synced.max(seq);
        }
        Some(report)
    }

    pub fn fsyncs(&self) -> u64 {
        self.fsyncs.load(Ordering::Relaxed)
    }
}

impl Drop for Syncer {
    /// Lets queued syncs finish, so a reopened directory (a test's restart
    /// in the same process) finds them done.
    fn drop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Syncs the files of `queued`, each once (the log changes file only
/// when it is sealed); the highest sequence number on success.
fn sync_all(queued: &[Request], fsyncs: &AtomicU64) -> io::Result<u64> {
    for (i, request) in queued.iter().enumerate() {
        // One fdatasync of a file at its last mention covers the writes of
        // every earlier request naming it.
        if queued[i + 1..].iter().any(|later| Arc::ptr_eq(&later.file, &request.file)) {
            continue;
        }
        request.file.sync_data()?;
        fsyncs.fetch_add(1, Ordering::Relaxed);
    }
    Ok(queued.last().expect("at least the first").seq)
}
