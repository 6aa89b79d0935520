//! Watch as users meet it, on real etcd 3.4 and on leasesim-node side by
//! side: `etcdctl watch` on a put, put, delete burst made within
//! milliseconds (every event printed, in order: the 100 ms polling watch
//! this replaced lost some), and the periodic progress notifications of a
//! watch that asked for them (`progress_notify`, with
//! `--experimental-watch-progress-notify-interval`). Both servers must
//! print the same transcript once revisions are named by their role.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use common::{have_etcd, have_etcdctl, Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::watch_client::WatchClient;
use leasesim_node::pb::etcdserverpb::watch_request::RequestUnion;
use leasesim_node::pb::etcdserverpb::{DeleteRangeRequest, PutRequest, RangeRequest, WatchCreateRequest, WatchRequest, WatchResponse};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

const WAIT: Duration = Duration::from_secs(30);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

async fn put(kv: &mut KvClient<Channel>, key: &str, value: &str) -> i64 {
    let req = PutRequest { key: key.into(), value: value.into(), ..Default::default() };
    kv.put(req).await.expect("put").into_inner().header.expect("header").revision
}

/// `etcdctl watch KEY` running, its stdout lines arriving on a channel.
struct CtlWatch {
    child: Child,
    lines: std_mpsc::Receiver<String>,
}

impl CtlWatch {
    fn start(endpoint: &str, key: &str) -> CtlWatch {
        let mut child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([&format!("--endpoints={endpoint}"), "watch", key])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run etcdctl watch");
        let out = child.stdout.take().expect("piped");
        let (tx, lines) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        CtlWatch { child, lines }
    }

    /// The next line, waiting up to `wait`.
    fn line(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }
}

impl Drop for CtlWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `etcdctl watch k` printed for a put, put, delete burst, after a
/// marker put that shows the watch is in place.
fn etcdctl_burst(cluster: &ProcessCluster) -> Vec<String> {
    let watch = CtlWatch::start(&cluster.endpoint(0), "k");
    let rt = runtime();
    let mut kv = rt.block_on(async { KvClient::new(common::channel(&cluster.url(0)).await) });
    // etcdctl says nothing when its watch is created: put markers until
    // one is printed (each marker gets a second to show).
    let started = Instant::now();
    let mut marker = 0;
    'ready: loop {
        assert!(started.elapsed() < WAIT, "etcdctl watch printed no marker");
        marker += 1;
        rt.block_on(put(&mut kv, "k", &format!("ready-{marker}")));
        while let Some(line) = watch.line(Duration::from_secs(1)) {
            if line.starts_with("ready-") {
                break 'ready;
            }
        }
    }
    rt.block_on(async {
        put(&mut kv, "k", "v1").await;
        put(&mut kv, "k", "v2").await;
        kv.delete_range(DeleteRangeRequest { key: "k".into(), ..Default::default() }).await.expect("delete");
    });
    let mut printed = Vec::new();
    while printed.last().map(String::as_str) != Some("DELETE") || printed.len() < 7 {
        let line = watch.line(WAIT).unwrap_or_else(|| panic!("etcdctl stopped printing after {printed:?}"));
        // A late marker (put before the first one showed) is not part of the burst.
        if line.starts_with("ready-") {
            printed.clear();
            continue;
        }
        printed.push(line);
    }
    printed.push(watch.line(WAIT).expect("the deleted key"));
    printed
}

#[test]
fn etcdctl_watch_prints_every_event_of_a_burst_in_order() {
    if !have_etcd() || !have_etcdctl() {
        return;
    }
    let mut seen = Vec::new();
    for kind in [Kind::Etcd, Kind::Leasesim] {
        let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
        cluster.wait_for_leader();
        seen.push(etcdctl_burst(&cluster));
    }
    // The marker's own PUT and key lines end the marker; the burst follows.
    let burst = ["PUT", "k", "v1", "PUT", "k", "v2", "DELETE", "k"];
    assert!(seen[0].ends_with(&burst.map(String::from)), "etcd printed {:?}", seen[0]);
    assert_eq!(seen[1], seen[0], "leasesim-node printed {:?}, etcd {:?}", seen[1], seen[0]);
}

async fn next(stream: &mut tonic::Streaming<WatchResponse>) -> WatchResponse {
    tokio::time::timeout(WAIT, stream.message()).await.expect("a response in time").expect("ok").expect("open")
}

/// One watch with `progress_notify` on `k`: "created", a notification
/// before any change, then after a put the event and the next two
/// notifications; revisions named R0 (before the put) and R1 (the put).
async fn progress_transcript(url: String) -> Vec<String> {
    let ch = common::channel(&url).await;
    let mut kv = KvClient::new(ch.clone());
    let r0 =
        kv.range(RangeRequest { key: "k".into(), ..Default::default() }).await.expect("range").into_inner().header.expect("h").revision;
    let (tx, rx) = mpsc::channel(4);
    let create = WatchCreateRequest { key: "k".into(), progress_notify: true, ..Default::default() };
    tx.send(WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) }).await.expect("queued");
    let mut stream = WatchClient::new(ch).watch(ReceiverStream::new(rx)).await.expect("watch").into_inner();
    let created = next(&mut stream).await;
    let mut t = vec![format!("created {}", created.created)];
    let first = next(&mut stream).await;
    let r1 = put(&mut kv, "k", "v").await;
    let name = |resp: &WatchResponse| match resp.header.unwrap_or_default().revision {
        r if r == r0 => "R0".to_string(),
        r if r == r1 => "R1".to_string(),
        r => format!("unnamed {r}"),
    };
    let values = |resp: &WatchResponse| -> Vec<String> {
        resp.events.iter().map(|e| String::from_utf8_lossy(&e.kv.clone().unwrap_or_default().value).into_owned()).collect()
    };
    t.push(format!("events {:?} at {}", values(&first), name(&first)));
    // A notification that was on its way before the put still says R0:
    // skip those (how many depends on timing), then the event must come.
    let mut resp = next(&mut stream).await;
    while resp.events.is_empty() && name(&resp) == "R0" {
        resp = next(&mut stream).await;
    }
    t.push(format!("events {:?} at {}", values(&resp), name(&resp)));
    for _ in 0..2 {
        let resp = next(&mut stream).await;
        t.push(format!("events {:?} at {}", values(&resp), name(&resp)));
    }
    drop(tx);
    t
}

#[test]
fn periodic_progress_notifications_say_what_etcd_says() {
    if !have_etcd() {
        return;
    }
    let mut transcripts = Vec::new();
    for kind in [Kind::Etcd, Kind::Leasesim] {
        let mut cluster = ProcessCluster::start_kind_with(kind, 1, &["--experimental-watch-progress-notify-interval", "300ms"]);
        cluster.wait_for_leader();
        transcripts.push(runtime().block_on(progress_transcript(cluster.url(0))));
    }
    let expected = ["created true", "events [] at R0", "events [\"v\"] at R1", "events [] at R1", "events [] at R1"];
    assert_eq!(transcripts[0], expected, "etcd 3.4");
    assert_eq!(transcripts[1], transcripts[0], "leasesim-node");
}
