//! Log replication (Raft §5.3) and commitment (§5.4.2): what the leader
//! sends each follower, how a follower checks and stores it, how the leader
//! backtracks a whole term per round trip on a mismatch (the conflict
//! index/term hint), and how it decides an entry is committed.

use std::fmt::Debug;

use super::node::RaftNode;
use super::progress::{Progress, ProgressState};
use super::types::*;
use crate::types::{LogIndex, NodeId, Term};

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    /// Sends what each follower is owed: a probe to followers whose position
    /// is unknown, and new entries to followers being streamed to. Runs when
    /// the host takes a Ready, so proposals made in between share messages.
    pub(super) fn flush_appends(&mut self) {
        if self.role != Role::Leader {
            return;
        }
        let last_index = self.log.last_index();
        // Flow control for pipelining: at most `max_in_flight_appends`
        // batches of up to `max_entries_per_append` entries unacknowledged.
        let window = self.config.max_entries_per_append.max(1) as u64 * self.config.max_in_flight_appends.max(1) as u64;
        let due = |pr: &Progress| match pr.state {
            ProgressState::Probe => !pr.probe_sent,
            ProgressState::Replicate => pr.next_index <= last_index && pr.in_flight() < window,
            ProgressState::Snapshot { .. } => false,
        };
        // This runs on every `take_ready` of a leader, and mostly nothing is
        // due: only then are the peers listed (an allocation).
        if !self.progress.values().any(due) {
            return;
        }
        let peers: Vec<NodeId> = self.progress.keys().copied().collect();
        for peer in peers {
            while due(&self.progress[&peer]) {
                self.send_append(peer);
            }
        }
    }

    /// Sends one AppendEntries starting at the follower's next index, or the
    /// snapshot if the entry before it was compacted away (§7).
    pub(super) fn send_append(&mut self, to: NodeId) {
        let Some(pr) = self.progress.get(&to) else {
            return;
        };
        let next_index = pr.next_index;
        let prev_log_index = next_index - 1;
        let Some(prev_log_term) = self.log.term_at(prev_log_index) else {
            self.send_without_prev(to, prev_log_index);
            return;
        };
        let cap = self.config.max_entries_per_append.max(1) as u64;
        let entries = self.log.slice(next_index, (next_index + cap - 1).min(self.log.last_index()));
        let sent = entries.len() as u64;
        if let Some(pr) = self.progress.get_mut(&to) {
            match pr.state {
                ProgressState::Probe => pr.probe_sent = true,
                ProgressState::Replicate => pr.next_index += sent,
                ProgressState::Snapshot { .. } => {}
            }
        }
        let msg = Message::AppendEntries {
            term: self.term,
            prev_log_index,
            prev_log_term,
            entries,
            leader_commit: self.log.commit_index,
            read_ctx: self.reads.round,
        };
        self.send(to, msg);
    }

    /// What a follower is sent when the entry before its next one is not in
    /// the log. Below the log's start it was compacted away: the snapshot
    /// (§7). Past the log's end the follower vouched for entries this
    /// leader lacks, which a correct cluster never does (a success names
    /// entries this leader sent in its term, or the follower's commit
    /// index, which Leader Completeness keeps within this log), and which
    /// `check_invariants` stops at the answer that does it unless a planted
    /// Raft bug is on: two leaders in one term, or a leader elected without
    /// committed entries. Such a follower gets a heartbeat at this log's
    /// end. Before, the leader took it for a compacted log and stopped the
    /// run with "log compacted without a snapshot" (24 of 600 seeds of
    /// vote-reply-across-terms), hiding the violation the judge reports.
    fn send_without_prev(&mut self, to: NodeId, prev_log_index: LogIndex) {
        if prev_log_index < self.log.snapshot_index() {
            self.send_snapshot(to);
            return;
        }
        // The heartbeat is this follower's probe: marked sent, or the
        // replication loop, which sends while a probe is due, sends it for
        // ever within one step (unsafe-membership-change's hunt grew to
        // 24 GB, one message per turn, with no step for the runaway guard).
        if let Some(pr) = self.progress.get_mut(&to) {
            if pr.state == ProgressState::Probe {
                pr.probe_sent = true;
            }
        }
        self.send_empty_append(to, self.log.last_index(), self.log.last_term());
    }

    /// Sends an AppendEntries with no entries after `prev_log_index`: the
    /// heartbeat's message, whatever the follower's progress state.
    pub(super) fn send_empty_append(&mut self, to: NodeId, prev_log_index: LogIndex, prev_log_term: Term) {
        let msg = Message::AppendEntries {
            term: self.term,
            prev_log_index,
            prev_log_term,
            entries: Vec::new(),
            leader_commit: self.log.commit_index,
            read_ctx: self.reads.round,
        };
        self.send(to, msg);
    }

    /// An empty AppendEntries: asserts leadership (resets followers' election
    /// timers, §5.2), carries the commit index, and confirms read-index
    /// rounds. A heartbeat to a streamed follower also detects lost appends:
    /// its `prev` is the last entry sent, so a gap is answered by a rejection.
    pub(super) fn send_heartbeat(&mut self, to: NodeId) {
        let Some(pr) = self.progress.get(&to) else {
            return;
        };
        match pr.state {
            ProgressState::Replicate => {
                let prev_log_index = pr.next_index - 1;
                let Some(prev_log_term) = self.log.term_at(prev_log_index) else {
                    self.send_without_prev(to, prev_log_index);
                    return;
                };
                self.send_empty_append(to, prev_log_index, prev_log_term);
            }
            // Resend the probe (with entries): the last one may be lost.
            ProgressState::Probe => {
                if let Some(pr) = self.progress.get_mut(&to) {
                    pr.probe_sent = false;
                }
                self.send_append(to);
            }
            ProgressState::Snapshot { sent_ns, .. } => self.heartbeat_during_snapshot(to, sent_ns),
        }
    }

    pub(super) fn broadcast_heartbeat(&mut self) {
        let peers: Vec<NodeId> = self.progress.keys().copied().collect();
        for peer in peers {
            self.send_heartbeat(peer);
        }
    }

    /// A message of the current term's leader arrived (AppendEntries or
    /// InstallSnapshot): follow `from` and restart the election timer.
    /// Returns false, and the message is to be dropped, when this node
    /// leads the term itself — two leaders in one term cannot happen
    /// (§5.2) unless a planted bug made it so.
    pub(super) fn accept_leader_contact(&mut self, from: NodeId) -> bool {
        if self.role == Role::Leader {
            return false;
        }
        if self.role != Role::Follower || self.leader_id != Some(from) {
            self.become_follower(self.term, Some(from));
        } else {
            self.leader_contact_ns = Some(self.now_ns);
            self.reset_election_deadline();
        }
        true
    }

    /// Follower side of AppendEntries (§5.3), for a message of our term.
    pub(super) fn handle_append_entries(
        &mut self,
        from: NodeId,
        mut prev_log_index: LogIndex,
        mut prev_log_term: Term,
        mut entries: Vec<Entry<C>>,
        leader_commit: LogIndex,
        read_ctx: u64,
    ) {
        if !self.accept_leader_contact(from) {
            return;
        }
        let commit = self.log.commit_index;
        // Entries up to our commit index already match the leader's (Log
        // Matching and Leader Completeness, §5.4): skip them, which also keeps
        // us from looking below our snapshot.
        if prev_log_index < commit {
            let skip = (commit - prev_log_index) as usize;
            if entries.len() <= skip {
                self.reply_append(from, true, commit, 0, None, read_ctx);
                return;
            }
            entries.drain(..skip);
            prev_log_index = commit;
            prev_log_term = self.log.term_at(commit).expect("the commit index is in the log or the snapshot");
        }
        // §5.3 consistency check: we must hold the entry before the new ones.
        if self.log.term_at(prev_log_index) != Some(prev_log_term) {
            let (conflict_index, conflict_term) = match self.log.term_at(prev_log_index) {
                None => (self.log.last_index() + 1, None),
                Some(term) => (self.log.first_index_of_term_at(prev_log_index, commit + 1), Some(term)),
            };
            self.reply_append(from, false, prev_log_index, conflict_index, conflict_term, read_ctx);
            return;
        }
        let last_new_index = prev_log_index + entries.len() as u64;
        self.store_entries(entries);
        // Figure 2: commit up to what the leader committed, but only as far as
        // the entries this message proved we share with it.
        let new_commit = leader_commit.min(last_new_index);
        if new_commit > self.log.commit_index {
            self.log.commit_index = new_commit;
        }
        self.reply_append(from, true, last_new_index, 0, None, read_ctx);
    }

    /// Stores entries that follow a matching `prev`: those already present
    /// are skipped; at the first conflicting one the suffix is truncated
    /// (§5.3) and the rest appended.
    fn store_entries(&mut self, entries: Vec<Entry<C>>) {
        let Some(first_new) = entries.iter().position(|e| self.log.term_at(e.index) != Some(e.term)) else {
            return;
        };
        let mut entries = entries;
        let mut new_entries = entries.split_off(first_new);
        let first_index = new_entries[0].index;
        let mut config_touched = new_entries.iter().any(|e| matches!(e.payload, Payload::Config(_)));
        if first_index <= self.log.last_index() {
            if self.config.bugs.no_truncate_conflict {
                // Planted bug (breaks §5.3): keep our conflicting entries and
                // append only what lies beyond them.
                let last_index = self.log.last_index();
                new_entries.retain(|e| e.index > last_index);
            } else {
                let raft_bugs_off = !self.any_raft_bug();
                assert!(
                    first_index > self.log.commit_index || !raft_bugs_off,
                    "node {} asked to truncate committed entry {first_index} (commit {})",
                    self.id(),
                    self.log.commit_index
                );
                config_touched |= self.log.iter().any(|e| e.index >= first_index && matches!(e.payload, Payload::Config(_)));
                self.log.truncate_from(first_index);
                self.handed_out_index = self.handed_out_index.min(self.log.commit_index);
                self.ready.persist.push(PersistOp::TruncateFrom(first_index));
            }
        }
        if !new_entries.is_empty() {
            // Any planted Raft bug may break it, as `check_invariants` allows:
            // a second leader of our term, elected without the entries we
            // committed under the first, sends entries of older terms past our
            // commit index (vote-reply-across-terms seed 629 stopped here).
            invariant!(self.any_raft_bug() || new_entries[0].term >= self.log.last_term(), "log terms must not decrease");
            self.log.append(new_entries.iter().cloned());
            self.persist_append(new_entries);
        }
        if config_touched {
            self.recompute_voters();
        }
    }

    fn reply_append(
        &mut self,
        to: NodeId,
        success: bool,
        match_index: LogIndex,
        conflict_index: LogIndex,
        conflict_term: Option<Term>,
        read_ctx: u64,
    ) {
        let term = self.term;
        self.send(to, Message::AppendResponse { term, success, match_index, conflict_index, conflict_term, read_ctx });
    }

    /// Leader side of an AppendEntries reply of our term.
    pub(super) fn handle_append_response(
        &mut self,
        from: NodeId,
        success: bool,
        match_index: LogIndex,
        conflict_index: LogIndex,
        conflict_term: Option<Term>,
        read_ctx: u64,
    ) {
        if self.role != Role::Leader {
            return;
        }
        // Fast backtracking (thesis §5.3 / the Raft lock-service design): skip
        // the follower's whole conflicting term, or to its log end if it is
        // short.
        let hint_next = match conflict_term {
            Some(term) => match self.log.last_index_of_term(term, match_index) {
                Some(index) => index + 1,
                None => conflict_index,
            },
            None => conflict_index,
        }
        .max(1);
        let now_ns = self.now_ns;
        let Some(pr) = self.progress.get_mut(&from) else {
            return;
        };
        pr.last_heard_ns = now_ns;
        pr.read_round_acked = pr.read_round_acked.max(read_ctx);
        let advanced = if success {
            pr.on_ack(match_index)
        } else {
            // On failure `match_index` echoes the rejected `prev_log_index`.
            pr.on_reject(match_index, hint_next);
            false
        };
        if advanced {
            self.maybe_commit();
        }
        if success && self.transfer.is_some_and(|t| t.target == from) && !self.transfer_if_caught_up() {
            // Still behind: keep the target's catch-up going (thesis §3.10).
            self.send_append(from);
        }
        self.advance_reads();
    }

    /// §5.4.2: the leader commits the highest index a majority of voters
    /// hold, but only if that entry is of its own term; earlier entries are
    /// committed indirectly (Figure 8 shows why counting is not enough).
    pub(super) fn maybe_commit(&mut self) {
        if self.role != Role::Leader {
            return;
        }
        let last_index = self.log.last_index();
        let mut matched: Vec<LogIndex> = self
            .voters
            .iter()
            .map(|v| if *v == self.id() { last_index } else { self.progress.get(v).map_or(0, |p| p.match_index) })
            .collect();
        if matched.is_empty() {
            return;
        }
        matched.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = matched[self.quorum() - 1];
        if candidate <= self.log.commit_index {
            return;
        }
        let of_our_term = self.log.term_at(candidate) == Some(self.term);
        if !of_our_term && !self.config.bugs.commit_old_term_by_counting {
            return;
        }
        self.log.commit_index = candidate;
        self.on_leader_commit();
    }

    /// Bookkeeping after the leader's commit index moved.
    fn on_leader_commit(&mut self) {
        if self.has_committed_in_term() {
            self.reads.on_term_committed(self.log.commit_index);
            self.advance_reads();
        }
        self.forget_removed_servers();
        // Thesis §4.2.2: a leader removed from the configuration manages the
        // cluster until the change commits, then steps down.
        if !self.voters.contains(&self.id()) && self.log.commit_index >= self.last_conf_index {
            self.become_follower(self.term, None);
        }
    }

    pub(super) fn any_raft_bug(&self) -> bool {
        let b = &self.config.bugs;
        b.vote_without_log_check
            || b.commit_old_term_by_counting
            || b.reply_before_persist
            || b.no_truncate_conflict
            || b.leader_ignores_higher_term
            || b.unsafe_membership_change
            || b.count_older_term_votes
    }
}

