//! A task worker of a `kind = "task"` workload for real (the simulator's
//! `workload/task.rs`, the multi-instance lease design's work queue): it
//! keeps a lease alive (`keeper.rs`) and loops: read how many tasks exist,
//! claim the lowest one it does not know to be done by creating
//! `/claims/<n>` attached to its lease (a Txn: create revision 0, then put;
//! one claim wins; the answer's revision is its fencing token), check its
//! belief, write a fenced start to the data store's task row, work for
//! `work`, write a fenced completion, and put `/claims/<n> = "done"`.
//!
//! It abandons its task the moment a keep-alive is refused (the lease is
//! gone) or its belief ends by its own clock, or when the store says a
//! newer claim exists; unless the cluster already refused the lease, it
//! revokes that lease (taking the claim with it) and the keeper grants a
//! new one (at its next round, up to `keepalive` later; the simulator's
//! worker asks at once). It records what the judge's `task-once` and `task-lost` read,
//! as the simulator's worker and store do.
//!
//! Store writes travel as the simulator's messages do: each is sent from
//! a task of its own, so a reply can come late or never (a `messages`
//! fault, a paused or crashed store), and the worker resends the same
//! write every [`STORE_RESEND_NS`] of its own clock while its belief
//! holds. The row's verdict is recorded when the store's answer arrives,
//! stamped with that write's round trip as its error. Time for the
//! worker's own decisions (its belief, its work) is read through
//! [`Worker::now_ns`], the client's clock.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::client::Belief;
use leasesim_judge::observe::{Event, TaskAbandon};
use leasesim_judge::vocab::{TaskStep, TaskVerdict};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::request_op::Request as TxnOp;
use leasesim_node::pb::etcdserverpb::response_op::Response as TxnAnswer;
use leasesim_node::pb::etcdserverpb::{LeaseRevokeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest};
use leasesim_scenario::{TaskWorkload, WireKind};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tonic::transport::Channel;

use super::keeper::{self, Holding, LeaseState};
use super::task_generator::{put, read_count};
use super::tasks::AbortOnDrop;
use super::{draw, Shared};
use crate::gate::Pass;

/// The value of a claim key once its task is done.
const DONE: &str = "done";
/// How long a worker waits for the data store before it resends a write
/// (own clock), as the simulator's worker; only while its belief holds.
const STORE_RESEND_NS: u64 = 300_000_000;
/// A worker holds nothing on its lease that the keeper must tell the judge
/// of: its claims are keys attached to the lease, judged from the store's
/// rows and the claim transactions, and it checks its belief itself
/// before every step.
pub struct Unheld;

impl Holding for Unheld {
    fn extended(&self, _ctx: &super::Ctx, _client: u64, _until_mono_ns: u64) {}
    fn refused(&mut self, _ctx: &super::Ctx, _client: u64) {}
}

type State = keeper::State<Unheld>;

/// How often a waiting worker looks at its lease and belief: the
/// simulator's worker abandons at the very instant its belief lapses.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// Task `n`'s claim: absent while free, a worker's claim on its lease while
/// claimed, `done` (no lease) once done.
fn claim_key(task: u64) -> String {
    format!("/claims/{task}")
}

/// Why the worker stopped holding its task.
enum Stop {
    Abandon(TaskAbandon),
    /// The run is over: nothing to record.
    RunOver,
}

/// What a claim's answer said.
enum Claim {
    Won { token: u64 },
    Taken { done: bool },
    LeaseNotFound,
    NoAnswer,
}

