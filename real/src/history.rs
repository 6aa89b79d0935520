//! The run's committed history of changes, read from the cluster once the
//! clients have stopped: what `watch-delivery` holds every watch to. The
//! simulator takes it from the servers' stores at the end; a real run
//! asks a member for it the way a client would, with a watch from
//! revision 1 over every key (with each change's previous value), read up
//! to a marker key the runner writes last, so the history is complete up
//! to the end of the run. The marker is left out of the history. A member
//! that compacted its history cannot give it: watch-delivery is then not
//! judged, with that reason.

use std::time::Duration;

use leasesim_core::service::kv::Change;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::watch_client::WatchClient;
use leasesim_node::pb::etcdserverpb::watch_request::RequestUnion;
use leasesim_node::pb::etcdserverpb::{PutRequest, WatchCreateRequest, WatchRequest};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::clients::wire;

/// The key the runner writes after the run, to know where the history ends.
const MARKER_KEY: &[u8] = b"leasesim-real/history-end";

/// How long reading the history may take before the run gives up on it.
const READ_LIMIT: Duration = Duration::from_secs(30);

/// Every change the cluster committed, oldest first, or why it cannot be
/// had (what watch-delivery needs, for its "not judged" line).
pub type Committed = Result<Vec<Change>, String>;

/// The run's [`Committed`] history, read from `endpoints`.
pub async fn committed_changes(endpoints: &[String]) -> Committed {
    match tokio::time::timeout(READ_LIMIT, read(endpoints)).await {
        Ok(read) => read,
        Err(_) => Err(format!("the committed history, which no member gave within {READ_LIMIT:?}")),
    }
}

async fn read(endpoints: &[String]) -> Result<Vec<Change>, String> {
    let chan = leasesim_node::tools::load::channel(endpoints, 0).await;
    let put = PutRequest { key: MARKER_KEY.to_vec(), value: b"end".to_vec(), ..Default::default() };
    let marked = KvClient::new(chan.clone()).put(put).await.map_err(|e| format!("the committed history (the end marker: {e})"))?;
    let end = marked.get_ref().header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
    let (tx, rx) = mpsc::channel(1);
    let create = WatchCreateRequest { key: vec![0], range_end: vec![0], start_revision: 1, prev_kv: true, ..Default::default() };
    let request = WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) };
    tx.send(request).await.map_err(|e| format!("the committed history (the watch: {e})"))?;
    let mut stream = WatchClient::new(chan)
        .watch(ReceiverStream::new(rx))
        .await
        .map_err(|e| format!("the committed history (the watch: {e})"))?
        .into_inner();
    let mut changes = Vec::new();
    loop {
        let answer = stream.message().await.map_err(|e| format!("the committed history (the watch broke: {e})"))?;
        let answer = answer.ok_or("the committed history (the member ended the watch)")?;
        if answer.compact_revision > 0 {
            return Err(format!("the history below revision {}, which the member compacted", answer.compact_revision));
        }
        for change in answer.events.iter().filter_map(wire::change) {
            if change.revision >= end && change.key == MARKER_KEY {
                return Ok(changes);
            }
            if change.key != MARKER_KEY {
                changes.push(change);
            }
        }
    }
}
