//! `leasesim-node load`: drives any etcd-API endpoints (leasesim-node or a
//! real etcd) with a workload and prints throughput and latency
//! percentiles, so the two can be compared with the same client and
//! concurrency. `--history` records every KV operation as JSON lines in the
//! format `leasesim check-history` reads (call and return times in
//! nanoseconds since the load started; an operation whose outcome is
//! unknown has no output).
//!
//! Workloads: `put` (puts of fresh keys: write throughput), `kv` (gets,
//! puts and compare-and-sets on a few keys: a history worth checking for
//! linearizability), `lock` (every worker takes and releases one lock
//! through the Lock service: hand-offs per second, the fencing token being
//! the lock key's revision), `registry` (keys attached to leases whose
//! holders stop renewing: how long a lease outlives its holder).
//!
//! Every worker records what it saw in the judge's vocabulary, stamped with
//! true time (`observed.rs`), and after the run the judge's own checkers
//! (`leasesim-judge`, the simulator's) judge it: `linearizable` for `kv`,
//! `lock-belief-overlap` (and `fencing-order` with `--store`) for `lock`,
//! `lease-early-expiry` for `registry`. A violation fails the run (exit 2),
//! whichever server was driven.
//!
//! With `--store host:port` each lock holder writes to the Raft lock-service design's data
//! store with its token (the Lock response's revision), as the simulator's
//! lock clients do, and the run counts accepted and refused writes.
//!
//! `--nemesis kill-leader|pause-leader|kill-random --every 5s
//! --cluster-dir DIR` adds faults to a cluster started by `leasesim-node
//! local --dir DIR`; after a `put` load every acknowledged write is read
//! back, and a lost one fails the run.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use leasesim_history::{KvInput, KvOutput, Operation};
use leasesim_judge::observe::{BeliefEnd, Event};
use serde_json::{json, Value};
use tonic::transport::Channel;

use crate::tools::nemesis::Nemesis;

pub mod observed;
pub mod registry;

use crate::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use crate::pb::etcdserverpb::kv_client::KvClient;
use crate::pb::etcdserverpb::lease_client::LeaseClient;
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::LeaseRevokeRequest;
use crate::pb::etcdserverpb::{Compare, LeaseGrantRequest, PutRequest, RangeRequest, RequestOp, TxnRequest};
use crate::pb::v3lockpb::lock_client::LockClient;
use crate::pb::v3lockpb::{LockRequest, UnlockRequest};
use observed::Recorder;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    Put,
    Kv,
    Lock,
    Registry,
}

#[derive(Args, Clone, Debug)]
pub struct LoadArgs {
    /// The members' client URLs, comma-separated (host:port or http://host:port).
    #[arg(long)]
    pub endpoints: String,
    #[arg(long, value_enum, default_value = "put")]
    pub workload: Workload,
    /// How long to run: 500ms, 30s, 2m.
    #[arg(long, default_value = "10s", value_parser = crate::config::parse_duration)]
    pub duration: Duration,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub concurrency: u64,
    /// `registry` workload: the TTL of each worker's lease.
    #[arg(long, default_value = "5s", value_parser = crate::config::parse_duration)]
    pub ttl: Duration,
    /// Keys the `kv` workload works on.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub keys: u64,
    /// Write the history (JSON lines, `leasesim check-history` format).
    #[arg(long)]
    pub history: Option<std::path::PathBuf>,
    /// Faults during the load (needs --cluster-dir).
    #[arg(long, value_enum, requires = "cluster_dir")]
    pub nemesis: Option<Nemesis>,
    /// How often the nemesis strikes.
    #[arg(long, default_value = "5s", value_parser = crate::config::parse_duration)]
    pub every: Duration,
    /// `lock` workload: the Raft lock-service design's data store (host:port) each holder writes
    /// to with its fencing token.
    #[arg(long)]
    pub store: Option<String>,
    /// The --dir of a `leasesim-node local` cluster (its roster names the processes).
    #[arg(long)]
    pub cluster_dir: Option<std::path::PathBuf>,
}

/// What every worker shares.
struct Shared {
    started: Instant,
    until: Instant,
    latencies_ns: Mutex<Vec<u64>>,
    errors: Mutex<u64>,
    history: Mutex<Vec<Operation>>,
    /// Keys the `put` workload wrote and heard acknowledged.
    acked: Mutex<Vec<(String, String)>>,
    store_accepted: Mutex<u64>,
    store_refused: Mutex<u64>,
    /// What every worker saw, for the judge.
    seen: Recorder,
}

