//! Single-server membership changes, thesis §4.3 (and §4.1's rule, from the
//! 2015 erratum, that a leader first commits an entry of its own term): a
//! configuration is used as soon as it is appended, one change at a time; a
//! removed leader steps down once its removal commits; servers learn the
//! configuration from the log or from a snapshot.

use std::collections::BTreeSet;

use leasesim_core::raft::{ConfChange, Message, ProposeError, RaftEvent, Role};
use leasesim_testkit::{RaftCluster, RaftClusterOptions};

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

fn heartbeat(c: &mut RaftCluster, leader: u64) {
    c.fire_timeout(leader);
    c.deliver_all();
}

fn deliver_votes(c: &mut RaftCluster) {
    while c.deliver_where(|e| matches!(e.msg, Message::RequestVote { .. } | Message::VoteResponse { .. })) > 0 {}
}

#[test]
fn an_added_spare_catches_up_and_can_lead() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(1));
    assert!(c.elect(1));
    for cmd in 0..5 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();

    let index = c.propose_conf_change(1, ConfChange::AddServer(4)).unwrap();
    // In force on the leader from the moment it is appended.
    assert_eq!(c.node(1).voters(), &set(&[1, 2, 3, 4]));
    c.deliver_all();
    heartbeat(&mut c, 1);

    assert!(c.node(1).commit_index() >= index);
    assert_eq!(c.node(4).voters(), &set(&[1, 2, 3, 4]));
    assert_eq!(c.node(4).entries(1, 100), c.node(1).entries(1, 100));
    assert!(c.applied_everywhere(index));

    // The new voter is a full member: with the leader gone it can win.
    c.crash(1);
    let lease = c.node(2).config().election_timeout_min_ns;
    c.advance_clock(2, lease);
    c.advance_clock(3, lease);
    assert!(c.elect(4));
    c.check().unwrap();
}

#[test]
fn a_removed_follower_stops_counting_and_stays_quiet() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    let index = c.propose_conf_change(1, ConfChange::RemoveServer(3)).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 1);

    // The leader kept replicating to 3 until the removal committed, then sent
    // it a last heartbeat: 3 knows it is out, and that this is final.
    assert_eq!(c.node(3).voters(), &set(&[1, 2]));
    assert!(c.node(3).commit_index() >= index);
    c.drop_where(|_| true);
    for _ in 0..3 {
        c.fire_timeout(3);
    }
    assert_eq!(c.messages_in_flight().filter(|e| e.from == 3).count(), 0, "it never campaigns");

    // Two voters now: 1 and 2 commit without 3.
    c.crash(3);
    let next = c.propose(1, 77).unwrap();
    c.deliver_all();
    assert_eq!(c.node(1).commit_index(), next);

    // Restarted, 3 no longer knows its removal committed (the commit index
    // is not persisted), so it may ask for votes: it cannot disturb anyone.
    c.restart(3);
    for _ in 0..3 {
        c.fire_timeout(3);
        c.deliver_all();
    }
    assert_eq!((c.leader(), c.node(1).term()), (Some(1), 1));
    assert_ne!(c.node(3).role(), Role::Leader);
    c.check().unwrap();
}

#[test]
fn a_leader_cut_off_after_appending_its_own_removal_can_still_finish_it() {
    // The leader (3) appends "remove 3" (config {1,2} → {2} here) and is cut
    // off before anyone gets it; check-quorum makes it step down. Node 2,
    // restarted without the entry, needs 3's vote, and 3's log is longer:
    // only 3 can be elected, so it must be allowed to campaign although it
    // is not in its own configuration.
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(3));
    c.propose_conf_change(3, ConfChange::RemoveServer(1)).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 3);
    assert_eq!(c.node(2).voters(), &set(&[2, 3]));
    c.isolate(3);
    c.propose_conf_change(3, ConfChange::RemoveServer(3)).unwrap();
    while c.node(3).role() == Role::Leader {
        heartbeat(&mut c, 3);
    }
    c.heal();

    let timeout = c.node(2).config().election_timeout_max_ns;
    assert!(c.run_until(20 * timeout, |c| c.node(2).role() == Role::Leader && c.node(2).has_committed_in_term()));
    assert_eq!(c.node(2).voters(), &set(&[2]));
    assert_eq!(c.node(3).role(), Role::Follower);
    c.check().unwrap();
}

#[test]
fn a_change_waits_for_a_committed_entry_of_the_leaders_term() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(1));
    c.fire_timeout(1);
    deliver_votes(&mut c);
    assert_eq!(c.node(1).role(), Role::Leader);
    assert!(!c.node(1).has_committed_in_term(), "its Noop has not reached anyone yet");

    assert_eq!(c.propose_conf_change(1, ConfChange::AddServer(4)), Err(ProposeError::ConfChangeRefused));

    c.deliver_all();
    assert!(c.node(1).has_committed_in_term());
    assert!(c.propose_conf_change(1, ConfChange::AddServer(4)).is_ok());
}