/// Runs worker `client` until the run ends.
pub async fn run(ctx: Shared, client: u64, spec: TaskWorkload, pass: Pass) {
    let belief = Belief::new(spec.margin, spec.belief_from, false);
    let state: State = Arc::new(Mutex::new(LeaseState { lease: None, belief, held: Unheld }));
    let keepalive = Duration::from_nanos(spec.keepalive_ns);
    // Dies with this task when the client is crashed (`tasks.rs`).
    let mut keeper = AbortOnDrop(tokio::spawn(keeper::keep(ctx.clone(), client, spec.ttl_ns, keepalive, state.clone(), pass.clone())));
    let kv = KvClient::new(ctx.channel(client, client as usize).await);
    let (replies_to, replies) = mpsc::unbounded_channel();
    let rng = ctx.rng(client);
    let mut worker = Worker {
        ctx,
        client,
        spec,
        state,
        pass,
        rng,
        kv,
        attempt: client as usize,
        done: BTreeSet::new(),
        claims: 0,
        writes: JoinSet::new(),
        replies_to,
        replies,
        next_request_id: 1,
        dead_lease: None,
    };
    worker.work().await;
    let _ = (&mut keeper.0).await;
}

struct Worker {
    ctx: Shared,
    client: u64,
    spec: TaskWorkload,
    state: State,
    pass: Pass,
    rng: ChaCha8Rng,
    kv: KvClient<Channel>,
    attempt: usize,
    /// Tasks this worker knows are done (a task never becomes undone).
    done: BTreeSet<u64>,
    claims: u64,
    /// Store writes on their way (aborted with the worker: a crashed
    /// process's unsent writes die with it).
    writes: JoinSet<()>,
    replies_to: mpsc::UnboundedSender<(u64, TaskVerdict)>,
    replies: mpsc::UnboundedReceiver<(u64, TaskVerdict)>,
    next_request_id: u64,
    /// A lease the cluster said it does not know: wait for the keeper to
    /// learn it and take a new one.
    dead_lease: Option<i64>,
}

impl Worker {
    /// The worker's own clock, which its belief and its work are measured on.
    fn now_ns(&self) -> u64 {
        self.ctx.clock(self.client).mono_ns()
    }

    fn lease(&self) -> Option<i64> {
        self.state.lock().expect("lease").lease
    }

    async fn work(&mut self) {
        while self.ctx.running() {
            self.pass.pass().await;
            let Some(lease) = self.lease().filter(|l| Some(*l) != self.dead_lease) else {
                self.pass.sleep(Duration::from_millis(20)).await;
                continue;
            };
            let Some(count) = read_count(&self.ctx, &mut self.kv).await else {
                self.next_member().await;
                continue;
            };
            if let Some((task, token)) = self.claim_first_free(count, lease).await {
                self.hold(task, token, lease).await;
            }
        }
    }

    /// Tries the free tasks lowest first; the one claimed, if any (after an
    /// idle poll when none was free).
    async fn claim_first_free(&mut self, count: u64, lease: i64) -> Option<(u64, u64)> {
        let candidates: Vec<u64> = (1..=count).filter(|t| !self.done.contains(t)).collect();
        for task in candidates {
            self.pass.pass().await;
            // A lease lost meanwhile: whatever was asked under it is moot.
            if self.lease() != Some(lease) {
                return None;
            }
            match self.claim(task, lease).await {
                Claim::Won { token } => return Some((task, token)),
                Claim::Taken { done: true } => {
                    self.done.insert(task);
                }
                Claim::Taken { done: false } => {}
                Claim::LeaseNotFound => {
                    self.dead_lease = Some(lease);
                    return None;
                }
                Claim::NoAnswer => {
                    self.next_member().await;
                    return None;
                }
            }
        }
        let poll = draw(&mut self.rng, self.spec.poll_ns);
        self.pass.sleep(poll).await;
        None
    }

