//! `release-by-owner`: only the holder (its token) releases a lock (the Raft lock-service design;
//! etcd's lock API checks the owner's key before deleting it).

use std::collections::BTreeSet;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::{ReleaseCause, ServiceEvent};

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    for (at_ns, _, event) in server_events(run.obs) {
        let event = &*event;
        let ServerEvent::Service { index, event: ServiceEvent::LockReleased { key, client, cause: ReleaseCause::Release { by }, .. } } =
            event
        else {
            continue;
        };
        if by != client && seen.insert(*index) {
            violations.push(run.violation("release-by-owner", at_ns, format!("c{by} released {key}, held by c{client}, at index {index}")));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::{ReleaseCause, ServiceEvent};

    use crate::checkers::testing::{Fixture, S};

    fn released(index: u64, holder: u64, by: u64) -> ServerEvent {
        ServerEvent::Service {
            index,
            event: ServiceEvent::LockReleased { key: "orders".into(), client: holder, token: 3, cause: ReleaseCause::Release { by } },
        }
    }

    #[test]
    fn a_release_by_another_client_fires_once() {
        let mut run = Fixture::new();
        run.everywhere(S, released(4, 1, 1));
        assert!(run.fired().is_empty());
        run.everywhere(2 * S, released(7, 1, 2));
        assert_eq!(run.fired(), vec!["release-by-owner"], "once, although every server applied it");
    }
}
