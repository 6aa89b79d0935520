//! Shared readings of the observation log that several checkers need.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

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

/// Every lease's end, read from the log once however many checkers ask
/// (five do: each reading was a walk of the whole log).
pub fn lease_ends<'a>(run: &RunRecord<'a>) -> &'a BTreeMap<LeaseId, LeaseEnd> {
    let obs: &'a ObsLog = run.obs;
    obs.memo().lease_ends.get_or_init(|| read_lease_ends(obs))
}

fn read_lease_ends(obs: &ObsLog) -> BTreeMap<LeaseId, LeaseEnd> {
    let mut ends: BTreeMap<LeaseId, LeaseEnd> = BTreeMap::new();
    for (at_ns, server, event) in server_events(obs) {
        let event = &*event;
        if let ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { lease, cause, .. } } = event {
            let by_expiry = !matches!(cause, RevokeCause::Revoke);
            ends.entry(*lease).or_insert(LeaseEnd { at_ns, server, index: *index, by_expiry });
        }
    }
    ends
}

/// Readings of a log that several checkers take, kept with the log so that
/// each is computed once: the checkers' signature (`Check`) takes only the
/// `RunRecord`, which real runs and leasesim-node build field by field, so
/// the log they all read is where a shared reading can live. Forgotten
/// whenever the log changes.
#[derive(Default)]
pub struct Memo {
    lease_ends: OnceLock<BTreeMap<LeaseId, LeaseEnd>>,
}

impl Memo {
    /// The log changed: every reading is stale.
    pub(crate) fn forget(&mut self) {
        self.lease_ends.take();
    }
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

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::{RevokeCause, ServiceEvent};

    use super::lease_ends;
    use crate::checkers::testing::{Fixture, S};

    fn revoked(lease: u64, cause: RevokeCause) -> ServerEvent {
        ServerEvent::Service { index: lease, event: ServiceEvent::LeaseRevoked { lease, cause, deleted_keys: vec![] } }
    }

    /// The reading is shared, so a stale one would hide an end recorded
    /// after the first checker asked: a change of the log must drop it.
    #[test]
    fn lease_ends_are_read_again_after_the_log_changes() {
        let mut run = Fixture::new();
        run.server(S, 1, revoked(7, RevokeCause::Expire));
        let first = lease_ends(&run.record()).clone();
        assert_eq!(first.keys().copied().collect::<Vec<_>>(), [7]);
        assert!(std::ptr::eq(lease_ends(&run.record()), lease_ends(&run.record())), "read once, then lent");
        run.server(2 * S, 2, revoked(8, RevokeCause::Revoke));
        run.server(3 * S, 3, revoked(7, RevokeCause::Revoke));
        let ends = lease_ends(&run.record());
        assert_eq!(ends.keys().copied().collect::<Vec<_>>(), [7, 8]);
        assert_eq!((ends[&7].at_ns, ends[&7].by_expiry), (S, true), "the first end stands");
        assert_eq!((ends[&8].server, ends[&8].by_expiry), (2, false));
    }
}
