//! Leader election: Raft §5.2 (randomized timeouts, one vote per term),
//! thesis §9.6 (pre-vote), §4.2.3 (vote lease against disruptive servers)
//! and §6.2 (check-quorum).

use std::collections::BTreeSet;

use leasesim_core::raft::{Message, RaftConfig, RaftEvent, RaftNode, Role};
use leasesim_testkit::{RaftCluster, RaftClusterOptions, ToyState};

type Node = RaftNode<u64, ToyState>;

fn three() -> RaftCluster {
    RaftCluster::new(RaftClusterOptions::new(3))
}

#[test]
fn a_single_voter_elects_itself_at_its_first_timeout() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(1));
    assert_eq!(c.node(1).role(), Role::Follower);

    assert!(c.elect(1));

    let n = c.node(1);
    assert_eq!(n.term(), 1);
    // §5.4.2: the new leader's Noop commits at once (it alone is a majority).
    assert_eq!(n.commit_index(), 1);
    assert!(n.has_committed_in_term());
    assert_eq!(c.state(1).applied_index, 1);
    c.check().unwrap();
}

#[test]
fn the_first_node_to_time_out_wins_and_the_others_follow_it() {
    let mut c = three();

    assert!(c.elect(1));

    for id in [2, 3] {
        let n = c.node(id);
        assert_eq!((n.role(), n.term(), n.leader_id()), (Role::Follower, 1, Some(1)));
        assert_eq!(n.voted_for(), Some(1), "node {id} voted for the winner");
        // The vote is on disk before the reply left (durability contract).
        assert_eq!(c.disk(id).persisted.hard_state.voted_for, Some(1));
    }
    // The leader's Noop is committed once a follower acknowledged it, and
    // followers learn so from the next heartbeat.
    assert_eq!(c.node(1).commit_index(), 1);
    c.fire_timeout(1);
    c.deliver_all();
    assert!(c.applied_everywhere(1));
    assert!(c.events.contains(&(1, RaftEvent::BecameLeader { term: 1 })));
    c.check().unwrap();
}

#[test]
fn election_timeouts_are_drawn_from_the_seeded_rng_within_bounds() {
    let config = RaftConfig::new(1, BTreeSet::from([1, 2, 3]));
    let (min, max) = (config.election_timeout_min_ns, config.election_timeout_max_ns);
    let mut deadlines = BTreeSet::new();
    for seed in 0..50 {
        let now = 7_000_000_000;
        let a = Node::new(config.clone(), seed, now).next_deadline_ns();
        let b = Node::new(config.clone(), seed, now).next_deadline_ns();
        assert_eq!(a, b, "same seed, same timeout");
        assert!((now + min..=now + max).contains(&a), "timeout {} outside [{min}, {max}]", a - now);
        deadlines.insert(a);
    }
    assert!(deadlines.len() > 40, "timeouts are spread out: {} distinct of 50", deadlines.len());
}

#[test]
fn ticking_early_does_nothing() {
    let mut node = Node::new(RaftConfig::new(1, BTreeSet::from([1, 2, 3])), 9, 0);
    let deadline = node.next_deadline_ns();

    node.tick(deadline - 1);

    assert_eq!((node.role(), node.term()), (Role::Follower, 0));
    assert!(node.take_ready().is_empty());
    assert_eq!(node.next_deadline_ns(), deadline);
}

#[test]
fn split_votes_are_broken_by_randomized_timeouts() {
    // Five nodes on a lossy, jittery network, timers running freely: a
    // leader emerges within a few election timeouts, whatever the seed.
    for seed in 0..20 {
        let mut c = RaftCluster::new(RaftClusterOptions::new(5).seed(seed));
        let max = c.node(1).config().election_timeout_max_ns;
        assert!(c.run_until(8 * max, |c| c.leader().is_some()), "seed {seed}: no leader within 8 timeouts");
        c.check().unwrap();
    }
}