/// Handler-level tests (one input, the exact output): the conflict hints of
/// a rejection on both sides, and pipelining within the in-flight window.
#[cfg(test)]
mod tests {
    use super::super::fixture::{appends, config, entry, leader_with, Node, ELECTED_AT_NS};
    use super::*;

    const NOW: u64 = ELECTED_AT_NS;

    /// Node 1 leads term 5 over [1:t1, 2:t2, 3:t2, 4:t4, 5:t4], its Noop at
    /// 6; its first probe to node 2 went out with prev 5/t4.
    fn leader_of_term_5() -> Node {
        leader_with(config(), vec![entry(1, 1), entry(2, 2), entry(3, 2), entry(4, 4), entry(5, 4)])
    }

    fn reject(conflict_index: LogIndex, conflict_term: Option<Term>) -> Message<u64, ()> {
        Message::AppendResponse { term: 5, success: false, match_index: 5, conflict_index, conflict_term, read_ctx: 0 }
    }

    #[test]
    fn a_rejection_naming_a_term_the_leader_holds_resumes_just_past_its_last_entry_of_that_term() {
        let mut leader = leader_of_term_5();
        // Node 2 holds term 2 from index 2 on, longer than the leader's.
        leader.step(NOW, 2, reject(2, Some(2)));
        assert_eq!(appends(&leader.take_ready()), vec![(2, 3, 2, vec![4, 5, 6])]);
    }

