//! Log compaction and snapshots, Raft §7: compacting drops covered entries
//! from memory and disk; a follower that needs compacted entries gets the
//! snapshot; a restarted node rebuilds its state machine from the persisted
//! snapshot; memory stays bounded in long runs.

use std::collections::BTreeSet;

use leasesim_core::raft::{Entry, HardState, Message, Payload, PersistOp, Persisted, RaftConfig, RaftNode, Snapshot};
use leasesim_testkit::{Envelope, RaftCluster, RaftClusterOptions, ToyState};

type Node = RaftNode<u64, ToyState>;

fn heartbeat(c: &mut RaftCluster, leader: u64) {
    c.fire_timeout(leader);
    c.deliver_all();
}

fn entry(term: u64, index: u64) -> Entry<u64> {
    Entry { term, index, payload: Payload::Command(index * 10) }
}

fn state_at(index: u64) -> ToyState {
    ToyState { applied_index: index, commands: index, hash: index }
}

/// A follower (id 2 of {1,2,3}) holding `entries`, in term `term`.
fn follower(term: u64, entries: Vec<Entry<u64>>) -> Node {
    let persisted = Persisted { hard_state: HardState { term, voted_for: None }, snapshot: None, entries };
    Node::restore(RaftConfig::new(2, BTreeSet::from([1, 2, 3])), persisted, 5, 0)
}

#[test]
fn compaction_drops_covered_entries_and_persists_a_snapshot() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    for cmd in 0..10 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    let applied = c.state(1).applied_index;
    assert_eq!(applied, 11);

    c.compact(1);

    let n = c.node(1);
    assert_eq!(n.first_index(), 12);
    assert_eq!(n.entry_term(11), None, "compacted away");
    assert!(n.entries(1, 11).is_empty());
    let disk = &c.disk(1).persisted;
    let snapshot = disk.snapshot.as_ref().expect("snapshot on disk");
    assert_eq!((snapshot.last_index, snapshot.last_term), (11, 1));
    assert_eq!(snapshot.data, *c.state(1));
    assert_eq!(snapshot.voters, BTreeSet::from([1, 2, 3]));
    assert!(disk.entries.is_empty());
    c.check().unwrap();
}

#[test]
fn a_follower_behind_the_snapshot_receives_it() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.isolate(3);
    for cmd in 0..20 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    c.compact(1);
    c.propose(1, 99).unwrap();
    c.deliver_all();
    c.heal();

    // The heartbeat finds node 3's gap; backtracking reaches below the
    // leader's first index, so the snapshot goes instead of entries.
    heartbeat(&mut c, 1);
    heartbeat(&mut c, 1);

    assert_eq!(c.stats.snapshots_installed, 1);
    let n3 = c.node(3);
    assert_eq!(n3.first_index(), 22, "its log starts after the snapshot");
    assert_eq!(n3.entries(22, 22), c.node(1).entries(22, 22));
    assert_eq!(c.state(3), c.state(1));
    c.check().unwrap();
}

/// Delivers everything in flight, first losing every message `lost`
/// matches (before each delivery, so none gets through); returns how many
/// were lost.
fn deliver_all_losing(c: &mut RaftCluster, lost: impl Fn(&Envelope) -> bool) -> usize {
    let mut count = 0;
    loop {
        count += c.drop_where(&lost);
        if !c.deliver_next() {
            return count;
        }
    }
}

/// A leader sends a follower that needs a snapshot one copy, then only
/// heartbeats (which keep the follower from campaigning and confirm read
/// rounds) until half the shortest election timeout passes without an
/// answer; then one copy again. Before, every heartbeat and every read-index round carried
/// the whole snapshot again until the follower answered: with slow links
/// the copies piled up (chaos-nemesis seed 1004 peaked at 79 MB).
#[test]
fn a_snapshot_in_flight_is_resent_only_after_half_an_election_timeout() {
    // Heartbeats every 10 ms: many rounds fit in the 75 ms wait.
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).raft(|r| r.heartbeat_ns = 10_000_000));
    assert!(c.elect(1));
    heartbeat(&mut c, 1);
    c.isolate(3);
    for cmd in 0..20 {
        c.propose(1, cmd).unwrap();
    }
    c.deliver_all();
    c.compact(1);
    c.heal();
    let snapshot_to_3 = |e: &Envelope| e.to == 3 && matches!(e.msg, Message::InstallSnapshot { .. });
    let timeout_ns = c.node(1).config().election_timeout_min_ns / 2;

    // Every copy is lost; the leader heartbeats and runs read rounds.
    let mut copies = 0;
    let mut rounds = 0;
    let mut first_sent_ns = None;
    while first_sent_ns.is_none_or(|at: u64| c.local_ns(1) + c.node(1).config().heartbeat_ns < at + timeout_ns) {
        c.fire_timeout(1);
        c.read_index(1).expect("the leader serves reads");
        rounds += 2;
        let lost = deliver_all_losing(&mut c, snapshot_to_3);
        if lost > 0 && first_sent_ns.is_none() {
            first_sent_ns = Some(c.local_ns(1));
        }
        copies += lost;
        assert!(rounds < 100, "no snapshot was ever sent");
    }
    assert!(rounds >= 6, "only {rounds} rounds within the election timeout");
    assert_eq!(copies, 1, "{copies} copies in {rounds} heartbeats and read rounds within the wait");

    // The wait passed without an answer: one more copy (lost too).
    while copies == 1 {
        c.fire_timeout(1);
        copies += deliver_all_losing(&mut c, snapshot_to_3);
        assert!(c.local_ns(1) <= first_sent_ns.unwrap() + 2 * timeout_ns, "never sent again");
    }
    assert_eq!(copies, 2);
    // The next copy gets through.
    let second_sent_ns = c.local_ns(1);
    while c.stats.snapshots_installed == 0 {
        heartbeat(&mut c, 1);
        assert!(c.local_ns(1) <= second_sent_ns + 2 * timeout_ns, "never sent a third time");
    }
    heartbeat(&mut c, 1);
    assert_eq!(c.stats.snapshots_installed, 1);
    assert_eq!(c.state(3), c.state(1));
    assert_eq!((c.node(3).term(), c.leader()), (c.node(1).term(), Some(1)), "node 3 kept following");
    c.check().unwrap();
}

