//! The harness as a correct host: after every input to a node it carries
//! out the node's Ready in the order the durability contract demands —
//! persist to the node's disk, then send, then install and apply — and runs
//! every safety check on the result.

use crate::raft::{Payload, RaftEvent, Role};
use crate::types::NodeId;

use super::checker::{check_log_matching, ViolationKind};
use super::cluster::Cluster;
use super::network::{Envelope, TestMessage};

impl Cluster {
    pub(super) fn process_ready(&mut self, id: NodeId) {
        let slot = self.slots.get_mut(&id).expect("known node");
        let Some(node) = slot.node.as_mut() else {
            return;
        };
        let ready = node.take_ready();
        let term = node.term();
        let mut problems: Vec<(ViolationKind, String)> = Vec::new();
        // 1. Persist, in order.
        for op in ready.persist {
            if let Err(e) = slot.disk.apply(op) {
                problems.push((ViolationKind::Durability, format!("node {id}: {e}")));
            }
        }
        // The messages below promise that term, vote and log are on disk.
        if self.opts.check_durability && !ready.messages.is_empty() {
            let hs = slot.disk.persisted.hard_state;
            if hs.term != node.term() || hs.voted_for != node.voted_for() {
                problems.push((
                    ViolationKind::Durability,
                    format!(
                        "node {id} sends messages with term {} vote {:?} while its disk holds term {} vote {:?}",
                        node.term(),
                        node.voted_for(),
                        hs.term,
                        hs.voted_for
                    ),
                ));
            }
            if slot.disk.last_index() != node.last_index() || slot.disk.last_term() != node.last_term() {
                problems.push((
                    ViolationKind::Durability,
                    format!(
                        "node {id} log ends at {}/{} but its disk log at {}/{}",
                        node.last_index(),
                        node.last_term(),
                        slot.disk.last_index(),
                        slot.disk.last_term()
                    ),
                ));
            }
        }
        // 2. Send.
        for (to, msg) in ready.messages {
            self.net.send(&mut self.rng, self.now_ns, Envelope { from: id, to, msg });
        }
        // 3. Install, then apply.
        if let Some(snapshot) = ready.install {
            if let Err(p) = self.checker.on_install(id, &snapshot) {
                problems.push(p);
            }
            slot.state = snapshot.data;
            self.stats.snapshots_installed += 1;
        }
        for entry in &ready.committed {
            if let Err(p) = self.checker.on_apply(id, term, &slot.state, entry) {
                problems.push(p);
            }
            slot.state.apply(entry);
            if let Err(p) = self.checker.on_state(id, &slot.state) {
                problems.push(p);
            }
            if let Payload::Command(c) = entry.payload {
                if Some(c) == self.watched_command {
                    self.watched_applied = true;
                }
            }
            self.stats.applied += 1;
        }
        // 4. Reads: a read index must cover everything applied anywhere
        // before the read was asked for.
        for read in ready.reads {
            let must_cover = slot.reads.remove(&read.ctx).unwrap_or(0);
            if read.index < must_cover || read.index > node.commit_index() {
                problems.push((
                    ViolationKind::StaleRead,
                    format!(
                        "node {id} read ctx {} at index {} but index {must_cover} was applied before the read began \
                         (its commit index is {})",
                        read.ctx,
                        read.index,
                        node.commit_index()
                    ),
                ));
            }
            self.stats.reads_served += 1;
            self.served_reads.push((id, read));
        }
        for ctx in ready.reads_failed {
            slot.reads.remove(&ctx);
            self.stats.reads_failed += 1;
            self.failed_reads.push((id, ctx));
        }
        let (commit, last) = (node.commit_index(), node.last_index());
        if last < slot.max_commit_seen {
            problems.push((
                ViolationKind::CommittedEntryLost,
                format!("node {id} had committed index {} but its log now ends at {last}", slot.max_commit_seen),
            ));
        }
        slot.max_commit_seen = slot.max_commit_seen.max(commit);
        let applied_index = slot.state.applied_index;
        // 5. Election Safety and Leader Completeness.
        let node = self.slots[&id].node.as_ref().expect("still running");
        if node.role() == Role::Leader {
            if let Err(p) = self.checker.on_leader(id, node.term()) {
                problems.push(p);
            }
        }
        for event in &ready.events {
            if let RaftEvent::BecameLeader { term } = event {
                self.stats.elections_won += 1;
                if self.opts.trace {
                    self.trace.push_back(format!("{:>12} node {id} leads term {term}", self.now_ns));
                }
                if let Err(p) = self.checker.check_leader_completeness(node) {
                    problems.push(p);
                }
            }
        }
        // 6. Log Matching against every other running node.
        if self.opts.check_log_matching {
            for (other_id, other) in &self.slots {
                if let (true, Some(other)) = (*other_id != id, other.node.as_ref()) {
                    if let Err(p) = check_log_matching(node, other) {
                        problems.push(p);
                    }
                }
            }
        }
        let compact_due = self.opts.compact_every > 0 && applied_index >= node.first_index() + self.opts.compact_every;
        for (kind, detail) in problems {
            self.record(kind, detail);
        }
        self.events.extend(ready.events.into_iter().map(|e| (id, e)));
        if compact_due {
            self.compact(id);
        }
    }

    /// Forgets checker history below every disk's snapshot.
    pub(super) fn prune_history(&mut self) {
        let floor = self.slots.values().map(|s| s.disk.snapshot_index()).min().unwrap_or(0);
        if floor > 0 {
            self.checker.prune_below(floor);
        }
    }
}

/// A one-line rendering of a message for traces.
pub fn brief(msg: &TestMessage) -> String {
    use crate::raft::Message::*;
    match msg {
        RequestVote { term, pre_vote, last_log_index, last_log_term } => {
            format!("{}Vote? t{term} last {last_log_index}/{last_log_term}", if *pre_vote { "Pre" } else { "" })
        }
        VoteResponse { term, pre_vote, granted } => {
            format!("{}Vote t{term} {}", if *pre_vote { "Pre" } else { "" }, if *granted { "yes" } else { "no" })
        }
        AppendEntries { term, prev_log_index, prev_log_term, entries, leader_commit, read_ctx } => format!(
            "Append t{term} prev {prev_log_index}/{prev_log_term} [{}] commit {leader_commit} read {read_ctx}",
            entries.iter().map(|e| format!("{}/{}", e.index, e.term)).collect::<Vec<_>>().join(" ")
        ),
        AppendResponse { term, success, match_index, conflict_index, conflict_term, read_ctx } => format!(
            "AppendResp t{term} {} match {match_index} conflict {conflict_index}/{conflict_term:?} read {read_ctx}",
            if *success { "ok" } else { "REJECT" }
        ),
        InstallSnapshot { term, snapshot } => {
            format!("Snapshot t{term} up to {}/{}", snapshot.last_index, snapshot.last_term)
        }
        InstallSnapshotResponse { term, last_index } => format!("SnapshotResp t{term} {last_index}"),
        TimeoutNow { term } => format!("TimeoutNow t{term}"),
    }
}