    /// The create-if-absent of task `task`'s claim on `lease`.
    async fn claim(&mut self, task: u64, lease: i64) -> Claim {
        self.claims += 1;
        let key = claim_key(task).into_bytes();
        let compare = super::wire::never_created(&key);
        let value = format!("c{}.{}.{}", self.client, self.ctx.seen.origin_ns(), self.claims).into_bytes();
        let put = PutRequest { key: key.clone(), value, lease, ..Default::default() };
        let get = RangeRequest { key, ..Default::default() };
        let txn = TxnRequest {
            compare: vec![compare],
            success: vec![RequestOp { request: Some(TxnOp::RequestPut(put)) }],
            failure: vec![RequestOp { request: Some(TxnOp::RequestRange(get)) }],
        };
        let answer = match tokio::time::timeout(self.ctx.timeout, self.kv.txn(txn)).await {
            Ok(Ok(answer)) => answer.into_inner(),
            Ok(Err(status)) if status.message().contains("lease not found") => return Claim::LeaseNotFound,
            _ => return Claim::NoAnswer,
        };
        if answer.succeeded {
            return Claim::Won { token: answer.header.as_ref().map_or(0, |h| h.revision.max(0) as u64) };
        }
        let current = answer.responses.iter().find_map(|r| match &r.response {
            Some(TxnAnswer::ResponseRange(range)) => range.kvs.first().cloned(),
            _ => None,
        });
        match current {
            // This worker's own claim, made by an earlier txn whose answer
            // was lost: the simulator's session would have had it answered
            // on a resend. Its put's revision is the token.
            Some(kv) if kv.lease == lease => Claim::Won { token: kv.mod_revision.max(0) as u64 },
            current => Claim::Taken { done: current.is_some_and(|kv| kv.value == DONE.as_bytes()) },
        }
    }

    /// Holds a claimed task: checks the belief, starts it at the store,
    /// works, completes it, or abandons it on the way.
    async fn hold(&mut self, task: u64, token: u64, lease: i64) {
        let until_mono_ns = {
            let state = self.state.lock().expect("lease");
            state.belief.until_ns().filter(|_| state.belief.holds(self.now_ns()) && state.lease == Some(lease))
        };
        let Some(until_mono_ns) = until_mono_ns else {
            return self.abandon(task, token, TaskAbandon::ClaimedTooLate).await;
        };
        self.ctx.seen.record(self.client, Event::TaskClaimed { task, lease: lease as u64, token, until_mono_ns });
        let done = match self.store(task, token, lease, TaskStep::Start).await {
            Ok(TaskVerdict::Accepted) => self.work_on(task, token, lease).await,
            Ok(TaskVerdict::AlreadyDone) => {
                self.ctx.seen.record(self.client, Event::TaskAbandoned { task, token, why: TaskAbandon::AlreadyDone });
                Ok(())
            }
            Ok(TaskVerdict::StaleToken { .. }) => Err(Stop::Abandon(TaskAbandon::Superseded)),
            Err(stop) => Err(stop),
        };
        match done {
            Ok(()) => self.mark_done(task).await,
            Err(Stop::Abandon(why)) => self.abandon(task, token, why).await,
            Err(Stop::RunOver) => {}
        }
    }

    /// Works for `work` while the task is held, then completes it.
    async fn work_on(&mut self, task: u64, token: u64, lease: i64) -> Result<(), Stop> {
        let end_ns = self.now_ns() + draw(&mut self.rng, self.spec.work_ns).as_nanos() as u64;
        loop {
            self.pass.pass().await;
            self.still_held(lease)?;
            let now_ns = self.now_ns();
            if now_ns >= end_ns {
                break;
            }
            tokio::time::sleep(Duration::from_nanos(end_ns - now_ns).min(LOOK_EVERY)).await;
        }
        match self.store(task, token, lease, TaskStep::Complete).await? {
            // An earlier copy of this completion may be what made it done.
            TaskVerdict::Accepted | TaskVerdict::AlreadyDone => Ok(()),
            TaskVerdict::StaleToken { .. } => Err(Stop::Abandon(TaskAbandon::Superseded)),
        }
    }

