//! The workloads `leasesim-node bench` runs on each server, and their
//! figures: `put` (each client puts fresh keys), `txn` (each client's txn
//! compares one key's version and puts two keys at one revision), `watch`
//! (watch streams on one prefix, each seeing every put that writers make
//! there: fan-out; latency from the put's call to each stream's receipt).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use super::BenchArgs;
use crate::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use crate::pb::etcdserverpb::kv_client::KvClient;
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::watch_client::WatchClient;
use crate::pb::etcdserverpb::watch_request::RequestUnion;
use crate::pb::etcdserverpb::{Compare, PutRequest, RequestOp, TxnRequest, WatchCreateRequest, WatchRequest};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Put,
    Txn,
    Watch,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Put => "put",
            Workload::Txn => "txn",
            Workload::Watch => "watch",
        }
    }
}

/// What one workload measured on one server.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Acknowledged requests per second.
    pub ops_per_s: f64,
    /// `watch`: events received per second, summed over the streams.
    pub events_per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Failed requests, and for `watch` events never received.
    pub errors: u64,
    /// Seconds the requests ran (ops/s × this = requests acknowledged).
    pub elapsed_s: f64,
}

/// Latencies in milliseconds, shared by the workers.
type Samples = Arc<Mutex<Vec<f64>>>;

fn figures(samples: &Samples, acked: u64, elapsed: Duration, errors: u64) -> Figures {
    let mut ms = samples.lock().expect("samples lock").clone();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms.get(((ms.len() as f64 * q) as usize).min(ms.len().saturating_sub(1))).copied().unwrap_or(0.0);
    Figures {
        ops_per_s: acked as f64 / elapsed.as_secs_f64(),
        events_per_s: 0.0,
        p50_ms: at(0.50),
        p90_ms: at(0.90),
        p99_ms: at(0.99),
        max_ms: ms.last().copied().unwrap_or(0.0),
        errors,
        elapsed_s: elapsed.as_secs_f64(),
    }
}

/// Runs `workload` once; `round` keeps each round's keys apart (a txn's
/// version compare assumes its keys are fresh).
pub async fn run(workload: Workload, channel: &Channel, args: &BenchArgs, round: u64) -> Result<Figures, String> {
    match workload {
        Workload::Put | Workload::Txn => Ok(requests(workload, channel, args, round).await),
        Workload::Watch => watch(channel, args, round).await,
    }
}

/// One request of `put` or `txn` by client `worker`, its `n`th.
async fn one_request(
    kv: &mut KvClient<Channel>,
    workload: Workload,
    worker: u64,
    n: u64,
    value: &[u8],
    args: &BenchArgs,
    round: u64,
) -> bool {
    let put = |key: String| PutRequest { key: key.into_bytes(), value: value.to_vec(), ..Default::default() };
    match workload {
        Workload::Put if args.key_space > 0 => kv.put(put(format!("bench/put/{worker}/{}", n % args.key_space))).await.is_ok(),
        Workload::Put => kv.put(put(format!("bench/{round}/put/{worker}/{n}"))).await.is_ok(),
        _ => {
            let a = format!("bench/{round}/txn/{worker}/a");
            let compare = Compare {
                key: a.clone().into_bytes(),
                target: CompareTarget::Version as i32,
                result: CompareResult::Equal as i32,
                target_union: Some(TargetUnion::Version(n as i64)),
                ..Default::default()
            };
            let ops = [put(a), put(format!("bench/{round}/txn/{worker}/b"))].map(|p| RequestOp { request: Some(TxnOp::RequestPut(p)) });
            let txn = TxnRequest { compare: vec![compare], success: ops.to_vec(), failure: vec![] };
            // Each put of `a` moves its version by one, so every txn takes its success branch.
            kv.txn(txn).await.is_ok_and(|r| r.into_inner().succeeded)
        }
    }
}

