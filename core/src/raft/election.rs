//! Leader election: randomized timeouts (Raft §5.2), the up-to-date vote
//! check (§5.4.1), pre-vote (thesis §9.6), the vote lease that keeps a
//! rejoining server from disrupting a healthy leader (thesis §4.2.3), and
//! check-quorum, by which a leader cut off from a majority steps down
//! (thesis §6.2).

use std::fmt::Debug;

use super::node::RaftNode;
use super::progress::Progress;
use super::read_index::ReadState;
use super::types::*;
use crate::types::{LogIndex, NodeId, Term};

/// Where a (pre-)vote count stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tally {
    Won,
    Lost,
    Pending,
}

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    /// Follower/candidate timer: on election timeout, campaign (§5.2) if
    /// allowed to.
    pub(super) fn tick_election(&mut self) {
        if self.now_ns < self.election_deadline_ns {
            return;
        }
        if !self.may_campaign() {
            self.reset_election_deadline();
            return;
        }
        if self.config.pre_vote {
            self.start_pre_vote();
        } else {
            self.start_election();
        }
    }

    /// A voter campaigns. A server outside the configuration in force does
    /// not (a spare waits to be added; a removed server stays quiet, thesis
    /// §4.2.3) — except while the entry that left it out is not known to be
    /// committed: then it may hold the most up-to-date log, which the
    /// remaining voters need to elect anyone (e.g. a leader that appended
    /// its own removal and lost contact). It needs a majority of the new
    /// configuration, its own vote not counting, and once elected it steps
    /// down as soon as the change commits (thesis §4.2.2).
    pub(super) fn may_campaign(&self) -> bool {
        self.voters.contains(&self.id()) || self.last_conf_index > self.log.commit_index
    }

    /// Leader timer: check-quorum, then heartbeats.
    pub(super) fn tick_leader(&mut self) {
        if self.now_ns < self.heartbeat_deadline_ns {
            return;
        }
        self.heartbeat_deadline_ns = self.now_ns + self.config.heartbeat_ns;
        // Thesis §6.2: a leader that has not heard from a majority within an
        // election timeout has probably been partitioned away; stepping down
        // lets its clients find the real leader.
        self.expire_transfer();
        if self.config.check_quorum && !self.quorum_recently_active() {
            self.become_follower(self.term, None);
            return;
        }
        self.leader_heartbeat();
    }

    fn quorum_recently_active(&self) -> bool {
        let window_ns = self.config.election_timeout_max_ns;
        let active = self
            .voters
            .iter()
            .filter(|&&v| v == self.id() || self.progress.get(&v).is_some_and(|p| p.last_heard_ns + window_ns > self.now_ns))
            .count();
        active >= self.quorum()
    }

    /// Thesis §4.2.3 (with check-quorum, as etcd does): a server that has a
    /// live leader ignores requests to vote in a higher term. Only with
    /// check-quorum on, otherwise a leader cut off from the majority would
    /// keep its followers in the lease forever.
    pub(super) fn in_vote_lease(&self) -> bool {
        if !self.config.check_quorum {
            return false;
        }
        match self.role {
            Role::Leader => true,
            Role::Follower => {
                self.leader_id.is_some() && self.leader_contact_ns.is_some_and(|t| self.now_ns < t + self.config.election_timeout_min_ns)
            }
            Role::PreCandidate | Role::Candidate => false,
        }
    }

    /// Thesis §9.6: ask whether peers would vote for us in the next term
    /// before disturbing anyone's term.
    fn start_pre_vote(&mut self) {
        self.role = Role::PreCandidate;
        self.leader_id = None;
        self.votes.clear();
        self.votes.insert(self.id(), true);
        self.reset_election_deadline();
        if self.tally() == Tally::Won {
            self.start_election();
            return;
        }
        self.request_votes(self.term + 1, true, false);
    }

    /// §5.2: a new term, a vote for ourselves (persisted before the requests
    /// leave), and RequestVote to every voter.
    fn start_election(&mut self) {
        self.campaign(false);
    }

    /// Thesis §3.10: the target of a leadership transfer campaigns at once,
    /// without pre-vote; its requests pass voters' vote lease.
    pub(super) fn start_election_for_transfer(&mut self) {
        self.campaign(true);
    }

    fn campaign(&mut self, transfer: bool) {
        self.term += 1;
        self.voted_for = Some(self.id());
        self.persist_hard_state();
        self.role = Role::Candidate;
        self.leader_id = None;
        self.votes.clear();
        self.votes.insert(self.id(), true);
        self.reset_election_deadline();
        if self.tally() == Tally::Won {
            self.become_leader();
            return;
        }
        self.request_votes(self.term, false, transfer);
    }

    fn request_votes(&mut self, term: Term, pre_vote: bool, transfer: bool) {
        let (last_log_index, last_log_term) = (self.log.last_index(), self.log.last_term());
        let peers: Vec<NodeId> = self.voters.iter().copied().filter(|&v| v != self.id()).collect();
        for peer in peers {
            self.send(peer, Message::RequestVote { term, pre_vote, last_log_index, last_log_term, transfer });
        }
    }

    /// Answers a (pre-)vote request whose term is at least ours (a real
    /// vote's higher term was adopted already; a pre-vote's was not).
    pub(super) fn handle_request_vote(&mut self, from: NodeId, term: Term, pre_vote: bool, last_log_index: LogIndex, last_log_term: Term) {
        // §5.4.1: never vote for a candidate whose log lacks entries we hold,
        // which could be committed.
        let log_ok = self.config.bugs.vote_without_log_check || self.log.is_up_to_date(last_log_index, last_log_term);
        // One vote per term (§5.2). A pre-vote for a later term promises
        // nothing, so it only needs the log check (thesis §9.6).
        let free_to_vote = self.voted_for == Some(from) || (self.voted_for.is_none() && self.leader_id.is_none());
        let can_vote = free_to_vote || (pre_vote && term > self.term);
        if can_vote && log_ok {
            if !pre_vote {
                self.voted_for = Some(from);
                self.persist_hard_state();
                self.reset_election_deadline();
            }
            self.send(from, Message::VoteResponse { term, pre_vote, granted: true });
        } else {
            self.send(from, Message::VoteResponse { term: self.term, pre_vote, granted: false });
        }
    }

    pub(super) fn handle_vote_response(&mut self, from: NodeId, term: Term, pre_vote: bool, granted: bool) {
        let relevant = match (self.role, pre_vote) {
            (Role::PreCandidate, true) => (granted && term == self.term + 1) || (!granted && term == self.term),
            // The planted bug counts a grant from an earlier term too.
            (Role::Candidate, false) => term == self.term || (self.config.bugs.count_older_term_votes && granted && term < self.term),
            _ => false,
        };
        if !relevant {
            return;
        }
        self.votes.insert(from, granted);
        match (self.tally(), self.role) {
            (Tally::Won, Role::PreCandidate) => self.start_election(),
            (Tally::Won, _) => self.become_leader(),
            (Tally::Lost, _) => self.become_follower(self.term, None),
            (Tally::Pending, _) => {}
        }
    }

    /// Counts only answers from voters of the configuration in force.
    fn tally(&self) -> Tally {
        let granted = self.voters.iter().filter(|v| self.votes.get(v) == Some(&true)).count();
        let rejected = self.voters.iter().filter(|v| self.votes.get(v) == Some(&false)).count();
        if granted >= self.quorum() {
            Tally::Won
        } else if rejected > self.voters.len() - self.quorum() {
            Tally::Lost
        } else {
            Tally::Pending
        }
    }

    /// §5.3, §8: take over replication and append a Noop of the new term at
    /// once, so that earlier entries get committed through it (§5.4.2).
    pub(super) fn become_leader(&mut self) {
        invariant_eq!(self.role, Role::Candidate);
        self.role = Role::Leader;
        self.leader_id = Some(self.id());
        self.votes.clear();
        self.transfer = None;
        self.reads = ReadState::default();
        let next_index = self.log.last_index() + 1;
        let now_ns = self.now_ns;
        self.progress = self.voters.iter().filter(|&&v| v != self.id()).map(|&v| (v, Progress::new(next_index, now_ns))).collect();
        self.term_start_index = self.append_new(Payload::Noop);
        self.heartbeat_deadline_ns = self.now_ns + self.config.heartbeat_ns;
        self.ready.events.push(RaftEvent::BecameLeader { term: self.term });
        self.maybe_commit();
    }
}

