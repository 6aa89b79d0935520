//! etcd's Watch service, served from this member's applied changes: every
//! change of a watched key is delivered exactly once, in revision order,
//! whatever the timing of the writes.
//!
//! Each gRPC stream is one task holding its watchers. Live changes come
//! from the driver's [`crate::watch_hub`] as core's applies report them; a
//! watcher that starts in the past (`start_revision`), or whose stream fell
//! behind the hub's backlog, reads core's history instead until it reaches
//! the present (etcd's unsynced watchers), so a slow client costs no more
//! memory than the backlog and the stream's bounded queue. A watcher's
//! `next` revision is the one seam between the two sources: everything
//! below it was sent, and neither source sends anything below it again.
//! A watch that starts below the compaction is cancelled with etcd's
//! `compact_revision`. The history survives restarts (it is part of core's
//! state), so a client that resumes on any member with `start_revision` =
//! last seen + 1 gets exactly what it missed.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use leasesim_core::service::kv::{KeyRange, RevisionError};
use leasesim_core::service::watch::EventsRead;
use leasesim_core::service::RangeRequest;
use leasesim_core::LogIndex;
use prost::Message;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Status, Streaming};

use super::guard::Need;
use super::watch_events::{fragments, Watcher};
use super::{Api, MAX_REQUEST_BYTES};
use crate::driver::Input;
use crate::pb::etcdserverpb::watch_request::RequestUnion;
use crate::pb::etcdserverpb::watch_server::Watch;
use crate::pb::etcdserverpb::{ResponseHeader, WatchCreateRequest, WatchRequest, WatchResponse};
use crate::pb::mvccpb::Event;
use crate::view::RangeSpec;
use crate::watch_hub::{Feed, Published};

/// Most changes one history read returns (a catching-up watcher reads on).
const CATCH_UP_EVENTS: usize = 1000;
/// Responses queued for a stream's client before its task waits for it.
const QUEUED_RESPONSES: usize = 64;

type Reply<T> = Result<tonic::Response<T>, Status>;

/// The stream's client or this member's driver went away.
struct Gone;

struct WatchStream {
    api: Api,
    /// The caller's token, kept to check each watch it creates.
    token: Request<()>,
    out: mpsc::Sender<Result<WatchResponse, Status>>,
    batches: broadcast::Receiver<Arc<Published>>,
    latest: Arc<AtomicU64>,
    watchers: BTreeMap<i64, Watcher>,
    next_id: i64,
    /// Every published batch up to this revision has been handed to the
    /// watchers that were not behind.
    cursor: LogIndex,
}