    #[test]
    fn a_rejection_naming_a_term_the_leader_lacks_resumes_at_the_followers_first_entry_of_it() {
        let mut leader = leader_of_term_5();
        leader.step(NOW, 2, reject(3, Some(3)));
        assert_eq!(appends(&leader.take_ready()), vec![(2, 2, 2, vec![3, 4, 5, 6])]);
    }

    #[test]
    fn a_short_followers_rejection_resumes_at_its_log_end() {
        let mut leader = leader_of_term_5();
        leader.step(NOW, 2, reject(3, None));
        assert_eq!(appends(&leader.take_ready()), vec![(2, 2, 2, vec![3, 4, 5, 6])]);
    }

    #[test]
    fn a_stale_rejection_changes_nothing() {
        let mut leader = leader_of_term_5();
        // It answers a probe after 3, but the probe in flight is after 5.
        leader.step(
            NOW,
            2,
            Message::AppendResponse { term: 5, success: false, match_index: 3, conflict_index: 2, conflict_term: Some(2), read_ctx: 0 },
        );
        assert_eq!(appends(&leader.take_ready()), vec![]);
    }

    /// Node 1 leads term 5 (log to its Noop at 6) when node 2 answers with
    /// a success up to 9, entries node 1 never had: what a follower of a
    /// second leader of the same term says (a planted bug's doing). Then
    /// the next heartbeat falls due.
    fn leader_told_of_entries_past_its_end(bugs: crate::bugs::Bugs) -> Node {
        let mut cfg = config();
        cfg.bugs = bugs;
        let heartbeat_ns = cfg.heartbeat_ns;
        let mut leader = leader_with(cfg, vec![entry(1, 1), entry(2, 2), entry(3, 2), entry(4, 4), entry(5, 4)]);
        let ack = Message::AppendResponse { term: 5, success: true, match_index: 9, conflict_index: 0, conflict_term: None, read_ctx: 0 };
        leader.step(NOW, 2, ack);
        assert_eq!(appends(&leader.take_ready()), vec![], "nothing past 6 to send");
        leader.tick(NOW + heartbeat_ns);
        leader
    }

