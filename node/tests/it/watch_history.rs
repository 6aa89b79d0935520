//! etcd's Watch served from the history, on real etcd 3.4 and on
//! leasesim-node side by side: a put, put, delete burst seen whole by a
//! gRPC watch, `prev_kv`, `start_revision` replay, NOPUT/NODELETE filters,
//! a prefix watch over a multi-key txn (one revision), cancellation, a
//! progress request, and the compacted error. Both servers must produce the same transcript once
//! revisions (log indices on leasesim) are replaced by their role. Then,
//! leasesim-node alone: a client that resumes on a restarted member, after
//! a leader change, with `start_revision` = last seen + 1 gets exactly the
//! changes it missed; and a watcher that stops reading while thousands of
//! changes go by still gets every one, once, in order.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{have_etcd, Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::request_op::Request as Op;
use leasesim_node::pb::etcdserverpb::watch_client::WatchClient;
use leasesim_node::pb::etcdserverpb::watch_create_request::FilterType;
use leasesim_node::pb::etcdserverpb::watch_request::RequestUnion;
use leasesim_node::pb::etcdserverpb::{
    CompactionRequest, DeleteRangeRequest, PutRequest, RequestOp, TxnRequest, WatchCancelRequest, WatchCreateRequest, WatchProgressRequest,
    WatchRequest, WatchResponse,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::Streaming;

/// How long a test waits for one response before calling it missing.
const WAIT: Duration = Duration::from_secs(20);

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// A channel to `url`, retrying while a member that was just launched has
/// not bound its port yet (common's one retrying connect).
pub(crate) async fn channel(url: String) -> Channel {
    crate::common::channel(&url).await
}

/// One watch stream: requests in, responses out.
pub(crate) struct Stream {
    requests: mpsc::Sender<WatchRequest>,
    responses: Streaming<WatchResponse>,
}

impl Stream {
    /// Opens a stream whose first request is `first` (etcd answers the call
    /// only once it has something to send, so the request goes first).
    pub(crate) async fn open(channel: &Channel, first: WatchCreateRequest) -> Stream {
        let (requests, rx) = mpsc::channel(16);
        requests.send(WatchRequest { request_union: Some(RequestUnion::CreateRequest(first)) }).await.expect("queued");
        let responses = WatchClient::new(channel.clone()).watch(ReceiverStream::new(rx)).await.expect("watch").into_inner();
        Stream { requests, responses }
    }

    /// Opens a stream with one watch; returns the stream and its id.
    pub(crate) async fn watching(channel: &Channel, create: WatchCreateRequest) -> (Stream, i64) {
        let mut stream = Stream::open(channel, create).await;
        let created = stream.next().await;
        assert!(created.created, "first answer is `created`: {created:?}");
        (stream, created.watch_id)
    }

    pub(crate) async fn ask(&mut self, union: RequestUnion) {
        self.requests.send(WatchRequest { request_union: Some(union) }).await.expect("stream open");
    }

    pub(crate) async fn next(&mut self) -> WatchResponse {
        tokio::time::timeout(WAIT, self.responses.message())
            .await
            .expect("a response in time")
            .expect("stream ok")
            .expect("stream not ended")
    }

    /// Creates a watch and returns its id (from the `created` response).
    async fn create(&mut self, create: WatchCreateRequest) -> i64 {
        self.ask(RequestUnion::CreateRequest(create)).await;
        let created = self.next().await;
        assert!(created.created, "first answer is `created`: {created:?}");
        created.watch_id
    }

    /// Responses until `count` events of watch `id` arrived.
    pub(crate) async fn events(&mut self, id: i64, count: usize) -> Vec<WatchResponse> {
        let (mut got, mut responses) = (0, Vec::new());
        while got < count {
            let r = self.next().await;
            assert_eq!(r.watch_id, id, "only watch {id} has events due: {r:?}");
            got += r.events.len();
            responses.push(r);
        }
        assert_eq!(got, count, "no more events than made: {responses:?}");
        responses
    }
}

/// Replaces revisions by their names, for comparing two servers.
struct Names(BTreeMap<i64, String>);

impl Names {
    fn name(&self, revision: i64) -> String {
        self.0.get(&revision).cloned().unwrap_or_else(|| format!("unnamed revision {revision}"))
    }

    /// Each event as "TYPE key=value ver=N mod=NAME prev=value".
    fn events(&self, responses: &[WatchResponse]) -> Vec<String> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        responses
            .iter()
            .flat_map(|r| &r.events)
            .map(|e| {
                let kv = e.kv.clone().unwrap_or_default();
                let prev = e.prev_kv.as_ref().map(|p| format!(" prev={}@{}", text(&p.value), self.name(p.mod_revision)));
                let kind = if e.r#type == 0 { "PUT" } else { "DELETE" };
                format!(
                    "{kind} {}={} ver={} mod={}{}",
                    text(&kv.key),
                    text(&kv.value),
                    kv.version,
                    self.name(kv.mod_revision),
                    prev.unwrap_or_default()
                )
            })
            .collect()
    }
}

