//! `durability`: a committed entry — and so every acknowledged write — is
//! never lost, across crashes (Raft §5.4 "Leader Completeness"; the
//! persist-before-reply rule of Figure 2). When the run ends, the most
//! advanced live server must still hold, at each index any server applied,
//! an entry of the same term (or a snapshot covering it).

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // index → (term, when first applied)
    let mut committed: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (at_ns, _, event) in server_events(run.obs) {
        let event = &*event;
        if let ServerEvent::Applied { index, term, .. } = event {
            committed.entry(*index).or_insert((*term, at_ns));
        }
    }
    let Some((reference_id, reference)) = run
        .servers
        .iter()
        .filter(|(_, s)| s.up && s.voter)
        .filter_map(|(id, s)| s.probe.map(|p| (id, s, p)))
        .max_by_key(|(id, _, p)| (p.commit_index, std::cmp::Reverse(**id)))
        .map(|(id, s, _)| (*id, s))
    else {
        return Vec::new();
    };
    let log: BTreeMap<u64, u64> = reference.log_terms.iter().copied().collect();
    let commit_index = reference.probe.map_or(0, |p| p.commit_index);
    let mut violations = Vec::new();
    for (index, (term, applied_at_ns)) in &committed {
        let lost = if *index < reference.first_index {
            false // inside its snapshot: a snapshot holds only committed state
        } else {
            match log.get(index) {
                Some(t) => t != term,
                None => true,
            }
        };
        if lost {
            violations.push(run.violation(
                "durability",
                run.end_ns,
                format!(
                    "entry {index} (term {term}) was committed at {} but s{reference_id}, the most advanced live \
                     server (commit {commit_index}), holds {}",
                    leasesim_core::fmt_secs(*applied_at_ns),
                    log.get(index).map_or("nothing there".to_string(), |t| format!("term {t} there")),
                ),
            ));
            break; // the first loss explains the rest
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;

    use crate::checkers::testing::{Fixture, S};

    fn committed_three() -> Fixture {
        let mut run = Fixture::new();
        for index in 1..=3 {
            run.everywhere(index * S, ServerEvent::Applied { index, term: 1, fingerprint: index, state: 0 });
        }
        for server in run.servers.values_mut() {
            server.log_terms = vec![(1, 1), (2, 1), (3, 1)];
            server.probe.as_mut().unwrap().commit_index = 3;
        }
        run
    }

    #[test]
    fn a_committed_entry_still_held_is_fine() {
        assert!(committed_three().fired().is_empty());
    }

    #[test]
    fn a_committed_entry_overwritten_fires() {
        let mut run = committed_three();
        for server in run.servers.values_mut() {
            server.log_terms = vec![(1, 1), (2, 1), (3, 2)];
        }
        assert_eq!(run.fired(), vec!["durability"]);
    }

    #[test]
    fn a_committed_entry_inside_the_snapshot_is_fine() {
        let mut run = committed_three();
        for server in run.servers.values_mut() {
            server.first_index = 3;
            server.log_terms = vec![(3, 1)];
        }
        assert!(run.fired().is_empty());
    }
}