impl Shared {
    fn since_ns(&self, t: Instant) -> u64 {
        t.duration_since(self.started).as_nanos() as u64
    }

    fn done(&self, call: Instant) {
        self.latencies_ns.lock().expect("latencies").push(call.elapsed().as_nanos() as u64);
    }

    fn failed(&self) {
        *self.errors.lock().expect("errors") += 1;
    }

    /// One KV operation, for `--history`; `output: None` when its outcome
    /// is unknown. The judge's own record of it is `KvCall` (stamped
    /// before it left) and `KvReturn` (stamped when its answer came).
    fn record(&self, client: u64, call: Instant, input: KvInput, output: Option<KvOutput>) {
        let return_ns = output.as_ref().map(|_| self.since_ns(Instant::now()));
        let op = Operation { client, call_ns: self.since_ns(call), return_ns, input, output };
        self.history.lock().expect("history").push(op);
    }
}

fn url(endpoint: &str) -> String {
    if endpoint.starts_with("http://") {
        endpoint.to_string()
    } else {
        format!("http://{endpoint}")
    }
}

/// How long the load keeps knocking when no endpoint accepts a connection:
/// a nemesis restarts a killed member within seconds, so a minute of
/// silence means the cluster is gone, and a load bounded by `--duration`
/// must not wait for it forever.
const NO_ENDPOINT_GIVE_UP: Duration = Duration::from_secs(60);

/// A channel to the first of `endpoints` (from `start`, round the list)
/// that accepts a connection; exits the process (code 2) when none has
/// for [`NO_ENDPOINT_GIVE_UP`].
pub async fn channel(endpoints: &[String], start: usize) -> Channel {
    let give_up = Instant::now() + NO_ENDPOINT_GIVE_UP;
    let mut i = start;
    loop {
        let endpoint = Channel::from_shared(url(&endpoints[i % endpoints.len()])).expect("a valid URL");
        if let Ok(channel) = endpoint.connect_timeout(Duration::from_secs(1)).timeout(Duration::from_secs(10)).connect().await {
            return channel;
        }
        if Instant::now() > give_up {
            eprintln!(
                "error: no endpoint of {} accepted a connection for {NO_ENDPOINT_GIVE_UP:?}: the cluster is down",
                endpoints.join(",")
            );
            std::process::exit(2);
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the workload and prints the figures.
pub async fn run(args: LoadArgs) -> Result<(), String> {
    let endpoints: Vec<String> = args.endpoints.split(',').map(str::trim).filter(|e| !e.is_empty()).map(String::from).collect();
    if endpoints.is_empty() {
        return Err("--endpoints names no endpoint".into());
    }
    let started = Instant::now();
    let shared = Arc::new(Shared {
        started,
        until: started + args.duration,
        latencies_ns: Mutex::default(),
        errors: Mutex::default(),
        history: Mutex::default(),
        acked: Mutex::default(),
        store_accepted: Mutex::default(),
        store_refused: Mutex::default(),
        seen: Recorder::default(),
    });
    let nemesis = match (args.nemesis, args.cluster_dir.clone()) {
        (Some(kind), Some(dir)) => Some(tokio::spawn(crate::tools::nemesis::run(kind, args.every, dir, started, shared.until))),
        _ => None,
    };
    let run_prefix = format!("kv/{:08x}/", rand::random::<u32>());
    let mut workers = Vec::new();
    for worker in 0..args.concurrency {
        let (shared, endpoints, args, run_prefix) = (shared.clone(), endpoints.clone(), args.clone(), run_prefix.clone());
        workers.push(tokio::spawn(async move {
            match args.workload {
                Workload::Put => put_worker(worker, &endpoints, &shared).await,
                Workload::Kv => kv_worker(worker, &endpoints, &run_prefix, args.keys, &shared).await,
                Workload::Lock => lock_worker(worker, &endpoints, args.store.as_deref(), &shared).await,
                Workload::Registry => registry::registry_worker(worker, &endpoints, args.ttl, &shared).await,
            }
        }));
    }
    for worker in workers {
        worker.await.map_err(|e| e.to_string())?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(nemesis) = nemesis {
        let log = nemesis.await.map_err(|e| e.to_string())??;
        for action in &log.actions {
            println!("nemesis: {action}");
        }
    }
    print_figures(&args, &shared, elapsed)?;
    if args.store.is_some() {
        let (accepted, refused) = (*shared.store_accepted.lock().expect("store"), *shared.store_refused.lock().expect("store"));
        println!("data store: {accepted} fenced writes accepted, {refused} refused as stale");
    }
    if args.workload == Workload::Put {
        let acked = shared.acked.lock().expect("acked").clone();
        let lost = lost_writes(&endpoints, &acked).await?;
        println!("acknowledged writes: {}; lost: {}", acked.len(), lost.len());
        if !lost.is_empty() {
            return Err(format!("{} acknowledged writes lost, e.g. {:?}", lost.len(), &lost[..lost.len().min(5)]));
        }
    }
    let shared = Arc::try_unwrap(shared).map_err(|_| "a worker outlived the load".to_string())?;
    judge_run(args.workload, shared.seen)
}

/// Throughput and latency, and the `--history` file.
fn print_figures(args: &LoadArgs, shared: &Shared, elapsed: f64) -> Result<(), String> {
    let mut latencies = shared.latencies_ns.lock().expect("latencies").clone();
    latencies.sort_unstable();
    let pct = |p: f64| latencies.get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1))).copied();
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |ns| format!("{:.2} ms", ns as f64 / 1e6));
    let errors = *shared.errors.lock().expect("errors");
    println!(
        "workload {:?}: {} ops in {elapsed:.1} s = {:.1} ops/s with {} clients; latency p50 {} p99 {}; {errors} errors",
        args.workload,
        latencies.len(),
        latencies.len() as f64 / elapsed,
        args.concurrency,
        ms(pct(0.50)),
        ms(pct(0.99)),
    );
    if let Some(path) = &args.history {
        let mut file = std::fs::File::create(path).map_err(|e| format!("--history {}: {e}", path.display()))?;
        for op in shared.history.lock().expect("history").iter() {
            let line = serde_json::to_string(op).map_err(|e| e.to_string())?;
            writeln!(file, "{line}").map_err(|e| e.to_string())?;
        }
        println!("history: {} operations in {}", shared.history.lock().expect("history").len(), path.display());
    }
    Ok(())
}