async fn put(kv: &mut KvClient<Channel>, key: &str, value: &str) -> i64 {
    let req = PutRequest { key: key.into(), value: value.into(), ..Default::default() };
    kv.put(req).await.expect("put").into_inner().header.expect("header").revision
}

async fn delete(kv: &mut KvClient<Channel>, key: &str) -> i64 {
    let req = DeleteRangeRequest { key: key.into(), ..Default::default() };
    kv.delete_range(req).await.expect("delete").into_inner().header.expect("header").revision
}

fn watch_of(key: &str, start_revision: i64) -> WatchCreateRequest {
    WatchCreateRequest { key: key.into(), start_revision, prev_kv: true, ..Default::default() }
}

/// The gRPC transcript: what one server's watches said, revisions named.
async fn transcript(url: String) -> Vec<String> {
    let ch = channel(url).await;
    let mut kv = KvClient::new(ch.clone());
    let (mut live, id) = Stream::watching(&ch, watch_of("k", 0)).await;
    let mut names = Names(BTreeMap::new());
    let r1 = put(&mut kv, "k", "v1").await;
    let r2 = put(&mut kv, "k", "v2").await;
    let r3 = delete(&mut kv, "k").await;
    names.0.extend([(r1, "R1".to_string()), (r2, "R2".to_string()), (r3, "R3".to_string()), (0, "0".to_string())]);
    let mut t = vec![format!("burst, live: {:?}", names.events(&live.events(id, 3).await))];
    let (mut past, replay) = Stream::watching(&ch, watch_of("k", r1)).await;
    t.push(format!("replay from R1: {:?}", names.events(&past.events(replay, 3).await)));
    let noput = WatchCreateRequest { filters: vec![FilterType::Noput as i32], prev_kv: false, ..watch_of("k", r2) };
    let noput = past.create(noput).await;
    t.push(format!("NOPUT from R2: {:?}", names.events(&past.events(noput, 1).await)));
    let nodelete = WatchCreateRequest { filters: vec![FilterType::Nodelete as i32], ..watch_of("k", r1) };
    let nodelete = past.create(nodelete).await;
    t.push(format!("NODELETE from R1: {:?}", names.events(&past.events(nodelete, 2).await)));
    let prefix = live.create(WatchCreateRequest { key: "p/".into(), range_end: "p0".into(), ..Default::default() }).await;
    let op = |k: &str| RequestOp { request: Some(Op::RequestPut(PutRequest { key: k.into(), value: "t".into(), ..Default::default() })) };
    let txn = TxnRequest { success: vec![op("p/a"), op("q"), op("p/b")], ..Default::default() };
    let r4 = kv.txn(txn).await.expect("txn").into_inner().header.expect("header").revision;
    names.0.insert(r4, "R4".to_string());
    let got = live.events(prefix, 2).await;
    t.push(format!("prefix p/ over a txn: {} response(s) {:?}", got.len(), names.events(&got)));
    live.ask(RequestUnion::ProgressRequest(WatchProgressRequest {})).await;
    let progress = live.next().await;
    t.push(format!(
        "progress: id {} events {} at {}",
        progress.watch_id,
        progress.events.len(),
        names.name(progress.header.unwrap_or_default().revision)
    ));
    live.ask(RequestUnion::CancelRequest(WatchCancelRequest { watch_id: id })).await;
    let canceled = live.next().await;
    t.push(format!("cancel: id matches {} canceled {}", canceled.watch_id == id, canceled.canceled));
    let r5 = put(&mut kv, "k", "after-cancel").await;
    names.0.insert(r5, "R5".to_string());
    kv.compact(CompactionRequest { revision: r2, physical: true }).await.expect("compact");
    let mut old = Stream::open(&ch, watch_of("k", r1)).await;
    let (created, compacted) = (old.next().await, old.next().await);
    t.push(format!(
        "from R1 after compacting at R2: created {} then canceled {} compact_revision {}",
        created.created,
        compacted.canceled,
        names.name(compacted.compact_revision)
    ));
    let at = old.create(watch_of("k", r2)).await;
    t.push(format!("from R2 after compacting at R2: {:?}", names.events(&old.events(at, 3).await)));
    t
}

#[test]
fn grpc_watches_say_what_etcd_says() {
    if !have_etcd() {
        return;
    }
    let mut transcripts = Vec::new();
    for kind in [Kind::Etcd, Kind::Leasesim] {
        let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
        cluster.wait_for_leader();
        transcripts.push(runtime().block_on(transcript(cluster.url(0))));
    }
    let (etcd, ours) = (&transcripts[0], &transcripts[1]);
    assert!(etcd[0].contains("DELETE k= ver=0 mod=R3 prev=v2@R2"), "etcd shows the burst whole: {etcd:?}");
    for (i, (e, o)) in etcd.iter().zip(ours).enumerate() {
        assert_eq!(o, e, "step {i}: leasesim-node said {o:?}, etcd {e:?}");
    }
    assert_eq!(etcd.len(), ours.len());
}

