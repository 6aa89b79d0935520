//! The server layer in the harness, one behaviour per test: who answers,
//! leader changes, read index, keep-alives, expiry through the log, the
//! Promote extension, checkpoints, snapshots, restarts, and the stamped-wall
//! strategy's own-clock judgement.

use crate::service_harness;

use leasesim_core::raft::{ConfChange, Payload};
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{ClientRequest, Command, Op, Response, RevokeCause, ServiceError, ServiceEvent};
use leasesim_core::{ExpiryStrategy, LeaseId, NodeId, NS_PER_MS, NS_PER_SEC};
use service_harness::{ServiceCluster, ServiceClusterConfig, TTL_NS};

/// Extension = the largest election timeout of the default Raft settings.
const EXTENSION_NS: u64 = 300 * NS_PER_MS;

fn cluster(seed: u64) -> ServiceCluster {
    let mut c = ServiceCluster::new(ServiceClusterConfig::new(3, seed));
    c.record_events = true;
    c.add_manual_client(9);
    c
}

fn follower_of(leader: NodeId) -> NodeId {
    (1..=3).find(|s| *s != leader).expect("three servers")
}

fn call(c: &mut ServiceCluster, op: Op) -> Response {
    c.call(9, op, 3 * NS_PER_SEC).expect("answered").body
}

fn grant(c: &mut ServiceCluster) -> LeaseId {
    match call(c, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }) {
        Response::LeaseGranted { lease, .. } => lease,
        other => panic!("grant: {other:?}"),
    }
}

fn revocations(c: &ServiceCluster, lease: LeaseId) -> Vec<(u64, NodeId, u64, RevokeCause)> {
    c.events_where(|t, id, e| match e {
        ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { lease: l, cause, .. } } if *l == lease => {
            Some((t, id, *index, *cause))
        }
        _ => None,
    })
}

#[test]
fn a_follower_answers_not_leader_with_a_hint() {
    let mut c = cluster(1);
    let leader = c.wait_for_leader();
    let follower = follower_of(leader);
    let seq = c.submit_to(9, follower, Op::Put { key: "k".into(), value: "v".into(), lease: None });
    c.run_until(c.now_ns + NS_PER_SEC);
    let first = c.raw_replies(9)[0].clone();
    assert_eq!((first.from, first.body), (follower, Response::Error(ServiceError::NotLeader { leader_hint: Some(leader) })));
    let answer = c.answer(9, seq).expect("the retry reached the leader");
    assert!(matches!(answer.body, Response::Done { .. }));
    assert_eq!(c.violations(), &[]);
}

#[test]
fn certain_refusals_are_answered_without_proposing() {
    let mut c = cluster(2);
    let leader = c.wait_for_leader();
    let before = c.server(leader).unwrap().raft().last_index();
    let short = call(&mut c, Op::LeaseGrant { ttl_ns: 100 * NS_PER_MS, id: None });
    assert_eq!(short, Response::Error(ServiceError::TtlTooShort { min_ns: 450 * NS_PER_MS }));
    assert_eq!(c.server(leader).unwrap().raft().last_index(), before, "nothing was proposed");
    assert_eq!(call(&mut c, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(77) }), Response::LeaseGranted { lease: 77, ttl_ns: TTL_NS });
    let after_grant = c.server(leader).unwrap().raft().last_index();
    assert_eq!(call(&mut c, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(77) }), Response::Error(ServiceError::DuplicateLease { lease: 77 }));
    assert_eq!(c.server(leader).unwrap().raft().last_index(), after_grant);
}

#[test]
fn a_committed_request_survives_a_leader_change_and_is_applied_once() {
    let mut c = cluster(3);
    let leader = c.wait_for_leader();
    let seq = c.submit_to(9, leader, Op::Put { key: "x".into(), value: "1".into(), lease: None });
    // The leader gets the request and commits it, but its reply is lost.
    c.cut_clients(leader);
    c.run_until(c.now_ns + 100 * NS_PER_MS);
    assert!(c.answer(9, seq).is_none());
    let written = c.server(follower_of(leader)).unwrap().state_machine().kv().get("x").expect("committed").mod_revision;
    c.crash(leader);
    c.heal();
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    let answer = c.answer(9, seq).expect("answered by the next leader");
    assert_eq!(answer.body, Response::Done { revision: written }, "the recorded answer, not a second write");
    let applied = c.events_where(|_, _, e| match e {
        ServerEvent::Service { index, event: ServiceEvent::RequestApplied { client: 9, seq: s } } if *s == seq => Some(*index),
        _ => None,
    });
    assert!(applied.iter().all(|i| *i == written), "{applied:?}");
    let deduplicated = c.events_where(|_, _, e| {
        matches!(e, ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { client: 9, .. }, .. }).then_some(())
    });
    assert!(!deduplicated.is_empty(), "the retry was answered from the session");
    assert_eq!(c.violations(), &[]);
}

