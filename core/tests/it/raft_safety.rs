//! Safety, Raft §5.4: the election restriction (§5.4.1), committing only
//! entries of the leader's current term by counting (§5.4.2, reproduced step
//! by step from Figure 8), and durability across crashes (§5 "persistent
//! state", the Ready ordering contract).

use std::collections::BTreeSet;

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::{Entry, HardState, Message, Payload, PersistOp, Persisted, RaftConfig, RaftNode, Role};
use leasesim_testkit::{RaftCluster, RaftClusterOptions, RaftViolationKind, ToyState};

type Node = RaftNode<u64, ToyState>;

/// Delivers vote traffic only, until there is none.
fn deliver_votes(c: &mut RaftCluster) {
    while c.deliver_where(|e| matches!(e.msg, Message::RequestVote { .. } | Message::VoteResponse { .. })) > 0 {}
}

/// Times `id` out (as often as needed, at most 3 times) until it leads,
/// delivering only vote traffic so no entries move.
fn win_election_quietly(c: &mut RaftCluster, id: u64) {
    for _ in 0..3 {
        c.fire_timeout(id);
        deliver_votes(c);
        if c.node(id).role() == Role::Leader {
            return;
        }
    }
    panic!("node {id} could not win an election");
}

fn deliver_between(c: &mut RaftCluster, from: u64, to: u64) {
    assert!(c.deliver_where(|e| e.from == from && e.to == to) > 0, "nothing from {from} to {to}");
}

/// Figure 8 up to its step (c), with our terms (each new leader's Noop makes
/// the paper's terms 2, 3, 4 our terms 1, 2, 3). Five servers; one entry
/// per message so we control exactly what reaches whom; check-quorum off so
/// the vote lease does not get in the way of hand-driven elections.
fn figure_8_through_c(bugs: Bugs) -> RaftCluster {
    let mut c = RaftCluster::new(
        RaftClusterOptions::new(5)
            .raft(|r| {
                r.max_entries_per_append = 1;
                r.check_quorum = false;
            })
            .bugs(bugs),
    );
    // Term 1: S1 leads; its Noop (index 1) is committed everywhere.
    assert!(c.elect(1));
    c.fire_timeout(1);
    c.deliver_all();
    assert!(c.applied_everywhere(1));

    // (a) S1 appends A at index 2 and gets it to S2 only.
    c.propose(1, 100).unwrap();
    deliver_between(&mut c, 1, 2);
    deliver_between(&mut c, 2, 1);
    c.drop_where(|e| e.from == 1);
    assert_eq!(c.node(2).entry_term(2), Some(1));

    // (b) S1 crashes. S5 wins term 2 with S3 and S4 (their logs are no
    // more up to date than its own) and appends its Noop at index 2 — a
    // different entry — which reaches no one.
    c.crash(1);
    win_election_quietly(&mut c, 5);
    assert_eq!(c.node(5).term(), 2);
    assert_eq!(c.node(5).entry_term(2), Some(2));
    c.drop_where(|e| e.from == 5);

    // (c) S5 crashes; S1 restarts and wins term 3 (S2, S3, S4 vote), appends
    // its Noop at index 3 and resumes replicating: A reaches S3, so A is now
    // on a majority (S1, S2, S3) — but it is of term 1, not 3.
    c.crash(5);
    c.restart(1);
    win_election_quietly(&mut c, 1);
    assert_eq!(c.node(1).term(), 3);
    deliver_between(&mut c, 1, 2); // S2 appends index 3 (it had index 2)
    deliver_between(&mut c, 2, 1);
    deliver_between(&mut c, 1, 3); // S3 lacks index 2: rejected, backtrack
    deliver_between(&mut c, 3, 1);
    deliver_between(&mut c, 1, 3); // index 2 (A, term 1) alone
    deliver_between(&mut c, 3, 1);
    for id in [1, 2, 3] {
        assert_eq!(c.node(id).entry_term(2), Some(1), "A is on S{id}");
    }
    c
}

