//! Shared readings of the observation log that several checkers need.

use std::borrow::Cow;
use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::{RevokeCause, ServiceEvent};
use leasesim_core::{LeaseId, NodeId};

use super::RunRecord;
use crate::observe::{Event, Obs, ObsLog};
use crate::vocab::Proc;

/// Server events with their true time and server (lent from memory, or
/// owned when read back from a spilled log).
pub fn server_events(obs: &ObsLog) -> impl Iterator<Item = (u64, NodeId, Cow<'_, ServerEvent>)> + '_ {
    obs.iter().filter_map(|o| match o {
        Cow::Borrowed(Obs { at_ns, proc: Proc::Server(n), event: Event::Server { event } }) => Some((*at_ns, *n, Cow::Borrowed(event))),
        Cow::Owned(Obs { at_ns, proc: Proc::Server(n), event: Event::Server { event } }) => Some((at_ns, n, Cow::Owned(event))),
        _ => None,
    })
}

/// When a lease's end first took effect anywhere (true time), and whether it
/// ended by expiry (not an explicit revoke).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseEnd {
    pub at_ns: u64,
    pub server: NodeId,
    /// The log index of the entry that ended it.
    pub index: u64,
    pub by_expiry: bool,
}

pub fn lease_ends(run: &RunRecord<'_>) -> BTreeMap<LeaseId, LeaseEnd> {
    let mut ends: BTreeMap<LeaseId, LeaseEnd> = BTreeMap::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let event = &*event;
        if let ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { lease, cause, .. } } = event {
            let by_expiry = !matches!(cause, RevokeCause::Revoke);
            ends.entry(*lease).or_insert(LeaseEnd { at_ns, server, index: *index, by_expiry });
        }
    }
    ends
}

/// TTL of each granted lease, from the grant entry.
pub fn lease_ttls(obs: &ObsLog) -> BTreeMap<LeaseId, u64> {
    let mut ttls = BTreeMap::new();
    for (_, _, event) in server_events(obs) {
        let event = &*event;
        if let ServerEvent::Service { event: ServiceEvent::LeaseGranted { lease, ttl_ns, .. }, .. } = event {
            ttls.insert(*lease, *ttl_ns);
        }
    }
    ttls
}
