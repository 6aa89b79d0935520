//! Leadership transfer (Raft thesis §3.10): the leader hands its role to a
//! chosen voter, for maintenance (etcd's `move-leader`) rather than waiting
//! for an election timeout after it stops.
//!
//! The leader stops accepting proposals (so the target can catch up with a
//! log that no longer grows), brings the target's log up to its own last
//! index, then sends it `TimeoutNow`. The target campaigns at once, without
//! pre-vote, and its vote requests say they come from a transfer, so voters
//! grant them although they heard from the leader within the vote lease
//! (thesis §4.2.3), as etcd-raft does for `campaignTransfer`. The leader
//! abandons the transfer after an election timeout (the target may be slow
//! or gone) and accepts proposals again. The simulator never asks for a
//! transfer, so none of this runs in simulated schedules.

use std::fmt::Debug;

use super::node::RaftNode;
use super::types::*;
use crate::types::NodeId;

/// A transfer the leader has under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Transfer {
    pub(super) target: NodeId,
    /// On the leader's clock: give up if the target has not taken over.
    pub(super) deadline_ns: u64,
    /// `TimeoutNow` has been sent (only once per transfer).
    pub(super) sent: bool,
}

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    /// Asks this leader to hand leadership to `target` (thesis §3.10).
    /// Proposals are refused with [`ProposeError::TransferInProgress`]
    /// until the target takes over or an election timeout passes.
    pub fn transfer_leadership(&mut self, now_ns: u64, target: NodeId) -> Result<(), TransferError> {
        self.begin_input(now_ns);
        let result = self.start_transfer(target);
        self.end_input();
        result
    }

    /// The voter a transfer under way hands leadership to.
    pub fn transfer_target(&self) -> Option<NodeId> {
        self.transfer.map(|t| t.target)
    }

    fn start_transfer(&mut self, target: NodeId) -> Result<(), TransferError> {
        if self.role != Role::Leader {
            return Err(TransferError::NotLeader { leader_hint: self.leader_id });
        }
        if target == self.id() {
            return Err(TransferError::AlreadyLeader);
        }
        if !self.voters.contains(&target) || !self.progress.contains_key(&target) {
            return Err(TransferError::NotAVoter);
        }
        if let Some(t) = self.transfer {
            return if t.target == target { Ok(()) } else { Err(TransferError::InProgress { target: t.target }) };
        }
        let deadline_ns = self.now_ns + self.config.election_timeout_max_ns;
        self.transfer = Some(Transfer { target, deadline_ns, sent: false });
        // Its target's election passes the vote lease a read lease needs.
        self.void_lease();
        if !self.transfer_if_caught_up() {
            // Bring it up to date; its acknowledgement sends `TimeoutNow`.
            self.send_append(target);
        }
        Ok(())
    }

    /// Sends `TimeoutNow` once the target holds the leader's whole log.
    /// Returns whether it was sent (now or before).
    pub(super) fn transfer_if_caught_up(&mut self) -> bool {
        let Some(t) = self.transfer else {
            return false;
        };
        if t.sent {
            return true;
        }
        let caught_up = self.progress.get(&t.target).is_some_and(|p| p.match_index == self.log.last_index());
        if caught_up {
            self.transfer = Some(Transfer { sent: true, ..t });
            self.send(t.target, Message::TimeoutNow { term: self.term });
        }
        caught_up
    }

    /// Leader timer: a transfer that has not completed within an election
    /// timeout is abandoned, and proposals are accepted again.
    pub(super) fn expire_transfer(&mut self) {
        if self.transfer.is_some_and(|t| self.now_ns >= t.deadline_ns) {
            self.transfer = None;
        }
    }

    /// The target's side: campaign now, skipping pre-vote (the leader asked
    /// for it, so no disruption is to be feared) and telling voters so.
    pub(super) fn handle_timeout_now(&mut self, from: NodeId) {
        if self.role == Role::Leader || self.leader_id != Some(from) || !self.voters.contains(&self.id()) {
            return;
        }
        self.start_election_for_transfer();
    }
}
