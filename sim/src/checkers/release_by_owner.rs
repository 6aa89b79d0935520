//! `release-by-owner`: only the holder (its token) releases a lock (seed 001;
//! etcd's lock API checks the owner's key before deleting it).

use std::collections::BTreeSet;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ReleaseCause;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    for (at_ns, _, event) in server_events(run.obs) {
        let ServerEvent::LockReleased { key, client, index, cause: ReleaseCause::Release { by }, .. } = event else {
            continue;
        };
        if by != client && seen.insert(*index) {
            violations.push(run.violation(
                "release-by-owner",
                at_ns,
                format!("c{by} released {key}, held by c{client}, at index {index}"),
            ));
        }
    }
    violations
}
