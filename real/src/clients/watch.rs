//! The watch workload for real (the simulator's `workload/watch.rs`): each
//! client watches the keys under its prefix as an etcd client library
//! does. It keeps one Watch stream open at one member, asks that member
//! every `check_every` who leads (Maintenance.Status), and resumes — on a
//! new stream, from its last seen revision + 1 — when the member does not
//! answer within the client timeout, has no leader, names another leader
//! than before (the client goes to the leader), or the stream breaks (a
//! killed or restarted member resets its sockets, which a simulated one
//! cannot; the simulator's client notices the same at its next check).
//! Every event it receives is recorded for `watch-delivery`, with the
//! watch's opening and resumes, as the simulated client records them.

use std::time::Duration;

use leasesim_core::service::kv::KeyRange;
use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use leasesim_node::pb::etcdserverpb::watch_client::WatchClient;
use leasesim_node::pb::etcdserverpb::watch_request::RequestUnion;
use leasesim_node::pb::etcdserverpb::{StatusRequest, WatchCreateRequest, WatchRequest, WatchResponse};
use leasesim_scenario::{WatchStart, WatchWorkload};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use super::{wire, Shared};
use crate::gate::Pass;

/// The one watch a client follows across its streams (judged as one).
struct Watch {
    client: u64,
    spec: WatchWorkload,
    range: KeyRange,
    /// High bits of every watch id: the instant (ms) this client started,
    /// so a client started again opens watches of new ids.
    incarnation: u64,
    watches: u64,
    /// Where the current watch's first stream starts: the file's `start`,
    /// or now (0) for a watch started again after a compaction.
    first: u64,
    /// The watch's start, once a member named it (`None`: not yet open).
    opened_from: Option<u64>,
    last_seen: u64,
    /// The member the stream is at, and the leader it named last.
    server: usize,
    leader: Option<u64>,
}

/// Why a stream was left, and where to go on.
struct Leave {
    server: usize,
    why: &'static str,
}

pub async fn run(ctx: Shared, client: u64, spec: WatchWorkload, mut pass: Pass) {
    let range = KeyRange::prefix(spec.prefix.as_bytes());
    let server = client as usize % ctx.endpoints_of(client).len();
    let incarnation = ctx.seen.now_ns() / 1_000_000;
    let first = match spec.start {
        WatchStart::Now => 0,
        WatchStart::First => 1,
    };
    let mut w = Watch { client, spec, range, incarnation, watches: 1, first, opened_from: None, last_seen: 0, server, leader: None };
    while ctx.running() {
        pass.pass().await;
        let from = w.resume_from();
        let Some(leave) = follow(&ctx, &mut w, from, &mut pass).await else { return };
        w.server = leave.server % ctx.endpoints_of(client).len();
        w.leader = None;
        if w.opened_from.is_some() {
            let (watch, server, from_revision) = (w.id(), w.server as u64 + 1, w.resume_from());
            ctx.seen.record(client, Event::WatchResumed { watch, server, from_revision, why: leave.why.to_string() });
        }
    }
}

impl Watch {
    fn id(&self) -> u64 {
        (self.incarnation << 32) | self.watches
    }

    /// Where the next stream starts: the watch's first start, its start
    /// again if it saw nothing, else the revision after the last seen.
    fn resume_from(&self) -> u64 {
        match self.opened_from {
            None => self.first,
            Some(start) if self.last_seen == 0 => start,
            Some(_) => self.last_seen + 1,
        }
    }

    /// One answer of the stream, recorded; `Some` if the stream must be left.
    fn take(&mut self, ctx: &Shared, from: u64, answer: WatchResponse) -> Option<Leave> {
        let here = self.server;
        if answer.created && self.opened_from.is_none() {
            let current = answer.header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
            let start_revision = if from > 0 { from } else { current + 1 };
            self.opened_from = Some(start_revision);
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let (key, range_end) = (text(&self.range.key), text(&self.range.range_end));
            let (watch, prev_kv, server) = (self.id(), self.spec.prev_kv, here as u64 + 1);
            ctx.seen.record(self.client, Event::WatchOpened { watch, key, range_end, start_revision, prev_kv, server });
        }
        if answer.compact_revision > 0 {
            let compact_revision = answer.compact_revision as u64;
            ctx.seen.record(self.client, Event::WatchCompacted { watch: self.id(), compact_revision });
            // A new watch from now, as the simulated client starts one.
            (self.watches, self.first, self.opened_from, self.last_seen) = (self.watches + 1, 0, None, 0);
            return Some(Leave { server: here, why: "the watch was compacted; a new one starts" });
        }
        for change in answer.events.iter().filter_map(wire::change) {
            self.last_seen = change.revision;
            let text = |v: Option<leasesim_core::service::kv::KvValue>| v.map(|v| String::from_utf8_lossy(&v.value).into_owned());
            let key = String::from_utf8_lossy(&change.key).into_owned();
            let (value, prev) = (text(change.current), text(change.prev));
            ctx.seen.record(self.client, Event::WatchEvent { watch: self.id(), revision: change.revision, key, value, prev });
        }
        answer.canceled.then_some(Leave { server: here + 1, why: "the member canceled the watch" })
    }
}

