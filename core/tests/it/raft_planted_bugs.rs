//! Each Raft planted bug (`leasesim_core::bugs::Bugs`) really breaks its
//! rule, and the harness reports it as a violation, not a panic. Each
//! targeted scenario runs once with the bug (violation expected) and once
//! without (clean). `commit_old_term_by_counting` is the Figure 8 story in
//! `raft_safety.rs`. The last tests show random schedules catch some bugs on
//! their own.

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::{ConfChange, Message, Role};
use leasesim_testkit::{run_schedule, RaftCluster, RaftClusterOptions, RaftViolationKind, Schedule};

fn bug(name: &str) -> Bugs {
    let mut bugs = Bugs::default();
    bugs.enable(name).unwrap();
    bugs
}

fn heartbeat(c: &mut RaftCluster, leader: u64) {
    c.fire_timeout(leader);
    c.deliver_all();
}

fn deliver_votes(c: &mut RaftCluster) {
    while c.deliver_where(|e| matches!(e.msg, Message::RequestVote { .. } | Message::VoteResponse { .. })) > 0 {}
}

/// §5.4.1: node 3 missed a committed entry; the leader dies; node 3 asks
/// node 2 for its vote.
fn stale_candidate(bugs: Bugs) -> RaftCluster {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).bugs(bugs));
    assert!(c.elect(1));
    c.isolate(3);
    c.propose(1, 42).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 1);
    assert_eq!(c.state(2).applied_index, 2, "committed and applied without node 3");
    c.crash(1);
    c.heal();
    let lease = c.node(2).config().election_timeout_min_ns;
    c.advance_clock(2, lease);
    for _ in 0..3 {
        c.fire_timeout(3);
        c.deliver_all();
    }
    c
}

#[test]
fn vote_without_log_check_elects_a_leader_missing_a_committed_entry() {
    let c = stale_candidate(bug("vote-without-log-check"));
    assert_eq!(c.node(3).role(), Role::Leader);
    let v = c.check().unwrap_err();
    assert_eq!(v.kind, RaftViolationKind::LeaderCompleteness, "{v}");

    let c = stale_candidate(Bugs::default());
    assert_ne!(c.node(3).role(), Role::Leader);
    c.check().unwrap();
}

/// Nodes 1 and 3 run for term 1 at once; node 2 votes for 1, then crashes
/// before its next input and comes back to node 3's request.
fn double_vote(bugs: Bugs, check_durability: bool) -> RaftCluster {
    let mut opts = RaftClusterOptions::new(3).bugs(bugs).raft(|r| r.pre_vote = false);
    opts.check_durability = check_durability;
    let mut c = RaftCluster::new(opts);
    c.fire_timeout(1);
    c.fire_timeout(3);
    c.deliver_where(|e| e.from == 1 && e.to == 2);
    c.deliver_where(|e| e.from == 2 && e.to == 1);
    c.crash(2);
    c.restart(2);
    c.deliver_where(|e| e.from == 3 && e.to == 2);
    c.deliver_where(|e| e.from == 2 && e.to == 3);
    c
}

#[test]
fn reply_before_persist_breaks_the_durability_contract() {
    // Caught at once: the vote reply leaves while the disk lacks the vote.
    let c = double_vote(bug("reply-before-persist"), true);
    let v = c.check().unwrap_err();
    assert_eq!(v.kind, RaftViolationKind::Durability, "{v}");
    assert!(v.detail.contains("vote Some(1)"), "{v}");
}

#[test]
fn reply_before_persist_lets_a_restarted_node_vote_twice() {
    // With the direct check off, the consequence: two leaders in term 1.
    let c = double_vote(bug("reply-before-persist"), false);
    assert_eq!((c.node(1).role(), c.node(3).role()), (Role::Leader, Role::Leader));
    let v = c.check().unwrap_err();
    assert_eq!(v.kind, RaftViolationKind::ElectionSafety, "{v}");

    let c = double_vote(Bugs::default(), true);
    assert_eq!(c.node(3).role(), Role::Candidate, "node 2 remembered its vote");
    c.check().unwrap();
}

/// Node 1 leads term 1 cut off and appends entries nobody gets; node 2 wins
/// term 2 and commits different ones; then node 1 rejoins.
fn divergent_suffix(bugs: Bugs) -> RaftCluster {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).bugs(bugs).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.isolate(1);
    for cmd in [11, 12, 13] {
        c.propose(1, cmd).unwrap();
    }
    assert!(c.elect(2));
    c.propose(2, 21).unwrap();
    c.deliver_all();
    heartbeat(&mut c, 2);
    c.heal();
    for _ in 0..3 {
        heartbeat(&mut c, 2);
    }
    c
}

