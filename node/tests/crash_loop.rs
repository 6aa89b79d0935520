//! Power loss, over and over: a 3-member cluster run with
//! `--unsafe-test-lose-unsynced` (log writes stay in memory until fsynced,
//! so a SIGKILL drops them as a power loss would) takes a stream of puts
//! while its members are SIGKILLed and restarted: one member at a time,
//! and every other round all three at once. Every acknowledged put must
//! read back afterwards.
//!
//! The mode is shown to bite: with the planted bug `ack-before-fsync` (the
//! driver answers before fsyncing) the same loop loses acknowledged puts
//! and the test sees it, while without the mode (a SIGKILL keeps the page
//! cache) the same bug goes unseen.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Cluster;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};
use tonic::transport::Channel;

type Acked = Arc<Mutex<BTreeMap<String, String>>>;

const ROUNDS: usize = 6;
const ACKS_PER_ROUND: usize = 40;

async fn connect(url: &str) -> Option<KvClient<Channel>> {
    let channel = Channel::from_shared(url.to_string()).ok()?.connect_timeout(Duration::from_secs(1));
    channel.connect().await.ok().map(KvClient::new)
}

/// One writer: puts `w{id}-{n}` through the members in turn, moving on
/// when one fails; records every acknowledged put.
async fn writer(id: usize, urls: Vec<String>, acked: Acked, stop: Arc<AtomicBool>) {
    let mut member = id % urls.len();
    let mut client = None;
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let Some(kv) = client.as_mut() else {
            client = connect(&urls[member]).await;
            if client.is_none() {
                member = (member + 1) % urls.len();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            continue;
        };
        let (key, value) = (format!("w{id}-{n}"), n.to_string());
        n += 1;
        let mut request = tonic::Request::new(PutRequest { key: key.clone().into(), value: value.clone().into(), ..Default::default() });
        request.set_timeout(Duration::from_secs(5));
        match kv.put(request).await {
            Ok(_) => {
                acked.lock().unwrap().insert(key, value);
            }
            Err(_) => {
                client = None;
                member = (member + 1) % urls.len();
            }
        }
    }
}

fn wait_for_acks(acked: &Acked, at_least: usize) {
    let started = Instant::now();
    while acked.lock().unwrap().len() < at_least {
        assert!(started.elapsed() < Duration::from_secs(90), "the load stalled at {} acknowledged puts", acked.lock().unwrap().len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every key under `w`, read through any member that answers.
async fn read_back(urls: &[String]) -> BTreeMap<String, String> {
    let started = Instant::now();
    loop {
        for url in urls {
            let Some(mut kv) = connect(url).await else { continue };
            let mut request = tonic::Request::new(RangeRequest { key: b"w".to_vec(), range_end: b"x".to_vec(), ..Default::default() });
            request.set_timeout(Duration::from_secs(10));
            if let Ok(all) = kv.range(request).await {
                let kvs = all.into_inner().kvs;
                return kvs.into_iter().map(|kv| (String::from_utf8(kv.key).unwrap(), String::from_utf8(kv.value).unwrap())).collect();
            }
        }
        assert!(started.elapsed() < Duration::from_secs(90), "no member answers the read-back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What one loop did.
struct Outcome {
    acked: usize,
    lost: Vec<String>,
    /// Members not running at the end (a planted bug may crash one).
    crashed: Vec<usize>,
}

/// Runs the loop.
fn crash_loop(extra_args: &[&str]) -> Outcome {
    let mut cluster = Cluster::start_with(3, extra_args);
    cluster.wait_for_leader();
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3).map(|id| runtime.spawn(writer(id, urls.clone(), acked.clone(), stop.clone()))).collect();
    for round in 0..ROUNDS {
        let before = acked.lock().unwrap().len();
        wait_for_acks(&acked, before + ACKS_PER_ROUND);
        // Odd rounds: one member; even rounds: the whole cluster at once.
        let victims: Vec<usize> = if round % 2 == 1 { vec![round % 3] } else { vec![0, 1, 2] };
        for &i in &victims {
            cluster.kill(i);
        }
        for &i in &victims {
            cluster.launch(i);
        }
    }
    let before = acked.lock().unwrap().len();
    wait_for_acks(&acked, before + ACKS_PER_ROUND);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        runtime.block_on(w).unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let stored = runtime.block_on(read_back(&urls));
    let lost = acked.iter().filter(|(k, v)| stored.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect();
    let crashed = (0..3).filter(|i| !cluster.running(*i)).collect();
    Outcome { acked: acked.len(), lost, crashed }
}

#[test]
fn power_losses_under_load_lose_no_acknowledged_write() {
    let Outcome { acked, lost, crashed } = crash_loop(&["--unsafe-test-lose-unsynced"]);
    eprintln!("{acked} acknowledged puts over {ROUNDS} rounds of SIGKILLs, {} lost", lost.len());
    assert!(lost.is_empty(), "{} acknowledged puts lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]);
    assert!(crashed.is_empty(), "members {crashed:?} crashed");
}

#[test]
fn acking_before_fsync_is_caught_by_the_same_loop() {
    let Outcome { acked, lost, .. } = crash_loop(&["--unsafe-test-lose-unsynced", "--bug", "ack-before-fsync"]);
    eprintln!("with ack-before-fsync: {acked} acknowledged puts, {} lost", lost.len());
    assert!(!lost.is_empty(), "the loop missed the planted bug: none of {acked} acknowledged puts was lost");
}

#[test]
fn without_the_mode_a_sigkill_keeps_unsynced_writes_and_the_bug_goes_unseen() {
    let Outcome { acked, lost, crashed } = crash_loop(&["--bug", "ack-before-fsync"]);
    eprintln!("ack-before-fsync without --unsafe-test-lose-unsynced: {acked} acknowledged puts, {} lost", lost.len());
    assert!(lost.is_empty(), "a SIGKILL lost page-cache writes: {} of {acked}", lost.len());
    assert!(crashed.is_empty(), "members {crashed:?} crashed");
}
