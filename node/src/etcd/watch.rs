//! etcd's Watch service, by polling: core keeps no history of changes, so
//! each watch re-reads its range (a linearizable read on the leader) every
//! [`POLL`] and reports what changed since the last read: a key new or with
//! a higher mod revision is a PUT, a key gone is a DELETE. Changes between
//! two polls are coalesced (a put then a delete of the same key within one
//! interval is not seen at all), and `start_revision` cannot replay the
//! past: keys changed at or after it are reported as PUTs on the first
//! read, and a single-key watch whose key is already gone gets a DELETE
//! (what etcd's lock recipe waits for). Enough for `etcdctl watch` and
//! contended `etcdctl lock`; not a change feed.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use leasesim_core::service::kv::{KeyRange, KvValue};
use leasesim_core::service::RangeRequest;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Status, Streaming};

use super::guard::Need;
use super::kv::key_value;
use super::Api;
use crate::pb::etcdserverpb::watch_request::RequestUnion;
use crate::pb::etcdserverpb::watch_server::Watch;
use crate::pb::etcdserverpb::{WatchCreateRequest, WatchRequest, WatchResponse};
use crate::pb::mvccpb::event::EventType;
use crate::pb::mvccpb::{Event, KeyValue};
use crate::view::RangeSpec;

/// How often a watch re-reads its range.
pub const POLL: Duration = Duration::from_millis(100);

type Reply<T> = Result<tonic::Response<T>, Status>;
type Out = mpsc::UnboundedSender<Result<WatchResponse, Status>>;

fn deleted(key: &[u8], revision: u64) -> Event {
    let kv = KeyValue { key: key.to_vec(), mod_revision: revision as i64, ..Default::default() };
    Event { r#type: EventType::Delete as i32, kv: Some(kv), prev_kv: None }
}

fn put(key: &[u8], value: &KvValue) -> Event {
    Event { r#type: EventType::Put as i32, kv: Some(key_value(key, value, false)), prev_kv: None }
}

impl Api {
    /// One watch: polls its range until the client cancels or goes away.
    async fn run_watch(self, id: i64, create: WatchCreateRequest, out: Out) {
        let spec = RangeSpec::client(RangeRequest::of(KeyRange { key: create.key.clone(), range_end: create.range_end.clone() }));
        let single = create.range_end.is_empty();
        let start = create.start_revision.max(0) as u64;
        let mut seen: Option<BTreeMap<Vec<u8>, KvValue>> = None;
        loop {
            let Ok(view) = self.read_range(spec.clone()).await else {
                tokio::time::sleep(POLL).await;
                continue;
            };
            let now: BTreeMap<Vec<u8>, KvValue> = view.kvs.into_iter().collect();
            let mut events = Vec::new();
            match &seen {
                None => {
                    if start > 0 {
                        events.extend(now.iter().filter(|(_, v)| v.mod_revision >= start).map(|(k, v)| put(k, v)));
                        if single && now.is_empty() {
                            events.push(deleted(&create.key, view.revision));
                        }
                    }
                }
                Some(before) => {
                    for (k, v) in &now {
                        if before.get(k).is_none_or(|b| b.mod_revision < v.mod_revision) {
                            events.push(put(k, v));
                        }
                    }
                    for k in before.keys().filter(|k| !now.contains_key(*k)) {
                        events.push(deleted(k, view.revision));
                    }
                }
            }
            if !events.is_empty() {
                let resp = WatchResponse { header: self.header(view.revision), watch_id: id, events, ..Default::default() };
                if out.send(Ok(resp)).is_err() {
                    return;
                }
            }
            seen = Some(now);
            tokio::time::sleep(POLL).await;
        }
    }
}

#[tonic::async_trait]
impl Watch for Api {
    type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;

    async fn watch(&self, request: Request<Streaming<WatchRequest>>) -> Reply<Self::WatchStream> {
        // The caller's token, kept to check each watch it creates.
        let token = Api::with_token_of(&request, ());
        let mut requests = request.into_inner();
        let (tx, rx) = mpsc::unbounded_channel();
        let api = self.clone();
        tokio::spawn(async move {
            let mut watches: BTreeMap<i64, tokio::task::JoinHandle<()>> = BTreeMap::new();
            let mut next_id = 0i64;
            while let Some(Ok(req)) = requests.next().await {
                match req.request_union {
                    Some(RequestUnion::CreateRequest(create)) => {
                        let id = if create.watch_id > 0 { create.watch_id } else { next_id };
                        next_id = next_id.max(id) + 1;
                        // etcd cancels a watch its caller may not read, with
                        // the refusal as the reason.
                        let refused = api.permit(&token, &[Need::read(&create.key, &create.range_end)]).await.err();
                        let cancel_reason = refused.as_ref().map(|e| format!("rpc error: code = {:?} desc = {}", e.code(), e.message()));
                        let canceled = cancel_reason.is_some();
                        let created = WatchResponse {
                            header: api.header(0),
                            watch_id: id,
                            created: true,
                            canceled,
                            cancel_reason: cancel_reason.unwrap_or_default(),
                            ..Default::default()
                        };
                        if canceled {
                            let _ = tx.send(Ok(created));
                            continue;
                        }
                        if tx.send(Ok(created)).is_err() {
                            break;
                        }
                        watches.insert(id, tokio::spawn(api.clone().run_watch(id, create, tx.clone())));
                    }
                    Some(RequestUnion::CancelRequest(cancel)) => {
                        if let Some(task) = watches.remove(&cancel.watch_id) {
                            task.abort();
                        }
                        let canceled =
                            WatchResponse { header: api.header(0), watch_id: cancel.watch_id, canceled: true, ..Default::default() };
                        let _ = tx.send(Ok(canceled));
                    }
                    Some(RequestUnion::ProgressRequest(_)) => {
                        let _ = tx.send(Ok(WatchResponse { header: api.header(0), watch_id: -1, ..Default::default() }));
                    }
                    None => {}
                }
            }
            for task in watches.into_values() {
                task.abort();
            }
        });
        Ok(tonic::Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }
}
