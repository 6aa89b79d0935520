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
//! The lease is kept alive by the lock client's keeper (`keeper.rs`), in a
//! task of its own; the role is what the instance holds on it ([`Role`]).
//! Its timers and its belief read its own clock (`clock.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::client::Belief;
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::request_op::Request as TxnOp;
use leasesim_node::pb::etcdserverpb::{LeaseRevokeRequest, PutRequest, RequestOp, TxnRequest};
use leasesim_scenario::SingletonWorkload;
use tonic::transport::Channel;

use super::keeper::{self, Holding, LeaseState};
use super::tasks::AbortOnDrop;
use super::{draw, Ctx, Shared};
use crate::gate::Pass;

/// The role an instance holds on its lease: the token it runs it with, if
/// it does.
pub struct Role {
    name: String,
    running: Option<u64>,
}

impl Role {
    /// Stops running the role (if it did), with `why`.
    fn end(&mut self, ctx: &Ctx, client: u64, why: BeliefEnd) {
        if self.running.take().is_some() {
            // A stale holder waking up must not unname the current one.
            if ctx.holder(&self.name) == Some(client) {
                ctx.set_holder(&self.name, None);
            }
            ctx.seen.record(client, Event::SingletonEnded { role: self.name.clone(), why });
        }
    }
}

impl Holding for Role {
    fn extended(&self, ctx: &Ctx, client: u64, until_mono_ns: u64) {
        if self.running.is_some() {
            ctx.seen.record(client, Event::SingletonExtended { role: self.name.clone(), until_mono_ns });
        }
    }

    fn refused(&mut self, ctx: &Ctx, client: u64) {
        self.end(ctx, client, BeliefEnd::KeepAliveRefused);
    }
}

type State = keeper::State<Role>;

pub async fn run(ctx: Shared, client: u64, spec: SingletonWorkload, pass: Pass) {
    let belief = Belief::new(spec.margin, spec.belief_from, false);
    let role = Role { name: spec.role.clone(), running: None };
    let state: State = Arc::new(Mutex::new(LeaseState { lease: None, belief, held: role }));
    let keepalive = Duration::from_nanos(spec.keepalive_ns);
    // Dies with this task when the instance is crashed (`tasks.rs`).
    let mut keeper = AbortOnDrop(tokio::spawn(keeper::keep(ctx.clone(), client, spec.ttl_ns, keepalive, state.clone(), pass.clone())));
    instance(&ctx, client, &spec, &state, pass).await;
    let _ = (&mut keeper.0).await;
}

async fn instance(ctx: &Shared, client: u64, spec: &SingletonWorkload, state: &State, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(client, attempt).await);
    let mut takes = 0u64;
    while ctx.running() {
        lapse(ctx, client, state, &mut attempt).await;
        let (lease, running) = {
            let held = state.lock().expect("held");
            (held.lease, held.held.running)
        };
        match (lease, running) {
            // The job, then the pause before the next (the loop checks
            // the belief again first, as after any pause).
            (_, Some(token)) => {
                job(ctx, client, spec, token, &mut pass).await;
                pass.sleep(draw(&mut rng, spec.interval_ns)).await;
            }
            (None, None) => pass.sleep(Duration::from_millis(20)).await,
            (Some(lease), None) => {
                takes += 1;
                // Unique per take: the instance's own wall stamp and its count.
                let value = format!("c{client}.{}.{takes}", ctx.clock(client).wall_ns());
                // Read once the instance is not paused (`gate.rs`), where
                // `start` checks the belief.
                match pass.answered(take(ctx, &mut kv, spec, lease, value)).await {
                    Some(Some(token)) => start(ctx, client, spec, state, lease, token, &mut attempt).await,
                    Some(None) => pass.sleep(draw(&mut rng, spec.poll_ns)).await,
                    None => {
                        attempt += 1;
                        kv = KvClient::new(ctx.channel(client, attempt).await);
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
    let compare = super::wire::never_created(&key);
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
        let now_ns = ctx.clock(client).mono_ns();
        if let Some(until_mono_ns) = held.belief.until_ns().filter(|_| held.belief.holds(now_ns)).filter(|_| held.lease == Some(lease)) {
            held.held.running = Some(token);
            ctx.set_holder(&spec.role, Some(client));
            let (role, lease) = (spec.role.clone(), lease as u64);
            ctx.seen.record(client, Event::SingletonStarted { role, lease, token, until_mono_ns });
            return;
        }
    }
    step_down(ctx, client, state, attempt).await;
}

/// The belief lapsed by the instance's own clock while it ran the role.
async fn lapse(ctx: &Shared, client: u64, state: &State, attempt: &mut usize) {
    let lapsed = {
        let held = state.lock().expect("held");
        held.held.running.is_some() && !held.belief.holds(ctx.clock(client).mono_ns())
    };
    if lapsed {
        step_down(ctx, client, state, attempt).await;
    }
}

/// Drops the lease (revoked, freeing the role at once); the keeper grants
/// a new one.
async fn step_down(ctx: &Shared, client: u64, state: &State, attempt: &mut usize) {
    let lease = {
        let mut held = state.lock().expect("held");
        held.held.end(ctx, client, BeliefEnd::TimerLapsed);
        held.belief.end();
        held.lease.take()
    };
    if let Some(id) = lease {
        let mut leases = LeaseClient::new(ctx.channel(client, *attempt).await);
        if ctx.ask(leases.lease_revoke(LeaseRevokeRequest { id })).await.is_none() {
            *attempt += 1;
        }
    }
}

/// The job: a write to the data store with the role's token; an accepted
/// one is stamped when its answer arrived (even if a pause held its reading
/// back: `gate.rs`).
async fn job(ctx: &Shared, client: u64, spec: &SingletonWorkload, token: u64, pass: &mut Pass) {
    let (key, sent_ns) = (format!("singleton/{}", spec.role), ctx.seen.now_ns());
    let store = ctx.store_of(client);
    let (accepted, arrived_ns) = pass.answered_at(leasesim_node::tools::load::store_write(store, &format!("c{client}"), &key, token)).await;
    if let Some(true) = accepted {
        ctx.seen.answered_at(client, sent_ns, arrived_ns, Event::StoreAccepted { client, key, token });
    }
}