    /// Whether the worker may still act on its claim under `lease`: checked
    /// before every step, so that nothing acts on a lapsed belief.
    fn still_held(&self, lease: i64) -> Result<(), Stop> {
        if !self.ctx.running() {
            return Err(Stop::RunOver);
        }
        let state = self.state.lock().expect("lease");
        if state.lease != Some(lease) {
            return Err(Stop::Abandon(TaskAbandon::KeepAliveRefused));
        }
        if !state.belief.holds(self.now_ns()) {
            return Err(Stop::Abandon(TaskAbandon::TimerLapsed));
        }
        Ok(())
    }

    /// One fenced write to the task's row, resent while the task is held
    /// until the store answers; the row's verdict.
    async fn store(&mut self, task: u64, token: u64, lease: i64, step: TaskStep) -> Result<TaskVerdict, Stop> {
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        loop {
            self.still_held(lease)?;
            self.send(task, token, step, request_id);
            let resend_ns = self.now_ns() + STORE_RESEND_NS;
            loop {
                let wait = Duration::from_nanos(resend_ns.saturating_sub(self.now_ns())).min(LOOK_EVERY);
                let reply = tokio::time::timeout(wait, self.replies.recv()).await;
                self.pass.pass().await;
                self.still_held(lease)?;
                match reply {
                    Ok(Some((id, verdict))) if id == request_id => return Ok(verdict),
                    _ if self.now_ns() >= resend_ns => break,
                    _ => {}
                }
            }
        }
    }

    /// Sends one copy of a store write from a task of its own.
    fn send(&mut self, task: u64, token: u64, step: TaskStep, request_id: u64) {
        while self.writes.try_join_next().is_some() {}
        let (ctx, client, replies_to) = (self.ctx.clone(), self.client, self.replies_to.clone());
        self.writes.spawn(async move {
            if !ctx.aims.deliver(WireKind::StoreWrite, ctx.timeout).await {
                return;
            }
            let sent_ns = ctx.seen.now_ns();
            let body = serde_json::json!({ "clientID": format!("c{client}"), "task": task, "token": token, "step": step });
            let Some(answer) = leasesim_node::tools::load::store_post(ctx.store_of(client), "/task", &body).await else { return };
            let Ok(verdict) = serde_json::from_value::<TaskVerdict>(answer["verdict"].clone()) else { return };
            let event = match verdict {
                TaskVerdict::Accepted => Event::TaskWriteAccepted { client, task, token, step },
                verdict => Event::TaskWriteRefused { client, task, token, step, verdict },
            };
            ctx.seen.answered(client, sent_ns, event);
            if ctx.aims.deliver(WireKind::StoreReply, ctx.timeout).await {
                let _ = replies_to.send((request_id, verdict));
            }
        });
    }

    /// Records the task done in the KV (the data store has it done already).
    async fn mark_done(&mut self, task: u64) {
        self.done.insert(task);
        self.pass.pass().await;
        if !put(&self.ctx, &mut self.kv, claim_key(task), DONE.into()).await {
            self.next_member().await;
        }
    }

    /// Gives up the held task. Unless the cluster already refused the
    /// lease, it is revoked (taking the claim with it, so the task is free
    /// at once) and the keeper grants a new one: nothing of the old lease
    /// is trusted.
    async fn abandon(&mut self, task: u64, token: u64, why: TaskAbandon) {
        self.ctx.seen.record(self.client, Event::TaskAbandoned { task, token, why });
        if why == TaskAbandon::KeepAliveRefused {
            return;
        }
        let lease = {
            let mut state = self.state.lock().expect("lease");
            state.belief.end();
            state.lease.take()
        };
        if let Some(id) = lease {
            let mut leases = LeaseClient::new(self.ctx.channel(self.client, self.attempt).await);
            if self.ctx.ask(leases.lease_revoke(LeaseRevokeRequest { id })).await.is_none() {
                self.attempt += 1;
            }
        }
    }

    /// The next member, after a request that got no answer.
    async fn next_member(&mut self) {
        self.attempt += 1;
        self.kv = KvClient::new(self.ctx.channel(self.client, self.attempt).await);
        self.pass.sleep(super::RETRY_PAUSE).await;
    }
}
