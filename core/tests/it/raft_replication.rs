//! Log replication, Raft §5.3: the consistency check on the previous entry,
//! truncation of a conflicting suffix, fast backtracking (a whole term per
//! round trip), the per-message entry cap, and recovery from lost,
//! duplicated and reordered messages.

use std::collections::BTreeSet;

use leasesim_core::raft::{Entry, Message, Payload, RaftConfig, RaftNode, Role};
use leasesim_testkit::{NetFaults, RaftCluster, RaftClusterOptions, ToyState};

type Node = RaftNode<u64, ToyState>;

fn elected(voters: usize) -> RaftCluster {
    let mut c = RaftCluster::new(RaftClusterOptions::new(voters));
    assert!(c.elect(1));
    c
}

/// The leader's heartbeat goes out and everything settles.
fn heartbeat(c: &mut RaftCluster, leader: u64) {
    c.fire_timeout(leader);
    c.deliver_all();
}

fn entry(term: u64, index: u64, command: u64) -> Entry<u64> {
    Entry { term, index, payload: Payload::Command(command) }
}

#[test]
fn a_proposal_is_replicated_committed_and_applied_everywhere() {
    let mut c = elected(3);

    let index = c.propose(1, 42).unwrap();
    c.deliver_all();

    assert_eq!(index, 2);
    assert_eq!(c.node(1).commit_index(), 2, "committed once a majority stored it");
    heartbeat(&mut c, 1);
    assert!(c.applied_everywhere(2));
    for id in [1, 2, 3] {
        assert_eq!(c.node(id).entries(2, 2), vec![entry(1, 2, 42)]);
        assert_eq!(c.state(id), c.state(1));
    }
    c.check().unwrap();
}

#[test]
fn followers_refuse_proposals_and_point_to_the_leader() {
    let mut c = elected(3);
    let err = c.propose(2, 1).unwrap_err();
    assert_eq!(err, leasesim_core::raft::ProposeError::NotLeader { leader_hint: Some(1) });
}

#[test]
fn a_follower_rejects_an_append_whose_previous_entry_it_lacks() {
    let voters = BTreeSet::from([1, 2, 3]);
    let mut follower = Node::new(RaftConfig::new(2, voters), 1, 0);
    let append = |prev_log_index, prev_log_term, entries| Message::AppendEntries {
        term: 1,
        prev_log_index,
        prev_log_term,
        entries,
        leader_commit: 0,
        read_ctx: 0,
    };

    // §5.3: entry 3 cannot follow an entry 2 we do not have.
    follower.step(10, 1, append(2, 1, vec![entry(1, 3, 7)]));

    let ready = follower.take_ready();
    let reply = ready.messages.iter().find(|(to, _)| *to == 1).map(|(_, m)| m.clone());
    assert_eq!(
        reply,
        Some(Message::AppendResponse { term: 1, success: false, match_index: 2, conflict_index: 1, conflict_term: None, read_ctx: 0 }),
        "short log: retry from our end (index 1)"
    );
    assert_eq!(follower.last_index(), 0);

    // From the start it fits, and the reply acknowledges up to the last entry.
    follower.step(11, 1, append(0, 0, vec![entry(1, 1, 5), entry(1, 2, 6)]));
    let ready = follower.take_ready();
    assert!(matches!(ready.messages[..], [(1, Message::AppendResponse { success: true, match_index: 2, .. })]));
    assert_eq!(follower.last_index(), 2);
}

#[test]
fn a_conflicting_suffix_is_truncated_and_replaced() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    // Node 1 leads term 1 cut off and appends three entries nobody gets.
    c.isolate(1);
    for cmd in [11, 12, 13] {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    // Nodes 2 and 3 elect node 2 (term 2), which commits other entries.
    assert!(c.elect(2));
    c.propose(2, 21).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 2);
    assert_eq!(c.node(1).entry_term(2), Some(1));

    c.heal();
    heartbeat(&mut c, 2);
    heartbeat(&mut c, 2);

    // Node 1's term-1 suffix is gone; its log is node 2's.
    assert_eq!(c.node(1).role(), Role::Follower);
    assert_eq!(c.node(1).last_index(), c.node(2).last_index());
    assert_eq!(c.node(1).entries(1, 10), c.node(2).entries(1, 10));
    assert!(c.disk(1).persisted.entries.iter().all(|e| e.payload != Payload::Command(12)));
    c.check().unwrap();
}

#[test]
fn fast_backtracking_skips_a_whole_conflicting_term_per_round_trip() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| {
        r.check_quorum = false;
        r.max_entries_per_append = 100;
    }));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    // Node 1, cut off, piles up 30 entries of term 1.
    c.isolate(1);
    for cmd in 0..30 {
        c.propose(1, cmd).unwrap();
    }
    // Node 2 leads term 2 and appends 5 entries of its own.
    assert!(c.elect(2));
    for cmd in 100..105 {
        c.propose(2, cmd).unwrap();
    }
    c.deliver_all();
    c.heal();

    let mut rejections = 0;
    for _ in 0..4 {
        c.fire_timeout(2);
        while c.messages_in_flight().count() > 0 {
            rejections +=
                c.messages_in_flight().filter(|e| e.from == 1 && matches!(e.msg, Message::AppendResponse { success: false, .. })).count();
            c.deliver_next();
        }
    }

    // Without the hint the leader would step back one entry per rejection
    // (30 round trips); with it, the whole of term 1 goes in one.
    assert!(rejections <= 2, "{rejections} rejections");
    assert_eq!(c.node(1).entries(1, 100), c.node(2).entries(1, 100));
    c.check().unwrap();
}