#[test]
fn no_truncate_conflict_makes_a_follower_apply_entries_that_were_never_committed() {
    let c = divergent_suffix(bug("no-truncate-conflict"));
    let v = c.check().unwrap_err();
    assert!(matches!(v.kind, RaftViolationKind::StateMachineSafety | RaftViolationKind::LogMatching), "{v}");

    let c = divergent_suffix(Bugs::default());
    assert_eq!(c.node(1).entries(1, 10), c.node(2).entries(1, 10));
    c.check().unwrap();
}

/// Node 1 leads term 1, is cut off (without check-quorum it keeps leading),
/// node 2 wins term 2; node 1 rejoins and hears of term 2.
fn stale_leader_hears_newer_term(bugs: Bugs) -> RaftCluster {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).bugs(bugs).raft(|r| r.check_quorum = false));
    assert!(c.elect(1));
    c.isolate(1);
    assert!(c.elect(2));
    c.heal();
    heartbeat(&mut c, 1);
    c
}

#[test]
fn leader_ignores_higher_term_leaves_two_leaders_in_one_term() {
    let c = stale_leader_hears_newer_term(bug("leader-ignores-higher-term"));
    assert_eq!((c.node(1).role(), c.node(1).term()), (Role::Leader, 2));
    let v = c.check().unwrap_err();
    assert_eq!(v.kind, RaftViolationKind::ElectionSafety, "{v}");

    let c = stale_leader_hears_newer_term(Bugs::default());
    assert_eq!(c.node(1).role(), Role::Follower);
    c.check().unwrap();
}

/// {1,2,3} plus spares 4, 5. Cut into {1,4,5} and {2,3}; leader 1 tries to
/// add 4 and then 5 before the first change commits.
fn two_changes_in_flight(bugs: Bugs) -> RaftCluster {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).spares(2).bugs(bugs));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.partition(&[&[1, 4, 5], &[2, 3]]);
    c.propose_conf_change(1, ConfChange::AddServer(4)).unwrap();
    let second = c.propose_conf_change(1, ConfChange::AddServer(5));
    assert_eq!(second.is_ok(), bugs.unsafe_membership_change);
    c.deliver_all();
    heartbeat(&mut c, 1);
    // Meanwhile 2 and 3, no longer hearing from 1, elect 2 in {1,2,3}.
    let lease = c.node(3).config().election_timeout_min_ns;
    c.advance_clock(3, lease);
    c.fire_timeout(2);
    deliver_votes(&mut c);
    c.deliver_all();
    heartbeat(&mut c, 2);
    c
}

#[test]
fn unsafe_membership_change_lets_two_disjoint_majorities_commit() {
    let c = two_changes_in_flight(bug("unsafe-membership-change"));
    // {1,4,5} is a majority of {1..5}; {2,3} of {1,2,3}.
    assert_eq!(c.node(1).voters().len(), 5);
    assert_eq!(c.node(2).role(), Role::Leader);
    let v = c.check().unwrap_err();
    assert!(matches!(v.kind, RaftViolationKind::LeaderCompleteness | RaftViolationKind::StateMachineSafety), "{v}");

    let c = two_changes_in_flight(Bugs::default());
    // Only "add 4" was accepted, and {1,4} is not a majority of {1,2,3,4}.
    assert_eq!(c.node(1).commit_index(), 1);
    c.check().unwrap();
}

/// Random schedules with the bug on, until one is caught.
fn first_seed_caught(name: &str, seeds: u64) -> Option<(u64, RaftViolationKind)> {
    (0..seeds).find_map(|seed| {
        let mut s = Schedule::random(seed);
        s.bugs = bug(name);
        run_schedule(&s).err().map(|v| (seed, v.kind))
    })
}

#[test]
fn random_schedules_catch_votes_without_log_check() {
    let caught = first_seed_caught("vote-without-log-check", 100);
    assert!(
        matches!(
            caught,
            Some((
                _,
                RaftViolationKind::LeaderCompleteness
                    | RaftViolationKind::StateMachineSafety
                    | RaftViolationKind::ElectionSafety
                    | RaftViolationKind::CommittedEntryLost
            ))
        ),
        "{caught:?}"
    );
}

#[test]
fn random_schedules_catch_no_truncate_conflict() {
    let caught = first_seed_caught("no-truncate-conflict", 100);
    assert!(matches!(caught, Some((_, RaftViolationKind::StateMachineSafety | RaftViolationKind::LogMatching))), "{caught:?}");
}

#[test]
fn random_schedules_catch_reply_before_persist() {
    assert!(matches!(first_seed_caught("reply-before-persist", 10), Some((_, RaftViolationKind::Durability))));
}