    #[test]
    fn under_a_planted_raft_bug_a_follower_past_the_leaders_end_gets_a_heartbeat_at_that_end() {
        let bugs = crate::bugs::Bugs { count_older_term_votes: true, ..Default::default() };
        let mut leader = leader_told_of_entries_past_its_end(bugs);
        // Node 3's probe (after 5, carrying 6) is resent; node 2, whose next
        // entry would be 10, is sent an empty append after 6 — before, the
        // leader took 9 for a compacted entry and stopped the run ("log
        // compacted without a snapshot").
        assert_eq!(appends(&leader.take_ready()), vec![(2, 6, 5, vec![]), (3, 5, 4, vec![6])]);
    }

    #[test]
    fn a_probed_follower_past_the_leaders_end_is_sent_one_heartbeat_per_probe() {
        let bugs = crate::bugs::Bugs { count_older_term_votes: true, ..Default::default() };
        let mut leader = leader_told_of_entries_past_its_end(bugs);
        leader.take_ready();
        // Node 2 back in Probe with its next entry still past the log's end
        // (after a rejection): the replication loop sends while a probe is
        // due, so the heartbeat must count as the probe. Before, it did not,
        // and one step sent heartbeats without end.
        let pr = leader.progress.get_mut(&2).expect("node 2 is a peer");
        pr.state = ProgressState::Probe;
        pr.probe_sent = false;
        leader.send_append(2);
        assert!(leader.progress[&2].probe_sent, "the heartbeat is the probe");
        assert_eq!(appends(&leader.take_ready()), vec![(2, 6, 5, vec![])], "one heartbeat, at the log's end");
    }

