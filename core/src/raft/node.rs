//! The Raft node: its state (Raft Figure 2), the public API the host drives,
//! and the rules every input shares: term handling (§5.1), the durability
//! bookkeeping, handing out committed entries, and the invariant checks run
//! after each input.
//!
//! The per-topic rules live beside it: `election.rs` (§5.2, §9.6, §6.2),
//! `replication.rs` (§5.3, §5.4), `membership.rs` (thesis §4.3),
//! `snapshot.rs` (§7), `read_index.rs` (thesis §6.4).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::log::RaftLog;
use super::progress::Progress;
use super::read_index::ReadState;
use super::transfer::Transfer;
use super::types::*;
use crate::types::{LogIndex, NodeId, Term};

/// One Raft server as a pure state machine. `C` is the application command,
/// `S` the application's snapshot (state machine) type.
pub struct RaftNode<C, S> {
    pub(super) config: RaftConfig,
    /// The only source of randomness: election jitter (§5.2).
    pub(super) rng: ChaCha8Rng,
    /// Latest clock reading seen; inputs never move it backwards.
    pub(super) now_ns: u64,

    // Persistent state (Figure 2): every change leaves as a PersistOp.
    pub(super) term: Term,
    pub(super) voted_for: Option<NodeId>,
    pub(super) log: RaftLog<C>,
    /// The latest snapshot, kept to send to followers that fell behind it.
    pub(super) snapshot: Option<Snapshot<S>>,

    // Volatile state.
    pub(super) role: Role,
    pub(super) leader_id: Option<NodeId>,
    /// Highest index whose entry has been handed to the host in
    /// `Ready::committed` (or covered by an installed snapshot).
    pub(super) handed_out_index: LogIndex,

    // Membership (thesis §4.3): the configuration in force is the latest one
    // in the log, committed or not.
    /// Voters as of the snapshot (or the genesis configuration).
    pub(super) base_voters: BTreeSet<NodeId>,
    pub(super) voters: BTreeSet<NodeId>,
    /// Index of the latest configuration entry in the log (0 if none).
    pub(super) last_conf_index: LogIndex,

    // Timers, on this node's own monotonic clock.
    pub(super) election_deadline_ns: u64,
    pub(super) heartbeat_deadline_ns: u64,
    /// When this node last heard from the leader of its term (thesis §4.2.3
    /// vote lease).
    pub(super) leader_contact_ns: Option<u64>,

    // Candidate state: who answered our (pre-)vote request and how.
    pub(super) votes: BTreeMap<NodeId, bool>,

    // Leader state.
    pub(super) progress: BTreeMap<NodeId, Progress>,
    /// Index of the Noop this leader appended on election (§5.4.2, §8).
    pub(super) term_start_index: LogIndex,
    pub(super) reads: ReadState,
    /// A leadership transfer under way (thesis §3.10), leader only.
    pub(super) transfer: Option<Transfer>,