/// Follows one stream at `w.server` from `from` until it must be left
/// (`None`: the run ended).
async fn follow(ctx: &Shared, w: &mut Watch, from: u64, pass: &mut Pass) -> Option<Leave> {
    let here = w.server;
    let endpoint = &ctx.endpoints_of(w.client)[here];
    let Some(chan) = connect(ctx, endpoint).await else { return Some(Leave { server: here + 1, why: "the member did not answer" }) };
    let (tx, rx) = mpsc::channel(1);
    let create = WatchCreateRequest {
        key: w.range.key.clone(),
        range_end: w.range.range_end.clone(),
        start_revision: from as i64,
        prev_kv: w.spec.prev_kv,
        ..Default::default()
    };
    tx.send(WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) }).await.ok()?;
    let mut watcher = WatchClient::new(chan.clone());
    let Some(answer) = ctx.ask(watcher.watch(ReceiverStream::new(rx))).await else {
        return Some(Leave { server: here + 1, why: "the member did not answer" });
    };
    let mut stream = answer.into_inner();
    let mut status = MaintenanceClient::new(chan);
    let mut check = tokio::time::interval(Duration::from_nanos(w.spec.check_every_ns));
    check.tick().await;
    loop {
        let left = ctx.until.saturating_duration_since(std::time::Instant::now());
        tokio::select! {
            message = stream.message() => {
                pass.pass().await;
                match message {
                    Ok(Some(answer)) => {
                        if let Some(leave) = w.take(ctx, from, answer) {
                            return Some(leave);
                        }
                    }
                    _ => return Some(Leave { server: here + 1, why: "the stream broke" }),
                }
            }
            _ = check.tick() => {
                // The check's timer fired: the client's `timer` point.
                pass.timer().await;
                if let Some(leave) = checked(ctx, w, &mut status).await {
                    return Some(leave);
                }
            }
            _ = tokio::time::sleep(left) => return None,
        }
    }
}

/// A channel to one member (not the next one that answers: the watch must
/// know where it is).
async fn connect(ctx: &Shared, endpoint: &str) -> Option<Channel> {
    let url = if endpoint.starts_with("http://") { endpoint.to_string() } else { format!("http://{endpoint}") };
    let endpoint = Channel::from_shared(url).ok()?.connect_timeout(ctx.timeout);
    endpoint.connect().await.ok()
}

/// The periodic check: who leads, as the member the stream is at says.
async fn checked(ctx: &Shared, w: &mut Watch, status: &mut MaintenanceClient<Channel>) -> Option<Leave> {
    let here = w.server;
    let Some(answer) = ctx.ask(status.status(StatusRequest {})).await else {
        return Some(Leave { server: here + 1, why: "the member did not answer" });
    };
    let leader = answer.get_ref().leader;
    if leader == 0 {
        return Some(Leave { server: here + 1, why: "the member has no leader" });
    }
    if w.leader.is_some_and(|before| before != leader) {
        let at = leader_endpoint(ctx, w.client, leader).await.unwrap_or(here);
        return Some(Leave { server: at, why: "the leader changed" });
    }
    w.leader = Some(leader);
    None
}

/// The index of the member whose id is `leader` (each member's Status
/// names itself in its header).
async fn leader_endpoint(ctx: &Shared, client: u64, leader: u64) -> Option<usize> {
    for (i, endpoint) in ctx.endpoints_of(client).iter().enumerate() {
        let Some(chan) = connect(ctx, endpoint).await else { continue };
        let Some(answer) = ctx.ask(MaintenanceClient::new(chan).status(StatusRequest {})).await else { continue };
        if answer.get_ref().header.as_ref().is_some_and(|h| h.member_id == leader) {
            return Some(i);
        }
    }
    None
}
