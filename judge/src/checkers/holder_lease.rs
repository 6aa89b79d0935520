//! `holder-lease`: a lock is never granted under a lease that has already
//! ended (etcd #11456: a waiter whose lease expired while it queued was
//! handed the lock, so a dead session held it). Core's service harness had
//! its own copy of this rule; the judge took it over.
//!
//! Under `leader-monotonic` every server applies one log to one state, so a
//! lease ends at one log index everywhere: a grant at that index or later
//! under that lease is a violation, whichever server reports it and in
//! whatever true-time order the reports arrive. Under `leader-stamped-wall`
//! servers' states diverge by design (each judges expiry by its own wall
//! clock when it applies), so each server is held to its own view: a grant
//! it applies under a lease it has itself ended since it last started (a
//! restart or an installed snapshot replaces its tables without events).

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_core::{ExpiryStrategy, LeaseId, NodeId};

use super::facts::lease_ends;
use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let ends = lease_ends(run);
    let one_state = run.expiry != ExpiryStrategy::LeaderStampedWall;
    // Per server: the leases it ended in its present life.
    let mut ended: BTreeMap<NodeId, BTreeSet<LeaseId>> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs.iter() {
        let Proc::Server(server) = o.proc else { continue };
        match &o.event {
            Event::Restarted | Event::Server { event: ServerEvent::SnapshotInstalled { .. } } => {
                ended.remove(&server);
            }
            Event::Server { event: ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease, .. }, .. } } => {
                ended.entry(server).or_default().insert(*lease);
            }
            Event::Server { event: ServerEvent::Service { index, event: ServiceEvent::LockGranted { key, lease, .. } } } => {
                let dead = match one_state {
                    true => ends.get(lease).filter(|end| end.index <= *index).map(|end| format!("ended at index {}", end.index)),
                    false => ended.get(&server).is_some_and(|l| l.contains(lease)).then(|| "which it had ended".to_string()),
                };
                if let Some(why) = dead {
                    let detail = format!("s{server} granted {key} at index {index} under lease {lease}, {why}");
                    violations.push(run.violation("holder-lease", o.at_ns, detail));
                }
            }
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::{RevokeCause, ServiceEvent};
    use leasesim_core::ExpiryStrategy;

    use crate::checkers::testing::{Fixture, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    fn revoke(index: u64, lease: u64) -> ServerEvent {
        ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { lease, cause: RevokeCause::Revoke, deleted_keys: vec![] } }
    }

    fn grant(index: u64, lease: u64) -> ServerEvent {
        ServerEvent::Service { index, event: ServiceEvent::LockGranted { key: "a".into(), client: 2, seq: 1, lease, token: index } }
    }

    #[test]
    fn a_grant_under_a_lease_ended_earlier_in_the_log_fires() {
        let mut run = Fixture::new();
        run.everywhere(S, grant(5, 7));
        run.everywhere(2 * S, revoke(8, 7));
        assert!(super::check(&run.record()).is_empty(), "granted before its end");
        // Reported before the revocation in true time, but after it in the log.
        run.server(S / 2, 3, grant(9, 7));
        let fired = super::check(&run.record());
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert!(fired[0].detail.contains("s3 granted a at index 9 under lease 7, ended at index 8"), "{}", fired[0].detail);
    }

    #[test]
    fn under_stamped_wall_each_server_is_held_to_its_own_life() {
        let mut run = Fixture::new();
        run.expiry = ExpiryStrategy::LeaderStampedWall;
        run.server(S, 1, revoke(8, 7));
        run.server(2 * S, 2, grant(9, 7));
        assert!(super::check(&run.record()).is_empty(), "s2 never ended lease 7");
        run.push(3 * S, Proc::Server(1), Event::Restarted);
        run.server(4 * S, 1, grant(9, 7));
        assert!(super::check(&run.record()).is_empty(), "s1 restarted since it ended lease 7");
        run.server(5 * S, 1, revoke(10, 7));
        run.server(6 * S, 1, grant(11, 7));
        assert_eq!(super::check(&run.record()).len(), 1);
    }
}