#[test]
fn figure_8_an_old_term_entry_on_a_majority_is_not_committed() {
    let mut c = figure_8_through_c(Bugs::default());

    // §5.4.2: A sits on a majority, yet S1 does not count it as committed
    // (having restarted, S1 does not even know index 1 is: commit index 0).
    assert_eq!(c.node(1).commit_index(), 0);

    // (d) S1 crashes before its own-term entry is on a majority. S5 comes
    // back, wins term 4 (S3 and S4 vote: its last term 2 beats their 1) and
    // overwrites A everywhere. That is fine: A was never committed.
    c.drop_where(|_| true);
    c.crash(1);
    c.restart(5);
    win_election_quietly(&mut c, 5);
    assert_eq!(c.node(5).term(), 4);
    c.deliver_all();
    c.fire_timeout(5);
    c.deliver_all();
    for id in [2, 3, 4, 5] {
        assert_eq!(c.node(id).entry_term(2), Some(2), "S{id} holds S5's entry at index 2");
    }
    assert!(c.node(5).commit_index() >= 3);
    c.check().unwrap();
}

#[test]
fn figure_8_once_the_leaders_own_entry_is_on_a_majority_both_are_committed() {
    let mut c = figure_8_through_c(Bugs::default());

    // (e) S1 also gets its term-3 Noop (index 3) to S3 before crashing: now
    // an entry of its term is on a majority, which commits it and A.
    deliver_between(&mut c, 1, 3);
    deliver_between(&mut c, 3, 1);
    assert_eq!(c.node(1).commit_index(), 3);
    assert_eq!(c.state(1).applied_index, 3);

    // S5 can no longer win: S2 and S3 hold a term-3 entry, newer than its log.
    c.drop_where(|_| true);
    c.crash(1);
    c.restart(5);
    for _ in 0..4 {
        c.fire_timeout(5);
        deliver_votes(&mut c);
    }
    assert_ne!(c.node(5).role(), Role::Leader);
    // S2 or S3 can, and keeps A.
    win_election_quietly(&mut c, 2);
    c.deliver_all();
    c.fire_timeout(2);
    c.deliver_all();
    assert_eq!(c.node(5).entries(2, 2), vec![Entry { term: 1, index: 2, payload: Payload::Command(100) }]);
    c.check().unwrap();
}

#[test]
fn figure_8_with_commit_by_counting_the_harness_sees_a_committed_entry_lost() {
    let bugs = Bugs { commit_old_term_by_counting: true, ..Bugs::default() };
    let mut c = figure_8_through_c(bugs);
    // The planted bug counts replicas of A and commits it in term 3.
    assert_eq!(c.node(1).commit_index(), 2);
    assert_eq!(c.state(1).applied_index, 2);

    // (d) as before: S5 wins term 4 without A.
    c.drop_where(|_| true);
    c.crash(1);
    c.restart(5);
    win_election_quietly(&mut c, 5);
    c.deliver_all();

    let v = c.check().unwrap_err();
    assert_eq!(v.kind, RaftViolationKind::LeaderCompleteness, "{v}");
    assert!(v.detail.contains("index 2"), "{v}");
}

#[test]
fn a_vote_goes_only_to_a_candidate_whose_log_is_at_least_as_up_to_date() {
    let voters = BTreeSet::from([1, 2, 3]);
    let persisted = Persisted {
        hard_state: HardState { term: 2, voted_for: None },
        snapshot: None,
        entries: vec![
            Entry { term: 1, index: 1, payload: Payload::Noop },
            Entry { term: 2, index: 2, payload: Payload::Noop },
            Entry { term: 2, index: 3, payload: Payload::Command(1) },
        ],
    };
    let mut votes = Vec::new();
    // §5.4.1: compare last terms first, then lengths.
    for (last_log_index, last_log_term) in [(9, 1), (2, 2), (3, 2), (1, 3)] {
        let mut voter: Node = Node::restore(RaftConfig::new(2, voters.clone()), persisted.clone(), 1, 0);
        voter.step(1, 1, Message::RequestVote { term: 3, pre_vote: false, last_log_index, last_log_term, transfer: false });
        let granted = voter.take_ready().messages.iter().any(|(_, m)| matches!(m, Message::VoteResponse { granted: true, .. }));
        votes.push(granted);
    }
    assert_eq!(votes, vec![false, false, true, true]);
}

#[test]
fn committed_entries_survive_the_leaders_crash() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(5));
    assert!(c.elect(1));
    for cmd in 1..=5 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    assert_eq!(c.node(1).commit_index(), 6);
    // The entries reached a majority, and the leader dies at once.
    c.crash(1);

    // Whoever wins next must hold them (Leader Completeness); the checker
    // verifies it at the moment each leader is elected.
    let timeout = c.node(2).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some_and(|l| c.node(l).commit_index() >= 7)));
    let leader = c.leader().unwrap();
    assert_eq!(c.node(leader).entries(2, 6).len(), 5);
    c.check().unwrap();
}