#[test]
fn a_restarted_node_reinstalls_its_persisted_snapshot_first() {
    let snapshot = Snapshot { last_index: 5, last_term: 2, voters: BTreeSet::from([1, 2, 3]), data: state_at(5) };
    let persisted = Persisted {
        hard_state: HardState { term: 3, voted_for: Some(1) },
        snapshot: Some(snapshot.clone()),
        entries: vec![entry(3, 6), entry(3, 7)],
    };

    let mut node: Node = Node::restore(RaftConfig::new(2, BTreeSet::from([1, 2, 3])), persisted, 1, 0);

    assert_eq!((node.first_index(), node.last_index(), node.commit_index()), (6, 7, 5));
    let ready = node.take_ready();
    assert_eq!(ready.install, Some(Box::new(snapshot)));
    assert!(ready.committed.is_empty() && ready.persist.is_empty() && ready.messages.is_empty());
}

#[test]
fn installing_keeps_the_entries_after_a_matching_snapshot_point() {
    let mut node = follower(1, (1..=5).map(|i| entry(1, i)).collect());
    let snapshot = Snapshot { last_index: 3, last_term: 1, voters: BTreeSet::from([1, 2, 3]), data: state_at(3) };

    node.step(1, 1, Message::InstallSnapshot { term: 1, snapshot: Box::new(snapshot.clone()) });

    assert_eq!((node.first_index(), node.last_index(), node.commit_index()), (4, 5, 3));
    assert_eq!(node.entries(4, 5), vec![entry(1, 4), entry(1, 5)]);
    let ready = node.take_ready();
    assert_eq!(ready.install, Some(Box::new(snapshot.clone())));
    assert_eq!(ready.persist, vec![PersistOp::SaveSnapshot(snapshot)]);
    assert_eq!(ready.messages, vec![(1, Message::InstallSnapshotResponse { term: 1, last_index: 3 })]);
}

#[test]
fn installing_discards_a_log_that_disagrees_with_the_snapshot() {
    let mut node = follower(2, (1..=5).map(|i| entry(1, i)).collect());
    let snapshot = Snapshot { last_index: 3, last_term: 2, voters: BTreeSet::from([1, 2, 3]), data: state_at(3) };

    node.step(1, 1, Message::InstallSnapshot { term: 2, snapshot: Box::new(snapshot.clone()) });

    assert_eq!((node.first_index(), node.last_index(), node.commit_index()), (4, 3, 3));
    let ready = node.take_ready();
    assert_eq!(ready.persist, vec![PersistOp::TruncateFrom(1), PersistOp::SaveSnapshot(snapshot)]);
}

#[test]
fn a_snapshot_older_than_the_commit_index_is_answered_with_it() {
    let mut node = follower(1, (1..=5).map(|i| entry(1, i)).collect());
    node.step(
        1,
        1,
        Message::AppendEntries { term: 1, prev_log_index: 5, prev_log_term: 1, entries: vec![], leader_commit: 5, read_ctx: 0 },
    );
    node.take_ready();
    let snapshot = Snapshot { last_index: 3, last_term: 1, voters: BTreeSet::from([1, 2, 3]), data: state_at(3) };

    node.step(2, 1, Message::InstallSnapshot { term: 1, snapshot: Box::new(snapshot) });

    let ready = node.take_ready();
    assert_eq!(ready.install, None);
    assert_eq!(ready.messages, vec![(1, Message::InstallSnapshotResponse { term: 1, last_index: 5 })]);
    assert_eq!(node.first_index(), 1);
}

#[test]
fn memory_stays_bounded_in_a_long_run() {
    let mut c = RaftCluster::new(RaftClusterOptions::new(3).compact_every(16).seed(11));
    let timeout = c.node(1).config().election_timeout_max_ns;
    assert!(c.run_until(10 * timeout, |c| c.leader().is_some()));
    let mut largest_log = 0;
    let mut cmd = 0;
    // 20 simulated seconds, a proposal every 4 ms.
    for _ in 0..5_000 {
        if let Some(leader) = c.leader() {
            cmd += 1;
            let _ = c.propose(leader, cmd);
        }
        c.run_for(4_000_000);
        for id in c.ids() {
            let n = c.node(id);
            largest_log = largest_log.max(n.last_index() + 1 - n.first_index());
        }
    }

    assert!(c.state(1).commands > 4_500, "{} commands applied", c.state(1).commands);
    assert!(largest_log < 64, "in-memory log grew to {largest_log} entries");
    for id in c.ids() {
        assert!(c.disk(id).persisted.entries.len() < 64);
    }
    c.check().unwrap();
}
