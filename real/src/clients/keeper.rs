//! A client's lease, kept alive in its own task (as the simulator's
//! `LeaseKeeper`): granted, renewed every `keepalive`, and the client's
//! belief in it ([`Belief`], core's own rule) extended by each
//! acknowledged renewal and ended by a refused one. The lock client and
//! the singleton instance both keep their lease here; what each holds on
//! it (a key, a role) is its [`Holding`], told of every extension and of
//! the lease's end. The belief and the renewal period are on the client's
//! own clock (`clock.rs`); what is recorded for the judge, in true time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::client::Belief;
use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::{LeaseGrantRequest, LeaseKeepAliveRequest, LeaseKeepAliveResponse};
use leasesim_scenario::WireKind;

use super::{ttl_secs, Ctx, Shared, RETRY_PAUSE};
use crate::gate::Pass;

/// What a client holds on its lease.
pub trait Holding: Send + 'static {
    /// An acknowledged renewal extended the belief to `until_mono_ns` (the
    /// client's own clock).
    fn extended(&self, ctx: &Ctx, client: u64, until_mono_ns: u64);
    /// A renewal was refused: the lease is gone, and what was held on it.
    fn refused(&mut self, ctx: &Ctx, client: u64);
}

/// What the keeper and the worker of one client share.
pub struct LeaseState<H> {
    pub lease: Option<i64>,
    pub belief: Belief,
    pub held: H,
}

pub type State<H> = Arc<Mutex<LeaseState<H>>>;

/// When a request left: in true time (for the judge) and on the client's
/// monotonic clock (for its belief).
#[derive(Clone, Copy)]
struct Sent {
    true_ns: u64,
    mono_ns: u64,
}

/// Keeps `client`'s lease alive until the run ends.
pub async fn keep<H: Holding>(ctx: Shared, client: u64, ttl_ns: u64, keepalive: Duration, state: State<H>, mut pass: Pass) {
    let mut attempt = client as usize;
    let mut leases = LeaseClient::new(ctx.channel(client, attempt).await);
    let clock = ctx.clock(client).clone();
    while ctx.running() {
        pass.pass().await;
        let lease = state.lock().expect("lease").lease;
        let sent = Sent { true_ns: ctx.seen.now_ns(), mono_ns: clock.mono_ns() };
        let ok = match lease {
            None => grant(&ctx, client, ttl_ns, &mut leases, &state, sent, &mut pass).await,
            Some(id) => renew(&ctx, client, id, &mut leases, &state, sent, &mut pass).await,
        };
        if ok {
            let live = state.lock().expect("lease").lease.is_some();
            if let Some(wait) = next_request_in(live, keepalive, clock.mono_ns().saturating_sub(sent.mono_ns)) {
                pass.sleep(wait).await;
            }
        } else {
            attempt += 1;
            leases = LeaseClient::new(ctx.channel(client, attempt).await);
            pass.sleep(RETRY_PAUSE).await;
        }
    }
}

/// How long to wait before the next request, `since_send_ns` after this
/// one's send, `live` if the client holds a lease after its answer.
/// As the simulator's keeper (`sim/src/workload/keeper.rs`): the next
/// renewal leaves `keepalive` after this one's send, not after its answer
/// (a period of keepalive + round trip drifted the renewals' phase, and so
/// how long a holder paused at a fixed instant outlives itself), and a
/// refused renewal is followed by a grant at once (`None`: no wait). A
/// whole period without a lease after each refusal made a slow-clock task
/// worker claim half as many tasks as the simulator's, and task-once fire
/// in 4 of 20 real runs of task-completion-unfenced against 13 of 20
/// simulated (reports/sim-vs-real.md).
fn next_request_in(live: bool, keepalive: Duration, since_send_ns: u64) -> Option<Duration> {
    live.then(|| keepalive.saturating_sub(Duration::from_nanos(since_send_ns)))
}