impl WatchStream {
    async fn run(mut self, mut requests: Streaming<WatchRequest>, interval: std::time::Duration) {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            if self.catch_up().await.is_err() {
                return;
            }
            let step = tokio::select! {
                req = requests.next() => match req {
                    Some(Ok(req)) => self.request(req).await,
                    _ => return,
                },
                batch = self.batches.recv() => match batch {
                    Ok(batch) => self.deliver(&batch).await,
                    Err(RecvError::Lagged(missed)) => {
                        self.lagged(missed);
                        Ok(())
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = ticker.tick() => self.progress_tick().await,
            };
            if step.is_err() {
                return;
            }
        }
    }

    /// Batches were lost while the stream waited for its client: every
    /// watcher below the newest revision reads the history (next turn).
    fn lagged(&mut self, missed: u64) {
        self.cursor = self.cursor.max(self.latest.load(Ordering::Acquire));
        tracing::info!("a watch stream fell {missed} batches behind its client; catching up from the history to revision {}", self.cursor);
    }

    fn header(&self, revision: LogIndex) -> Option<ResponseHeader> {
        // Not `Api::header`, which never reports below the member's
        // revision: a watch response's revision is a bookmark, and must
        // not claim changes not yet sent.
        let status = self.api.node.front.status();
        Some(ResponseHeader {
            cluster_id: self.api.node.cluster_id,
            member_id: status.id,
            revision: revision as i64,
            raft_term: status.term,
        })
    }

    async fn send(&self, response: WatchResponse) -> Result<(), Gone> {
        self.out.send(Ok(response)).await.map_err(|_| Gone)
    }

    /// Sends `events` of watcher `id`, covering revisions up to `upto`: in
    /// responses of at most about [`MAX_REQUEST_BYTES`] (a catch-up may
    /// hold far more than a client takes in one message), each ending at
    /// a revision boundary so a revision is never split (unless the
    /// watcher asked for etcd's `fragment`).
    async fn send_events(&mut self, id: i64, events: Vec<Event>, upto: LogIndex) -> Result<(), Gone> {
        let Some(w) = self.watchers.get_mut(&id) else { return Ok(()) };
        w.sent_since_tick = true;
        let fragment = w.fragment;
        let revision_of = |e: &Event| e.kv.as_ref().map_or(0, |kv| kv.mod_revision);
        let mut chunk: Vec<Event> = Vec::new();
        let mut chunk_bytes = 0;
        let mut events = events.into_iter().peekable();
        while let Some(event) = events.next() {
            chunk_bytes += event.encoded_len();
            chunk.push(event);
            let at_boundary = events.peek().is_none_or(|next| revision_of(next) != revision_of(chunk.last().expect("pushed")));
            if !(at_boundary && (chunk_bytes >= MAX_REQUEST_BYTES || events.peek().is_none())) {
                continue;
            }
            let through = if events.peek().is_none() { upto } else { revision_of(chunk.last().expect("pushed")) as LogIndex };
            let response =
                WatchResponse { header: self.header(through), watch_id: id, events: std::mem::take(&mut chunk), ..Default::default() };
            chunk_bytes = 0;
            let pieces = if fragment { fragments(response, MAX_REQUEST_BYTES) } else { vec![response] };
            for piece in pieces {
                self.send(piece).await?;
            }
        }
        Ok(())
    }

    /// Hands a published batch to every watcher it continues.
    async fn deliver(&mut self, batch: &Published) -> Result<(), Gone> {
        let mut due = Vec::new();
        for (id, w) in &mut self.watchers {
            // Already past it, or behind it (a gap only the history fills).
            if w.next > batch.upto || w.next.saturating_sub(1) < batch.after {
                continue;
            }
            let events = w.events(&batch.changes);
            w.next = batch.upto + 1;
            if !events.is_empty() {
                due.push((*id, events));
            }
        }
        self.cursor = self.cursor.max(batch.upto);
        for (id, events) in due {
            self.send_events(id, events, batch.upto).await?;
        }
        Ok(())
    }

    /// Reads the history for every watcher below the cursor until it
    /// reaches it.
    async fn catch_up(&mut self) -> Result<(), Gone> {
        let behind: Vec<i64> = self.watchers.iter().filter(|(_, w)| w.next <= self.cursor).map(|(id, _)| *id).collect();
        for id in behind {
            while let Some(w) = self.watchers.get(&id).filter(|w| w.next <= self.cursor) {
                match self.history(w.range.clone(), w.next).await? {
                    Ok(read) => {
                        let events = w.events(&read.events);
                        self.watchers.get_mut(&id).expect("still there").next = read.upto + 1;
                        if !events.is_empty() {
                            self.send_events(id, events, read.upto).await?;
                        }
                    }
                    Err(RevisionError::Compacted { compact_revision }) => {
                        self.watchers.remove(&id);
                        let response = WatchResponse {
                            header: self.header(self.cursor),
                            watch_id: id,
                            canceled: true,
                            compact_revision: compact_revision as i64,
                            ..Default::default()
                        };
                        self.send(response).await?;
                    }
                    // A read from the past is never in the future.
                    Err(RevisionError::Future { .. }) => break,
                }
            }
        }
        Ok(())
    }

    async fn history(&self, range: KeyRange, from: LogIndex) -> Result<Result<EventsRead, RevisionError>, Gone> {
        let (reply, answer) = oneshot::channel();
        self.api.node.front.send(Input::WatchHistory { range, from, max_events: CATCH_UP_EVENTS, reply }).map_err(|_| Gone)?;
        answer.await.map_err(|_| Gone)
    }

    async fn request(&mut self, req: WatchRequest) -> Result<(), Gone> {
        match req.request_union {
            Some(RequestUnion::CreateRequest(create)) => self.create(create).await,
            Some(RequestUnion::CancelRequest(cancel)) => {
                // etcd answers only the cancel of a watch it has.
                if self.watchers.remove(&cancel.watch_id).is_none() {
                    return Ok(());
                }
                let response =
                    WatchResponse { header: self.header(self.cursor), watch_id: cancel.watch_id, canceled: true, ..Default::default() };
                self.send(response).await
            }
            Some(RequestUnion::ProgressRequest(_)) => {
                self.drain_published().await?;
                self.send(WatchResponse { header: self.header(self.bookmark()), watch_id: -1, ..Default::default() }).await
            }
            None => Ok(()),
        }
    }

    /// The newest revision below which every watcher of the stream has
    /// been sent every change.
    fn bookmark(&self) -> LogIndex {
        self.watchers.values().map(|w| w.next.saturating_sub(1)).chain([self.cursor]).min().unwrap_or(self.cursor)
    }

    /// Hands out every batch already published, so that a progress
    /// notification reports as new a revision as it can.
    async fn drain_published(&mut self) -> Result<(), Gone> {
        loop {
            match self.batches.try_recv() {
                Ok(batch) => self.deliver(&batch).await?,
                Err(broadcast::error::TryRecvError::Lagged(missed)) => self.lagged(missed),
                Err(_) => break,
            }
        }
        self.catch_up().await
    }

    /// etcd's periodic progress notification: to each watcher that asked
    /// for them, is not behind and had no events since the last tick.
    async fn progress_tick(&mut self) -> Result<(), Gone> {
        self.drain_published().await?;
        let mut due = Vec::new();
        for (id, w) in &mut self.watchers {
            if w.progress_notify && !w.sent_since_tick && w.next > self.cursor {
                due.push(*id);
            }
            w.sent_since_tick = false;
        }
        for id in due {
            self.send(WatchResponse { header: self.header(self.cursor), watch_id: id, ..Default::default() }).await?;
        }
        Ok(())
    }
}

impl WatchStream {
    /// etcd's create: checked (read permission, a non-empty range, an id
    /// not in use), answered `created`, then delivering from its start.
    async fn create(&mut self, create: WatchCreateRequest) -> Result<(), Gone> {
        let latest = self.latest.load(Ordering::Acquire).max(self.cursor);
        let refused = self.api.permit(&self.token, &[Need::read(&create.key, &create.range_end)]).await.err();
        let refusal = refused.map(|e| (create.watch_id, format!("rpc error: code = {:?} desc = {}", e.code(), e.message())));
        let empty = !create.range_end.is_empty() && create.range_end != [0] && create.key >= create.range_end;
        let refusal = refusal.or_else(|| empty.then(|| (-1, "mvcc: watcher range is empty".to_string()))).or_else(|| {
            (create.watch_id != 0 && self.watchers.contains_key(&create.watch_id))
                .then(|| (-1, "mvcc: duplicate watch ID provided on the WatchStream".to_string()))
        });
        if let Some((watch_id, reason)) = refusal {
            let response = WatchResponse {
                header: self.header(latest),
                watch_id,
                created: true,
                canceled: true,
                cancel_reason: reason,
                ..Default::default()
            };
            return self.send(response).await;
        }
        let id = if create.watch_id > 0 { create.watch_id } else { self.free_id() };
        // A watch from "now" starts after every change the cluster had
        // made when it was created (a linearizable read: a follower may
        // not yet have applied a write its client saw answered, which etcd
        // answers only once applied locally); one from the past reads the
        // history first.
        let latest = if create.start_revision > 0 { latest } else { self.cluster_revision(&create).await.max(latest) };
        let next = if create.start_revision > 0 { create.start_revision as LogIndex } else { latest + 1 };
        self.send(WatchResponse { header: self.header(latest), watch_id: id, created: true, ..Default::default() }).await?;
        self.watchers.insert(id, Watcher::new(&create, next));
        Ok(())
    }