/// Judges what the workers saw with the judge's checkers for the workload;
/// a violation fails the run.
fn judge_run(workload: Workload, seen: Recorder) -> Result<(), String> {
    let invariants: &[&str] = match workload {
        Workload::Put => return Ok(()),
        Workload::Kv => &["linearizable"],
        Workload::Lock => &["lock-belief-overlap", "fencing-order"],
        Workload::Registry => &["lease-early-expiry"],
    };
    let log = seen.into_log();
    if workload == Workload::Registry {
        println!("{}", registry::lifetimes(&log));
    }
    let judged = observed::judge(&log, invariants);
    for line in &judged.lines {
        println!("{line}");
    }
    match judged.violations.first() {
        None => Ok(()),
        Some(v) => Err(format!("violation: {} at {}: {}", v.invariant, v.at(), v.detail)),
    }
}

/// Reads every `load/` key back (retrying while the cluster recovers) and
/// returns the acknowledged writes it does not find.
async fn lost_writes(endpoints: &[String], acked: &[(String, String)]) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut attempt = 0;
    let stored = loop {
        let mut kv = KvClient::new(channel(endpoints, attempt).await);
        let range = RangeRequest { key: b"load/".to_vec(), range_end: b"load0".to_vec(), ..Default::default() };
        match kv.range(range).await {
            Ok(r) => break r.into_inner().kvs,
            Err(e) if Instant::now() > deadline => return Err(format!("cannot read the writes back: {e}")),
            Err(_) => attempt += 1,
        }
    };
    let stored: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = stored.into_iter().map(|kv| (kv.key, kv.value)).collect();
    Ok(acked.iter().filter(|(k, v)| stored.get(k.as_bytes()).map(Vec::as_slice) != Some(v.as_bytes())).map(|(k, _)| k.clone()).collect())
}

async fn put_worker(worker: u64, endpoints: &[String], shared: &Shared) {
    let mut kv = KvClient::new(channel(endpoints, worker as usize).await);
    let mut n = 0u64;
    while Instant::now() < shared.until {
        let call = Instant::now();
        let (key, value) = (format!("load/{worker}/{n}"), n.to_string());
        let req = PutRequest { key: key.clone().into_bytes(), value: value.clone().into_bytes(), ..Default::default() };
        match kv.put(req).await {
            Ok(_) => {
                shared.done(call);
                shared.acked.lock().expect("acked").push((key, value));
            }
            Err(_) => {
                shared.failed();
                kv = KvClient::new(channel(endpoints, (worker + n) as usize).await);
            }
        }
        n += 1;
    }
}