/// Handler-level tests: a (pre-)candidate fed one vote reply, a leader one
/// check-quorum tick.
#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::fixture::{config, leader_with, Node, ELECTED_AT_NS};
    use super::super::types::*;
    use crate::types::Term;

    /// Node 1 campaigns in term 1 without winning, then times out and
    /// campaigns again in term 2: a candidate of term 2 with only its own vote.
    fn candidate_of_term_two(config: RaftConfig) -> Node {
        let disk = Persisted { hard_state: HardState { term: 0, voted_for: None }, snapshot: None, entries: Vec::new() };
        let mut node = Node::restore(config, disk, 7, 0);
        for (term, at_ns) in [(1, ELECTED_AT_NS), (2, 2 * ELECTED_AT_NS)] {
            node.tick(at_ns);
            node.step(at_ns, 2, Message::VoteResponse { term, pre_vote: true, granted: true });
            assert_eq!((node.role(), node.term()), (Role::Candidate, term));
        }
        node.take_ready();
        node
    }

    #[test]
    fn a_grant_from_an_earlier_term_is_not_counted() {
        let mut node = candidate_of_term_two(config());
        node.step(2 * ELECTED_AT_NS, 3, Message::VoteResponse { term: 1, pre_vote: false, granted: true });
        assert_eq!((node.role(), node.term()), (Role::Candidate, 2), "node 3 granted term 1, not term 2");
        node.step(2 * ELECTED_AT_NS, 3, Message::VoteResponse { term: 2, pre_vote: false, granted: true });
        assert_eq!((node.role(), node.term()), (Role::Leader, 2));
    }

    /// Node 1 restored in `term` with no log, its election timeout fired: a
    /// pre-candidate asking for votes in `term + 1`.
    fn pre_candidate_in(config: RaftConfig, term: Term) -> Node {
        let disk = Persisted { hard_state: HardState { term, voted_for: None }, snapshot: None, entries: Vec::new() };
        let mut node = Node::restore(config, disk, 7, 0);
        node.tick(ELECTED_AT_NS);
        assert_eq!((node.role(), node.term()), (Role::PreCandidate, term));
        node.take_ready();
        node
    }

    /// A pre-vote grant echoes the term it was asked for, so a grant carrying
    /// the pre-candidate's own term answers an earlier round (asked while the
    /// node was in the term before) and must not count towards this one.
    #[test]
    fn a_pre_vote_grant_for_an_earlier_round_is_not_counted() {
        let mut node = pre_candidate_in(config(), 1);
        node.step(ELECTED_AT_NS, 2, Message::VoteResponse { term: 1, pre_vote: true, granted: true });
        assert_eq!((node.role(), node.term()), (Role::PreCandidate, 1), "a grant for term 1 is not one for term 2");
        node.step(ELECTED_AT_NS, 2, Message::VoteResponse { term: 2, pre_vote: true, granted: true });
        assert_eq!((node.role(), node.term()), (Role::Candidate, 2));
    }

    /// Five voters, quorum three: the election is lost only once three
    /// voters refuse (more than 5 - 3), not at two. With three voters the
    /// bound 3 - 2 equals 3 / 2, so only a larger cluster tells them apart.
    #[test]
    fn a_candidate_of_five_loses_at_the_third_refusal_not_the_second() {
        let mut config = config();
        config.voters = BTreeSet::from([1, 2, 3, 4, 5]);
        let mut node = pre_candidate_in(config, 0);
        for from in [2, 3] {
            node.step(ELECTED_AT_NS, from, Message::VoteResponse { term: 1, pre_vote: true, granted: true });
        }
        assert_eq!((node.role(), node.term()), (Role::Candidate, 1));
        for from in [2, 3] {
            node.step(ELECTED_AT_NS, from, Message::VoteResponse { term: 1, pre_vote: false, granted: false });
        }
        assert_eq!(node.role(), Role::Candidate, "two refusals of five leave a quorum possible");
        node.step(ELECTED_AT_NS, 4, Message::VoteResponse { term: 1, pre_vote: false, granted: false });
        assert_eq!((node.role(), node.term()), (Role::Follower, 1), "three refusals of five do not");
    }

    /// Check-quorum counts a follower as active while strictly less than the
    /// longest election timeout has passed since the leader heard from it:
    /// at exactly that age the leader steps down, one nanosecond earlier it
    /// stays (followers last heard at the election, `ELECTED_AT_NS`).
    #[test]
    fn check_quorum_steps_down_when_the_quorum_was_last_heard_exactly_one_election_timeout_ago() {
        let window_ns = config().election_timeout_max_ns;
        let mut node = leader_with(config(), Vec::new());
        node.tick(ELECTED_AT_NS + window_ns - 1);
        assert_eq!(node.role(), Role::Leader, "heard from just under a timeout ago");
        let mut node = leader_with(config(), Vec::new());
        node.tick(ELECTED_AT_NS + window_ns);
        assert_eq!((node.role(), node.term()), (Role::Follower, 1), "heard from a whole timeout ago");
    }

    #[test]
    fn the_planted_bug_counts_a_grant_from_an_earlier_term() {
        let mut config = config();
        config.bugs.count_older_term_votes = true;
        let mut node = candidate_of_term_two(config);
        node.step(2 * ELECTED_AT_NS, 3, Message::VoteResponse { term: 1, pre_vote: false, granted: true });
        assert_eq!((node.role(), node.term()), (Role::Leader, 2), "count-older-term-votes tallies the term-1 grant");
    }
}