#[test]
fn appends_carry_at_most_max_entries_per_append() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.max_entries_per_append = 3));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);

    for cmd in 0..20 {
        c.propose(1, cmd).unwrap();
    }
    let mut largest = 0;
    while c.messages_in_flight().count() > 0 {
        for e in c.messages_in_flight() {
            if let Message::AppendEntries { entries, .. } = &e.msg {
                largest = largest.max(entries.len());
            }
        }
        c.deliver_next();
    }

    assert_eq!(largest, 3);
    assert_eq!(c.node(1).commit_index(), 21);
    heartbeat(&mut c, 1);
    assert!(c.applied_everywhere(21));
    c.check().unwrap();
}

#[test]
fn lost_appends_are_resent_after_a_heartbeat() {
    let mut c = elected(3);
    heartbeat(&mut c, 1);
    c.propose(1, 7).unwrap();
    // Everything for node 3 is lost.
    assert!(c.drop_where(|e| e.to == 3) > 0);
    c.deliver_all();
    assert_eq!(c.node(3).last_index(), 1);

    // The heartbeat's consistency check finds the gap; the leader refills it.
    heartbeat(&mut c, 1);
    heartbeat(&mut c, 1);

    assert_eq!(c.node(3).last_index(), 2);
    assert!(c.applied_everywhere(2));
    c.check().unwrap();
}

#[test]
fn duplicated_delayed_and_reordered_messages_change_nothing() {
    let net = NetFaults { drop_permille: 50, dup_permille: 300, min_delay_ns: 1_000_000, max_delay_ns: 40_000_000 };
    let mut c = RaftCluster::new(RaftClusterOptions::new(5).net(net).seed(7));
    let timeout = c.node(1).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some()));

    let mut proposed = 0;
    for cmd in 0..200 {
        if let Some(leader) = c.leader() {
            if c.propose(leader, cmd).is_ok() {
                proposed += 1;
            }
        }
        c.run_for(5_000_000);
    }
    c.run_for(timeout);

    assert!(c.stats.steps > 2_000);
    assert!(c.net.duplicated > 100);
    assert!(proposed > 150);
    let applied: BTreeSet<u64> = c.ids().iter().map(|&id| c.state(id).applied_index).collect();
    assert!(c.state(1).commands > 150, "commands applied: {}", c.state(1).commands);
    assert_eq!(applied.len(), 1, "every node applied the same prefix: {applied:?}");
    c.check().unwrap();
}

#[test]
fn the_commit_index_reaches_followers_on_the_next_heartbeat() {
    let mut c = elected(3);
    heartbeat(&mut c, 1);
    c.propose(1, 9).unwrap();
    c.deliver_all();
    assert_eq!(c.node(1).commit_index(), 2);
    assert_eq!(c.node(2).commit_index(), 1, "not yet told");

    heartbeat(&mut c, 1);

    assert_eq!(c.node(2).commit_index(), 2);
    assert_eq!(c.node(3).commit_index(), 2);
}

#[test]
fn a_follower_never_commits_beyond_what_it_shares_with_the_leader() {
    let voters = BTreeSet::from([1, 2, 3]);
    let mut follower = Node::new(RaftConfig::new(2, voters), 1, 0);
    // Entries 1..=3 arrive, but the heartbeat that says "commit 3" only
    // vouches for entry 1 (its prev): Figure 2's min(leaderCommit, last new).
    follower.step(
        1,
        1,
        Message::AppendEntries {
            term: 1,
            prev_log_index: 0,
            prev_log_term: 0,
            entries: vec![entry(1, 1, 1), entry(1, 2, 2), entry(1, 3, 3)],
            leader_commit: 0,
            read_ctx: 0,
        },
    );
    follower.step(
        2,
        1,
        Message::AppendEntries { term: 1, prev_log_index: 1, prev_log_term: 1, entries: vec![], leader_commit: 3, read_ctx: 0 },
    );

    assert_eq!(follower.commit_index(), 1);
    let ready = follower.take_ready();
    assert_eq!(ready.committed, vec![entry(1, 1, 1)]);
    // Persisted before the acknowledgements leave.
    assert!(
        matches!(&ready.persist[..], [leasesim_core::raft::PersistOp::SetHardState(_), leasesim_core::raft::PersistOp::Append(e)] if e.len() == 3)
    );
}

/// Appends carrying entries from the leader to `to`, in flight now.
fn appends_in_flight(c: &RaftCluster, to: u64) -> usize {
    c.messages_in_flight()
        .filter(|e| e.from == 1 && e.to == to && matches!(&e.msg, Message::AppendEntries { entries, .. } if !entries.is_empty()))
        .count()
}

/// `max_in_flight_appends` is the pipelining depth: with one entry per
/// append, a leader with a backlog has exactly that many appends out to
/// each follower at once (the window is used), never more, however the
/// answers interleave — and the backlog still drains to every follower.
#[test]
fn the_pipelining_window_is_used_and_never_exceeded() {
    for depth in [1usize, 2, 5] {
        let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| {
            r.max_entries_per_append = 1;
            r.max_in_flight_appends = depth;
        }));
        assert!(c.elect(1));
        heartbeat(&mut c, 1);
        for cmd in 0..20 {
            c.propose(1, cmd).unwrap();
        }
        for peer in [2, 3] {
            assert_eq!(appends_in_flight(&c, peer), depth, "depth {depth}: the window to node {peer} is filled");
        }
        let mut most = 0;
        while c.deliver_next() {
            for peer in [2, 3] {
                most = most.max(appends_in_flight(&c, peer));
            }
        }
        assert_eq!(most, depth, "depth {depth}: at most {depth} appends in flight to one follower");
        heartbeat(&mut c, 1);
        assert!(c.applied_everywhere(c.node(1).last_index()), "depth {depth}: the backlog reached every follower");
        c.check().unwrap();
    }
}