    /// The cluster's revision now, read through the leader (this member's
    /// published revision if the read fails).
    async fn cluster_revision(&self, create: &WatchCreateRequest) -> LogIndex {
        let range = KeyRange { key: create.key.clone(), range_end: create.range_end.clone() };
        let spec = RangeSpec::client(RangeRequest { count_only: true, ..RangeRequest::of(range) });
        match self.api.read_range(spec).await {
            Ok(view) => view.revision,
            Err(_) => self.latest.load(Ordering::Acquire),
        }
    }

    /// etcd's automatic ids: the lowest from the last one given on that is
    /// not in use.
    fn free_id(&mut self) -> i64 {
        while self.watchers.contains_key(&self.next_id) {
            self.next_id += 1;
        }
        self.next_id += 1;
        self.next_id - 1
    }
}

#[tonic::async_trait]
impl Watch for Api {
    type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;

    async fn watch(&self, request: Request<Streaming<WatchRequest>>) -> Reply<Self::WatchStream> {
        let token = Api::with_token_of(&request, ());
        let requests = request.into_inner();
        let (reply, answer) = oneshot::channel();
        let stopped = || Status::unavailable("etcdserver: server stopped");
        self.node.front.send(Input::WatchSubscribe { reply }).map_err(|_| stopped())?;
        let Feed { batches, latest, progress_interval } = answer.await.map_err(|_| stopped())?;
        let (out, responses) = mpsc::channel(QUEUED_RESPONSES);
        let cursor = latest.load(Ordering::Acquire);
        let stream = WatchStream { api: self.clone(), token, out, batches, latest, watchers: BTreeMap::new(), next_id: 0, cursor };
        tokio::spawn(stream.run(requests, progress_interval));
        Ok(tonic::Response::new(Box::pin(ReceiverStream::new(responses))))
    }
}
