//! The singleton workload for real (the simulator's
//! `workload/singleton.rs`): each instance keeps a lease alive and, while
//! idle, tries every `poll` to create `/singleton/<role>` attached to its
//! lease (a Txn: create revision 0, then put; one winner; the answer's
//! revision is its fencing token). The winner runs the role while its
//! belief in the lease holds and runs the job every `interval`: a write to
//! the data store under `singleton/<role>` with its token. A refused
//! keep-alive ends the role; a belief that lapses by the instance's clock
//! makes it step down, revoke that lease and take a new one. What the
//! judge's `singleton-overlap` and `fencing-order` read is recorded.
//!
//! The lease is kept alive in a task of its own, as the lock client's is
//! (`keeper.rs`), but with the singleton's events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::client::Belief;
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_node::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::request_op::Request as TxnOp;
use leasesim_node::pb::etcdserverpb::{
    Compare, LeaseGrantRequest, LeaseKeepAliveRequest, LeaseRevokeRequest, PutRequest, RequestOp, TxnRequest,
};
use leasesim_scenario::SingletonWorkload;
use tonic::transport::Channel;

use super::{draw, ttl_secs, Shared};
use crate::gate::Pass;

/// What the keeper and the instance share.
struct Held {
    lease: Option<i64>,
    belief: Belief,
    /// The token the instance runs the role with, if it does.
    running: Option<u64>,
}

type State = Arc<Mutex<Held>>;

pub async fn run(ctx: Shared, client: u64, spec: SingletonWorkload, pass: Pass) {
    let belief = Belief::new(spec.margin, spec.belief_from, false);
    let state: State = Arc::new(Mutex::new(Held { lease: None, belief, running: None }));
    let keeper = tokio::spawn(keep(ctx.clone(), client, spec.clone(), state.clone(), pass.clone()));
    instance(&ctx, client, &spec, &state, pass).await;
    let _ = keeper.await;
}

async fn instance(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(attempt).await);
    let mut takes = 0u64;
    while ctx.running() {
        lapse(ctx, client, spec, state, &mut attempt).await;
        let (lease, running) = {
            let held = state.lock().expect("held");
            (held.lease, held.running)
        };
        match (lease, running) {
            // The job, then the pause before the next (the loop checks
            // the belief again first, as after any pause).
            (_, Some(token)) => {
                job(ctx, client, spec, token).await;
                pass.sleep(draw(&mut rng, spec.interval_ns)).await;
            }
            (None, None) => pass.sleep(Duration::from_millis(20)).await,
            (Some(lease), None) => {
                takes += 1;
                let value = format!("c{client}.{}.{takes}", ctx.seen.now_ns());
                match take(ctx, &mut kv, spec, lease, value).await {
                    Some(Some(token)) => start(ctx, client, spec, state, lease, token, &mut attempt).await,
                    Some(None) => pass.sleep(draw(&mut rng, spec.poll_ns)).await,
                    None => {
                        attempt += 1;
                        kv = KvClient::new(ctx.channel(attempt).await);
                    }
                }
            }
        }
    }
}

/// The create-if-absent of the role's key on `lease`: `Some(Some(token))`
/// won, `Some(None)` someone holds it, `None` no answer.
async fn take(ctx: &Shared, kv: &mut KvClient<Channel>, spec: &SingletonWorkload, lease: i64, value: String) -> Option<Option<u64>> {
    let key = format!("/singleton/{}", spec.role).into_bytes();
    let compare = Compare {
        key: key.clone(),
        result: CompareResult::Equal as i32,
        target: CompareTarget::Create as i32,
        target_union: Some(TargetUnion::CreateRevision(0)),
        ..Default::default()
    };
    let put = PutRequest { key, value: value.into_bytes(), lease, ..Default::default() };
    let txn = TxnRequest { compare: vec![compare], success: vec![RequestOp { request: Some(TxnOp::RequestPut(put)) }], failure: vec![] };
    let answer = ctx.ask(kv.txn(txn)).await?.into_inner();
    let token = answer.header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
    Some(answer.succeeded.then_some(token))
}

/// Won the role: run it only if the belief holds now, else give it back.
async fn start(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, lease: i64, token: u64, attempt: &mut usize) {
    {
        let mut held = state.lock().expect("held");
        let now_ns = ctx.seen.now_ns();
        if let Some(until_mono_ns) = held.belief.until_ns().filter(|_| held.belief.holds(now_ns)).filter(|_| held.lease == Some(lease)) {
            held.running = Some(token);
            ctx.set_holder(&spec.role, Some(client));
            let (role, lease) = (spec.role.clone(), lease as u64);
            ctx.seen.record(client, Event::SingletonStarted { role, lease, token, until_mono_ns });
            return;
        }
    }
    step_down(ctx, client, spec, state, attempt).await;
}

/// The belief lapsed by the instance's own clock while it ran the role.
async fn lapse(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, attempt: &mut usize) {
    let lapsed = {
        let held = state.lock().expect("held");
        held.running.is_some() && !held.belief.holds(ctx.seen.now_ns())
    };
    if lapsed {
        step_down(ctx, client, spec, state, attempt).await;
    }
}