/// `prefix` is this run's own (`kv/RUN/`): the history starts from keys no
/// earlier run wrote, as the checker assumes (a fresh key is absent).
async fn kv_worker(worker: u64, endpoints: &[String], prefix: &str, keys: u64, shared: &Shared) {
    let client = worker + 1;
    let mut kv = KvClient::new(channel(endpoints, worker as usize).await);
    let mut n = 0u64;
    let mut seen: Option<String> = None;
    while Instant::now() < shared.until {
        n += 1;
        let key = format!("{prefix}{}", (n * 7 + worker) % keys);
        let input = kv_input(n, client, key, &seen);
        let op = observed::kv_op(&input).expect("the kv workload sends KV operations");
        let call = Instant::now();
        // Stamped before the request leaves: the judge's interval for the
        // operation starts no later than the operation itself.
        let call_ns = shared.seen.record(client, Event::KvCall { seq: n, op });
        match kv_send(&mut kv, &input).await {
            Ok(output) => {
                shared.done(call);
                if let KvOutput::Value(value) = &output {
                    seen = value.clone();
                }
                let response = observed::kv_response(&output).expect("a KV answer");
                shared.seen.answered(client, call_ns, Event::KvReturn { seq: n, response });
                shared.record(client, call, input, Some(output));
            }
            Err(_) => {
                shared.failed();
                shared.record(client, call, input, None);
                kv = KvClient::new(channel(endpoints, (worker + n) as usize).await);
            }
        }
    }
}

/// The `n`th operation of `client`: gets, puts and compare-and-sets in
/// turn; a compare-and-set expects the value last read (`seen`).
pub fn kv_input(n: u64, client: u64, key: String, seen: &Option<String>) -> KvInput {
    match n % 5 {
        0 | 1 => KvInput::Get { key },
        2 | 3 => KvInput::Put { key, value: format!("{client}-{n}"), lease: None },
        _ => KvInput::Cas { key, expected: seen.clone(), value: format!("{client}-{n}"), lease: None },
    }
}

/// Sends one KV operation; what its answer says happened.
pub async fn kv_send(kv: &mut KvClient<Channel>, input: &KvInput) -> Result<KvOutput, tonic::Status> {
    match input.clone() {
        KvInput::Get { key } => {
            let answer = kv.range(RangeRequest { key: key.into_bytes(), ..Default::default() }).await?;
            Ok(KvOutput::Value(answer.get_ref().kvs.first().map(|kv| String::from_utf8_lossy(&kv.value).into_owned())))
        }
        KvInput::Put { key, value, .. } => {
            kv.put(PutRequest { key: key.into_bytes(), value: value.into_bytes(), ..Default::default() }).await?;
            Ok(KvOutput::Ok)
        }
        KvInput::Cas { key, expected, value, .. } => {
            let (target, target_union) = match expected {
                Some(v) => (CompareTarget::Value, TargetUnion::Value(v.into_bytes())),
                None => (CompareTarget::Create, TargetUnion::CreateRevision(0)),
            };
            let compare = Compare {
                key: key.clone().into_bytes(),
                result: CompareResult::Equal as i32,
                target: target as i32,
                target_union: Some(target_union),
                ..Default::default()
            };
            let put = PutRequest { key: key.into_bytes(), value: value.into_bytes(), ..Default::default() };
            let txn =
                TxnRequest { compare: vec![compare], success: vec![RequestOp { request: Some(TxnOp::RequestPut(put)) }], failure: vec![] };
            Ok(KvOutput::Cas { succeeded: kv.txn(txn).await?.get_ref().succeeded })
        }
        other => unreachable!("kv_input makes no {other:?}"),
    }
}

/// The lock every `lock` worker takes in turn.
const LOCK_KEY: &str = "load-lock";
/// The TTL of each `lock` worker's lease (it is never kept alive: a worker
/// whose lease lapsed takes a fresh one after its Lock fails).
const LOCK_LEASE_TTL_S: i64 = 10;

