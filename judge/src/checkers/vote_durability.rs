//! `vote-durability`: a server grants its vote to at most one candidate per
//! term, across crashes (Raft §5.2: "each server will vote for at most one
//! candidate in a given term"; Figure 2 lists `votedFor` as persistent
//! state, "updated on stable storage before responding to RPCs").
//!
//! Election safety judges the outcome (two leaders in a term) and needs a
//! second candidate to collect a majority with the repeated vote; this
//! checker judges the cause directly, at the moment a server that granted
//! a vote grants another in the same term — typically because it crashed
//! after the reply left and before the vote reached its disk. A candidate's
//! vote for itself counts: it is recorded when its first vote request of
//! the election leaves (after the step's writes were synced).

use std::collections::BTreeMap;

use leasesim_core::NodeId;

use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // (voter, term) → (candidate, when)
    let mut votes: BTreeMap<(NodeId, u64), (NodeId, u64)> = BTreeMap::new();
    // voter → when it last crashed
    let mut crashed: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs {
        let Proc::Server(voter) = o.proc else { continue };
        match &o.event {
            Event::Crashed => {
                crashed.insert(voter, o.at_ns);
            }
            Event::VoteGranted { term, candidate } => match votes.get(&(voter, *term)) {
                None => {
                    votes.insert((voter, *term), (*candidate, o.at_ns));
                }
                Some((first, _)) if first == candidate => {}
                Some((first, first_ns)) => {
                    let between = match crashed.get(&voter) {
                        Some(c) if c > first_ns => format!(", and crashed at {} in between", leasesim_core::fmt_secs(*c)),
                        _ => String::new(),
                    };
                    let detail = format!(
                        "s{voter} granted its vote in term {term} to s{first} at {} and again to s{candidate}{between}",
                        leasesim_core::fmt_secs(*first_ns)
                    );
                    violations.push(run.violation("vote-durability", o.at_ns, detail));
                }
            },
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    #[test]
    fn one_candidate_per_term_is_silent_even_when_asked_twice() {
        let mut run = Fixture::new();
        run.push(S, Proc::Server(2), Event::VoteGranted { term: 3, candidate: 1 });
        run.push(S + 5 * MS, Proc::Server(2), Event::VoteGranted { term: 3, candidate: 1 });
        run.push(2 * S, Proc::Server(2), Event::VoteGranted { term: 4, candidate: 3 });
        assert!(super::check(&run.record()).is_empty());
    }

    #[test]
    fn a_second_candidate_in_one_term_fires_and_names_the_crash() {
        let mut run = Fixture::new();
        run.push(S, Proc::Server(2), Event::VoteGranted { term: 3, candidate: 1 });
        run.push(S + MS, Proc::Server(2), Event::Crashed);
        run.push(S + 3 * MS, Proc::Server(2), Event::Restarted);
        run.push(S + 9 * MS, Proc::Server(2), Event::VoteGranted { term: 3, candidate: 3 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].at_ns, S + 9 * MS);
        assert!(violations[0].detail.contains("to s1 at 1.000s and again to s3, and crashed at 1.001s"), "{}", violations[0].detail);
    }

    #[test]
    fn a_candidate_that_forgets_its_self_vote_fires() {
        // s2 stood in term 5 (its own vote), crashed before the vote was
        // durable, and granted term 5 to s1 after the restart.
        let mut run = Fixture::new();
        run.push(S, Proc::Server(2), Event::VoteGranted { term: 5, candidate: 2 });
        run.push(S + MS, Proc::Server(2), Event::Crashed);
        run.push(S + 2 * MS, Proc::Server(2), Event::Restarted);
        run.push(S + 4 * MS, Proc::Server(2), Event::VoteGranted { term: 5, candidate: 1 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("in term 5 to s2"), "{}", violations[0].detail);
    }
}