/// Stops running the role (if it did), with `why`.
fn end_role(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, why: BeliefEnd) {
    let mut held = state.lock().expect("held");
    if held.running.take().is_some() {
        // A stale holder waking up must not unname the current one.
        if ctx.holder(&spec.role) == Some(client) {
            ctx.set_holder(&spec.role, None);
        }
        ctx.seen.record(client, Event::SingletonEnded { role: spec.role.clone(), why });
    }
}

/// Drops the lease (revoked, freeing the role at once); the keeper grants
/// a new one.
async fn step_down(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, attempt: &mut usize) {
    end_role(ctx, client, spec, state, BeliefEnd::TimerLapsed);
    let lease = {
        let mut held = state.lock().expect("held");
        held.belief.end();
        held.lease.take()
    };
    if let Some(id) = lease {
        let mut leases = LeaseClient::new(ctx.channel(*attempt).await);
        if ctx.ask(leases.lease_revoke(LeaseRevokeRequest { id })).await.is_none() {
            *attempt += 1;
        }
    }
}

/// The job: a write to the data store with the role's token; an accepted
/// one is stamped when its answer came.
async fn job(ctx: &Shared, client: u64, spec: &SingletonWorkload, token: u64) {
    let (key, sent_ns) = (format!("singleton/{}", spec.role), ctx.seen.now_ns());
    if let Some(true) = leasesim_node::tools::load::store_write(&ctx.store, &format!("c{client}"), &key, token).await {
        ctx.seen.answered(client, sent_ns, Event::StoreAccepted { client, key, token });
    }
}

/// Keeps the instance's lease alive until the run ends: granted when it
/// has none, renewed every `keepalive`; a refused renewal ends the role.
async fn keep(ctx: Shared, client: u64, spec: SingletonWorkload, state: State, mut pass: Pass) {
    let mut attempt = client as usize;
    let mut leases = LeaseClient::new(ctx.channel(attempt).await);
    while ctx.running() {
        pass.pass().await;
        let lease = state.lock().expect("held").lease;
        let sent_ns = ctx.seen.now_ns();
        let answered = match lease {
            None => grant(&ctx, client, spec.ttl_ns, &mut leases, &state, sent_ns).await,
            Some(id) => renew(&ctx, client, &spec, id, &mut leases, &state, sent_ns).await,
        };
        if answered {
            pass.sleep(Duration::from_nanos(spec.keepalive_ns)).await;
        } else {
            attempt += 1;
            leases = LeaseClient::new(ctx.channel(attempt).await);
            pass.sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn grant(ctx: &Shared, client: u64, ttl_ns: u64, leases: &mut LeaseClient<Channel>, state: &State, sent_ns: u64) -> bool {
    let Some(granted) = ctx.ask(leases.lease_grant(LeaseGrantRequest { ttl: ttl_secs(ttl_ns), id: 0 })).await else { return false };
    let granted = granted.into_inner();
    let ttl_ns = Duration::from_secs(granted.ttl.max(0) as u64).as_nanos() as u64;
    ctx.seen.answered(client, sent_ns, Event::LeaseAcked { lease: granted.id as u64, ttl_ns, sent_at_ns: sent_ns, keepalive: false });
    let mut held = state.lock().expect("held");
    held.belief.acknowledge(sent_ns, ctx.seen.now_ns(), ttl_ns);
    held.lease = Some(granted.id);
    true
}

async fn renew(
    ctx: &Shared,
    client: u64,
    spec: &SingletonWorkload,
    id: i64,
    leases: &mut LeaseClient<Channel>,
    state: &State,
    sent_ns: u64,
) -> bool {
    let answer = ctx
        .ask(async {
            let mut answers = leases.lease_keep_alive(tokio_stream::iter([LeaseKeepAliveRequest { id }])).await?.into_inner();
            answers.message().await
        })
        .await;
    let Some(Some(answer)) = answer else { return false };
    let lease = id as u64;
    if answer.ttl <= 0 {
        ctx.seen.answered(client, sent_ns, Event::KeepAliveRefused { lease });
        // Only the lease the instance holds now: one it revoked is gone already.
        if state.lock().expect("held").lease == Some(id) {
            end_role(ctx, client, spec, state, BeliefEnd::KeepAliveRefused);
            let mut held = state.lock().expect("held");
            held.belief.end();
            held.lease = None;
        }
        return true;
    }
    let ttl_ns = Duration::from_secs(answer.ttl as u64).as_nanos() as u64;
    ctx.seen.answered(client, sent_ns, Event::LeaseAcked { lease, ttl_ns, sent_at_ns: sent_ns, keepalive: true });
    let mut held = state.lock().expect("held");
    // A renewal of a lease the instance already dropped extends nothing.
    if held.lease == Some(id) {
        let until_mono_ns = held.belief.acknowledge(sent_ns, ctx.seen.now_ns(), ttl_ns);
        if held.running.is_some() {
            ctx.seen.record(client, Event::SingletonExtended { role: spec.role.clone(), until_mono_ns });
        }
    }
    true
}
