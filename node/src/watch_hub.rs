//! The driver's side of etcd's Watch: after each batch it publishes the key
//! changes core's applies reported (`ServerOutput::changes`) to every watch
//! stream at once, so watchers are woken by changes rather than polling.
//!
//! Memory stays bounded however slow a watcher is: the channel keeps the
//! last [`BACKLOG_BATCHES`] batches, and a stream that falls further behind
//! loses its place (tokio's `Lagged`) and catches up from core's history
//! instead, as etcd's unsynced watchers do. Each batch says which revisions
//! it covers whole (`after`, `upto`], so a stream can tell whether it
//! missed any and must read the history.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leasesim_core::service::kv::Change;
use leasesim_core::LogIndex;
use tokio::sync::broadcast;

/// Batches kept for streams that have not read them yet.
pub const BACKLOG_BATCHES: usize = 128;
/// etcd's default `--experimental-watch-progress-notify-interval`.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(600);

/// The changes of the revisions in (`after`, `upto`], every one of them.
#[derive(Debug)]
pub struct Published {
    pub after: LogIndex,
    pub upto: LogIndex,
    pub changes: Vec<Change>,
}

/// What a new watch stream gets: the batches from now on, and the revision
/// they start after.
pub struct Feed {
    pub batches: broadcast::Receiver<Arc<Published>>,
    /// The newest revision published (shared; moves as batches go out).
    pub latest: Arc<AtomicU64>,
    /// How often watches that asked for progress notifications get one.
    pub progress_interval: Duration,
}

pub struct WatchHub {
    tx: broadcast::Sender<Arc<Published>>,
    latest: Arc<AtomicU64>,
    progress_interval: Duration,
}

impl Default for WatchHub {
    fn default() -> Self {
        WatchHub { tx: broadcast::channel(BACKLOG_BATCHES).0, latest: Arc::default(), progress_interval: DEFAULT_PROGRESS_INTERVAL }
    }
}

impl WatchHub {
    /// A hub for a store whose revision is `revision` at start (a restart
    /// resumes from its snapshot): no batch claims the changes below it.
    pub fn starting_at(revision: LogIndex) -> Self {
        let hub = WatchHub::default();
        hub.latest.store(revision, Ordering::Release);
        hub
    }

    /// The newest revision published: every change up to it is durable
    /// and has been handed to the streams.
    pub fn published(&self) -> LogIndex {
        self.latest.load(Ordering::Acquire)
    }

    pub fn set_progress_interval(&mut self, interval: Duration) {
        self.progress_interval = interval;
    }

    /// A new stream's feed. Called on the driver's thread, between
    /// publications, so no batch falls between `latest` and the receiver.
    pub fn subscribe(&self) -> Feed {
        Feed { batches: self.tx.subscribe(), latest: self.latest.clone(), progress_interval: self.progress_interval }
    }

    /// Publishes one batch's changes; `revision` is the store's revision
    /// after it. When a snapshot replaced the state (`whole: false`), the
    /// changes do not cover every revision since the last batch: an empty
    /// batch at `revision` tells every stream behind it to read the history.
    pub fn publish(&self, changes: Vec<Change>, revision: LogIndex, whole: bool) {
        let latest = self.latest.load(Ordering::Acquire);
        if revision == latest && changes.is_empty() {
            return;
        }
        // The revision moves only with a change: one that moved with none
        // reported was replaced, not applied.
        let whole = whole && !changes.is_empty();
        let batch = if whole {
            Published { after: latest, upto: revision, changes }
        } else {
            Published { after: revision, upto: revision, changes: Vec::new() }
        };
        self.latest.store(revision, Ordering::Release);
        // No receiver is no error: nobody watches.
        let _ = self.tx.send(Arc::new(batch));
    }
}