#[test]
fn pending_reads_fail_with_retry_when_leadership_is_lost() {
    let mut c = cluster(4);
    let leader = c.wait_for_leader();
    c.isolate(leader, false);
    let seq = c.submit_to(9, leader, Op::Get { key: "x".into() });
    c.run_until(c.now_ns + 2 * NS_PER_SEC);
    let retry = Response::Error(ServiceError::Retry);
    assert!(c.raw_replies(9).iter().any(|r| r.from == leader && r.body == retry), "{:?}", c.raw_replies(9));
    c.heal();
    c.run_until(c.now_ns + NS_PER_SEC);
    assert!(c.answer(9, seq).is_some(), "answered in the end by the new leader");
}

#[test]
fn keepalives_are_answered_by_the_leader_only_and_refused_for_unknown_leases() {
    let mut c = cluster(5);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
    assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease: 999 }), Response::Error(ServiceError::LeaseNotFound { lease: 999 }));
    let before = c.server(leader).unwrap().raft().last_index();
    c.submit_to(9, follower_of(leader), Op::LeaseKeepAlive { lease });
    c.run_until(c.now_ns + 200 * NS_PER_MS);
    assert!(c.raw_replies(9).iter().any(|r| matches!(r.body, Response::Error(ServiceError::NotLeader { .. }))));
    assert_eq!(c.server(leader).unwrap().raft().last_index(), before, "keep-alives are not logged");
    let answered = c.events_where(|_, id, e| matches!(e, ServerEvent::KeepAliveAnswered { .. }).then_some(id));
    assert!(answered.iter().all(|id| *id == leader));
}

