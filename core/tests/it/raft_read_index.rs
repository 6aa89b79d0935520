//! Linearizable reads with the read-index protocol, thesis §6.4: the leader
//! must have committed an entry of its term, records its commit index, and
//! confirms it still leads with a round of heartbeats before the read is
//! served; reads pending when leadership is lost fail.

use leasesim_core::raft::{Message, ProposeError, ReadReady, Role};
use leasesim_testkit::{RaftCluster, RaftClusterOptions};

fn heartbeat(c: &mut RaftCluster, leader: u64) {
    c.fire_timeout(leader);
    c.deliver_all();
}

#[test]
fn a_read_is_served_once_a_majority_confirms_the_leadership() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    c.propose(1, 5).unwrap();
    c.deliver_all();
    assert_eq!(c.node(1).commit_index(), 2);

    let ctx = c.read_index(1).unwrap();
    // Not yet: only the leader itself has vouched for the round.
    assert!(c.served_reads.is_empty());
    assert_eq!(c.node(1).pending_reads(), 1);
    let round_msgs = c.messages_in_flight().filter(|e| matches!(e.msg, Message::AppendEntries { read_ctx, .. } if read_ctx > 0)).count();
    assert_eq!(round_msgs, 2, "a heartbeat to each follower carries the round");

    // One follower's answer makes a majority.
    c.deliver_where(|e| e.to == 2);
    c.deliver_where(|e| e.from == 2);

    assert_eq!(c.served_reads, vec![(1, ReadReady { ctx, index: 2 })]);
    c.check().unwrap();
}

#[test]
fn a_read_waits_until_the_new_leader_has_committed_in_its_term() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    c.fire_timeout(1);
    while c.deliver_where(|e| matches!(e.msg, Message::RequestVote { .. } | Message::VoteResponse { .. })) > 0 {}
    assert_eq!(c.node(1).role(), Role::Leader);
    assert!(!c.node(1).has_committed_in_term());

    let ctx = c.read_index(1).unwrap();
    assert_eq!(c.node(1).pending_reads(), 1);

    c.deliver_all();
    // Its Noop (index 1) committed; the read index is at least that.
    assert_eq!(c.served_reads, vec![(1, ReadReady { ctx, index: 1 })]);
}

#[test]
fn followers_refuse_reads_and_name_the_leader() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    assert_eq!(c.read_index(2), Err(ProposeError::NotLeader { leader_hint: Some(1) }));
}

#[test]
fn a_lone_voter_serves_reads_at_once() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(1));
    assert!(c.elect(1));
    let ctx = c.read_index(1).unwrap();
    assert_eq!(c.served_reads, vec![(1, ReadReady { ctx, index: 1 })]);
}

#[test]
fn a_cut_off_leader_fails_its_reads_when_it_steps_down() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.isolate(1);
    let ctx = c.read_index(1).unwrap();

    // No one answers; check-quorum makes it step down and the read fails.
    while c.node(1).role() == Role::Leader {
        heartbeat(&mut c, 1);
    }

    assert!(c.served_reads.is_empty());
    assert_eq!(c.failed_reads, vec![(1, ctx)]);
    assert_eq!(c.node(1).pending_reads(), 0);
}

#[test]
fn a_deposed_leader_cannot_confirm_a_read_after_a_newer_write() {
    // Without check-quorum the old leader does not notice on its own.
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.isolate(1);
    assert!(c.elect(2));
    c.propose(2, 7).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 2);
    assert_eq!(c.node(2).commit_index(), 3);
    c.heal();

    // Node 1 still thinks it leads term 1 and starts a read; serving it at
    // its commit index (1) would miss the write at 3. The heartbeat round is
    // answered with term 2, so it steps down and the read fails instead.
    let ctx = c.read_index(1).unwrap();
    c.deliver_all();

    assert_eq!(c.node(1).role(), Role::Follower);
    assert!(c.served_reads.iter().all(|(id, _)| *id != 1));
    assert_eq!(c.failed_reads, vec![(1, ctx)]);
    c.check().unwrap();
}

#[test]
fn the_read_index_covers_every_write_committed_before_the_read() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(5).seed(4));
    let timeout = c.node(1).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some()));
    for cmd in 0..50 {
        let leader = c.leader().unwrap();
        let _ = c.propose(leader, cmd);
        c.run_for(3_000_000);
        let write_committed_at = c.node(leader).commit_index();
        let ctx = c.read_index(leader).unwrap();
        c.run_for(10_000_000);
        let served = c.served_reads.iter().find(|(_, r)| r.ctx == ctx).expect("read served");
        assert!(served.1.index >= write_committed_at);
    }
    // The checker also compared each read index with everything applied
    // anywhere before the read began.
    c.check().unwrap();
}