    #[test]
    #[should_panic(expected = "progress of 2 out of range")]
    fn without_a_planted_bug_a_follower_past_the_leaders_end_stops_the_run_at_its_answer() {
        leader_told_of_entries_past_its_end(crate::bugs::Bugs::default());
    }

    /// A follower of term 2 holding [1:t1, 2:t1, 3:t2], committed to 3 by
    /// node 2, is sent [3:t1, 4:t1] after 2/t1 by node 3, a second leader of
    /// term 2 (a planted bug's doing) elected without entry 3: past the
    /// commit index that leaves 4:t1 to follow 3:t2.
    fn follower_sent_older_terms_past_its_commit(bugs: crate::bugs::Bugs) -> Node {
        let mut cfg = config();
        cfg.bugs = bugs;
        let disk = Persisted {
            hard_state: HardState { term: 2, voted_for: None },
            snapshot: None,
            entries: vec![entry(1, 1), entry(2, 1), entry(3, 2)],
        };
        let mut node = Node::restore(cfg, disk, 7, 0);
        let append = |prev_log_index, prev_log_term, entries, leader_commit| Message::AppendEntries {
            term: 2,
            prev_log_index,
            prev_log_term,
            entries,
            leader_commit,
            read_ctx: 0,
        };
        node.step(NOW, 2, append(3, 2, vec![], 3));
        node.take_ready();
        node.step(NOW, 3, append(2, 1, vec![entry(3, 1), entry(4, 1)], 0));
        node
    }

    #[test]
    fn under_a_planted_raft_bug_a_follower_stores_older_terms_past_its_commit() {
        let bugs = crate::bugs::Bugs { count_older_term_votes: true, ..Default::default() };
        let mut node = follower_sent_older_terms_past_its_commit(bugs);
        let ok = Message::AppendResponse { term: 2, success: true, match_index: 4, conflict_index: 0, conflict_term: None, read_ctx: 0 };
        assert_eq!(node.take_ready().messages, vec![(3, ok)]);
    }

    #[test]
    #[should_panic(expected = "log terms must not decrease")]
    fn without_a_planted_bug_older_terms_past_the_commit_stop_the_run() {
        follower_sent_older_terms_past_its_commit(crate::bugs::Bugs::default());
    }

    /// A follower restored with [1:t1, 2:t2, 3:t2, 4:t2] in term 2.
    fn follower() -> Node {
        let disk = Persisted {
            hard_state: HardState { term: 2, voted_for: None },
            snapshot: None,
            entries: vec![entry(1, 1), entry(2, 2), entry(3, 2), entry(4, 2)],
        };
        Node::restore(config(), disk, 7, 0)
    }

