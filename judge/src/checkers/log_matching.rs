//! `log-matching`: if two logs hold an entry with the same index and term,
//! they agree on every entry up to it (Raft §5.3, Figure 3 "Log Matching").
//! Judged on the servers' in-memory logs when the run ends, and throughout
//! the run on every applied entry (same index and term ⇒ same content).

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut content = BTreeMap::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let event = &*event;
        let ServerEvent::Applied { index, term, fingerprint, .. } = event else { continue };
        let first = *content.entry((*index, *term)).or_insert((*fingerprint, server));
        if first.0 != *fingerprint {
            violations.push(run.violation(
                "log-matching",
                at_ns,
                format!("s{server} and s{} hold different entries at index {index} of term {term}", first.1),
            ));
        }
    }
    // End of run: for every pair of logs, find the last index where both
    // hold the same term; below it every shared index must agree.
    let logs: Vec<_> = run.servers.iter().map(|(id, s)| (*id, s.log_terms.iter().copied().collect::<BTreeMap<_, _>>())).collect();
    for (i, (a, log_a)) in logs.iter().enumerate() {
        for (b, log_b) in &logs[i + 1..] {
            let last_match = log_a.iter().rev().find(|(index, term)| log_b.get(index) == Some(term)).map(|(index, _)| *index);
            let Some(last_match) = last_match else { continue };
            let disagreement = log_a.range(..=last_match).find(|(index, term)| log_b.get(index).is_some_and(|t| t != *term));
            if let Some((index, term)) = disagreement {
                violations.push(run.violation(
                    "log-matching",
                    run.end_ns,
                    format!("s{a} and s{b} agree at index {last_match} but differ at index {index} (term {term} vs {})", log_b[index]),
                ));
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;

    use crate::checkers::testing::{Fixture, S};

    #[test]
    fn logs_that_agree_late_but_differ_early_fire() {
        let mut run = Fixture::new();
        run.servers.get_mut(&1).unwrap().log_terms = vec![(1, 1), (2, 1), (3, 2)];
        run.servers.get_mut(&2).unwrap().log_terms = vec![(1, 1), (2, 1), (3, 2), (4, 2)];
        assert!(run.fired().is_empty(), "a shorter log that matches is fine");
        run.servers.get_mut(&3).unwrap().log_terms = vec![(1, 1), (2, 2), (3, 2)];
        assert!(run.fired().contains(&"log-matching"));
    }

    #[test]
    fn one_index_and_term_with_two_contents_fires() {
        let mut run = Fixture::new();
        run.server(S, 1, ServerEvent::Applied { index: 5, term: 2, fingerprint: 1, state: 0 });
        run.server(S, 2, ServerEvent::Applied { index: 5, term: 2, fingerprint: 2, state: 0 });
        assert!(run.fired().contains(&"log-matching"));
    }
}
