//! `replica-divergence`: servers that applied the same entries hold the same
//! service state at the same index — keys, leases, locks and their queues,
//! sessions, writer clocks. Raft's state machine safety (§5.4.3) promises
//! the same *entries*; a service is only replicated if applying them is
//! deterministic, which a state machine that consults its host (a wall
//! clock under `leader-stamped-wall`, a process-local counter) can break
//! while every Raft invariant holds. This is FoundationDB's consistency
//! check and TigerBeetle's state checker, done continuously.
//!
//! Each `Applied` observation carries the state machine's chained digest
//! (`StateMachine::applied_digest`): it folds in every entry's effects and,
//! every 32 indices, the whole state, so once two replicas differ the
//! chain keeps them apart and any later index shows it. The checker
//! reports the application at which a server moved apart from the first
//! server to apply that index, once per episode (a server that agrees again,
//! after a snapshot install, may diverge again), and names what the two did
//! differently at that index when their observations show it.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_core::{LogIndex, NodeId};

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // index → (term, fingerprint, state, first server to apply it)
    let mut first: BTreeMap<LogIndex, (u64, u64, u64, NodeId)> = BTreeMap::new();
    let mut apart: BTreeSet<NodeId> = BTreeSet::new();
    let mut violations = Vec::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let event = &*event;
        let ServerEvent::Applied { index, term, fingerprint, state } = event else { continue };
        match first.get(index) {
            None => {
                first.insert(*index, (*term, *fingerprint, *state, server));
                apart.remove(&server);
            }
            // Different entries at one index: state-machine-safety's case.
            Some((t, f, _, _)) if (t, f) != (term, fingerprint) => {}
            Some((_, _, s, _)) if s == state => {
                apart.remove(&server);
            }
            Some((_, _, _, other)) => {
                if apart.insert(server) {
                    let detail = format!(
                        "s{server} and s{other} applied the same entry at index {index} (term {term}) into different \
                         states: {}",
                        difference(run, *index, server, *other)
                    );
                    violations.push(run.violation("replica-divergence", at_ns, detail));
                }
            }
        }
    }
    violations
}

/// What `a` and `b` observably did at `index`, where it differs.
fn difference(run: &RunRecord<'_>, index: LogIndex, a: NodeId, b: NodeId) -> String {
    let at = |n: NodeId| -> Vec<String> {
        server_events(run.obs).filter(|(_, s, e)| *s == n && index_of(e) == Some(index)).map(|(_, _, e)| describe(&e)).collect()
    };
    let (mine, theirs) = (at(a), at(b));
    if mine == theirs {
        return "no effect at this index differs, so they differed before it (a change made outside the log, or one \
                only the whole-state digest taken every 32 indices sees)"
            .to_string();
    }
    let shown = |v: &[String]| if v.is_empty() { "nothing".to_string() } else { v.join(", ") };
    format!("at that index s{a} did {}; s{b} did {}", shown(&mine), shown(&theirs))
}

fn index_of(event: &ServerEvent) -> Option<LogIndex> {
    match event {
        ServerEvent::Service { index, event: ServiceEvent::LeaseGranted { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LeaseRefreshed { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LockQueued { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LockGranted { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LockReleased { .. } }
        | ServerEvent::Service { index, event: ServiceEvent::LockWaiterDropped { .. } } => Some(*index),
        _ => None,
    }
}

fn describe(event: &ServerEvent) -> String {
    match event {
        ServerEvent::Service { event: ServiceEvent::LeaseGranted { lease, .. }, .. } => format!("grant lease {lease}"),
        ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease, cause, .. }, .. } => format!("end lease {lease} ({cause:?})"),
        ServerEvent::Service { event: ServiceEvent::LeaseRefreshed { lease, expiry_wall_ns, .. }, .. } => {
            format!("refresh lease {lease} to {expiry_wall_ns}")
        }
        ServerEvent::Service { event: ServiceEvent::LockQueued { key, client, .. }, .. } => format!("queue c{client} on {key}"),
        ServerEvent::Service { event: ServiceEvent::LockGranted { key, client, token, .. }, .. } => {
            format!("grant {key} to c{client} (token {token})")
        }
        ServerEvent::Service { event: ServiceEvent::LockReleased { key, client, cause, .. }, .. } => {
            format!("release {key} of c{client} ({cause:?})")
        }
        ServerEvent::Service { event: ServiceEvent::LockWaiterDropped { key, client, .. }, .. } => {
            format!("drop waiter c{client} of {key}")
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::{RevokeCause, ServiceEvent};

    use crate::checkers::testing::{Fixture, MS, S};

    fn applied(index: u64, state: u64) -> ServerEvent {
        ServerEvent::Applied { index, term: 1, fingerprint: 100 + index, state }
    }

    #[test]
    fn replicas_in_the_same_state_are_silent() {
        let mut run = Fixture::new();
        for i in 1..=5 {
            run.everywhere(i * S, applied(i, 1000 + i));
        }
        assert!(super::check(&run.record()).is_empty());
    }

    #[test]
    fn a_replica_that_moves_apart_fires_once_per_episode() {
        let mut run = Fixture::new();
        run.everywhere(S, applied(1, 11));
        // s3 ends lease 7 by its own wall clock at index 2; s1 and s2 do not.
        run.server(2 * S, 1, applied(2, 22));
        run.server(2 * S + MS, 2, applied(2, 22));
        run.server(
            2 * S + 2 * MS,
            3,
            ServerEvent::Service {
                index: 2,
                event: ServiceEvent::LeaseRevoked { lease: 7, cause: RevokeCause::WallClockExpiry, deleted_keys: vec![] },
            },
        );
        run.server(2 * S + 2 * MS, 3, applied(2, 99));
        // Still apart at 3 and 4: the chain keeps them apart; one report.
        for i in 3..=4 {
            run.server(i * S, 1, applied(i, 30 + i));
            run.server(i * S + MS, 3, applied(i, 90 + i));
        }
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        let v = &violations[0];
        assert_eq!((v.invariant, v.at_ns), ("replica-divergence", 2 * S + 2 * MS));
        assert!(v.detail.contains("s3 did end lease 7 (WallClockExpiry); s1 did nothing"), "{}", v.detail);
        assert!(v.assumptions_held, "exact clocks: inside the assumptions, a bug");

        // A snapshot install brings s3 back in line at 5; apart again at 6.
        run.server(5 * S, 1, applied(5, 55));
        run.server(5 * S + MS, 3, applied(5, 55));
        run.server(6 * S, 1, applied(6, 66));
        run.server(6 * S + MS, 3, applied(6, 67));
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations[1].detail.contains("no effect at this index differs"), "{}", violations[1].detail);
    }

    #[test]
    fn different_entries_are_left_to_state_machine_safety() {
        let mut run = Fixture::new();
        run.server(S, 1, ServerEvent::Applied { index: 1, term: 1, fingerprint: 1, state: 1 });
        run.server(S, 2, ServerEvent::Applied { index: 1, term: 2, fingerprint: 2, state: 2 });
        assert!(super::check(&run.record()).is_empty());
    }
}
