//! `election-safety`: at most one leader per term over the whole run
//! (Raft §5.2, Figure 3 "Election Safety").

use std::collections::BTreeMap;

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut leaders = BTreeMap::new();
    let mut violations = Vec::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let event = &*event;
        if let ServerEvent::Raft(RaftEvent::BecameLeader { term }) = event {
            match leaders.get(term) {
                None => {
                    leaders.insert(*term, server);
                }
                Some(first) if *first != server => violations.push(run.violation(
                    "election-safety",
                    at_ns,
                    format!("s{server} became leader of term {term}, which s{first} already led"),
                )),
                Some(_) => {}
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;

    use crate::checkers::testing::{Fixture, S};

    #[test]
    fn two_leaders_of_one_term_fire() {
        let mut run = Fixture::new();
        run.server(S, 1, ServerEvent::Raft(RaftEvent::BecameLeader { term: 3 }));
        run.server(2 * S, 2, ServerEvent::Raft(RaftEvent::BecameLeader { term: 4 }));
        assert!(run.fired().is_empty(), "one leader per term is fine");
        run.server(3 * S, 3, ServerEvent::Raft(RaftEvent::BecameLeader { term: 4 }));
        assert_eq!(run.fired(), vec!["election-safety"]);
    }
}