/// Puts `v{i}` (then `pad_bytes` of padding) to `k` for each i of
/// `values` through `url`; returns each (revision, value).
async fn puts(url: String, values: std::ops::Range<u32>, pad_bytes: usize) -> Vec<(i64, String)> {
    let mut kv = KvClient::new(channel(url).await);
    let mut done = Vec::new();
    for i in values {
        let value = format!("v{i}{}", ".".repeat(pad_bytes));
        done.push((put(&mut kv, "k", &value).await, value));
    }
    done
}

/// (mod revision, value) of every event of `responses`.
fn seen(responses: &[WatchResponse]) -> Vec<(i64, String)> {
    responses
        .iter()
        .flat_map(|r| &r.events)
        .map(|e| e.kv.clone().unwrap_or_default())
        .map(|kv| (kv.mod_revision, String::from_utf8_lossy(&kv.value).into_owned()))
        .collect()
}

#[test]
fn a_client_resuming_after_a_restart_and_a_leader_change_gets_exactly_what_it_missed() {
    let mut cluster = ProcessCluster::start(3);
    let leader = cluster.wait_for_leader();
    let watched = (leader + 1) % 3;
    let rt = runtime();
    let (url, other) = (cluster.url(watched), cluster.url(leader));
    let (first, last_seen) = rt.block_on(async {
        let (mut stream, id) = Stream::watching(&channel(url.clone()).await, watch_of("k", 0)).await;
        let written = puts(other.clone(), 0..5, 0).await;
        let got = seen(&stream.events(id, 5).await);
        assert_eq!(got, written, "live: every put once, in order, with its value");
        (written, got.last().expect("five").0)
    });
    cluster.kill(watched);
    let missed_before = rt.block_on(puts(other, 5..10, 0));
    cluster.launch(watched);
    // A leader change while the watched member was away.
    cluster.kill(leader);
    let new_leader = cluster.wait_for_leader();
    let missed_after = rt.block_on(puts(cluster.url(new_leader), 10..13, 0));
    cluster.launch(leader);
    let missed: Vec<(i64, String)> = missed_before.into_iter().chain(missed_after).collect();
    for member in [watched, leader] {
        let url = cluster.url(member);
        let resumed = rt.block_on(async {
            let (mut stream, id) = Stream::watching(&channel(url).await, watch_of("k", last_seen + 1)).await;
            seen(&stream.events(id, missed.len()).await)
        });
        assert_eq!(resumed, missed, "member {member}: exactly the missed puts, once, in order");
    }
    let everything: Vec<(i64, String)> = first.iter().cloned().chain(missed).collect();
    let replay = rt.block_on(async {
        let (mut stream, id) = Stream::watching(&channel(cluster.url(watched)).await, watch_of("k", first[0].0)).await;
        seen(&stream.events(id, everything.len()).await)
    });
    assert_eq!(replay, everything, "the whole history from the first put");
}

#[test]
fn a_watcher_that_stops_reading_still_gets_every_change_once_in_order() {
    let mut cluster = ProcessCluster::start(1);
    cluster.wait_for_leader();
    let url = cluster.url(0);
    const PUTS: u32 = 4000;
    let (written, got) = runtime().block_on(async {
        let ch = channel(url.clone()).await;
        let (mut stream, id) = Stream::watching(&ch, watch_of("k", 0)).await;
        // Nothing is read while the puts go by (8 writers, so that many
        // batches are published; 8 KiB values, so that 32 MiB of events
        // overflow the stream's queue and the transport's windows): the
        // stream waits for its client and falls behind the hub's backlog.
        let mut writers = Vec::new();
        for w in 0..8 {
            writers.push(tokio::spawn(puts(url.clone(), (w * PUTS / 8)..((w + 1) * PUTS / 8), 8192)));
        }
        let mut written = Vec::new();
        for writer in writers {
            written.extend(writer.await.expect("writer"));
        }
        written.sort();
        (written, seen(&stream.events(id, PUTS as usize).await))
    });
    // The puts' header revisions may be later than their own (a member
    // reports its newest revision), so the events are judged by value:
    // each put's value once, at strictly rising revisions.
    assert_eq!(got.len(), written.len(), "one event per put");
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "in revision order");
    let short = |v: &[(i64, String)]| -> Vec<String> { v.iter().map(|(_, s)| s.trim_end_matches('.').to_string()).collect() };
    let (mut got_values, mut written_values) = (short(&got), short(&written));
    got_values.sort();
    written_values.sort();
    assert!(got_values == written_values, "every put's value once");
    let log = common::read_to_string(&cluster.log_path(0));
    assert!(
        log.contains("catching up from the history"),
        "the stream fell behind the backlog and caught up (the lag is logged; see the member's log)"
    );
}