async fn grant<H: Holding>(
    ctx: &Shared,
    client: u64,
    ttl_ns: u64,
    leases: &mut LeaseClient<tonic::transport::Channel>,
    state: &State<H>,
    sent: Sent,
    pass: &mut Pass,
) -> bool {
    // Read once the client is not paused (`gate.rs`).
    let (granted, arrived_ns) = pass
        .answered_at(async {
            let granted = ctx.ask(leases.lease_grant(LeaseGrantRequest { ttl: ttl_secs(ttl_ns), id: 0 })).await?;
            ctx.aims.deliver(WireKind::GrantReply, ctx.timeout).await.then_some(granted)
        })
        .await;
    let Some(granted) = granted else { return false };
    let granted = granted.into_inner();
    let ttl_ns = Duration::from_secs(granted.ttl.max(0) as u64).as_nanos() as u64;
    let lease = granted.id as u64;
    ctx.seen.answered_at(client, sent.true_ns, arrived_ns, Event::LeaseAcked { lease, ttl_ns, sent_at_ns: sent.true_ns, keepalive: false });
    let mut state = state.lock().expect("lease");
    state.belief.acknowledge(sent.mono_ns, ctx.clock(client).mono_ns(), ttl_ns);
    state.lease = Some(granted.id);
    true
}

/// One keep-alive request and its answer, through the faults aimed at both
/// (`WireKind::KeepAlive` / `KeepAliveReply`); the answer is read once the
/// client is not paused (`gate.rs`), and comes with the true time it
/// arrived. `None`: no answer in time. The keeper and the registry renew
/// through it.
pub(super) async fn keep_alive_once(
    ctx: &Shared,
    id: i64,
    leases: &mut LeaseClient<tonic::transport::Channel>,
    pass: &mut Pass,
) -> Option<(LeaseKeepAliveResponse, u64)> {
    if !ctx.aims.deliver(WireKind::KeepAlive, ctx.timeout).await {
        return None;
    }
    let (answer, arrived_ns) = pass
        .answered_at(async {
            let answer = ctx
                .ask(async {
                    let mut answers = leases.lease_keep_alive(tokio_stream::iter([LeaseKeepAliveRequest { id }])).await?.into_inner();
                    answers.message().await
                })
                .await??;
            ctx.aims.deliver(WireKind::KeepAliveReply, ctx.timeout).await.then_some(answer)
        })
        .await;
    Some((answer?, arrived_ns))
}

async fn renew<H: Holding>(
    ctx: &Shared,
    client: u64,
    id: i64,
    leases: &mut LeaseClient<tonic::transport::Channel>,
    state: &State<H>,
    sent: Sent,
    pass: &mut Pass,
) -> bool {
    // A renewal answered during a pause is read at the resume, where the
    // belief it extends is checked, as in the simulator; the answer itself
    // is stamped when it arrived (`Recorder::answered_at`).
    let Some((answer, arrived_ns)) = keep_alive_once(ctx, id, leases, pass).await else { return false };
    let lease = id as u64;
    if answer.ttl > 0 {
        let ttl_ns = Duration::from_secs(answer.ttl as u64).as_nanos() as u64;
        ctx.seen.answered_at(
            client,
            sent.true_ns,
            arrived_ns,
            Event::LeaseAcked { lease, ttl_ns, sent_at_ns: sent.true_ns, keepalive: true },
        );
        let mut state = state.lock().expect("lease");
        // A renewal of a lease the client already dropped extends nothing.
        if state.lease == Some(id) {
            let until_mono_ns = state.belief.acknowledge(sent.mono_ns, ctx.clock(client).mono_ns(), ttl_ns);
            state.held.extended(ctx, client, until_mono_ns);
        }
    } else {
        ctx.seen.answered_at(client, sent.true_ns, arrived_ns, Event::KeepAliveRefused { lease });
        let mut state = state.lock().expect("lease");
        // Only the lease the client holds now: one it dropped is gone
        // already. A fresh one next round, and no belief.
        if state.lease == Some(id) {
            state.held.refused(ctx, client);
            state.belief.end();
            state.lease = None;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_keep_a_fixed_period_from_their_sends() {
        let period = Duration::from_millis(333);
        assert_eq!(next_request_in(true, period, 8_000_000), Some(Duration::from_millis(325)));
        assert_eq!(next_request_in(true, period, 0), Some(period));
        assert_eq!(next_request_in(true, period, 400_000_000), Some(Duration::ZERO), "a slow answer: renew at once");
    }

    #[test]
    fn a_refused_renewal_is_followed_by_a_grant_at_once() {
        let period = Duration::from_millis(333);
        assert_eq!(next_request_in(false, period, 8_000_000), None, "no lease: grant now, as the simulator's keeper does");
    }
}
