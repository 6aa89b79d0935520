//! The `registry` workload: service registration with a lease, as the
//! consistent-core lease design's clients do. Each worker grants a lease,
//! puts `registry/{worker}` attached to it, keeps it alive a few rounds
//! (every TTL/3), then "dies": stops its keep-alives and watches the key
//! until the cluster removes it. Then it registers again.
//!
//! What it checks is the lease's promise to its holder: a lease renewed by
//! a keep-alive sent at instant `s` lives at least until `s + TTL` (the
//! leader renews on receipt, which is later). So a read that returned
//! "absent", or a keep-alive answered "lease not found", at an instant
//! before the last acknowledged renewal's send time plus the TTL proves the
//! lease ended early. The judgment uses the read's return time, so a slow
//! machine can only hide a violation, never invent one. The time from the
//! last renewal to the removal is a figure (it is what `reports/` calibrates
//! the simulator's failover prediction against), not a pass/fail.

use std::time::{Duration, Instant};

use crate::pb::etcdserverpb::kv_client::KvClient;
use crate::pb::etcdserverpb::lease_client::LeaseClient;
use crate::pb::etcdserverpb::{LeaseGrantRequest, LeaseKeepAliveRequest, PutRequest, RangeRequest};

use super::{channel, Shared};

/// One registration, from grant to the removal the worker saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Episode {
    pub worker: u64,
    pub lease: i64,
    /// Send time of the last renewal the cluster acknowledged (the grant's
    /// own send time when no keep-alive was acknowledged), ns since start.
    pub renewed_send_ns: u64,
    /// Return time of the first read that found the key gone, or of the
    /// keep-alive that found the lease gone; `None` if never seen.
    pub ended_seen_ns: Option<u64>,
    /// The TTL the lease was granted with.
    pub ttl_ns: u64,
}

impl Episode {
    /// The lease's promise: alive until the last renewal's send + TTL.
    pub fn promised_until_ns(&self) -> u64 {
        self.renewed_send_ns + self.ttl_ns
    }

    /// Whether the lease was seen gone before its promise.
    pub fn ended_early(&self) -> bool {
        self.ended_seen_ns.is_some_and(|seen| seen < self.promised_until_ns())
    }
}

/// How often a dead holder's key is read while it waits for the removal.
const POLL: Duration = Duration::from_millis(50);
/// How long past its promise a key may outlive its dead holder before the
/// worker gives up watching (a figure would be missing, not a violation).
const WATCH_PAST_PROMISE: Duration = Duration::from_secs(60);

pub(super) async fn registry_worker(worker: u64, endpoints: &[String], ttl: Duration, shared: &Shared) {
    let mut attempt = worker as usize;
    let mut round = worker;
    let ttl_s = ttl.as_secs().max(1) as i64;
    while Instant::now() < shared.until {
        round += 1;
        let chan = channel(endpoints, attempt).await;
        let (mut leases, mut kv) = (LeaseClient::new(chan.clone()), KvClient::new(chan));
        // 1. A lease, and the key attached to it.
        let grant_sent = Instant::now();
        let lease = match leases.lease_grant(LeaseGrantRequest { ttl: ttl_s, id: 0 }).await {
            Ok(granted) => granted.into_inner(),
            Err(_) => {
                shared.failed();
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        shared.done(grant_sent);
        let ttl_ns = Duration::from_secs(lease.ttl.max(0) as u64).as_nanos() as u64;
        let mut episode = Episode { worker, lease: lease.id, renewed_send_ns: shared.since_ns(grant_sent), ended_seen_ns: None, ttl_ns };
        let key = format!("registry/{worker}");
        let put =
            PutRequest { key: key.clone().into_bytes(), value: round.to_string().into_bytes(), lease: lease.id, ..Default::default() };
        let put_sent = Instant::now();
        if kv.put(put).await.is_err() {
            // Whether the key is attached is unknown: a fresh start.
            shared.failed();
            attempt += 1;
            continue;
        }
        shared.done(put_sent);
        // 2. Keep it alive a few rounds (1 to 4, varying per worker).
        for _ in 0..1 + round % 4 {
            tokio::time::sleep(ttl / 3).await;
            let sent = Instant::now();
            let request = LeaseKeepAliveRequest { id: lease.id };
            let answer = async { leases.lease_keep_alive(tokio_stream::iter([request])).await?.into_inner().message().await }.await;
            match answer {
                Ok(Some(renewed)) if renewed.ttl > 0 => {
                    shared.done(sent);
                    episode.renewed_send_ns = shared.since_ns(sent);
                }
                Ok(_) => {
                    // Gone: judged below as a removal seen now.
                    episode.ended_seen_ns = Some(shared.since_ns(Instant::now()));
                    break;
                }
                Err(_) => {
                    shared.failed();
                    attempt += 1;
                    leases = LeaseClient::new(channel(endpoints, attempt).await);
                }
            }
        }
        // 3. The holder "dies": watch the key until it is removed.
        if episode.ended_seen_ns.is_none() {
            episode.ended_seen_ns = watch_removal(&mut kv, &key, endpoints, &mut attempt, shared, &episode).await;
        }
        shared.registry.lock().expect("registry").push(episode);
    }
}

/// Reads `key` until a read finds it gone; that read's return time.
async fn watch_removal(
    kv: &mut KvClient<tonic::transport::Channel>,
    key: &str,
    endpoints: &[String],
    attempt: &mut usize,
    shared: &Shared,
    episode: &Episode,
) -> Option<u64> {
    let give_up_ns = episode.promised_until_ns() + WATCH_PAST_PROMISE.as_nanos() as u64;
    loop {
        let read = kv.range(RangeRequest { key: key.as_bytes().to_vec(), ..Default::default() }).await;
        let returned_ns = shared.since_ns(Instant::now());
        match read {
            // The next registration of this worker uses the same key with a
            // new lease, so only this lease's attachment counts.
            Ok(r) if r.get_ref().kvs.iter().all(|kv| kv.lease != episode.lease) => return Some(returned_ns),
            Ok(_) => {}
            Err(_) => {
                *attempt += 1;
                *kv = KvClient::new(channel(endpoints, *attempt).await);
            }
        }
        if returned_ns > give_up_ns {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_seen_gone_before_its_last_renewal_plus_ttl_ended_early() {
        let ttl_ns = 5_000_000_000;
        let episode = |seen| Episode { worker: 1, lease: 7, renewed_send_ns: 10_000_000_000, ended_seen_ns: seen, ttl_ns };
        assert!(episode(Some(14_999_999_999)).ended_early());
        assert!(!episode(Some(15_000_000_000)).ended_early());
        assert!(!episode(Some(23_000_000_000)).ended_early());
        assert!(!episode(None).ended_early(), "never seen gone is a missing figure, not a violation");
    }
}
