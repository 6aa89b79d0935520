//! The `writer-clock` expiry strategy in the replicated state (the Juju lease
//! design, Juju's lease package): the "clock document" of acknowledged times
//! and the rules for claiming, extending and expiring a lease by it.
//!
//! Why it exists: it is the one strategy that never compares two clocks. A
//! holder writes its expiry in its own wall clock; the log keeps, per client,
//! the latest time that client acknowledged; an expiry applies only when the
//! writer's own time is known to be past the expiry it wrote. Whoever
//! proposes an expiry may add to the writer's last acknowledged time only a
//! duration it measured itself ("1s == 1s" is the one assumption), never a
//! reading of another clock. Two deviations from Juju, both deliberate: an
//! acknowledgement that goes back in time is kept at the maximum instead of
//! failing the request (a client whose wall clock stepped back could never
//! renew again), and a claim or extension that carries no clock reading (a
//! plain `LeaseGrant` / `LeaseKeepAlive`, as etcd clients send) leaves the
//! lease without a writer: the leader's measured TTL from that entry alone
//! decides its expiry (`MeasuredExpire`).
//!
//! Why not write such a lease relative to the client's last acknowledged
//! time: that time may be long past (the client restarted, or renewed
//! another lease long ago), so when the client next acknowledges a fresh
//! reading the lease appears to have run out in the writer's clock and the
//! leader ends it at once — up to the whole TTL early. The simulator found
//! this (`chaos-nemesis` with `writer-clock`: a client that restarts and
//! re-grants with a plain grant, then renews another lease with a reading).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::service::effects::{Batch, Effect};
use crate::service::RevokeCause;
use crate::service::{Response, ServiceError, StateMachine};
use crate::types::{ClientId, LeaseId, LogIndex};

/// The Juju lease design's clock document: the latest time each client
/// acknowledged, on that client's own wall clock. Never goes back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WriterClocks {
    acked_ns: BTreeMap<ClientId, u64>,
}

impl WriterClocks {
    /// Records `client`'s reading `now_ns`; returns the acknowledged time
    /// afterwards (the larger of the old and the new).
    pub fn ack(&mut self, client: ClientId, now_ns: u64) -> u64 {
        let acked = self.acked_ns.entry(client).or_insert(now_ns);
        let before = *acked;
        *acked = (*acked).max(now_ns);
        assert!(*acked >= before && *acked >= now_ns, "the clock document never goes back");
        *acked
    }

    /// The latest time `client` acknowledged (0: never).
    pub fn acked_ns(&self, client: ClientId) -> u64 {
        self.acked_ns.get(&client).copied().unwrap_or(0)
    }
}

/// Whether an expiry may apply: the writer's time, as known from its own
/// acknowledgement or the proposer's inference, is at or past `expiry_ns`.
pub fn expiry_applies(expiry_ns: u64, acked_ns: u64, inferred_ns: u64) -> bool {
    acked_ns.max(inferred_ns) >= expiry_ns
}

impl StateMachine {
    /// How long `lease` has left on its writer's clock, counted from the
    /// writer's latest acknowledged time (`None`: not a writer-clock lease).
    /// The leader arms its deadline this far from when it learned of that
    /// acknowledgement: a duration on the writer's clock carried over to the
    /// leader's, never a comparison of the two readings.
    pub fn writer_remaining_ns(&self, lease: LeaseId) -> Option<u64> {
        let l = self.leases.get(lease)?;
        let (writer, expiry) = (l.writer?, l.expiry_writer_ns?);
        Some(expiry.saturating_sub(self.writer_clocks.acked_ns(writer)))
    }

    /// Leases written by `client`, in id order.
    pub fn leases_written_by(&self, client: ClientId) -> Vec<LeaseId> {
        self.leases.iter().filter(|l| l.writer == Some(client)).map(|l| l.id).collect()
    }

    pub fn writer_clocks(&self) -> &WriterClocks {
        &self.writer_clocks
    }

