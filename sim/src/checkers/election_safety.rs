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
