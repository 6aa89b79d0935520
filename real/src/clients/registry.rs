//! The registry workload for real (the simulator's `workload/registry.rs`):
//! each client registers `/services/cN` attached to its lease and keeps the
//! lease alive every `keepalive`. What the judge's `lease-early-expiry`
//! needs is recorded: every acknowledged grant and renewal with its send
//! time (`LeaseAcked`), and a keep-alive answered "not found"
//! (`LeaseSeenGone`: nobody revoked it, so the cluster ended it by expiry
//! at or before that answer). The client then registers again.

use std::time::Duration;

use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::{LeaseGrantRequest, PutRequest};
use leasesim_scenario::{RegistryWorkload, WireKind};
use tonic::transport::Channel;

use super::{ttl_secs, Shared, RETRY_PAUSE};
use crate::gate::Pass;

pub async fn run(ctx: Shared, client: u64, spec: RegistryWorkload, mut pass: Pass) {
    let mut attempt = client as usize;
    let keepalive = Duration::from_nanos(spec.keepalive_ns);
    let clock = ctx.clock(client).clone();
    while ctx.running() {
        pass.pass().await;
        let chan = ctx.channel(client, attempt).await;
        let granting_mono_ns = clock.mono_ns();
        let Some(lease) = register(&ctx, client, spec.ttl_ns, chan.clone(), &mut pass).await else {
            attempt += 1;
            pass.sleep(RETRY_PAUSE).await;
            continue;
        };
        let mut leases = LeaseClient::new(chan);
        let mut wait = renew_again_in(Some(true), keepalive, clock.mono_ns().saturating_sub(granting_mono_ns));
        while ctx.running() {
            let Some(wait_for) = wait else { break };
            pass.sleep(wait_for).await;
            let sent_mono_ns = clock.mono_ns();
            let renewed = renew(&ctx, client, lease, &mut leases, &mut pass).await;
            if renewed.is_none() {
                attempt += 1;
                leases = LeaseClient::new(ctx.channel(client, attempt).await);
            }
            wait = renew_again_in(renewed, keepalive, clock.mono_ns().saturating_sub(sent_mono_ns));
        }
    }
}

/// How long after a renewal (`renewed`: `renew`'s answer) the next one
/// leaves, `since_send_ns` after this one's send on the client's clock;
/// `None`: the lease is gone, register again now. As the keeper's and the
/// simulator's (whose registry keeps its lease with the lock clients'
/// `LeaseKeeper`): renewals a fixed `keepalive` apart from their sends,
/// and a renewal no member answered sent again at once to the next member
/// (the simulator's session resends it when its timeout fires). The
/// registry slept a whole `keepalive` after a renewal that found no
/// member, so a leader's crash cost its clients a period more than the
/// simulator's (registry-client-crash, reports/sim-vs-real.md).
fn renew_again_in(renewed: Option<bool>, keepalive: Duration, since_send_ns: u64) -> Option<Duration> {
    match renewed {
        Some(true) => Some(keepalive.saturating_sub(Duration::from_nanos(since_send_ns))),
        Some(false) => None,
        None => Some(RETRY_PAUSE),
    }
}

/// A lease, and the key attached to it; the lease's id. Each answer is
/// read once the client is not paused (`gate.rs`).
async fn register(ctx: &Shared, client: u64, ttl_ns: u64, chan: Channel, pass: &mut Pass) -> Option<i64> {
    let (mut leases, mut kv) = (LeaseClient::new(chan.clone()), KvClient::new(chan));
    let sent_ns = ctx.seen.now_ns();
    let (granted, arrived_ns) = pass
        .answered_at(async {
            let granted = ctx.ask(leases.lease_grant(LeaseGrantRequest { ttl: ttl_secs(ttl_ns), id: 0 })).await?;
            ctx.aims.deliver(WireKind::GrantReply, ctx.timeout).await.then_some(granted)
        })
        .await;
    let granted = granted?.into_inner();
    let ttl_ns = Duration::from_secs(granted.ttl.max(0) as u64).as_nanos() as u64;
    let lease = granted.id as u64;
    ctx.seen.answered_at(client, sent_ns, arrived_ns, Event::LeaseAcked { lease, ttl_ns, sent_at_ns: sent_ns, keepalive: false });
    let key = format!("/services/c{client}");
    ctx.seen.record(client, Event::RegisterSent { key: key.clone(), lease });
    let put = PutRequest { key: key.clone().into_bytes(), value: b"up".to_vec(), lease: granted.id, ..Default::default() };
    let answer = pass.answered(ctx.ask(kv.put(put))).await?.into_inner();
    let revision = answer.header.map_or(0, |h| h.revision.max(0) as u64);
    ctx.seen.record(client, Event::Registered { key, lease, revision });
    Some(granted.id)
}

/// One keep-alive: `Some(true)` renewed, `Some(false)` the lease is gone,
/// `None` no answer in time. The answer is read once the client is not
/// paused (`gate.rs`).
async fn renew(ctx: &Shared, client: u64, id: i64, leases: &mut LeaseClient<Channel>, pass: &mut Pass) -> Option<bool> {
    let sent_ns = ctx.seen.now_ns();
    let (answer, arrived_ns) = super::keeper::keep_alive_once(ctx, id, leases, pass).await?;
    let lease = id as u64;
    if answer.ttl > 0 {
        let ttl_ns = Duration::from_secs(answer.ttl as u64).as_nanos() as u64;
        ctx.seen.answered_at(client, sent_ns, arrived_ns, Event::LeaseAcked { lease, ttl_ns, sent_at_ns: sent_ns, keepalive: true });
        Some(true)
    } else {
        ctx.seen.answered_at(client, sent_ns, arrived_ns, Event::LeaseSeenGone { lease });
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_no_member_answered_is_sent_again_at_once_not_a_period_later() {
        let period = Duration::from_millis(667);
        assert_eq!(renew_again_in(None, period, 500_000_000), Some(RETRY_PAUSE), "a timeout: the next member now");
        assert_eq!(renew_again_in(None, period, 1_000_000), Some(RETRY_PAUSE), "a reset: the next member now");
    }

    #[test]
    fn renewals_keep_a_fixed_period_from_their_sends_and_a_lost_lease_registers_again() {
        let period = Duration::from_millis(667);
        assert_eq!(renew_again_in(Some(true), period, 7_000_000), Some(Duration::from_millis(660)));
        assert_eq!(renew_again_in(Some(true), period, 900_000_000), Some(Duration::ZERO), "a slow answer: renew at once");
        assert_eq!(renew_again_in(Some(false), period, 7_000_000), None);
    }
}
