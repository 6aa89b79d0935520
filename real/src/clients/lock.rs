//! The lock workload for real (the simulator's `workload/lock.rs`): each
//! client keeps a lease alive and loops: think, acquire a key through the
//! Lock service, check its belief when the grant arrives, work for `hold`,
//! write to the data store with its fencing token (the Lock answer's
//! revision), release. A pause during the work makes the write late: the
//! hazard fencing exists for. Its timers and its belief read its own clock
//! (`clock.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::client::Belief;
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_node::pb::v3lockpb::lock_client::LockClient;
use leasesim_node::pb::v3lockpb::{LockRequest, UnlockRequest};
use leasesim_scenario::{LockWorkload, WireKind};
use rand::Rng;

use super::keeper::{self, Holding, LeaseState};
use super::tasks::AbortOnDrop;
use super::{draw, Ctx, Shared};
use crate::gate::Pass;

/// The key a lock client believes it holds on its lease, if any.
#[derive(Default)]
pub struct Believed(Option<String>);

impl Holding for Believed {
    fn extended(&self, ctx: &Ctx, client: u64, until_mono_ns: u64) {
        if let Some(key) = self.0.clone() {
            ctx.seen.record(client, Event::BeliefExtended { key, until_mono_ns });
        }
    }

    fn refused(&mut self, ctx: &Ctx, client: u64) {
        if let Some(key) = self.0.take() {
            ctx.set_holder(&key, None);
            ctx.seen.record(client, Event::BeliefEnded { key, why: BeliefEnd::KeepAliveRefused });
        }
    }
}

type State = keeper::State<Believed>;

/// Runs client `client` of a lock workload until the run ends.
pub async fn run(ctx: Shared, client: u64, spec: LockWorkload, pass: Pass) {
    let belief = Belief::new(spec.margin, spec.belief_from, false);
    let state: State = Arc::new(Mutex::new(LeaseState { lease: None, belief, held: Believed::default() }));
    let keepalive = Duration::from_nanos(spec.keepalive_ns);
    // Dies with this task when the client is crashed (`tasks.rs`).
    let mut keeper = AbortOnDrop(tokio::spawn(keeper::keep(ctx.clone(), client, spec.ttl_ns, keepalive, state.clone(), pass.clone())));
    work(&ctx, client, &spec, &state, pass).await;
    let _ = (&mut keeper.0).await;
}

async fn work(ctx: &Shared, client: u64, spec: &LockWorkload, state: &State, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut locks = LockClient::new(ctx.channel(client, attempt).await);
    // Waiting for a contended lock is normal: as long as a holder may keep it.
    let wait = ctx.timeout + Duration::from_nanos(spec.ttl_ns + spec.hold_ns.1) * 2;
    let mut seq = 0;
    while ctx.running() {
        pass.sleep(draw(&mut rng, spec.think_ns)).await;
        let Some(lease) = state.lock().expect("lease").lease else {
            pass.sleep(Duration::from_millis(20)).await;
            continue;
        };
        let key = spec.keys[rng.gen_range(0..spec.keys.len())].clone();
        seq += 1;
        ctx.seen.record(client, Event::AcquireSent { key: key.clone(), lease: lease as u64, seq });
        let request = LockRequest { name: key.clone().into_bytes(), lease };
        // A grant that arrives during a pause is read at the resume
        // (`gate.rs`), where the belief is checked.
        let Ok(Ok(held)) = pass.answered(tokio::time::timeout(wait, locks.lock(ctx.lock_call(client, request)))).await else {
            attempt += 1;
            locks = LockClient::new(ctx.channel(client, attempt).await);
            continue;
        };
        let held = held.into_inner();
        let token = held.header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
        if start_work(ctx, client, &key, lease, token, state) {
            pass.sleep(draw(&mut rng, spec.hold_ns)).await;
            write(ctx, client, &key, token, &mut pass).await;
            end_belief(ctx, client, &key, state);
        }
        if pass.answered(ctx.ask(locks.unlock(ctx.lock_call(client, UnlockRequest { key: held.key })))).await.is_none() {
            attempt += 1;
            locks = LockClient::new(ctx.channel(client, attempt).await);
        }
    }
}

/// The grant arrived: the holder works only if its belief holds now.
fn start_work(ctx: &Shared, client: u64, key: &str, lease: i64, token: u64, state: &State) -> bool {
    let mut state = state.lock().expect("lease");
    let now_ns = ctx.clock(client).mono_ns();
    let Some(until_mono_ns) = state.belief.until_ns().filter(|_| state.belief.holds(now_ns)) else { return false };
    ctx.seen.record(client, Event::BeliefStarted { key: key.into(), lease: lease as u64, token, until_mono_ns });
    ctx.seen.record(client, Event::WorkStarted { key: key.into(), token });
    state.held.0 = Some(key.to_string());
    ctx.set_holder(key, Some(client));
    true
}

/// The holder's write; an accepted one is stamped when its answer arrived
/// (even if a pause held its reading back: `gate.rs`), and its round trip
/// bounds how much earlier the store took it.
async fn write(ctx: &Shared, client: u64, key: &str, token: u64, pass: &mut Pass) {
    let sent_ns = ctx.seen.now_ns();
    if !ctx.aims.deliver(WireKind::StoreWrite, ctx.timeout).await {
        return;
    }
    let (accepted, arrived_ns) = pass
        .answered_at(async {
            let accepted = leasesim_node::tools::load::store_write(ctx.store_of(client), &format!("c{client}"), key, token).await;
            accepted == Some(true) && ctx.aims.deliver(WireKind::StoreReply, ctx.timeout).await
        })
        .await;
    if accepted {
        ctx.seen.answered_at(client, sent_ns, arrived_ns, Event::StoreAccepted { client, key: key.into(), token });
    }
}

/// The holder stops believing before it asks to unlock.
fn end_belief(ctx: &Shared, client: u64, key: &str, state: &State) {
    let mut state = state.lock().expect("lease");
    if state.held.0.as_deref() == Some(key) {
        state.held.0 = None;
        ctx.set_holder(key, None);
        ctx.seen.record(client, Event::BeliefEnded { key: key.into(), why: BeliefEnd::Released });
    }
}