#[test]
fn time_to_live_and_list_are_answered_from_the_leader() {
    let mut c = cluster(6);
    c.wait_for_leader();
    let lease = grant(&mut c);
    call(&mut c, Op::Put { key: "k".into(), value: "v".into(), lease: Some(lease) });
    match call(&mut c, Op::LeaseTimeToLive { lease }) {
        Response::TimeToLive { remaining_ns, granted_ttl_ns, keys, .. } => {
            assert!(remaining_ns <= TTL_NS && remaining_ns > TTL_NS / 2, "{remaining_ns}");
            assert_eq!((granted_ttl_ns, keys), (TTL_NS, vec![b"k".to_vec()]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(call(&mut c, Op::LeaseList), Response::Leases { ids: vec![lease] });
}

#[test]
fn a_lease_left_alone_expires_through_the_log_after_its_ttl() {
    let mut c = cluster(7);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    let granted_at = c.now_ns;
    call(&mut c, Op::Put { key: "/svc".into(), value: "up".into(), lease: Some(lease) });
    // Kept alive for 2 s, it lives; then left alone, it goes.
    let mut last_keepalive = 0;
    while c.now_ns < granted_at + 2 * NS_PER_SEC {
        last_keepalive = c.now_ns;
        assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
        c.run_until(c.now_ns + 250 * NS_PER_MS);
    }
    assert!(revocations(&c, lease).is_empty());
    c.run_until(c.now_ns + 2 * NS_PER_SEC);
    let proposed = c.events_where(|t, id, e| matches!(e, ServerEvent::ExpiryProposed { lease: l } if *l == lease).then_some((t, id)));
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0].1, leader);
    assert!(proposed[0].0 >= last_keepalive + TTL_NS, "not before TTL after the last keep-alive was sent");
    let revoked = revocations(&c, lease);
    assert_eq!(revoked.len(), 3, "on every server");
    assert!(revoked.iter().all(|r| r.2 == revoked[0].2 && r.3 == RevokeCause::Expire), "{revoked:?}");
    for (_, sm) in c.state_machines() {
        assert!(sm.kv().get("/svc").is_none(), "the attached key went with it");
    }
    assert_eq!(c.violations(), &[]);
}

/// etcd's Promote: a new leader re-arms every lease at now + extension + TTL.
#[test]
fn a_new_leader_extends_the_leases_it_inherits() {
    let mut c = cluster(8);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    c.crash(leader);
    let new_leader = c.wait_for_leader();
    let elected_at = c
        .events_where(|t, id, e| matches!(e, ServerEvent::Raft(_)).then_some((t, id)))
        .into_iter()
        .filter(|(_, id)| *id == new_leader)
        .map(|(t, _)| t)
        .max()
        .expect("became leader");
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    let revoked = revocations(&c, lease);
    let first = revoked.iter().map(|r| r.0).min().expect("expired");
    assert!(first >= elected_at + EXTENSION_NS + TTL_NS, "expired at {first}, elected at {elected_at}");
    assert!(first < elected_at + EXTENSION_NS + TTL_NS + 100 * NS_PER_MS);
    assert_eq!(c.violations(), &[]);
}

#[test]
fn a_waiter_is_granted_without_polling_when_the_holder_lease_expires() {
    let mut c = cluster(10);
    c.add_manual_client(8);
    c.wait_for_leader();
    let abandoned = grant(&mut c);
    let Some(Response::LockGranted { token: first, .. }) =
        c.call(8, Op::LockAcquire { key: "a".into(), lease: abandoned }, NS_PER_SEC).map(|a| a.body)
    else {
        panic!("first acquire")
    };
    let lease = grant(&mut c);
    let seq = c.submit(9, Op::LockAcquire { key: "a".into(), lease });
    let mut granted = None;
    for _ in 0..40 {
        c.call(9, Op::LeaseKeepAlive { lease }, NS_PER_SEC);
        c.run_until(c.now_ns + 100 * NS_PER_MS);
        if let Some(answer) = c.answer(9, seq) {
            granted = Some(answer.body.clone());
            break;
        }
    }
    match granted {
        Some(Response::LockGranted { token, .. }) => assert!(token > first),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.violations(), &[]);
}

#[test]
fn a_restarted_server_rebuilds_from_its_snapshot_and_log() {
    let mut cfg = ServiceClusterConfig::new(3, 11);
    cfg.snapshot_every_entries = 10;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_lock_client(1, &["a", "b"]);
    c.add_lock_client(2, &["a"]);
    c.add_kv_client(3, 2);
    c.run_until(2 * NS_PER_SEC);
    let victim = follower_of(c.leader().expect("leader"));
    c.crash(victim);
    c.run_until(3 * NS_PER_SEC);
    c.restart(victim);
    c.run_until(4 * NS_PER_SEC);
    c.stop_clients();
    c.run_until(6 * NS_PER_SEC);
    let installed = c.events_where(|_, id, e| matches!(e, ServerEvent::SnapshotInstalled { .. }).then_some(id));
    assert!(installed.contains(&victim), "restored from its own snapshot");
    let states = c.state_machines();
    assert!(states.iter().all(|(_, sm)| **sm == *states[0].1), "all servers converge");
    assert_eq!(c.violations(), &[]);
}

#[test]
fn a_lagging_follower_catches_up_by_snapshot() {
    let mut cfg = ServiceClusterConfig::new(3, 12);
    cfg.snapshot_every_entries = 10;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_kv_client(3, 3);
    c.run_until(NS_PER_SEC);
    let lagging = follower_of(c.leader().expect("leader"));
    c.isolate(lagging, true);
    c.run_until(3 * NS_PER_SEC);
    c.heal();
    c.stop_clients();
    c.run_until(5 * NS_PER_SEC);
    let installed = c.events_where(|t, id, e| matches!(e, ServerEvent::SnapshotInstalled { .. }).then_some((t, id)));
    assert!(installed.iter().any(|(t, id)| *id == lagging && *t > 3 * NS_PER_SEC), "{installed:?}");
    let states = c.state_machines();
    assert!(states.iter().all(|(_, sm)| **sm == *states[0].1));
}

#[test]
fn a_new_leader_uses_checkpointed_remaining_ttls() {
    let mut cfg = ServiceClusterConfig::new(3, 13);
    cfg.checkpoint_interval_ns = Some(200 * NS_PER_MS);
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    c.run_until(c.now_ns + 600 * NS_PER_MS);
    let remaining = c.server(follower_of(leader)).unwrap().state_machine().leases().get(lease).unwrap().checkpoint_remaining_ns;
    let remaining = remaining.expect("a checkpoint reached the followers");
    assert!(remaining < TTL_NS - 300 * NS_PER_MS, "{remaining}");
    c.crash(leader);
    let elected_at = c.now_ns;
    c.wait_for_leader();
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    let first = revocations(&c, lease).iter().map(|r| r.0).min().expect("expired");
    assert!(first < elected_at + EXTENSION_NS + TTL_NS + 400 * NS_PER_MS, "{first} vs {elected_at}");
    assert!(first >= elected_at + EXTENSION_NS + remaining - 200 * NS_PER_MS);
    assert_eq!(c.violations(), &[]);
}

#[test]
fn a_keepalive_of_a_checkpointed_lease_waits_for_the_reset() {
    let mut cfg = ServiceClusterConfig::new(3, 14);
    cfg.checkpoint_interval_ns = Some(200 * NS_PER_MS);
    let mut c = ServiceCluster::new(cfg);
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    c.run_until(c.now_ns + 500 * NS_PER_MS);
    let checkpointed = |c: &ServiceCluster| c.server(leader).unwrap().state_machine().leases().get(lease).unwrap().checkpoint_remaining_ns;
    assert!(checkpointed(&c).is_some());
    let before = c.server(leader).unwrap().raft().last_index();
    assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
    // Answered only after a reset to the full TTL was logged and committed.
    let raft = c.server(leader).unwrap().raft();
    let reset = raft
        .entries(before + 1, raft.last_index())
        .into_iter()
        .find(|e| matches!(&e.payload, Payload::Command(Command::Checkpoint { remaining }) if *remaining == vec![(lease, TTL_NS)]));
    let reset = reset.expect("a reset entry");
    assert!(raft.commit_index() >= reset.index);
    assert_eq!(c.violations(), &[]);
}

#[test]
fn stamped_wall_keepalives_are_logged_and_answered_after_commit() {
    let mut cfg = ServiceClusterConfig::new(3, 15);
    cfg.expiry = ExpiryStrategy::LeaderStampedWall;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    let stamp = |c: &ServiceCluster| c.server(leader).unwrap().state_machine().leases().get(lease).unwrap().expiry_wall_ns.unwrap();
    let first = stamp(&c);
    c.run_until(c.now_ns + 300 * NS_PER_MS);
    let before = c.server(leader).unwrap().raft().last_index();
    assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
    assert!(c.server(leader).unwrap().raft().last_index() > before, "logged as Refresh");
    assert!(stamp(&c) >= first + 300 * NS_PER_MS);
    // Left alone, every server ends it by its own wall clock or the
    // leader's Expire entry.
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    assert_eq!(revocations(&c, lease).len(), 3);
}

#[test]
fn stamped_wall_a_server_with_a_fast_wall_clock_expires_first() {
    let mut cfg = ServiceClusterConfig::new(3, 16);
    cfg.expiry = ExpiryStrategy::LeaderStampedWall;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    c.add_kv_client(3, 2); // traffic: servers judge expiry as they apply
    let leader = c.wait_for_leader();
    let fast = follower_of(leader);
    c.set_wall_offset(fast, 500 * NS_PER_MS as i64);
    let lease = grant(&mut c);
    call(&mut c, Op::Put { key: "/svc".into(), value: "up".into(), lease: Some(lease) });
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    let revoked = revocations(&c, lease);
    let on = |id: NodeId| revoked.iter().find(|r| r.1 == id).copied().expect("revoked there");
    let (fast_at, _, fast_index, fast_cause) = on(fast);
    let (leader_at, _, leader_index, _) = on(leader);
    assert_eq!(fast_cause, RevokeCause::WallClockExpiry);
    assert!(fast_index < leader_index && fast_at + 300 * NS_PER_MS < leader_at, "{revoked:?}");
}

#[test]
fn membership_changes_go_through_the_leader() {
    let mut c = cluster(17);
    let leader = c.wait_for_leader();
    let follower = follower_of(leader);
    assert!(c.propose_conf_change(follower, ConfChange::RemoveServer(3)).is_err(), "followers refuse");
    let removed = (1..=3).find(|s| *s != leader).unwrap();
    c.propose_conf_change(leader, ConfChange::RemoveServer(removed)).expect("accepted");
    c.run_until(c.now_ns + NS_PER_SEC);
    assert!(!c.server(leader).unwrap().raft().voters().contains(&removed));
    assert!(matches!(call(&mut c, Op::Put { key: "k".into(), value: "v".into(), lease: None }), Response::Done { .. }));
}

/// A removed server hears from no leader again and never campaigns, so the
/// leader it knew when removed stays in its Raft state after that leader
/// crashes (membership-change seed 4, reports/sim-vs-real.md "failover-stall
/// traced", a: s1 sent clients back to the crashed s3 after every timeout).
/// It names no leader to clients, as etcd's removed member, which stops.
#[test]
fn a_removed_server_names_no_leader_to_clients() {
    let mut c = cluster(17);
    let leader = c.wait_for_leader();
    let removed = follower_of(leader);
    c.propose_conf_change(leader, ConfChange::RemoveServer(removed)).expect("accepted");
    c.run_until(c.now_ns + NS_PER_SEC);
    c.crash(leader);
    c.run_until(c.now_ns + NS_PER_SEC);
    let raft = c.server(removed).expect("the removed server is up").raft();
    assert!(!raft.voters().contains(&removed), "its removal reached it");
    assert_eq!(raft.leader_id(), Some(leader), "it still knows the crashed leader");
    c.submit_to(9, removed, Op::Put { key: "k".into(), value: "v".into(), lease: None });
    c.run_until(c.now_ns + 100 * NS_PER_MS);
    let first = c.raw_replies(9)[0].clone();
    assert_eq!((first.from, first.body), (removed, Response::Error(ServiceError::NotLeader { leader_hint: None })));
}

/// The etcd-style configuration answers keep-alives from the leader's own
/// deadlines. Once the leader has proposed a lease's Expire, a keep-alive
/// that reaches it before the Expire applies must be refused: answered
/// live, the holder would believe in a lease about to end under it. (The
/// mutation report lists `&& → ||` in `answer_keepalive`'s `armed` as a
/// blind spot; this test shows the window is refused, and that mutant
/// survives it because proposing the Expire also pops the deadline, so
/// `armed` is false either way: the mutant looks equivalent.)
#[test]
fn an_expiring_lease_is_not_renewed_before_its_expire_applies() {
    let mut cfg = ServiceClusterConfig::new(3, 5);
    cfg.keepalive_read_index = false;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    let proposed = |c: &ServiceCluster| {
        !c.events_where(|_, id, e| matches!(e, ServerEvent::ExpiryProposed { lease: l } if *l == lease && id == leader).then_some(()))
            .is_empty()
    };
    let deadline_ns = c.now_ns + 3 * TTL_NS;
    while !proposed(&c) && c.now_ns < deadline_ns {
        c.run_until(c.now_ns + NS_PER_MS / 10);
    }
    assert!(proposed(&c), "the leader proposed no expiry within three TTLs");
    assert!(revocations(&c, lease).is_empty(), "the keep-alive must reach the leader before the Expire applies");
    let seq = c.submit_to(9, leader, Op::LeaseKeepAlive { lease });
    let answer_deadline_ns = c.now_ns + TTL_NS;
    while c.answer(9, seq).is_none() && c.now_ns < answer_deadline_ns {
        c.run_until(c.now_ns + NS_PER_MS / 10);
    }
    let answer = c.answer(9, seq).expect("answered").body.clone();
    assert_eq!(answer, Response::Error(ServiceError::LeaseNotFound { lease }));
}

#[test]
fn a_resend_of_a_request_already_in_the_leaders_log_is_not_logged_again() {
    // The leader is cut off from its peers (clients still reach it), so
    // what it logs cannot commit; the client sends one request three times
    // meanwhile, as a client whose timeout is short would. Logging every
    // copy made the log's load the clients' resend rate (chaos-nemesis
    // seeds 328 and 734: the backlog of duplicates grew without bound).
    let mut c = cluster(11);
    c.record_events = true;
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    c.isolate(leader, false);
    let req = ClientRequest { client: 9, seq: 1_000, op: Op::Put { key: "k".into(), value: "v".into(), lease: None } };
    for _ in 0..3 {
        c.send_request(leader, req.clone());
        c.run_until(c.now_ns + 5 * NS_PER_MS);
    }
    c.heal();
    c.settle(NS_PER_SEC);
    let copies = |pick: fn(&ServerEvent) -> bool| c.events_where(|_, id, e| (pick(e) && id == leader).then_some(())).len();
    let applied = copies(|e| matches!(e, ServerEvent::Service { event: ServiceEvent::RequestApplied { client: 9, seq: 1_000, .. }, .. }));
    let deduplicated =
        copies(|e| matches!(e, ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { client: 9, seq: 1_000, .. }, .. }));
    assert_eq!((applied, deduplicated), (1, 0), "the request is logged once, not once per copy");
    let answered = c.raw_replies(9).iter().any(|r| r.seq == 1_000 && matches!(r.body, Response::Done { .. }));
    assert!(answered, "the logged copy answers the resends: {:?}", c.raw_replies(9));
}

/// `leader-stamped-wall`: a keep-alive of a lease the leader (having
/// committed in its term) does not know is refused at once, not logged as
/// a Refresh whose apply refuses it later: a certain refusal costs no entry.
#[test]
fn stamped_wall_a_keepalive_of_an_unknown_lease_is_refused_without_proposing() {
    let mut cfg = ServiceClusterConfig::new(3, 16);
    cfg.expiry = ExpiryStrategy::LeaderStampedWall;
    let mut c = ServiceCluster::new(cfg);
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    let before = c.server(leader).unwrap().raft().last_index();
    assert_eq!(call(&mut c, Op::LeaseKeepAlive { lease: 4242 }), Response::Error(ServiceError::LeaseNotFound { lease: 4242 }));
    assert_eq!(c.server(leader).unwrap().raft().last_index(), before, "nothing was proposed");
}

/// A lease ended before its deadline (here revoked by its client) leaves
/// nothing armed behind: the leader never proposes an `Expire` for it when
/// the old deadline passes, so an ended lease costs no further log entry.
#[test]
fn a_revoked_lease_leaves_no_deadline_behind() {
    let mut c = cluster(31);
    let leader = c.wait_for_leader();
    let lease = grant(&mut c);
    assert!(matches!(call(&mut c, Op::LeaseRevoke { lease }), Response::Done { .. } | Response::LeaseRevoked { .. }));
    // Let the revoke apply everywhere, then wait past every deadline the
    // lease could have had (TTL plus Promote's extension).
    c.run_until(c.now_ns + 100 * NS_PER_MS);
    let before = c.server(leader).unwrap().raft().last_index();
    c.run_until(c.now_ns + 2 * TTL_NS);
    assert_eq!(c.leader(), Some(leader), "the test needs a stable leader");
    assert_eq!(c.server(leader).unwrap().raft().last_index(), before, "the leader proposed an entry for a revoked lease");
}

/// The refusal of a short TTL is `ttl < minimum`: a TTL of exactly the
/// minimum (1.5 × the longest election timeout) is granted, at the leader's
/// pre-check as in the state machine.
#[test]
fn a_ttl_of_exactly_the_minimum_is_granted() {
    let mut c = cluster(32);
    c.wait_for_leader();
    let min_ns = 450 * NS_PER_MS;
    assert!(matches!(call(&mut c, Op::LeaseGrant { ttl_ns: min_ns, id: None }), Response::LeaseGranted { ttl_ns, .. } if ttl_ns == min_ns));
    assert_eq!(call(&mut c, Op::LeaseGrant { ttl_ns: min_ns - 1, id: None }), Response::Error(ServiceError::TtlTooShort { min_ns }));
}

/// `leader-stamped-wall`: a new leader that has not yet committed an entry
/// of its term may not have applied leases its predecessor granted, so a
/// keep-alive of a lease it does not know is answered `Retry`, never
/// `LeaseNotFound` (the holder would give up a lease that lives).
#[test]
fn stamped_wall_a_new_leader_does_not_call_a_lease_unknown_before_it_commits_in_its_term() {
    let mut cfg = ServiceClusterConfig::new(3, 33);
    cfg.expiry = ExpiryStrategy::LeaderStampedWall;
    let mut c = ServiceCluster::new(cfg);
    c.add_manual_client(9);
    let old = c.wait_for_leader();
    let lease = grant(&mut c);
    // The grant is answered once the old leader applied it; the followers
    // hold the entry but learn its commit only from the next heartbeat.
    c.crash(old);
    let new_leader = loop {
        c.run_until(c.now_ns + NS_PER_MS / 2);
        if let Some(l) = c.leader().filter(|l| *l != old) {
            break l;
        }
        assert!(c.now_ns < 10 * NS_PER_SEC, "no new leader");
    };
    // Keep it from committing in its term: cut it off from its peer.
    c.isolate(new_leader, false);
    let server = c.server(new_leader).unwrap();
    assert!(!server.raft().has_committed_in_term(), "the test needs a leader that has not committed in its term");
    assert!(!server.state_machine().leases().contains(lease), "the test needs a leader that has not applied the grant");
    c.send_request(new_leader, ClientRequest { client: 9, seq: 5_000, op: Op::LeaseKeepAlive { lease } });
    c.run_until(c.now_ns + 20 * NS_PER_MS);
    let answer = c.raw_replies(9).into_iter().find(|r| r.seq == 5_000).expect("answered");
    assert_eq!(answer.body, Response::Error(ServiceError::Retry), "a live lease called unknown by a leader that lags");
}