/// `put` or `txn`: `concurrency` clients in closed loops for `duration`.
async fn requests(workload: Workload, channel: &Channel, args: &BenchArgs, round: u64) -> Figures {
    let samples: Samples = Arc::default();
    let value = vec![b'v'; args.value_size as usize];
    let started = Instant::now();
    let end = started + args.duration;
    let mut tasks = Vec::new();
    for worker in 0..args.concurrency {
        let (mut kv, samples, value, args) = (KvClient::new(channel.clone()), samples.clone(), value.clone(), args.clone());
        tasks.push(tokio::spawn(async move {
            let (mut acked, mut errors) = (0, 0);
            while Instant::now() < end {
                let call = Instant::now();
                if one_request(&mut kv, workload, worker, acked, &value, &args, round).await {
                    acked += 1;
                    samples.lock().expect("samples lock").push(call.elapsed().as_secs_f64() * 1e3);
                } else {
                    errors += 1;
                }
            }
            (acked, errors)
        }));
    }
    let (mut acked, mut errors) = (0, 0);
    for task in tasks {
        let (a, e) = task.await.unwrap_or((0, 1));
        acked += a;
        errors += e;
    }
    figures(&samples, acked, started.elapsed(), errors)
}

/// Opens one watch stream on `prefix`; the receiver counts events and
/// records each one's latency (the value starts with the put's call time,
/// in nanoseconds since `origin`).
async fn watcher(channel: &Channel, prefix: &[u8], origin: Instant, samples: Samples) -> Result<tokio::task::JoinHandle<u64>, String> {
    let (tx, rx) = mpsc::channel(4);
    let mut end = prefix.to_vec();
    *end.last_mut().expect("a prefix") += 1;
    let create = WatchCreateRequest { key: prefix.to_vec(), range_end: end, ..Default::default() };
    tx.send(WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) }).await.map_err(|e| e.to_string())?;
    let mut stream =
        WatchClient::new(channel.clone()).watch(ReceiverStream::new(rx)).await.map_err(|e| format!("watch: {e}"))?.into_inner();
    // The created response: the watch is in place before any put.
    stream.message().await.map_err(|e| format!("watch: {e}"))?;
    Ok(tokio::spawn(async move {
        let _keep_open = tx;
        let mut seen = 0;
        while let Ok(Some(resp)) = stream.message().await {
            let now_ns = origin.elapsed().as_nanos() as u64;
            let mut local = Vec::with_capacity(resp.events.len());
            for event in &resp.events {
                let sent =
                    event.kv.as_ref().and_then(|kv| kv.value.get(..8)).map_or(now_ns, |b| u64::from_le_bytes(b.try_into().expect("8")));
                local.push(now_ns.saturating_sub(sent) as f64 / 1e6);
            }
            seen += resp.events.len() as u64;
            samples.lock().expect("samples lock").extend(local);
        }
        seen
    }))
}

/// `watch`: `watchers` streams on one prefix, `concurrency` writers putting
/// there for `duration`; then waits (up to 30 s) until every stream has
/// every acknowledged put.
async fn watch(channel: &Channel, args: &BenchArgs, round: u64) -> Result<Figures, String> {
    let origin = Instant::now();
    let samples: Samples = Arc::default();
    let prefix = format!("bench/{round}/watch/").into_bytes();
    let mut streams = Vec::new();
    for _ in 0..args.watchers {
        streams.push(watcher(channel, &prefix, origin, samples.clone()).await?);
    }
    let started = Instant::now();
    let end = started + args.duration;
    let mut writers = Vec::new();
    for worker in 0..args.concurrency {
        let mut kv = KvClient::new(channel.clone());
        let size = args.value_size.max(8) as usize;
        let prefix = String::from_utf8(prefix.clone()).expect("an ASCII prefix");
        writers.push(tokio::spawn(async move {
            let mut acked = 0u64;
            while Instant::now() < end {
                let mut value = (origin.elapsed().as_nanos() as u64).to_le_bytes().to_vec();
                value.resize(size, b'v');
                let put = PutRequest { key: format!("{prefix}{worker}/{acked}").into_bytes(), value, ..Default::default() };
                if kv.put(put).await.is_ok() {
                    acked += 1;
                }
            }
            acked
        }));
    }
    let mut acked = 0;
    for writer in writers {
        acked += writer.await.unwrap_or(0);
    }
    let writing = started.elapsed();
    let expected = acked * args.watchers;
    let give_up = Instant::now() + Duration::from_secs(30);
    while (samples.lock().expect("samples lock").len() as u64) < expected && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let delivering = started.elapsed();
    let received = samples.lock().expect("samples lock").len() as u64;
    for stream in streams {
        stream.abort();
    }
    let mut f = figures(&samples, acked, writing, expected.saturating_sub(received));
    f.events_per_s = received as f64 / delivering.as_secs_f64();
    Ok(f)
}
