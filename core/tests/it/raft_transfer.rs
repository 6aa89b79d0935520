//! Leadership transfer (Raft thesis §3.10), handler by handler: one input,
//! the exact output; then a whole cluster through the testkit.

use std::collections::BTreeSet;

use leasesim_core::raft::{HardState, Message, PersistOp, ProposeError, RaftConfig, RaftNode, Role, TransferError};
use leasesim_testkit::{RaftCluster, RaftClusterOptions, ToyState};

type Node = RaftNode<u64, ToyState>;

fn config(id: u64) -> RaftConfig {
    RaftConfig::new(id, BTreeSet::from([1, 2, 3]))
}

fn ack(term: u64, match_index: u64) -> Message<u64, ToyState> {
    Message::AppendResponse { term, success: true, match_index, conflict_index: 0, conflict_term: None, read_ctx: 0 }
}

/// Node 1 leading term 1 with its Noop at index 1 and one command at 2;
/// node 2 holds both (streamed), node 3 has not answered (probe).
fn leader() -> (Node, u64) {
    let mut n = Node::new(config(1), 7, 0);
    let mut now = n.next_deadline_ns();
    n.tick(now);
    n.step(now, 2, Message::VoteResponse { term: 1, pre_vote: true, granted: true });
    n.step(now, 2, Message::VoteResponse { term: 1, pre_vote: false, granted: true });
    assert_eq!(n.role(), Role::Leader);
    n.step(now, 2, ack(1, 1));
    n.propose(now, 42).unwrap();
    n.take_ready();
    now += 1;
    n.step(now, 2, ack(1, 2));
    n.take_ready();
    assert_eq!(n.commit_index(), 2);
    (n, now)
}

#[test]
fn a_caught_up_target_gets_timeout_now_at_once_and_proposals_stop() {
    let (mut n, now) = leader();

    n.transfer_leadership(now, 2).unwrap();

    let ready = n.take_ready();
    assert_eq!(ready.messages, vec![(2, Message::TimeoutNow { term: 1 })]);
    assert!(ready.persist.is_empty());
    assert_eq!(n.transfer_target(), Some(2));
    assert_eq!(n.propose(now, 43), Err(ProposeError::TransferInProgress { target: 2 }));
    assert_eq!(n.last_index(), 2, "nothing appended while transferring");
}

#[test]
fn a_lagging_target_is_brought_up_to_date_first() {
    let (mut n, now) = leader();

    n.transfer_leadership(now, 3).unwrap();

    // Only the catch-up append: 3 has answered nothing, so from the start.
    let ready = n.take_ready();
    let entries = n.entries(1, 2);
    let append = Message::AppendEntries { term: 1, prev_log_index: 0, prev_log_term: 0, entries, leader_commit: 2, read_ctx: 0 };
    assert_eq!(ready.messages, vec![(3, append)]);

    // Its acknowledgement of the whole log releases TimeoutNow, once.
    n.step(now + 1, 3, ack(1, 2));
    assert_eq!(n.take_ready().messages, vec![(3, Message::TimeoutNow { term: 1 })]);
    n.step(now + 2, 3, ack(1, 2));
    assert!(n.take_ready().messages.iter().all(|(_, m)| !matches!(m, Message::TimeoutNow { .. })));
}

#[test]
fn an_unfinished_transfer_is_abandoned_after_an_election_timeout() {
    let (mut n, now) = leader();
    n.transfer_leadership(now, 3).unwrap();
    n.take_ready();
    let timeout = n.config().election_timeout_max_ns;

    n.tick(now + timeout - 1);
    assert_eq!(n.transfer_target(), Some(3), "still within the timeout");
    // Node 2 keeps the leader's quorum alive (check-quorum).
    n.step(now + timeout - 1, 2, ack(1, 2));
    n.tick(now + timeout + n.config().heartbeat_ns);

    assert_eq!(n.transfer_target(), None);
    assert_eq!(n.role(), Role::Leader);
    assert_eq!(n.propose(now + timeout + n.config().heartbeat_ns, 43), Ok(3));
}