#[test]
fn only_one_change_may_be_uncommitted_at_a_time() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(2));
    assert!(c.elect(1));

    c.propose_conf_change(1, ConfChange::AddServer(4)).unwrap();
    assert_eq!(c.propose_conf_change(1, ConfChange::AddServer(5)), Err(ProposeError::ConfChangeRefused));

    c.deliver_all();
    assert!(c.propose_conf_change(1, ConfChange::AddServer(5)).is_ok());
    c.deliver_all();
    heartbeat(&mut c, 1);
    assert_eq!(c.node(5).voters(), &set(&[1, 2, 3, 4, 5]));
    c.check().unwrap();
}

#[test]
fn changes_that_would_change_nothing_are_refused() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(1));
    assert!(c.elect(1));
    let refused = Err(ProposeError::ConfChangeRefused);
    assert_eq!(c.propose_conf_change(1, ConfChange::AddServer(1)), refused);
    assert_eq!(c.propose_conf_change(1, ConfChange::RemoveServer(9)), refused);
    assert_eq!(c.propose_conf_change(1, ConfChange::RemoveServer(1)), refused, "the last voter stays");
}

#[test]
fn a_follower_uses_a_configuration_as_soon_as_it_appends_it() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(1));
    assert!(c.elect(1));

    c.propose_conf_change(1, ConfChange::AddServer(4)).unwrap();
    c.deliver_where(|e| e.from == 1 && e.to == 2);

    let n2 = c.node(2);
    assert!(n2.commit_index() < n2.last_index(), "not committed yet");
    assert_eq!(n2.voters(), &set(&[1, 2, 3, 4]));
    assert!(c.events.contains(&(2, RaftEvent::ConfigChanged { voters: set(&[1, 2, 3, 4]) })));
}

#[test]
fn an_uncommitted_configuration_is_undone_when_its_entry_is_truncated() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(5).spares(1).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    // S1 appends "add 6" and only S2 receives it; then S1 dies.
    c.propose_conf_change(1, ConfChange::AddServer(6)).unwrap();
    c.deliver_where(|e| e.from == 1 && e.to == 2);
    c.drop_where(|_| true);
    c.crash(1);
    assert_eq!(c.node(2).voters(), &set(&[1, 2, 3, 4, 5, 6]));

    // S3 wins with S4 and S5; its Noop overwrites the change on S2.
    c.fire_timeout(3);
    deliver_votes(&mut c);
    assert_eq!(c.node(3).role(), Role::Leader);
    c.deliver_all();
    heartbeat(&mut c, 3);

    assert_eq!(c.node(2).voters(), &set(&[1, 2, 3, 4, 5]));
    assert_eq!(c.node(2).entries(1, 10), c.node(3).entries(1, 10));
    c.check().unwrap();
}

#[test]
fn a_leader_that_removes_itself_steps_down_once_the_removal_commits() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));

    let index = c.propose_conf_change(1, ConfChange::RemoveServer(1)).unwrap();
    // Thesis §4.2.2: until then it still leads, without counting itself.
    assert_eq!(c.node(1).role(), Role::Leader);
    assert!(!c.node(1).voters().contains(&1));
    c.deliver_all();

    assert!(c.node(1).commit_index() >= index);
    assert_eq!(c.node(1).role(), Role::Follower);
    assert!(c.events.contains(&(1, RaftEvent::SteppedDown { term: 1 })));

    // The remaining two elect a leader; node 1 never campaigns again.
    let timeout = c.node(2).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some_and(|l| l != 1)));
    assert!(c.events.iter().all(|(id, e)| !(*id == 1 && matches!(e, RaftEvent::BecameLeader { term } if *term > 1))));
    c.check().unwrap();
}

#[test]
fn a_spare_learns_the_configuration_from_a_snapshot() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(2));
    assert!(c.elect(1));
    // 4 joins; then the leader compacts its log past that change.
    c.propose_conf_change(1, ConfChange::AddServer(4)).unwrap();
    for cmd in 0..10 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    heartbeat(&mut c, 1);
    c.compact(1);
    assert!(c.node(1).first_index() > 3);

    // 5 joins: everything it needs from before is only in the snapshot,
    // whose configuration ({1,2,3,4}) its genesis set ({1,2,3}) lacks.
    c.propose_conf_change(1, ConfChange::AddServer(5)).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 1);
    heartbeat(&mut c, 1);

    assert!(c.stats.snapshots_installed >= 1);
    assert_eq!(c.node(5).voters(), &set(&[1, 2, 3, 4, 5]));
    assert_eq!(c.state(5), c.state(1));
    c.check().unwrap();
}