#[test]
fn a_whole_cluster_restart_loses_nothing_committed() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).seed(3));
    let timeout = c.node(1).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some()));
    for cmd in 0..30 {
        let leader = c.leader().unwrap();
        c.propose(leader, cmd).unwrap();
        c.run_for(2_000_000);
    }
    c.run_for(timeout);
    let before = c.state(1).clone();
    assert!(before.commands >= 30);

    for id in [1, 2, 3] {
        c.crash(id);
    }
    for id in [1, 2, 3] {
        c.restart(id);
        assert_eq!(c.node(id).commit_index(), 0, "the commit index is not persisted");
    }
    assert!(c.run_until(20 * timeout, |c| c.applied_everywhere(before.applied_index)));

    // The checker compares every re-applied entry with the first time round.
    c.check().unwrap();
    assert_eq!(c.state(2).commands, before.commands);
}

#[test]
fn a_vote_is_on_disk_before_the_reply_leaves() {
    let mut voter: Node = Node::new(RaftConfig::new(2, BTreeSet::from([1, 2, 3])), 1, 0);

    voter.step(1, 1, Message::RequestVote { term: 1, pre_vote: false, last_log_index: 0, last_log_term: 0, transfer: false });

    let ready = voter.take_ready();
    assert_eq!(ready.messages, vec![(1, Message::VoteResponse { term: 1, pre_vote: false, granted: true })]);
    // The host writes `persist` before sending `messages`.
    assert_eq!(ready.persist.last(), Some(&PersistOp::SetHardState(HardState { term: 1, voted_for: Some(1) })));
}

#[test]
fn a_node_restored_from_its_disk_is_the_node_that_crashed() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    for cmd in 0..4 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    let (term, vote, entries) = (c.node(2).term(), c.node(2).voted_for(), c.node(2).entries(1, 100));

    c.crash(2);
    c.restart(2);

    let n = c.node(2);
    assert_eq!((n.term(), n.voted_for(), n.entries(1, 100)), (term, vote, entries));
    assert_eq!(n.role(), Role::Follower);
    c.check().unwrap();
}

/// Raft §5.1: a message of an older term is answered with our term, so a
/// stale candidate or leader learns it at once instead of waiting for some
/// later message (liveness: it stops campaigning or leading sooner).
#[test]
fn a_stale_vote_request_or_snapshot_is_answered_with_the_current_term() {
    let mut node: Node = Node::new(RaftConfig::new(2, BTreeSet::from([1, 2, 3])), 1, 0);
    node.step(1, 1, Message::RequestVote { term: 3, pre_vote: false, last_log_index: 0, last_log_term: 0, transfer: false });
    node.take_ready();

    node.step(2, 3, Message::RequestVote { term: 2, pre_vote: false, last_log_index: 9, last_log_term: 2, transfer: false });
    assert_eq!(node.take_ready().messages, vec![(3, Message::VoteResponse { term: 3, pre_vote: false, granted: false })]);

    let snapshot =
        leasesim_core::raft::Snapshot { last_index: 5, last_term: 2, voters: BTreeSet::from([1, 2, 3]), data: ToyState::default() };
    node.step(3, 3, Message::InstallSnapshot { term: 2, snapshot: Box::new(snapshot) });
    assert_eq!(node.take_ready().messages, vec![(3, Message::InstallSnapshotResponse { term: 3, last_index: 0 })]);
}

/// Thesis §9.6: a pre-vote needs the log check only for a *later* term; for
/// the term we are in, a node that has voted (or knows a leader) refuses it
/// like a real vote, or a pre-vote would be granted where the vote cannot be.
#[test]
fn a_pre_vote_for_the_current_term_is_refused_after_voting() {
    let mut node: Node = Node::new(RaftConfig::new(2, BTreeSet::from([1, 2, 3])), 1, 0);
    node.step(1, 1, Message::RequestVote { term: 2, pre_vote: false, last_log_index: 0, last_log_term: 0, transfer: false });
    node.take_ready();
    node.step(2, 3, Message::RequestVote { term: 2, pre_vote: true, last_log_index: 0, last_log_term: 0, transfer: false });
    assert_eq!(node.take_ready().messages, vec![(3, Message::VoteResponse { term: 2, pre_vote: true, granted: false })]);
}