#[test]
fn transfers_that_cannot_be_done_are_refused() {
    let (mut n, now) = leader();
    assert_eq!(n.transfer_leadership(now, 1), Err(TransferError::AlreadyLeader));
    assert_eq!(n.transfer_leadership(now, 9), Err(TransferError::NotAVoter));
    n.transfer_leadership(now, 2).unwrap();
    assert_eq!(n.transfer_leadership(now, 3), Err(TransferError::InProgress { target: 2 }));
    assert_eq!(n.transfer_leadership(now, 2), Ok(()), "asking again for the same target is harmless");

    let mut follower = Node::new(config(2), 1, 0);
    assert_eq!(follower.transfer_leadership(0, 3), Err(TransferError::NotLeader { leader_hint: None }));
}

/// A follower of leader 1 in term 1.
fn follower(id: u64) -> Node {
    let mut n = Node::new(config(id), 3, 0);
    n.step(1, 1, Message::AppendEntries { term: 1, prev_log_index: 0, prev_log_term: 0, entries: vec![], leader_commit: 0, read_ctx: 0 });
    n.take_ready();
    assert_eq!(n.leader_id(), Some(1));
    n
}

#[test]
fn the_target_campaigns_at_once_without_pre_vote_and_says_why() {
    let mut n = follower(2);

    n.step(2, 1, Message::TimeoutNow { term: 1 });

    let ready = n.take_ready();
    assert_eq!(ready.persist, vec![PersistOp::SetHardState(HardState { term: 2, voted_for: Some(2) })]);
    let vote = |to| (to, Message::RequestVote { term: 2, pre_vote: false, last_log_index: 0, last_log_term: 0, transfer: true });
    assert_eq!(ready.messages, vec![vote(1), vote(3)]);
    assert_eq!(n.role(), Role::Candidate);
}

#[test]
fn timeout_now_from_anyone_but_the_leader_is_ignored() {
    let mut n = follower(2);
    n.step(2, 3, Message::TimeoutNow { term: 1 });
    assert!(n.take_ready().is_empty());
    assert_eq!((n.role(), n.term()), (Role::Follower, 1));
}

#[test]
fn a_transfer_vote_passes_the_vote_lease_and_an_ordinary_one_does_not() {
    let request = |transfer| Message::RequestVote { term: 2, pre_vote: false, last_log_index: 0, last_log_term: 0, transfer };

    let mut ordinary = follower(3);
    ordinary.step(2, 2, request(false));
    assert_eq!(ordinary.take_ready().messages, vec![(2, Message::VoteResponse { term: 1, pre_vote: false, granted: false })]);

    let mut transfer = follower(3);
    transfer.step(2, 2, request(true));
    let ready = transfer.take_ready();
    assert_eq!(ready.messages, vec![(2, Message::VoteResponse { term: 2, pre_vote: false, granted: true })]);
    assert_eq!(ready.persist.last(), Some(&PersistOp::SetHardState(HardState { term: 2, voted_for: Some(2) })));
}

#[test]
fn a_cluster_hands_leadership_over_and_keeps_every_entry() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).seed(5));
    assert!(c.elect(1));
    for cmd in 1..=5 {
        c.propose(1, cmd).unwrap();
    }
    // Node 3 hears nothing of the last entries until the transfer.
    c.deliver_all();

    c.transfer_leadership(1, 3).unwrap();
    c.deliver_all();

    assert_eq!(c.leader(), Some(3));
    assert_eq!(c.node(3).term(), 2);
    assert_eq!(c.node(1).role(), Role::Follower);
    assert_eq!(c.propose(3, 6).map(|_| ()), Ok(()));
    c.deliver_all();
    c.fire_timeout(3);
    c.deliver_all();
    assert!(c.applied_everywhere(c.node(3).last_index()));
    assert_eq!(c.state(1).commands, 6);
    c.check().unwrap();
}