#[test]
fn a_failed_pre_vote_leaves_every_term_alone() {
    let mut c = three();
    assert!(c.elect(1));
    c.isolate(3);

    // Thesis §9.6: cut off, node 3 keeps timing out but never wins a
    // pre-vote, so it never bumps its term.
    for _ in 0..5 {
        c.fire_timeout(3);
        c.deliver_all();
    }

    assert_eq!(c.node(3).term(), 1);
    assert_eq!(c.node(3).role(), Role::PreCandidate);
    assert_eq!(c.disk(3).persisted.hard_state.term, 1);
}

#[test]
fn without_pre_vote_a_cut_off_node_inflates_its_term() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.pre_vote = false));
    assert!(c.elect(1));
    c.isolate(3);

    for _ in 0..5 {
        c.fire_timeout(3);
        c.deliver_all();
    }

    assert_eq!(c.node(3).term(), 6, "each timeout starts a real election");
    assert_eq!(c.node(3).role(), Role::Candidate);
}

#[test]
fn a_rejoining_node_cannot_disrupt_a_healthy_leader() {
    let mut c = three();
    assert!(c.elect(1));
    c.isolate(3);
    for _ in 0..3 {
        c.fire_timeout(3);
        c.deliver_all();
    }
    c.heal();

    // Back in touch, node 3 times out once more; its pre-vote is refused
    // (the others hear from a live leader) and the leader's heartbeat
    // brings it back as a follower. Nobody's term moved.
    c.fire_timeout(3);
    c.deliver_all();
    c.fire_timeout(1);
    c.deliver_all();

    assert_eq!(c.leader(), Some(1));
    for id in [1, 2, 3] {
        assert_eq!(c.node(id).term(), 1, "node {id}");
    }
    assert_eq!(c.node(3).leader_id(), Some(1));
    c.check().unwrap();
}

#[test]
fn the_vote_lease_ignores_higher_terms_while_a_leader_is_heard() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.pre_vote = false));
    assert!(c.elect(1));
    c.isolate(3);
    c.fire_timeout(3);
    c.fire_timeout(3);
    assert_eq!(c.node(3).term(), 3);
    c.heal();
    // Node 2 has just heard from the leader.
    c.fire_timeout(1);
    c.deliver_where(|e| e.from == 1 && e.to == 2);

    // Node 3 asks for votes in term 4. Thesis §4.2.3: node 2 heard from a
    // leader within the minimum election timeout, so it refuses without
    // even adopting the term.
    c.fire_timeout(3);
    c.deliver_where(|e| e.from == 3 && e.to == 2);

    assert_eq!((c.node(2).term(), c.node(2).leader_id()), (1, Some(1)));
    let reply_to_3 = c.messages_in_flight().find(|e| e.from == 2 && e.to == 3).map(|e| e.msg.clone());
    assert_eq!(reply_to_3, Some(Message::VoteResponse { term: 1, pre_vote: false, granted: false }));

    // Once the lease has run out (no word from the leader for the minimum
    // election timeout), the same request is granted.
    let min = c.node(2).config().election_timeout_min_ns;
    c.advance_clock(2, min);
    c.fire_timeout(3);
    c.deliver_where(|e| e.from == 3 && e.to == 2);
    assert_eq!((c.node(2).term(), c.node(2).voted_for()), (5, Some(3)));
}

#[test]
fn check_quorum_makes_a_cut_off_leader_step_down() {
    let mut c = three();
    assert!(c.elect(1));
    c.isolate(1);
    let timeout = c.node(1).config().election_timeout_max_ns;
    let heartbeat = c.node(1).config().heartbeat_ns;

    // Thesis §6.2: heartbeats go unanswered; once an election timeout passes
    // without hearing from a majority, the leader steps down.
    let mut waited = 0;
    while c.node(1).role() == Role::Leader {
        c.fire_timeout(1);
        c.deliver_all();
        waited += heartbeat;
        assert!(waited <= timeout + 2 * heartbeat, "still leading after {waited} ns cut off");
    }

    assert_eq!(c.node(1).role(), Role::Follower);
    assert_eq!(c.node(1).term(), 1, "stepping down does not change the term");
    assert!(c.events.contains(&(1, RaftEvent::SteppedDown { term: 1 })));
}

#[test]
fn without_check_quorum_a_cut_off_leader_keeps_leading() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    c.isolate(1);

    for _ in 0..20 {
        c.fire_timeout(1);
        c.deliver_all();
    }

    assert_eq!(c.node(1).role(), Role::Leader);
}