async fn lock_worker(worker: u64, endpoints: &[String], store: Option<&str>, shared: &Shared) {
    let client = worker + 1;
    let mut attempt = worker as usize;
    // The lease, and the instant (true time, the client's own clock) until
    // which it promises the holder its lock: its grant's send + the TTL.
    let mut lease: Option<(i64, u64)> = None;
    let mut locks = LockClient::new(channel(endpoints, attempt).await);
    while Instant::now() < shared.until {
        // A lease of its own (again after a failure: it may have expired).
        let (id, until_ns) = match lease {
            Some(held) => held,
            None => match lock_lease(endpoints, attempt, shared).await {
                Some(granted) => *lease.insert(granted),
                None => {
                    shared.failed();
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let call = Instant::now();
        let mut request = tonic::Request::new(LockRequest { name: LOCK_KEY.as_bytes().to_vec(), lease: id });
        request.set_timeout(Duration::from_secs(15));
        match locks.lock(request).await {
            Ok(held) => {
                shared.done(call);
                let held = held.into_inner();
                let token = held.header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
                let belief = Event::BeliefStarted { key: LOCK_KEY.into(), lease: id as u64, token, until_mono_ns: until_ns };
                shared.seen.record(client, belief);
                if let Some(store) = store {
                    hold_and_write(store, client, token, shared).await;
                }
                // The holder stops believing before it asks to unlock.
                shared.seen.record(client, Event::BeliefEnded { key: LOCK_KEY.into(), why: BeliefEnd::Released });
                if locks.unlock(UnlockRequest { key: held.key }).await.is_err() {
                    shared.failed();
                }
            }
            Err(_) => {
                // Another member, and a fresh lease, after a short pause.
                // The old lease is revoked (best effort): the lock request
                // may have been queued, and its waiter would block the
                // queue until the lease expired.
                shared.failed();
                attempt += 1;
                let chan = channel(endpoints, attempt).await;
                if let Some((old, _)) = lease.take() {
                    let mut leases = LeaseClient::new(chan.clone());
                    let _ = leases.lease_revoke(LeaseRevokeRequest { id: old }).await;
                }
                locks = LockClient::new(chan);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A fresh lease for a `lock` worker: its id, and its grant's send (true
/// time) plus the granted TTL.
async fn lock_lease(endpoints: &[String], attempt: usize, shared: &Shared) -> Option<(i64, u64)> {
    let mut leases = LeaseClient::new(channel(endpoints, attempt).await);
    let sent_ns = shared.seen.now_ns();
    let granted = leases.lease_grant(LeaseGrantRequest { ttl: LOCK_LEASE_TTL_S, id: 0 }).await.ok()?.into_inner();
    Some((granted.id, sent_ns + Duration::from_secs(granted.ttl.max(0) as u64).as_nanos() as u64))
}

/// The holder writes to the data store with its token, as in the
/// simulator; an accepted write is stamped when its answer came, and its
/// round trip bounds how much earlier the store took it.
async fn hold_and_write(store: &str, client: u64, token: u64, shared: &Shared) {
    let sent_ns = shared.seen.now_ns();
    match store_write(store, &format!("load-{}", client - 1), LOCK_KEY, token).await {
        Some(true) => {
            *shared.store_accepted.lock().expect("store") += 1;
            shared.seen.answered(client, sent_ns, Event::StoreAccepted { client, key: LOCK_KEY.into(), token });
        }
        Some(false) => *shared.store_refused.lock().expect("store") += 1,
        None => shared.failed(),
    }
}

/// One `WriteRequest` to the data store over plain HTTP/1.1 from client
/// `who` with `token` for `key`; whether it was accepted (`None`: no
/// answer). Shared with the scenario runner (`leasesim-real`).
pub async fn store_write(store: &str, who: &str, key: &str, token: u64) -> Option<bool> {
    let body = json!({"clientID": who, "fencingToken": {"key": key, "value": token}, "data": format!("written by {who}")});
    store_post(store, "/write", &body).await?["success"].as_bool()
}

/// One JSON POST to the data store at `path` over plain HTTP/1.1 (one
/// connection per request, as a process that may be killed between two
/// writes makes them); the answer's JSON body (`None`: no answer within
/// 5 s, or not JSON).
pub async fn store_post(store: &str, path: &str, body: &Value) -> Option<Value> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = store.trim_start_matches("http://").trim_end_matches('/');
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr)).await.ok()?.ok()?;
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await.ok()?.ok()?;
    let response = String::from_utf8_lossy(&response);
    let (_, body) = response.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}
