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