    fn append_from_term_3(prev_log_index: LogIndex, prev_log_term: Term, leader_commit: LogIndex) -> Message<u64, ()> {
        Message::AppendEntries { term: 3, prev_log_index, prev_log_term, entries: Vec::new(), leader_commit, read_ctx: 9 }
    }

    #[test]
    fn a_follower_rejects_a_mismatched_prev_with_the_first_index_of_its_conflicting_term() {
        let mut node = follower();
        node.step(NOW, 2, append_from_term_3(4, 3, 0));
        let expected =
            Message::AppendResponse { term: 3, success: false, match_index: 4, conflict_index: 2, conflict_term: Some(2), read_ctx: 9 };
        assert_eq!(node.take_ready().messages, vec![(2, expected)]);
    }

    #[test]
    fn the_conflict_hint_never_reaches_down_to_the_commit_index() {
        let mut node = follower();
        // Through index 2 the leader and this follower agree and commit.
        node.step(NOW, 2, append_from_term_3(2, 2, 2));
        node.take_ready();
        node.step(NOW, 2, append_from_term_3(4, 3, 2));
        let expected =
            Message::AppendResponse { term: 3, success: false, match_index: 4, conflict_index: 3, conflict_term: Some(2), read_ctx: 9 };
        assert_eq!(node.take_ready().messages, vec![(2, expected)]);
    }

    #[test]
    fn a_follower_short_of_prev_answers_with_its_log_end() {
        let mut node = follower();
        node.step(NOW, 2, append_from_term_3(7, 3, 0));
        let expected =
            Message::AppendResponse { term: 3, success: false, match_index: 7, conflict_index: 5, conflict_term: None, read_ctx: 9 };
        assert_eq!(node.take_ready().messages, vec![(2, expected)]);
    }

    /// Node 2 streamed to in batches of one entry, three batches in flight
    /// at most; node 3 still probed (its probe unanswered).
    fn streaming_leader() -> Node {
        let mut cfg = config();
        cfg.max_entries_per_append = 1;
        cfg.max_in_flight_appends = 3;
        let mut leader = leader_with(cfg, vec![entry(1, 1)]);
        let ack = Message::AppendResponse { term: 2, success: true, match_index: 2, conflict_index: 0, conflict_term: None, read_ctx: 0 };
        leader.step(NOW, 2, ack);
        assert_eq!(appends(&leader.take_ready()), vec![], "caught up: nothing owed");
        leader
    }

    #[test]
    fn a_streamed_follower_gets_new_entries_up_to_the_in_flight_window() {
        let mut leader = streaming_leader();
        for command in 0..5 {
            leader.propose(NOW, command).expect("leads");
        }
        assert_eq!(appends(&leader.take_ready()), vec![(2, 2, 2, vec![3]), (2, 3, 2, vec![4]), (2, 4, 2, vec![5])]);
    }

    #[test]
    fn an_ack_in_the_window_frees_one_batch() {
        let mut leader = streaming_leader();
        for command in 0..5 {
            leader.propose(NOW, command).expect("leads");
        }
        leader.take_ready();
        leader.step(
            NOW,
            2,
            Message::AppendResponse { term: 2, success: true, match_index: 3, conflict_index: 0, conflict_term: None, read_ctx: 0 },
        );
        assert_eq!(appends(&leader.take_ready()), vec![(2, 5, 2, vec![6])]);
    }

    /// A heartbeat to a streamed follower whose window is full names the
    /// last entry sent (5), not the next one held back (6): the follower
    /// has 5 or a gap before it, never 6, so any other `prev` is refused
    /// and turns the stream back to probing.
    #[test]
    fn a_heartbeat_behind_a_full_window_names_the_last_entry_sent() {
        let mut leader = streaming_leader();
        for command in 0..5 {
            leader.propose(NOW, command).expect("leads");
        }
        assert_eq!(appends(&leader.take_ready()).len(), 3, "entries 3, 4, 5 in flight; 6 and 7 held back");
        leader.tick(NOW + leader.config.heartbeat_ns);
        let to_2: Vec<_> = appends(&leader.take_ready()).into_iter().filter(|a| a.0 == 2).collect();
        assert_eq!(to_2, vec![(2, 5, 2, vec![])]);
    }
}