    /// The Juju lease design's ClaimLease: grant, then write the expiry in the
    /// claimant's clock. "Guarantees ownership until at least the requested
    /// duration after the start of the call": `writer_wall_ns` is read at the
    /// first send, so the expiry counts from then.
    pub(crate) fn claim_lease(
        &mut self,
        client: ClientId,
        ttl_ns: u64,
        requested: Option<LeaseId>,
        writer_wall_ns: Option<u64>,
        batch: &mut Batch,
    ) -> Response {
        let body = self.grant_lease(ttl_ns, requested, 0, batch);
        let Response::LeaseGranted { lease, .. } = body else { return body };
        // No reading: a lease without a writer, measured by the leader.
        let Some(writer_wall_ns) = writer_wall_ns else { return body };
        let base_ns = self.writer_clocks.ack(client, writer_wall_ns);
        if let Some(l) = self.leases.get_mut(lease) {
            l.writer = Some(client);
            l.expiry_writer_ns = Some(base_ns.saturating_add(ttl_ns));
        }
        batch.push(Effect::WriterWrote { client });
        body
    }

    /// The Juju lease design's ExtendLease: the expiry moves to the writer's
    /// time + TTL, never back ("this cannot cause a lease to be shortened").
    /// The holder becomes the writer: only durations on its clock count from
    /// here.
    pub(crate) fn extend_lease(&mut self, client: ClientId, lease: LeaseId, writer_wall_ns: Option<u64>, batch: &mut Batch) -> Response {
        let Some(previous_writer) = self.leases.get(lease).map(|l| l.writer) else {
            return Response::Error(ServiceError::LeaseNotFound { lease });
        };
        let Some(writer_wall_ns) = writer_wall_ns else {
            // A plain keep-alive: the renewal is in no writer's clock, so the
            // lease has no writer from here; the leader measures its TTL.
            let l = self.leases.get_mut(lease).expect("checked above");
            l.writer = None;
            l.expiry_writer_ns = None;
            l.renewed_index = batch.index;
            let ttl_ns = l.ttl_ns;
            batch.push(Effect::LeaseRenewed { lease });
            return Response::KeepAlive { lease, ttl_ns };
        };
        let base_ns = self.writer_clocks.ack(client, writer_wall_ns);
        let l = self.leases.get_mut(lease).expect("checked above");
        let extended_ns = base_ns.saturating_add(l.ttl_ns);
        let same_writer_before = (previous_writer == Some(client)).then_some(l.expiry_writer_ns).flatten();
        // A different writer's expiry is in another clock: comparing the two
        // would be exactly the comparison this strategy avoids, so the new
        // writer's expiry replaces it. It cannot end earlier in true time
        // than the old one could have: the old writer's time was not known
        // past its expiry, or an expiry would have removed the lease.
        l.expiry_writer_ns = match (previous_writer, l.expiry_writer_ns) {
            (Some(w), Some(old)) if w == client => Some(old.max(extended_ns)),
            _ => Some(extended_ns),
        };
        l.writer = Some(client);
        // The Juju lease design: an extension "cannot cause a lease to be
        // shortened" in its writer's clock.
        assert!(same_writer_before.is_none_or(|old| l.expiry_writer_ns >= Some(old)), "an extension shortened a lease");
        let ttl_ns = l.ttl_ns;
        batch.push(Effect::WriterWrote { client });
        Response::KeepAlive { lease, ttl_ns }
    }

    /// The Juju lease design's ExpireLease, whoever proposed it: applies only
    /// if the lease still carries the expiry the proposer saw and its writer's
    /// time is known past it.
    pub(crate) fn writer_expire(&mut self, lease: LeaseId, expiry_ns: u64, inferred_ns: u64, batch: &mut Batch) {
        let Some(l) = self.leases.get(lease) else { return };
        let (Some(writer), Some(expiry)) = (l.writer, l.expiry_writer_ns) else { return };
        if expiry != expiry_ns {
            // An extension raced the proposal: the proposer's view is stale.
            return;
        }
        if expiry_applies(expiry, self.writer_clocks.acked_ns(writer), inferred_ns) {
            self.end_lease(lease, RevokeCause::Expire, batch);
        }
    }

    /// Expiry of a lease without a writer (see `Command::MeasuredExpire`):
    /// applies only if nothing renewed it after `renewed_index` and no
    /// reading made it a writer's lease meanwhile.
    pub(crate) fn measured_expire(&mut self, lease: LeaseId, renewed_index: LogIndex, batch: &mut Batch) {
        let Some(l) = self.leases.get(lease) else { return };
        if l.expiry_writer_ns.is_none() && l.renewed_index == renewed_index {
            self.end_lease(lease, RevokeCause::Expire, batch);
        }
    }
}
