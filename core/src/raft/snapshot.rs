//! Log compaction and snapshot transfer (Raft §7): the host hands over its
//! state as of an applied index, the covered entries leave memory and disk,
//! and a follower that needs entries no longer in the log gets the snapshot
//! instead. This is what keeps memory bounded in long runs.

use std::fmt::Debug;

use super::node::RaftNode;
use super::progress::ProgressState;
use super::types::*;
use crate::types::{LogIndex, NodeId};

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    pub(super) fn compact_inner(&mut self, applied_index: LogIndex, data: S) {
        if applied_index <= self.log.snapshot_index() {
            return;
        }
        assert!(
            applied_index <= self.handed_out_index,
            "compact({applied_index}) beyond the last committed entry handed out ({})",
            self.handed_out_index
        );
        let last_term = self.log.term_at(applied_index).expect("applied entries are in the log");
        let voters = self.voters_as_of(applied_index);
        let snapshot = Snapshot { last_index: applied_index, last_term, voters: voters.clone(), data };
        self.log.compact_to(applied_index, last_term);
        self.base_voters = voters;
        self.snapshot = Some(snapshot.clone());
        self.ready.persist.push(PersistOp::SaveSnapshot(snapshot));
    }

    /// Ships the latest snapshot to a follower whose next entry was
    /// compacted away; it stays in Snapshot state until acknowledged.
    pub(super) fn send_snapshot(&mut self, to: NodeId) {
        let Some(snapshot) = self.snapshot.clone() else {
            invariant!(false, "log compacted without a snapshot");
            return;
        };
        let sent_ns = self.now_ns;
        if let Some(pr) = self.progress.get_mut(&to) {
            pr.state = ProgressState::Snapshot { index: snapshot.last_index, sent_ns };
        }
        self.send(to, Message::InstallSnapshot { term: self.term, snapshot: Box::new(snapshot) });
    }

    /// Follower side of InstallSnapshot (§7), for a message of our term.
    pub(super) fn handle_install_snapshot(&mut self, from: NodeId, snapshot: Snapshot<S>) {
        if !self.accept_leader_contact(from) {
            return;
        }
        let term = self.term;
        // Already have it all (committed entries match the leader's): say how
        // far we are so the leader resumes from there.
        if snapshot.last_index <= self.log.commit_index {
            let last_index = self.log.commit_index;
            self.send(from, Message::InstallSnapshotResponse { term, last_index });
            return;
        }
        let last_index = snapshot.last_index;
        // §7: if our log holds the snapshot's last entry, keep what follows
        // it; otherwise the whole log is superseded.
        if self.log.term_at(last_index) != Some(snapshot.last_term) && self.log.last_index() > self.log.snapshot_index() {
            let truncate_at = (self.log.commit_index + 1).max(self.log.first_index());
            if truncate_at <= self.log.last_index() {
                self.log.truncate_from(truncate_at);
                self.ready.persist.push(PersistOp::TruncateFrom(truncate_at));
            }
        }
        self.log.compact_to(last_index, snapshot.last_term);
        self.log.commit_index = last_index;
        // The host replaces its state machine with the snapshot before
        // applying anything else; entries of this Ready it has not yet applied
        // are superseded by it.
        self.handed_out_index = last_index;
        self.ready.committed.clear();
        self.base_voters = snapshot.voters.clone();
        self.snapshot = Some(snapshot.clone());
        self.ready.install = Some(Box::new(snapshot.clone()));
        self.ready.persist.push(PersistOp::SaveSnapshot(snapshot));
        self.recompute_voters();
        self.send(from, Message::InstallSnapshotResponse { term, last_index });
    }

    /// The heartbeat of a follower with a snapshot in flight: the snapshot
    /// again if half the shortest election timeout passed without an answer
    /// (it or its answer may be lost; waiting a whole election timeout
    /// delayed recovery enough to miss chaos-nemesis seed 25's liveness
    /// deadline, with one entry per append, a snapshot every 8 entries and
    /// 75 ms links), otherwise an empty append whose `prev` is the
    /// leader's snapshot point. That keeps the follower from starting an
    /// election and confirms read rounds: a follower without the point
    /// rejects it (the leader ignores that while the snapshot is in flight),
    /// one that already holds it (the answer was lost) accepts, which ends
    /// Snapshot state.
    pub(super) fn heartbeat_during_snapshot(&mut self, to: NodeId, sent_ns: u64) {
        let resend_due = self.now_ns >= sent_ns.saturating_add(self.config.election_timeout_min_ns / 2);
        let prev_log_index = self.log.snapshot_index();
        match self.log.term_at(prev_log_index) {
            Some(prev_log_term) if !resend_due => self.send_empty_append(to, prev_log_index, prev_log_term),
            _ => self.send_snapshot(to),
        }
    }

    pub(super) fn handle_install_snapshot_response(&mut self, from: NodeId, last_index: LogIndex) {
        if self.role != Role::Leader {
            return;
        }
        let now_ns = self.now_ns;
        let Some(pr) = self.progress.get_mut(&from) else {
            return;
        };
        pr.last_heard_ns = now_ns;
        let advanced = last_index > pr.match_index;
        pr.match_index = pr.match_index.max(last_index);
        pr.next_index = pr.match_index + 1;
        pr.state = ProgressState::Probe;
        pr.probe_sent = false;
        if advanced {
            self.maybe_commit();
        }
    }
}
