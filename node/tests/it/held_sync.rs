//! Nothing leaves a member before the change it tells of is durable. A
//! single member commits on its own disk alone, so an answer or a watch
//! event sent before its fsync would tell of a change a power loss could
//! undo (the driver used to publish a batch's changes to watchers before
//! the batch's fsync, and answered history reads with unsynced changes).
//! With the log's fsync held (`--unsafe-test-hold-syncs`) the member writes
//! 20 puts to its log file (its driver goes on while the disk works) but
//! answers none, and neither a live watch nor one reading the history sees
//! them; released, every put is answered and seen once, in order, and a
//! SIGKILL right after finds every one.
//!
//! Counted, not timed: the test waits for the puts' records to reach the
//! log file, then asks each watch stream for a progress report, which a
//! stream sends only after every change published to it; so an event sent
//! before its fsync would arrive before the report, whatever the load.

use crate::common;
use crate::watch_history::{channel, runtime, Stream};

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ProcessCluster;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::watch_request::RequestUnion;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest, WatchCreateRequest, WatchProgressRequest};
use tonic::transport::Channel;

const HELD_PUTS: usize = 20;
/// Large against a record's own bytes (under 1 KiB), so that the log
/// holds `HELD_PUTS` values only once every held put is written.
const VALUE_BYTES: usize = 16 * 1024;

fn wal_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("wal.log")).map_or(0, |m| m.len())
}

fn watch_prefix(start_revision: i64) -> WatchCreateRequest {
    WatchCreateRequest { key: b"d/".to_vec(), range_end: b"d0".to_vec(), start_revision, ..Default::default() }
}

async fn put(kv: &mut KvClient<Channel>, i: usize) -> i64 {
    let req = PutRequest { key: format!("d/{i:02}").into_bytes(), value: vec![b'v'; VALUE_BYTES], ..Default::default() };
    kv.put(req).await.expect("put").into_inner().header.expect("header").revision
}

/// Asks `stream` for a progress report; the events that arrived before it
/// (their revisions), and the revision it reports.
async fn events_before_progress(stream: &mut Stream) -> (Vec<i64>, i64) {
    stream.ask(RequestUnion::ProgressRequest(WatchProgressRequest {})).await;
    let mut revisions = Vec::new();
    loop {
        let r = stream.next().await;
        if r.watch_id == -1 && r.events.is_empty() {
            return (revisions, r.header.expect("header").revision);
        }
        revisions.extend(r.events.iter().map(|e| e.kv.as_ref().expect("kv").mod_revision));
    }
}

/// Waits (a hang guard of 60 s, not a deadline) until `done`.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn no_answer_or_watch_event_leaves_before_its_fsync() {
    let mut cluster = ProcessCluster::start_with(1, &["--unsafe-test-hold-syncs"]);
    cluster.wait_for_leader();
    let (dir, url) = (cluster.data_dir(0), cluster.url(0));
    let rt = runtime();
    let acked = Arc::new(AtomicUsize::new(0));
    let revisions: Vec<i64> = rt.block_on(async {
        let channel = channel(url.clone()).await;
        let first = put(&mut KvClient::new(channel.clone()), 0).await;
        let (mut live, live_id) = Stream::watching(&channel, watch_prefix(0)).await;
        std::fs::write(dir.join("hold-syncs"), b"").unwrap();
        let wal_before = wal_len(&dir);
        let puts: Vec<_> = (1..=HELD_PUTS)
            .map(|i| {
                let (mut kv, acked) = (KvClient::new(channel.clone()), acked.clone());
                tokio::spawn(async move {
                    let revision = put(&mut kv, i).await;
                    acked.fetch_add(1, Ordering::SeqCst);
                    revision
                })
            })
            .collect();
        let held_bytes = (HELD_PUTS * VALUE_BYTES) as u64;
        wait_until("the held puts reach the log file", || wal_len(&dir) >= wal_before + held_bytes).await;

        let (early, bookmark) = events_before_progress(&mut live).await;
        assert_eq!(early, Vec::<i64>::new(), "a live watch saw changes not yet fsynced");
        let (mut history, history_id) = Stream::watching(&channel, watch_prefix(first)).await;
        let (read, _) = events_before_progress(&mut history).await;
        assert_eq!(read, vec![first], "a history read showed changes not yet fsynced");
        assert_eq!(acked.load(Ordering::SeqCst), 0, "puts answered before their fsync");

        std::fs::remove_file(dir.join("hold-syncs")).unwrap();
        for p in puts {
            tokio::time::timeout(Duration::from_secs(60), p).await.expect("answered once released").unwrap();
        }
        assert_eq!(acked.load(Ordering::SeqCst), HELD_PUTS);
        // (A put's answer carries the member's revision when answered,
        // which may be past its own: the watches say which each got.)
        let mut seen_by = Vec::new();
        for (stream, id) in [(&mut live, live_id), (&mut history, history_id)] {
            let responses = stream.events(id, HELD_PUTS).await;
            seen_by.push(responses.iter().flat_map(|r| &r.events).map(|e| e.kv.as_ref().unwrap().mod_revision).collect::<Vec<i64>>());
        }
        let revisions = seen_by[0].clone();
        assert!(revisions.windows(2).all(|w| w[0] < w[1]), "once each, in order: {revisions:?}");
        assert!(revisions[0] > bookmark, "the progress report at {bookmark} claimed a held change ({revisions:?})");
        assert_eq!(seen_by[1], revisions, "the history watch saw the same changes");
        revisions
    });
    assert_eq!(revisions.len(), HELD_PUTS);

    cluster.kill(0);
    cluster.launch(0);
    cluster.wait_for_leader();
    let count = rt.block_on(async {
        let mut kv = KvClient::new(channel(url).await);
        let all = RangeRequest { key: b"d/".to_vec(), range_end: b"d0".to_vec(), count_only: true, ..Default::default() };
        kv.range(all).await.expect("range").into_inner().count
    });
    assert_eq!(count, HELD_PUTS as i64 + 1, "every acknowledged put survives a SIGKILL");
}
