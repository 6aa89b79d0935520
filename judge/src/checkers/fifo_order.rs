//! `fifo-order`: waiters are granted in the order their acquire requests
//! were committed (the Raft lock-service design's per-key FIFO queue, kept as
//! replicated state so the order survives leader changes). A waiter whose lease
//! ended leaves the queue without the lock.

use std::collections::{BTreeMap, VecDeque};

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

/// Replays each key's queue from the log's events: every server applies the
/// same entries, so each event is taken once, when first reported.
pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // Each event once: servers re-apply entries after a restart.
    let mut seen = std::collections::BTreeSet::new();
    let mut queues: BTreeMap<String, VecDeque<(u64, u64, u64)>> = BTreeMap::new(); // (client, seq, queued at index)
    let mut violations = Vec::new();
    for (at_ns, _, event) in server_events(run.obs) {
        let event = &*event;
        let index = match event {
            ServerEvent::Service { index, event: ServiceEvent::LockQueued { .. } }
            | ServerEvent::Service { index, event: ServiceEvent::LockGranted { .. } }
            | ServerEvent::Service { index, event: ServiceEvent::LockWaiterDropped { .. } } => *index,
            _ => continue,
        };
        if !seen.insert((index, event_digest(event))) {
            continue;
        }
        match event {
            ServerEvent::Service { event: ServiceEvent::LockQueued { key, client, seq, .. }, .. } => {
                queues.entry(key.clone()).or_default().push_back((*client, *seq, index));
            }
            ServerEvent::Service { event: ServiceEvent::LockWaiterDropped { key, client, seq, .. }, .. } => {
                let queue = queues.entry(key.clone()).or_default();
                queue.retain(|(c, s, _)| (c, s) != (client, seq));
            }
            ServerEvent::Service { event: ServiceEvent::LockGranted { key, client, seq, .. }, .. } => {
                let queue = queues.entry(key.clone()).or_default();
                match queue.iter().position(|(c, s, _)| (c, s) == (client, seq)) {
                    Some(0) => {
                        queue.pop_front();
                    }
                    Some(position) => {
                        let (first, _, first_index) = queue[0];
                        violations.push(run.violation(
                            "fifo-order",
                            at_ns,
                            format!("{key} granted to c{client} at index {index} ahead of c{first}, queued earlier at index {first_index}"),
                        ));
                        queue.remove(position);
                    }
                    None => {
                        if let Some((first, _, first_index)) = queue.front() {
                            violations.push(run.violation(
                                "fifo-order",
                                at_ns,
                                format!("{key} granted to c{client} at index {index}, who never queued, while c{first} waited since index {first_index}"),
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    violations
}

/// Names an event for "taken once" without formatting it: XXH3 over its
/// fields as `Hash` feeds them.
fn event_digest(event: &ServerEvent) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    event.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::ServiceEvent;

    use crate::checkers::testing::{Fixture, S};

    fn queued(index: u64, client: u64) -> ServerEvent {
        ServerEvent::Service { index, event: ServiceEvent::LockQueued { key: "orders".into(), client, seq: 1, lease: 100 + client } }
    }

    fn granted(index: u64, client: u64) -> ServerEvent {
        ServerEvent::Service {
            index,
            event: ServiceEvent::LockGranted { key: "orders".into(), client, seq: 1, lease: 100 + client, token: index },
        }
    }

    #[test]
    fn grants_in_queue_order_are_fine_and_a_jump_fires() {
        let mut run = Fixture::new();
        run.everywhere(S, queued(1, 1));
        run.everywhere(S, granted(1, 1));
        run.everywhere(2 * S, queued(2, 2));
        run.everywhere(3 * S, queued(3, 3));
        run.everywhere(4 * S, granted(4, 2));
        assert!(run.fired().is_empty());
        run.everywhere(5 * S, queued(5, 1));
        run.everywhere(6 * S, granted(6, 1));
        assert_eq!(run.fired(), vec!["fifo-order"], "c1 jumped c3");
    }

    #[test]
    fn a_dropped_waiter_may_be_passed() {
        let mut run = Fixture::new();
        run.everywhere(S, queued(1, 1));
        run.everywhere(S, queued(2, 2));
        run.everywhere(
            2 * S,
            ServerEvent::Service {
                index: 3,
                event: ServiceEvent::LockWaiterDropped { key: "orders".into(), client: 1, seq: 1, lease: 101 },
            },
        );
        run.everywhere(2 * S, granted(3, 2));
        assert!(run.fired().is_empty());
    }
}
