//! `state-machine-safety`: no two servers apply different entries at one
//! index (Raft §5.4.3, Figure 3 "State Machine Safety"). Also catches a
//! server that, after a restart, re-applies an index differently.

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // index → (term, fingerprint, first server that applied it)
    let mut applied = BTreeMap::new();
    let mut violations = Vec::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let event = &*event;
        let ServerEvent::Applied { index, term, fingerprint, .. } = event else { continue };
        match applied.get(index) {
            None => {
                applied.insert(*index, (*term, *fingerprint, server));
            }
            Some((first_term, first_fp, first_server)) if (first_term, first_fp) != (term, fingerprint) => {
                violations.push(run.violation(
                    "state-machine-safety",
                    at_ns,
                    format!(
                        "s{server} applied entry (term {term}, #{fingerprint:016x}) at index {index}, \
                         but s{first_server} applied (term {first_term}, #{first_fp:016x}) there"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;

    use crate::checkers::testing::{Fixture, S};

    #[test]
    fn different_entries_at_one_index_fire() {
        let mut run = Fixture::new();
        run.everywhere(S, ServerEvent::Applied { index: 1, term: 1, fingerprint: 11, state: 0 });
        assert!(super::check(&run.record()).is_empty());
        run.server(2 * S, 2, ServerEvent::Applied { index: 2, term: 1, fingerprint: 22, state: 0 });
        run.server(3 * S, 3, ServerEvent::Applied { index: 2, term: 2, fingerprint: 23, state: 0 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("index 2"), "{violations:?}");
    }
}
