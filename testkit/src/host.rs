//! The harness as a correct host: after every input to a node it carries
//! out the node's Ready in the order the durability contract demands —
//! persist to the node's disk, then send, then install and apply — and runs
//! every safety check on the result.

use leasesim_core::raft::{Entry, Payload, PersistOp, RaftEvent, ReadReady, Role, Snapshot};
use leasesim_core::types::{NodeId, Term};

use crate::checker::{check_log_matching, RaftViolationKind};
use crate::cluster::RaftCluster;
use crate::network::{Envelope, TestMessage};
use crate::toy::ToyState;

impl RaftCluster {
    /// Carries out node `id`'s Ready, step by step, then records every
    /// problem the checks found.
    pub(crate) fn process_ready(&mut self, id: NodeId) {
        let slot = self.slots.get_mut(&id).expect("known node");
        let Some(node) = slot.node.as_mut() else {
            return;
        };
        let ready = node.take_ready();
        let term = node.term();
        let mut problems: Vec<(RaftViolationKind, String)> = Vec::new();
        self.persist(id, ready.persist, !ready.messages.is_empty(), &mut problems);
        self.send(id, ready.messages);
        self.install_and_apply(id, term, ready.install.map(|s| *s), &ready.committed, &mut problems);
        self.serve_reads(id, ready.reads, ready.reads_failed, &mut problems);
        self.check_commit_kept(id, &mut problems);
        self.check_leadership(id, &ready.events, &mut problems);
        self.check_log_matching_with_others(id, &mut problems);
        let slot = &self.slots[&id];
        let node = slot.node.as_ref().expect("still running");
        let compact_due = self.opts.compact_every > 0 && slot.state.applied_index >= node.first_index() + self.opts.compact_every;
        for (kind, detail) in problems {
            self.record(kind, detail);
        }
        self.events.extend(ready.events.into_iter().map(|e| (id, e)));
        if compact_due {
            self.compact(id);
        }
    }

    /// Step 1: persist, in order; messages about to be sent promise that
    /// term, vote and log are on disk.
    fn persist(&mut self, id: NodeId, ops: Vec<PersistOp<u64, ToyState>>, sends: bool, problems: &mut Vec<(RaftViolationKind, String)>) {
        let slot = self.slots.get_mut(&id).expect("known node");
        for op in ops {
            if let Err(e) = slot.disk.apply(op) {
                problems.push((RaftViolationKind::Durability, format!("node {id}: {e}")));
            }
        }
        if !self.opts.check_durability || !sends {
            return;
        }
        let node = slot.node.as_ref().expect("running");
        let hs = slot.disk.persisted.hard_state;
        if hs.term != node.term() || hs.voted_for != node.voted_for() {
            problems.push((
                RaftViolationKind::Durability,
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
                RaftViolationKind::Durability,
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

    /// Step 2: send.
    fn send(&mut self, id: NodeId, messages: Vec<(NodeId, TestMessage)>) {
        for (to, msg) in messages {
            self.net.send(&mut self.rng, self.now_ns, Envelope { from: id, to, msg });
        }
    }

    /// Step 3: install, then apply.
    fn install_and_apply(
        &mut self,
        id: NodeId,
        term: Term,
        install: Option<Snapshot<ToyState>>,
        committed: &[Entry<u64>],
        problems: &mut Vec<(RaftViolationKind, String)>,
    ) {
        let slot = self.slots.get_mut(&id).expect("known node");
        if let Some(snapshot) = install {
            if let Err(p) = self.checker.on_install(id, &snapshot) {
                problems.push(p);
            }
            slot.state = snapshot.data;
            self.stats.snapshots_installed += 1;
        }
        for entry in committed {
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
    }

    /// Step 4, reads: a read index must cover everything applied anywhere
    /// before the read was asked for.
    fn serve_reads(&mut self, id: NodeId, reads: Vec<ReadReady>, failed: Vec<u64>, problems: &mut Vec<(RaftViolationKind, String)>) {
        let slot = self.slots.get_mut(&id).expect("known node");
        let node = slot.node.as_ref().expect("running");
        for read in reads {
            let must_cover = slot.reads.remove(&read.ctx).unwrap_or(0);
            if read.index < must_cover || read.index > node.commit_index() {
                problems.push((
                    RaftViolationKind::StaleRead,
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
        for ctx in failed {
            slot.reads.remove(&ctx);
            self.stats.reads_failed += 1;
            self.failed_reads.push((id, ctx));
        }
    }

    /// A committed entry is never lost: the log never again ends below the
    /// highest commit index the server reached.
    fn check_commit_kept(&mut self, id: NodeId, problems: &mut Vec<(RaftViolationKind, String)>) {
        let slot = self.slots.get_mut(&id).expect("known node");
        let node = slot.node.as_ref().expect("running");
        let (commit, last) = (node.commit_index(), node.last_index());
        if last < slot.max_commit_seen {
            problems.push((
                RaftViolationKind::CommittedEntryLost,
                format!("node {id} had committed index {} but its log now ends at {last}", slot.max_commit_seen),
            ));
        }
        slot.max_commit_seen = slot.max_commit_seen.max(commit);
    }

    /// Step 5: Election Safety and Leader Completeness.
    fn check_leadership(&mut self, id: NodeId, events: &[RaftEvent], problems: &mut Vec<(RaftViolationKind, String)>) {
        let node = self.slots[&id].node.as_ref().expect("still running");
        if node.role() == Role::Leader {
            if let Err(p) = self.checker.on_leader(id, node.term()) {
                problems.push(p);
            }
        }
        for event in events {
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
    }

    /// Step 6: Log Matching against every other running node.
    fn check_log_matching_with_others(&self, id: NodeId, problems: &mut Vec<(RaftViolationKind, String)>) {
        if !self.opts.check_log_matching {
            return;
        }
        let node = self.slots[&id].node.as_ref().expect("still running");
        for (other_id, other) in &self.slots {
            if let (true, Some(other)) = (*other_id != id, other.node.as_ref()) {
                if let Err(p) = check_log_matching(node, other) {
                    problems.push(p);
                }
            }
        }
    }

    /// Forgets checker history below every disk's snapshot.
    pub(crate) fn prune_history(&mut self) {
        let floor = self.slots.values().map(|s| s.disk.snapshot_index()).min().unwrap_or(0);
        if floor > 0 {
            self.checker.prune_below(floor);
        }
    }
}

/// A one-line rendering of a message for traces.
pub fn brief(msg: &TestMessage) -> String {
    use leasesim_core::raft::Message::*;
    match msg {
        RequestVote { term, pre_vote, last_log_index, last_log_term, transfer } => {
            let why = if *transfer { " (transfer)" } else { "" };
            format!("{}Vote? t{term} last {last_log_index}/{last_log_term}{why}", if *pre_vote { "Pre" } else { "" })
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
