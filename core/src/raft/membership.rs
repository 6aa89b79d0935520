//! Single-server membership changes (thesis §4.3): one server added or
//! removed at a time, so any majority of the old configuration overlaps any
//! majority of the new one. A configuration takes effect as soon as it is
//! appended (committed or not) and is undone if its entry is truncated.
//!
//! The log stores changes (add/remove), not whole sets, so the voters in
//! force are the snapshot's voters (or the genesis set every node is started
//! with) with the log's changes applied in order.

use std::collections::BTreeSet;
use std::fmt::Debug;

use super::node::RaftNode;
use super::progress::Progress;
use super::types::*;
use crate::types::{LogIndex, NodeId};

/// Applies one change to a voter set.
pub(super) fn apply_change(voters: &mut BTreeSet<NodeId>, change: ConfChange) {
    match change {
        ConfChange::AddServer(id) => {
            voters.insert(id);
        }
        ConfChange::RemoveServer(id) => {
            voters.remove(&id);
        }
    }
}

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    pub(super) fn propose_conf_change_inner(&mut self, change: ConfChange) -> Result<LogIndex, ProposeError> {
        if self.role != Role::Leader {
            return Err(ProposeError::NotLeader { leader_hint: self.leader_id });
        }
        // Thesis §4.1 (and its 2015 erratum): a leader may change membership
        // only after committing an entry of its own term, and only one change
        // may be uncommitted at a time; otherwise two configurations whose
        // majorities do not overlap can both act.
        let safe_now = self.has_committed_in_term() && self.last_conf_index <= self.log.commit_index;
        if !safe_now && !self.config.bugs.unsafe_membership_change {
            return Err(ProposeError::ConfChangeRefused);
        }
        let no_op = match change {
            ConfChange::AddServer(id) => self.voters.contains(&id),
            ConfChange::RemoveServer(id) => !self.voters.contains(&id) || self.voters.len() == 1,
        };
        if no_op {
            return Err(ProposeError::ConfChangeRefused);
        }
        let voters_before = self.voters.len();
        let index = self.append_new(Payload::Config(change));
        // One server at a time, in force from its append (thesis §4.3).
        assert_eq!(self.last_conf_index, index, "a configuration change takes effect when appended");
        assert_eq!(self.voters.len().abs_diff(voters_before), 1, "a configuration change adds or removes exactly one voter");
        self.maybe_commit();
        Ok(index)
    }

    /// Recomputes the configuration in force from the snapshot's voters and
    /// the configuration entries in the log. Called whenever a configuration
    /// entry is appended or truncated, or a snapshot installed.
    pub(super) fn recompute_voters(&mut self) {
        let mut voters = self.base_voters.clone();
        let mut last_conf_index = 0;
        for entry in self.log.iter() {
            if let Payload::Config(change) = entry.payload {
                apply_change(&mut voters, change);
                last_conf_index = entry.index;
            }
        }
        self.last_conf_index = last_conf_index;
        if voters == self.voters {
            return;
        }
        self.voters = voters;
        self.ready.events.push(RaftEvent::ConfigChanged { voters: self.voters.clone() });
        if self.role == Role::Leader {
            self.sync_progress_with_voters();
        }
    }

    /// The leader replicates to every voter in force (itself aside), and
    /// keeps replicating to a removed server until its removal commits, so
    /// that it learns it was removed and stays quiet instead of timing out
    /// and campaigning (thesis §4.2.3).
    fn sync_progress_with_voters(&mut self) {
        let me = self.id();
        let next_index = self.log.last_index() + 1;
        for id in self.voters.clone() {
            if id != me && !self.progress.contains_key(&id) {
                self.progress.insert(id, Progress::new(next_index, self.now_ns));
            }
        }
        self.forget_removed_servers();
    }

    /// Drops replication state for non-voters once no configuration change
    /// is pending, after a last heartbeat that tells them the removal
    /// committed (so they know not to campaign).
    pub(super) fn forget_removed_servers(&mut self) {
        if self.last_conf_index > self.log.commit_index {
            return;
        }
        let removed: Vec<NodeId> = self.progress.keys().copied().filter(|id| !self.voters.contains(id)).collect();
        for id in removed {
            self.send_heartbeat(id);
            self.progress.remove(&id);
        }
    }

    /// The voters in force right after the entry at `index` (for a snapshot
    /// taken there).
    pub(super) fn voters_as_of(&self, index: LogIndex) -> BTreeSet<NodeId> {
        let mut voters = self.base_voters.clone();
        for entry in self.log.iter().take_while(|e| e.index <= index) {
            if let Payload::Config(change) = entry.payload {
                apply_change(&mut voters, change);
            }
        }
        voters
    }
}

/// Handler-level tests: a leader fed one membership change, then the
/// follower acknowledgement that commits it.
#[cfg(test)]
mod tests {
    use super::super::fixture::{appends, config, leader_with, Node, ELECTED_AT_NS};
    use super::super::types::*;

    /// Node 2 acknowledges everything up to `match_index` in term 1.
    fn ack(node: &mut Node, match_index: u64) {
        let msg = Message::AppendResponse { term: 1, success: true, match_index, conflict_index: 0, conflict_term: None, read_ctx: 0 };
        node.step(ELECTED_AT_NS, 2, msg);
    }

    /// A leader of term 1 whose Noop (index 1) is committed, so that it may
    /// change the membership (thesis §4.1).
    fn leader_that_committed_its_noop() -> Node {
        let mut node = leader_with(config(), Vec::new());
        ack(&mut node, 1);
        node.take_ready();
        node
    }

    /// A server added by the entry at index 2 is assumed to hold nothing
    /// yet beyond what the probe finds: replication to it starts right after
    /// the leader's last entry (the configuration entry itself), as for any
    /// follower after an election (§5.3), not at an earlier index.
    #[test]
    fn an_added_server_is_probed_after_the_leaders_last_entry() {
        let mut node = leader_that_committed_its_noop();
        assert_eq!(node.propose_conf_change(ELECTED_AT_NS, ConfChange::AddServer(4)), Ok(2));
        assert_eq!(node.progress.get(&4).map(|p| p.next_index), Some(3));
        let ready = node.take_ready();
        let to_four: Vec<_> = appends(&ready).into_iter().filter(|a| a.0 == 4).collect();
        assert_eq!(to_four, vec![(4, 2, 1, vec![])], "probe after the configuration entry");
    }

    /// A removed server gets one last heartbeat when its removal commits
    /// (so it learns of it and stays quiet, thesis §4.2.3), and nothing after.
    #[test]
    fn a_removed_server_is_forgotten_once_its_removal_commits() {
        let mut node = leader_that_committed_its_noop();
        assert_eq!(node.propose_conf_change(ELECTED_AT_NS, ConfChange::RemoveServer(3)), Ok(2));
        assert!(node.progress.contains_key(&3), "kept while the removal is uncommitted");
        node.take_ready();
        ack(&mut node, 2);
        assert_eq!(node.commit_index(), 2);
        assert!(!node.progress.contains_key(&3), "forgotten as the removal commits");
        let ready = node.take_ready();
        assert!(ready.messages.iter().any(|(to, _)| *to == 3), "one last heartbeat to the removed server");
        node.tick(ELECTED_AT_NS + config().heartbeat_ns);
        let ready = node.take_ready();
        assert!(ready.messages.iter().all(|(to, _)| *to != 3), "nothing to it afterwards: {:?}", ready.messages);
        assert!(ready.messages.iter().any(|(to, _)| *to == 2), "the tick did send heartbeats");
    }
}
