//! `applied-twice`: a client's request `(client, seq)` is executed at one
//! log index only, however often it is retried (Ongaro's thesis §6.3: the
//! session table answers a retry of an executed request from its cache).
//! Every server applies the same entry at the same index, so the same
//! `(client, seq)` reported at one index by several servers is one
//! execution; at two indexes it is two. Core's service harness had its own
//! copy of this rule; the judge took it over.
//!
//! It reads `RequestApplied`, which the simulator's sweeps do not keep
//! (`Event::for_traces_only`), so it is one of the [`super::FULL_LOG_CHECKERS`]:
//! judged where a run keeps every server event (core's service harness,
//! real runs against leasesim-node), not in the simulator.

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut first = BTreeMap::new();
    let mut violations = Vec::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let ServerEvent::Service { index, event: ServiceEvent::RequestApplied { client, seq } } = &*event else { continue };
        let (first_index, first_server) = *first.entry((*client, *seq)).or_insert((*index, server));
        if first_index != *index {
            let detail =
                format!("s{server} executed c{client}'s request {seq} at index {index}; s{first_server} executed it at {first_index}");
            violations.push(run.violation("applied-twice", at_ns, detail));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::ServiceEvent;

    use crate::checkers::testing::{Fixture, S};

    fn applied(index: u64) -> ServerEvent {
        ServerEvent::Service { index, event: ServiceEvent::RequestApplied { client: 4, seq: 9 } }
    }

    #[test]
    fn one_request_executed_at_two_indexes_fires() {
        let mut run = Fixture::new();
        run.everywhere(S, applied(20));
        assert!(super::check(&run.record()).is_empty(), "the same entry on every server is one execution");
        run.server(2 * S, 2, applied(23));
        let fired = super::check(&run.record());
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert!(fired[0].detail.contains("s2 executed c4's request 9 at index 23; s1 executed it at 20"), "{}", fired[0].detail);
    }
}
