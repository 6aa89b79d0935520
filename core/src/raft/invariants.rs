//! Cheap insurance: structural invariants every node re-checks after each
//! input (and `compact`), so a logic error stops the run at the input that
//! caused it instead of surfacing much later as a checker violation.

use std::fmt::Debug;

use super::node::RaftNode;
use super::types::Role;

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    /// Cheap insurance run after every input: structural invariants that hold
    /// whatever the schedule (and, unless noted, whatever planted bug is on).
    pub(super) fn check_invariants(&self) {
        invariant!(self.log.ends_consistent(), "log ends disagree with its indices");
        assert!(self.log.commit_index <= self.log.last_index(), "commit index beyond the log");
        assert!(self.handed_out_index <= self.log.commit_index, "handed out entries beyond the commit index");
        assert!(self.log.snapshot_index() <= self.log.commit_index, "snapshot covers uncommitted entries");
        invariant!(self.log.last_term() <= self.term, "log holds an entry from a future term");
        // O(log length): debug builds only (simulation sweeps run in release
        // and would pay it on every input); a planted bug may break it on purpose.
        debug_assert!(self.any_raft_bug() || self.log.terms_monotonic(self.term), "log terms must not decrease (log matching, §5.3)");
        match self.role {
            Role::Leader => {
                assert!(!self.progress.contains_key(&self.id()), "leader tracks itself as a follower");
                assert_eq!(self.leader_id, Some(self.id()));
                assert!(self.term_start_index >= 1 && self.term_start_index <= self.log.last_index());
                // A planted bug can make a follower vouch for entries this
                // leader lacks (e.g. a leader elected without them).
                for (id, pr) in &self.progress {
                    assert!(
                        (pr.match_index <= self.log.last_index() || self.any_raft_bug()) && pr.next_index >= 1,
                        "progress of {id} out of range: {pr:?}"
                    );
                }
            }
            Role::Candidate => assert_eq!(self.voted_for, Some(self.id()), "candidate must vote for itself"),
            Role::Follower | Role::PreCandidate => {}
        }
    }
}

/// The self-check only ever runs on healthy nodes; pin that it stops one
/// whose state is broken instead of letting it run on.
#[cfg(test)]
mod tests {
    use super::super::fixture::{config, leader_with};
    use super::Role;

    #[test]
    #[should_panic(expected = "candidate must vote for itself")]
    fn a_candidate_that_voted_for_another_is_stopped() {
        let mut node = leader_with(config(), Vec::new());
        node.check_invariants();
        node.role = Role::Candidate;
        node.voted_for = Some(2);
        node.check_invariants();
    }
}
