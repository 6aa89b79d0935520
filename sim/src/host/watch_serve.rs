//! Watches served by a simulated server, as etcd's watchable store serves
//! them: a new stream first reads its range's history from its start
//! revision (etcd's "unsynced" watchers, `Kv::events`), then follows the
//! change stream its core hands out with every apply (`ServerOutput::
//! changes`, etcd's "synced" watchers). A snapshot install replaces the
//! state without changes of its own, so every stream then catches up from
//! the new state's history. A start below the compaction is refused with
//! the compacted error. The table lives in the process: a restarted server
//! forgets its streams, and its clients resume elsewhere or again.

use std::collections::BTreeMap;

use leasesim_core::server::Server;
use leasesim_core::service::kv::{Change, KeyRange, RevisionError};
use leasesim_core::{ClientId, LogIndex};

use crate::world::wire::{StreamBody, WatchReply, WatchRequest};

struct Stream {
    range: KeyRange,
    /// Changes below this revision were sent (or were before the start).
    next: LogIndex,
    prev_kv: bool,
    /// The next message's position in the stream.
    seq: u64,
}

impl Stream {
    fn message(&mut self, stream: u64, body: StreamBody) -> WatchReply {
        let seq = self.seq;
        self.seq += 1;
        WatchReply::Stream { stream, seq, body }
    }

    fn shown(&self, change: &Change) -> Change {
        let mut change = change.clone();
        if !self.prev_kv {
            change.prev = None;
        }
        change
    }
}

/// The streams one server process serves, by `(client, stream)`.
#[derive(Default)]
pub struct WatchTable {
    streams: BTreeMap<(ClientId, u64), Stream>,
}

/// Messages to send: (client, reply).
pub type Outbox = Vec<(ClientId, WatchReply)>;

impl WatchTable {
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Answers a client's watch request.
    pub fn on_request(&mut self, server: &Server, client: ClientId, request: WatchRequest, out: &mut Outbox) {
        match request {
            // A copy of a Create already served (the network duplicates
            // messages) must not restart the stream's positions.
            WatchRequest::Create { stream: id, .. } if self.streams.contains_key(&(client, id)) => {}
            WatchRequest::Create { stream: id, range, start_revision, prev_kv } => {
                let kv = server.state_machine().kv();
                let start = if start_revision == 0 { kv.revision() + 1 } else { start_revision };
                let mut stream = Stream { range, next: start, prev_kv, seq: 0 };
                let created = stream.message(id, StreamBody::Created { start_revision: start });
                out.push((client, created));
                if catch_up(server, client, id, &mut stream, out) {
                    self.streams.insert((client, id), stream);
                }
            }
            WatchRequest::Check { stream } => {
                let known = self.streams.contains_key(&(client, stream));
                out.push((client, WatchReply::Status { stream, known, leader: server.raft().leader_id() }));
            }
            WatchRequest::Cancel { stream } => {
                self.streams.remove(&(client, stream));
            }
        }
    }

    /// Fans out what one input applied: `changes` in revision order, or,
    /// after a snapshot install, each stream's range read from the history.
    pub fn on_applied(&mut self, server: &Server, changes: &[Change], installed: bool, out: &mut Outbox) {
        if installed {
            let ids: Vec<(ClientId, u64)> = self.streams.keys().copied().collect();
            for (client, id) in ids {
                let stream = self.streams.get_mut(&(client, id)).expect("listed");
                if !catch_up(server, client, id, stream, out) {
                    self.streams.remove(&(client, id));
                }
            }
            return;
        }
        let Some(last) = changes.last() else { return };
        for (&(client, id), stream) in &mut self.streams {
            let events: Vec<Change> =
                changes.iter().filter(|c| c.revision >= stream.next && stream.range.contains(&c.key)).map(|c| stream.shown(c)).collect();
            stream.next = stream.next.max(last.revision + 1);
            if !events.is_empty() {
                out.push((client, stream.message(id, StreamBody::Events(events))));
            }
        }
    }
}

/// Sends the stream its range's changes from `next` on, read from the
/// history; false when they are compacted (the stream is closed).
fn catch_up(server: &Server, client: ClientId, id: u64, stream: &mut Stream, out: &mut Outbox) -> bool {
    let kv = server.state_machine().kv();
    if stream.next > kv.revision() {
        return true;
    }
    match kv.events(&stream.range, stream.next, usize::MAX) {
        Ok(read) => {
            stream.next = read.upto + 1;
            if !read.events.is_empty() {
                let events = read.events.iter().map(|c| stream.shown(c)).collect();
                out.push((client, stream.message(id, StreamBody::Events(events))));
            }
            true
        }
        // `events` reads nothing yet from a future start; it never says so.
        Err(RevisionError::Future { .. }) => true,
        Err(RevisionError::Compacted { compact_revision }) => {
            out.push((client, stream.message(id, StreamBody::Compacted { compact_revision })));
            false
        }
    }
}