#[test]
fn a_stale_leader_learns_the_new_term_and_steps_down() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    c.isolate(1);
    assert!(c.elect(2));
    assert_eq!(c.node(2).term(), 2);
    assert_eq!(c.node(1).role(), Role::Leader, "node 1 has not heard yet");
    c.heal();

    // Node 1's heartbeat to node 3 is answered with term 2 (§5.1).
    c.fire_timeout(1);
    c.deliver_where(|e| e.from == 1 && e.to == 3);
    c.deliver_where(|e| e.from == 3 && e.to == 1);

    assert_eq!((c.node(1).role(), c.node(1).term()), (Role::Follower, 2));
    c.check().unwrap();
}

#[test]
fn a_node_grants_one_vote_per_term_even_across_a_restart() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.pre_vote = false));
    // Nodes 1 and 3 both start an election in term 1; node 2 hears node 1
    // first and votes for it.
    c.fire_timeout(1);
    c.fire_timeout(3);
    c.deliver_where(|e| e.from == 1 && e.to == 2);
    assert_eq!(c.node(2).voted_for(), Some(1));

    // Node 2 crashes and restarts: its vote was persisted before the reply.
    c.crash(2);
    c.restart(2);
    c.deliver_where(|e| e.from == 3 && e.to == 2);

    assert_eq!(c.node(2).voted_for(), Some(1));
    let to_3: Vec<_> = c.messages_in_flight().filter(|e| e.from == 2 && e.to == 3).map(|e| e.msg.clone()).collect();
    assert_eq!(to_3, vec![Message::VoteResponse { term: 1, pre_vote: false, granted: false }]);
    c.deliver_all();
    assert_eq!(c.leader(), Some(1));
    c.check().unwrap();
}

#[test]
fn a_spare_never_campaigns() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(1));
    assert!(!c.node(4).voters().contains(&4));

    for _ in 0..5 {
        c.fire_timeout(4);
    }

    assert_eq!((c.node(4).role(), c.node(4).term()), (Role::Follower, 0));
    assert_eq!(c.messages_in_flight().count(), 0, "a spare sends nothing until contacted");
    assert!(c.elect(1));
    assert_eq!(c.node(4).term(), 0, "and the voters do not talk to it");
}

#[test]
fn a_pre_candidate_refused_by_a_majority_returns_to_follower() {
    let mut c = three();
    assert!(c.elect(1));
    c.fire_timeout(3);
    assert_eq!(c.node(3).role(), Role::PreCandidate);

    // Both others refuse: the leader and its follower are within their vote
    // lease. A majority of refusals ends the attempt at once.
    c.deliver_where(|e| e.from == 3);
    c.deliver_where(|e| e.to == 3);

    assert_eq!((c.node(3).role(), c.node(3).term()), (Role::Follower, 1));
    assert_eq!(c.node(1).role(), Role::Leader);
    c.check().unwrap();
}

#[test]
fn a_refused_candidate_with_a_higher_term_does_not_restart_the_voters_timer() {
    // Without pre-vote, node 3 comes back from a partition with a stale log
    // and an inflated term. Figure 2: only hearing from the leader or
    // granting a vote restarts the election timer — so node 2 adopts the
    // term, refuses, and still times out on schedule to become leader.
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.pre_vote = false));
    assert!(c.elect(1));
    c.isolate(3);
    c.propose(1, 8).unwrap();
    c.deliver_all();
    c.fire_timeout(3);
    c.fire_timeout(3);
    c.crash(1);
    c.heal();
    let lease = c.node(2).config().election_timeout_min_ns;
    c.advance_clock(2, lease);
    let deadline = c.node(2).next_deadline_ns();

    c.fire_timeout(3);
    c.deliver_where(|e| e.from == 3 && e.to == 2);

    assert_eq!((c.node(2).term(), c.node(2).voted_for()), (c.node(3).term(), None));
    assert_eq!(c.node(2).next_deadline_ns(), deadline, "refusing a vote leaves the timer alone");
    assert!(c.elect(2));
    c.check().unwrap();
}
