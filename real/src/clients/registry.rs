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

use super::{ttl_secs, Shared};
use crate::gate::Pass;

pub async fn run(ctx: Shared, client: u64, spec: RegistryWorkload, mut pass: Pass) {
    let mut attempt = client as usize;
    let keepalive = Duration::from_nanos(spec.keepalive_ns);
    while ctx.running() {
        pass.pass().await;
        let chan = ctx.channel(client, attempt).await;
        let Some(lease) = register(&ctx, client, spec.ttl_ns, chan.clone(), &mut pass).await else {
            attempt += 1;
            pass.sleep(Duration::from_millis(50)).await;
            continue;
        };
        let mut leases = LeaseClient::new(chan);
        while ctx.running() {
            pass.sleep(keepalive).await;
            match renew(&ctx, client, lease, &mut leases, &mut pass).await {
                Some(true) => {}
                Some(false) => break,
                None => {
                    attempt += 1;
                    leases = LeaseClient::new(ctx.channel(client, attempt).await);
                }
            }
        }
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