    // Output.
    pub(super) ready: Ready<C, S>,
    /// Planted bug `reply_before_persist`: hard-state writes held back until
    /// the next input, i.e. after the vote reply has left.
    pub(super) deferred_persist: Vec<PersistOp<C, S>>,
    pub(super) defer_hard_state: bool,
}

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    /// A fresh node with nothing persisted.
    pub fn new(config: RaftConfig, rng_seed: u64, now_ns: u64) -> Self {
        let base_voters = config.voters.clone();
        let mut node = RaftNode {
            rng: ChaCha8Rng::seed_from_u64(rng_seed),
            now_ns,
            term: 0,
            voted_for: None,
            log: RaftLog::new(),
            snapshot: None,
            role: Role::Follower,
            leader_id: None,
            handed_out_index: 0,
            voters: base_voters.clone(),
            base_voters,
            last_conf_index: 0,
            election_deadline_ns: now_ns,
            heartbeat_deadline_ns: now_ns,
            leader_contact_ns: None,
            votes: BTreeMap::new(),
            progress: BTreeMap::new(),
            term_start_index: 0,
            reads: ReadState::default(),
            transfer: None,
            ready: Ready::default(),
            deferred_persist: Vec::new(),
            defer_hard_state: false,
            config,
        };
        node.reset_election_deadline();
        node
    }

    /// A node rebuilt after a crash from exactly what it had persisted. The
    /// commit index restarts at the snapshot; the first `take_ready` carries
    /// the snapshot in `install` so the host rebuilds its state machine the
    /// same way as after an InstallSnapshot.
    pub fn restore(config: RaftConfig, persisted: Persisted<C, S>, rng_seed: u64, now_ns: u64) -> Self {
        let mut node = Self::new(config, rng_seed, now_ns);
        let Persisted { hard_state, snapshot, entries } = persisted;
        node.term = hard_state.term;
        node.voted_for = hard_state.voted_for;
        match snapshot {
            Some(snap) => {
                node.log = RaftLog::restored(snap.last_index, snap.last_term, entries);
                node.base_voters = snap.voters.clone();
                node.handed_out_index = snap.last_index;
                node.ready.install = Some(Box::new(snap.clone()));
                node.snapshot = Some(snap);
            }
            None => node.log = RaftLog::restored(0, 0, entries),
        }
        node.recompute_voters();
        node.ready.events.clear();
        node.check_invariants();
        node
    }

    /// Handles one peer message (Raft §5.1 term rules first, then the
    /// message's own rule).
    pub fn step(&mut self, now_ns: u64, from: NodeId, msg: Message<C, S>) {
        self.begin_input(now_ns);
        if from != self.id() {
            self.defer_hard_state = self.config.bugs.reply_before_persist && matches!(msg, Message::RequestVote { .. });
            if self.check_term(from, &msg) {
                self.dispatch(from, msg);
            }
            self.defer_hard_state = false;
        }
        self.end_input();
    }

    /// Fires due timers: election timeout (followers, candidates) or
    /// heartbeat and check-quorum (leader). Harmless when nothing is due.
    pub fn tick(&mut self, now_ns: u64) {
        self.begin_input(now_ns);
        if self.role == Role::Leader {
            self.tick_leader();
        } else {
            self.tick_election();
        }
        self.end_input();
    }

    /// Appends a command to the leader's log; it is replicated with the next
    /// `take_ready`. Returns its index (committed later, if ever).
    pub fn propose(&mut self, now_ns: u64, command: C) -> Result<LogIndex, ProposeError> {
        self.begin_input(now_ns);
        let result = if let Some(t) = self.transfer {
            Err(ProposeError::TransferInProgress { target: t.target })
        } else if self.role == Role::Leader {
            let index = self.append_new(Payload::Command(command));
            self.maybe_commit();
            Ok(index)
        } else {
            Err(ProposeError::NotLeader { leader_hint: self.leader_id })
        };
        self.end_input();
        result
    }

    /// Proposes a single-server membership change (thesis §4.3).
    pub fn propose_conf_change(&mut self, now_ns: u64, change: ConfChange) -> Result<LogIndex, ProposeError> {
        self.begin_input(now_ns);
        let result = match self.transfer {
            Some(t) => Err(ProposeError::TransferInProgress { target: t.target }),
            None => self.propose_conf_change_inner(change),
        };
        self.end_input();
        result
    }

    /// Starts a linearizable read (thesis §6.4). A later `Ready` carries a
    /// `ReadReady { ctx, .. }` or `ctx` in `reads_failed`.
    pub fn read_index(&mut self, now_ns: u64, ctx: u64) -> Result<(), ProposeError> {
        self.begin_input(now_ns);
        let result = self.read_index_inner(ctx);
        self.end_input();
        result
    }

    /// The host's state as of `applied_index` becomes the snapshot; the log
    /// entries it covers leave memory (Raft §7).
    pub fn compact(&mut self, applied_index: LogIndex, data: S) {
        self.compact_inner(applied_index, data);
        self.check_invariants();
    }

    /// Drains the work for the host: persist first, then send, then apply.
    pub fn take_ready(&mut self) -> Ready<C, S> {
        self.flush_appends();
        std::mem::take(&mut self.ready)
    }

    /// The same work as [`RaftNode::take_ready`], handed over in `spent`
    /// (which must be empty: the host drained it) while the node keeps
    /// `spent`'s vectors for the next batch. A host that hands every batch
    /// back this way allocates no vectors per step for them.
    pub fn swap_ready(&mut self, spent: &mut Ready<C, S>) {
        assert!(spent.is_empty(), "a Ready handed back must have been drained");
        self.flush_appends();
        std::mem::swap(&mut self.ready, spent);
    }

    /// The next time `tick` must be called, on this node's clock.
    pub fn next_deadline_ns(&self) -> u64 {
        if self.role == Role::Leader {
            self.heartbeat_deadline_ns
        } else {
            self.election_deadline_ns
        }
    }

    pub fn id(&self) -> NodeId {
        self.config.id
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn term(&self) -> Term {
        self.term
    }
    pub fn leader_id(&self) -> Option<NodeId> {
        self.leader_id
    }
    pub fn commit_index(&self) -> LogIndex {
        self.log.commit_index
    }
    pub fn last_index(&self) -> LogIndex {
        self.log.last_index()
    }
    /// Term of the last entry (the snapshot's if the log is empty).
    pub fn last_term(&self) -> Term {
        self.log.last_term()
    }
    pub fn voters(&self) -> &BTreeSet<NodeId> {
        &self.voters
    }
    pub fn voted_for(&self) -> Option<NodeId> {
        self.voted_for
    }
    pub fn config(&self) -> &RaftConfig {
        &self.config
    }
    /// Term of the entry at `index`; `None` if compacted away or beyond the
    /// log.
    pub fn entry_term(&self, index: LogIndex) -> Option<Term> {
        if index < self.log.first_index() {
            None
        } else {
            self.log.term_at(index)
        }
    }
    /// The entry at `index` if it is in memory (no clone: for checkers).
    pub fn entry(&self, index: LogIndex) -> Option<&Entry<C>> {
        self.log.get(index)
    }
    /// Clones of the in-memory entries in `[from, to_inclusive]`.
    pub fn entries(&self, from: LogIndex, to_inclusive: LogIndex) -> Vec<Entry<C>> {
        self.log.slice(from, to_inclusive)
    }
    /// First index still in the log (the snapshot's last index + 1).
    pub fn first_index(&self) -> LogIndex {
        self.log.first_index()
    }
    /// Whether this node leads and has committed an entry of its term (the
    /// precondition for membership changes and reads, thesis §4.1, §6.4).
    pub fn has_committed_in_term(&self) -> bool {
        self.role == Role::Leader && self.log.commit_index >= self.term_start_index
    }
    /// Read-index requests waiting for confirmation (leader only).
    pub fn pending_reads(&self) -> usize {
        self.reads.pending.len()
    }

    // ----- shared input bookkeeping -----

    pub(super) fn begin_input(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        // The `reply_before_persist` bug's held-back writes go out now, after
        // the replies that depended on them.
        let deferred = std::mem::take(&mut self.deferred_persist);
        self.ready.persist.extend(deferred);
    }

    pub(super) fn end_input(&mut self) {
        self.hand_out_committed();
        self.check_invariants();
    }

    /// Moves newly committed entries into the Ready, in index order.
    fn hand_out_committed(&mut self) {
        let commit = self.log.commit_index;
        if commit > self.handed_out_index {
            // Cloned straight into the Ready: this runs at every commit on
            // every node, and a slice would copy each entry twice.
            let before = self.ready.committed.len();
            self.ready.committed.extend(self.log.range(self.handed_out_index + 1, commit).cloned());
            invariant_eq!((self.ready.committed.len() - before) as u64, commit - self.handed_out_index);
            self.handed_out_index = commit;
        }
    }

    /// Raft §5.1: a higher term makes this node a follower in it; a lower term
    /// is answered so the sender learns ours. Returns whether the message
    /// should still be handled.
    fn check_term(&mut self, from: NodeId, msg: &Message<C, S>) -> bool {
        let msg_term = msg.term();
        if msg_term > self.term {
            match msg {
                Message::RequestVote { pre_vote, transfer, .. } => {
                    // Thesis §4.2.3: within the minimum election timeout of
                    // hearing from a leader, ignore (pre-)votes entirely, so a
                    // rejoining server cannot depose a healthy leader — unless
                    // that leader asked for the election (§3.10 transfer).
                    if self.in_vote_lease() && !*transfer {
                        self.send(from, Message::VoteResponse { term: self.term, pre_vote: *pre_vote, granted: false });
                        return false;
                    }
                    // A pre-vote changes no one's term (thesis §9.6).
                    if !*pre_vote {
                        self.observe_higher_term(msg_term, None);
                    }
                }
                // A granted pre-vote echoes the term we would campaign in.
                Message::VoteResponse { pre_vote: true, granted: true, .. } => {}
                Message::AppendEntries { .. } | Message::InstallSnapshot { .. } => {
                    self.observe_higher_term(msg_term, Some(from));
                }
                _ => self.observe_higher_term(msg_term, None),
            }
            return true;
        }
        if msg_term < self.term {
            // Planted bug (breaks §5.2): a candidate lets a vote granted in
            // one of its earlier terms through to the tally.
            if self.config.bugs.count_older_term_votes
                && self.role == Role::Candidate
                && matches!(msg, Message::VoteResponse { pre_vote: false, granted: true, .. })
            {
                return true;
            }
            let term = self.term;
            match msg {
                Message::AppendEntries { .. } => self.send(
                    from,
                    Message::AppendResponse { term, success: false, match_index: 0, conflict_index: 0, conflict_term: None, read_ctx: 0 },
                ),
                Message::InstallSnapshot { .. } => self.send(from, Message::InstallSnapshotResponse { term, last_index: 0 }),
                Message::RequestVote { pre_vote, .. } => {
                    self.send(from, Message::VoteResponse { term, pre_vote: *pre_vote, granted: false })
                }
                // Stale responses carry nothing we need; the sender learns our
                // term from our next message to it.
                _ => {}
            }
            return false;
        }
        true
    }

    /// A message from a higher term: step down to follower in that term.
    fn observe_higher_term(&mut self, term: Term, leader: Option<NodeId>) {
        if self.role == Role::Leader && self.config.bugs.leader_ignores_higher_term {
            // Planted bug (breaks §5.1): adopt the term but keep leading.
            self.term = term;
            self.voted_for = None;
            self.persist_hard_state();
            return;
        }
        self.become_follower(term, leader);
    }

    fn dispatch(&mut self, from: NodeId, msg: Message<C, S>) {
        match msg {
            Message::RequestVote { term, pre_vote, last_log_index, last_log_term, .. } => {
                self.handle_request_vote(from, term, pre_vote, last_log_index, last_log_term)
            }
            Message::VoteResponse { term, pre_vote, granted } => self.handle_vote_response(from, term, pre_vote, granted),
            Message::AppendEntries { prev_log_index, prev_log_term, entries, leader_commit, read_ctx, .. } => {
                self.handle_append_entries(from, prev_log_index, prev_log_term, entries, leader_commit, read_ctx)
            }
            Message::AppendResponse { success, match_index, conflict_index, conflict_term, read_ctx, .. } => {
                self.handle_append_response(from, success, match_index, conflict_index, conflict_term, read_ctx)
            }
            Message::InstallSnapshot { snapshot, .. } => self.handle_install_snapshot(from, *snapshot),
            Message::InstallSnapshotResponse { last_index, .. } => self.handle_install_snapshot_response(from, last_index),
            Message::TimeoutNow { .. } => self.handle_timeout_now(from),
        }
    }

    // ----- shared helpers -----

    pub(super) fn send(&mut self, to: NodeId, msg: Message<C, S>) {
        self.ready.messages.push((to, msg));
    }

    pub(super) fn quorum(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// Queues the term and vote for the disk. Must precede any message that
    /// relies on them (the Ready ordering rule does that).
    pub(super) fn persist_hard_state(&mut self) {
        let op = PersistOp::SetHardState(HardState { term: self.term, voted_for: self.voted_for });
        if self.defer_hard_state {
            self.deferred_persist.push(op);
        } else {
            self.ready.persist.push(op);
        }
    }

    /// Queues entries for the disk, merging with a preceding Append.
    pub(super) fn persist_append(&mut self, entries: Vec<Entry<C>>) {
        if entries.is_empty() {
            return;
        }
        if let Some(PersistOp::Append(pending)) = self.ready.persist.last_mut() {
            if pending.last().map(|e| e.index + 1) == entries.first().map(|e| e.index) {
                pending.extend(entries);
                return;
            }
        }
        self.ready.persist.push(PersistOp::Append(entries));
    }

    /// Appends a new entry of the current term to the leader's log.
    pub(super) fn append_new(&mut self, payload: Payload<C>) -> LogIndex {
        let index = self.log.last_index() + 1;
        let is_config = matches!(payload, Payload::Config(_));
        let entry = Entry { term: self.term, index, payload };
        self.log.append([entry.clone()]);
        self.persist_append(vec![entry]);
        if is_config {
            self.recompute_voters();
        }
        index
    }

    pub(super) fn reset_election_deadline(&mut self) {
        let (min, max) =
            (self.config.election_timeout_min_ns, self.config.election_timeout_max_ns.max(self.config.election_timeout_min_ns));
        self.election_deadline_ns = self.now_ns + self.rng.gen_range(min..=max);
    }

    /// Becomes a follower in `term` (>= the current one), following `leader`
    /// if known. A leader's pending reads fail.
    pub(super) fn become_follower(&mut self, term: Term, leader: Option<NodeId>) {
        if term > self.term {
            self.term = term;
            self.voted_for = None;
            self.persist_hard_state();
        }
        let was_leader = self.role == Role::Leader;
        if was_leader {
            self.ready.events.push(RaftEvent::SteppedDown { term: self.term });
        }
        self.fail_reads();
        self.transfer = None;
        self.role = Role::Follower;
        self.leader_id = leader;
        self.progress.clear();
        self.votes.clear();
        if leader.is_some() {
            self.leader_contact_ns = Some(self.now_ns);
        }
        // Figure 2: the election timer restarts on hearing from the leader
        // (or granting a vote), not on merely learning a higher term: a
        // server with a stale log and an inflated term would otherwise keep
        // the up-to-date servers from ever timing out. A former leader had
        // no timer running and starts one.
        if leader.is_some() || was_leader {
            self.reset_election_deadline();
        }
    }
}

/// Accessors the checkers read.
#[cfg(test)]
mod tests {
    use super::super::fixture::{config, entry, leader_with, ELECTED_AT_NS};
    use super::super::types::PersistOp;

    /// The first entry after the snapshot (index 1 here, no snapshot) is in
    /// the log; only indexes below it (compacted, or 0) have no term.
    #[test]
    fn entry_term_answers_from_the_first_index_on() {
        let node = leader_with(config(), vec![entry(1, 1), entry(2, 1)]);
        assert_eq!(node.entry_term(0), None);
        assert_eq!(node.entry_term(1), Some(1), "the first index");
        assert_eq!(node.entry_term(3), Some(2), "the new leader's Noop");
        assert_eq!(node.entry_term(4), None, "beyond the log");
    }

    /// Entries appended within one Ready reach the disk as one Append, one
    /// write, when each continues the one before: no other test had two
    /// appends in one Ready, so a merge that never happened went unseen.
    #[test]
    fn proposals_within_one_ready_reach_the_disk_as_one_append() {
        // Leads term 2 with its Noop at index 2, already drained.
        let mut node = leader_with(config(), vec![entry(1, 1)]);
        assert_eq!(node.propose(ELECTED_AT_NS, 30), Ok(3));
        assert_eq!(node.propose(ELECTED_AT_NS, 40), Ok(4));
        let ready = node.take_ready();
        let appended: Vec<Vec<u64>> = ready
            .persist
            .iter()
            .map(|op| match op {
                PersistOp::Append(entries) => entries.iter().map(|e| e.index).collect(),
                other => panic!("only appends were due, got {other:?}"),
            })
            .collect();
        assert_eq!(appended, vec![vec![3, 4]]);
    }
}
