//! A write load that remembers what the cluster acknowledged, for the tests
//! that kill, restart or power-cycle members under writes and then check
//! that no acknowledged write was lost (sigkill, restarts, crash_loop).
//! Writers put `w{id}-{n}` = `n` and move to the next member when one fails.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};
use tonic::transport::Channel;

/// Every acknowledged put: key → value.
pub type Acked = Arc<Mutex<BTreeMap<String, String>>>;

/// The instants at which puts were acknowledged, for writers that time them.
pub type AckTimes = Arc<Mutex<Vec<Instant>>>;

pub async fn connect(url: &str) -> Option<KvClient<Channel>> {
    let channel = Channel::from_shared(url.to_string()).ok()?.connect_timeout(Duration::from_secs(1));
    channel.connect().await.ok().map(KvClient::new)
}

/// One writer: puts `w{id}-{n}` = `n` through the members in turn (starting
/// at member `id`), moving on when one fails, until `stop`; records every
/// acknowledged put, and its instant when `ack_times` is given.
pub async fn writer(id: usize, urls: Vec<String>, acked: Acked, stop: Arc<AtomicBool>, ack_times: Option<AckTimes>) {
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
                if let Some(times) = &ack_times {
                    times.lock().unwrap().push(Instant::now());
                }
            }
            Err(_) => {
                client = None;
                member = (member + 1) % urls.len();
            }
        }
    }
}

/// Waits (up to 90 s) until at least `at_least` puts were acknowledged.
pub fn wait_for_acks(acked: &Acked, at_least: usize) {
    let started = Instant::now();
    while acked.lock().unwrap().len() < at_least {
        assert!(started.elapsed() < Duration::from_secs(90), "the load stalled at {} acknowledged writes", acked.lock().unwrap().len());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every key the writers wrote, read through the first of `urls` that
/// answers (polling up to 90 s, for members that are still starting).
pub async fn read_back(urls: &[String]) -> BTreeMap<String, String> {
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
        assert!(started.elapsed() < Duration::from_secs(90), "no member of {urls:?} answers the read-back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The acknowledged writes that `stored` does not hold with their value.
pub fn lost(acked: &BTreeMap<String, String>, stored: &BTreeMap<String, String>) -> Vec<String> {
    acked.iter().filter(|(k, v)| stored.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect()
}
