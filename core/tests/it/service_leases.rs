//! Leases through the state machine: grant, revoke, expiry entries,
//! checkpoints, stamped wall expiry, and the keys that go with a lease.

use crate::service_support;

use leasesim_core::bugs::Bugs;
use leasesim_core::service::{ClientRequest, Command, Effect, Op, Response, RevokeCause, ServiceError, ServiceEvent};
use leasesim_core::{ExpiryStrategy, NS_PER_SEC};
use service_support::{bugs, reply_to, Fixture, MIN_TTL_NS, TTL_NS};

#[test]
fn grant_uses_the_entry_index_as_id() {
    let mut f = Fixture::new();
    f.noop();
    let index = f.next_index();
    let effects = f.request(1, 1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None });
    assert_eq!(reply_to(&effects, 1, 1), Some(Response::LeaseGranted { lease: index, ttl_ns: TTL_NS }));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LeaseGranted { lease: index, ttl_ns: TTL_NS })));
    let lease = f.sm.leases().get(index).unwrap();
    assert_eq!((lease.ttl_ns, lease.granted_index, lease.expiry_wall_ns), (TTL_NS, index, None));
    assert_eq!((f.sm.leases().len(), f.sm.leases().is_empty()), (1, false));
}

#[test]
fn grant_with_requested_id_uses_it_and_zero_means_none() {
    let mut f = Fixture::new();
    assert_eq!(f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(42) }), Some(Response::LeaseGranted { lease: 42, ttl_ns: TTL_NS }));
    let index = f.next_index();
    assert_eq!(f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(0) }), Some(Response::LeaseGranted { lease: index, ttl_ns: TTL_NS }));
}

#[test]
fn duplicate_grant_is_caught_when_applied() {
    // The consistent-core lease design: two grants for one id can both pass the
    // leader's check before either is applied; the second must fail at apply
    // time.
    let mut f = Fixture::new();
    f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(7) });
    let reply = f.call(2, Op::LeaseGrant { ttl_ns: 3 * TTL_NS, id: Some(7) });
    assert_eq!(reply, Some(Response::Error(ServiceError::DuplicateLease { lease: 7 })));
    assert_eq!(f.sm.leases().get(7).unwrap().ttl_ns, TTL_NS, "the first grant stands");
}

#[test]
fn chosen_id_skips_an_id_a_client_asked_for() {
    let mut f = Fixture::new();
    f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: Some(3) });
    f.noop();
    assert_eq!(f.next_index(), 3);
    assert_eq!(f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }), Some(Response::LeaseGranted { lease: 4, ttl_ns: TTL_NS }));
    // Id 4 is now taken by the lease just chosen, so the grant applied at
    // index 4 moves on to 5.
    assert_eq!(f.next_index(), 4);
    assert_eq!(f.call(1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }), Some(Response::LeaseGranted { lease: 5, ttl_ns: TTL_NS }));
}

#[test]
fn ttl_below_minimum_is_refused() {
    let mut f = Fixture::new();
    let reply = f.call(1, Op::LeaseGrant { ttl_ns: MIN_TTL_NS - 1, id: None });
    assert_eq!(reply, Some(Response::Error(ServiceError::TtlTooShort { min_ns: MIN_TTL_NS })));
    assert!(f.sm.leases().is_empty());
    assert!(matches!(f.call(1, Op::LeaseGrant { ttl_ns: MIN_TTL_NS, id: None }), Some(Response::LeaseGranted { .. })));
}

#[test]
fn revoke_deletes_attached_keys_in_the_same_entry() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.put(1, "b", "1", Some(lease));
    f.put(1, "a", "2", Some(lease));
    f.put(1, "free", "3", None);
    let index = f.next_index();
    let effects = f.request(9, 1, Op::LeaseRevoke { lease });
    assert_eq!(reply_to(&effects, 9, 1), Some(Response::LeaseRevoked { lease }));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LeaseRevoked {
        lease,
        cause: RevokeCause::Revoke,
        deleted_keys: vec!["a".into(), "b".into()]
    })));
    assert_eq!((f.value("a"), f.value("b")), (None, None));
    assert_eq!(f.value("free").as_deref(), Some("3"));
    assert_eq!(f.sm.kv().revision(), index, "the deletion is stamped with the revoke's index");
    assert!(!f.sm.leases().contains(lease));
}

#[test]
fn revoke_of_unknown_lease_is_refused() {
    let mut f = Fixture::new();
    assert_eq!(f.call(1, Op::LeaseRevoke { lease: 9 }), Some(Response::Error(ServiceError::LeaseNotFound { lease: 9 })));
}

#[test]
fn key_moved_to_another_lease_survives_the_first() {
    let mut f = Fixture::new();
    let l1 = f.grant(1);
    let l2 = f.grant(1);
    f.put(1, "a", "x", Some(l1));
    f.put(1, "a", "y", Some(l2));
    f.call(1, Op::LeaseRevoke { lease: l1 });
    assert_eq!(f.value("a").as_deref(), Some("y"));
}

#[test]
fn expire_entry_ends_the_lease_without_a_reply() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.put(1, "k", "v", Some(lease));
    let effects = f.apply(Command::Expire { lease });
    assert_eq!(
        effects,
        vec![Effect::Event(ServiceEvent::LeaseRevoked { lease, cause: RevokeCause::Expire, deleted_keys: vec!["k".into()] })]
    );
    // Proposed twice (e.g. across a leader change): the second is a no-op.
    assert!(f.apply(Command::Expire { lease }).is_empty());
}

#[test]
fn time_to_live_and_list() {
    let mut f = Fixture::new();
    let l1 = f.grant(1);
    let l2 = f.grant(2);
    f.put(1, "k", "v", Some(l1));
    assert_eq!(f.sm.lease_list(), Response::Leases { ids: vec![l1, l2] });
    assert_eq!(
        f.sm.time_to_live(l1, NS_PER_SEC),
        Response::TimeToLive { lease: l1, remaining_ns: NS_PER_SEC, granted_ttl_ns: TTL_NS, keys: vec!["k".into()] }
    );
    // Remaining never exceeds the TTL; unknown leases are not found.
    assert!(matches!(f.sm.time_to_live(l2, 10 * TTL_NS), Response::TimeToLive { remaining_ns: TTL_NS, .. }));
    assert_eq!(f.sm.time_to_live(99, 1), Response::Error(ServiceError::LeaseNotFound { lease: 99 }));
    // The logged forms give the same answers.
    assert_eq!(f.call(3, Op::LeaseList), Some(Response::Leases { ids: vec![l1, l2] }));
    assert!(matches!(f.call(3, Op::LeaseTimeToLive { lease: l2 }), Some(Response::TimeToLive { remaining_ns: TTL_NS, .. })));
    assert!(matches!(f.call(3, Op::LeaseKeepAlive { lease: l2 }), Some(Response::KeepAlive { ttl_ns: TTL_NS, .. })));
    assert!(matches!(f.call(3, Op::LeaseKeepAlive { lease: 99 }), Some(Response::Error(ServiceError::LeaseNotFound { .. }))));
}

#[test]
fn checkpoint_records_remaining_ttl_and_full_ttl_resets_it() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.apply(Command::Checkpoint { remaining: vec![(lease, NS_PER_SEC), (404, 1)] });
    assert_eq!(f.sm.leases().get(lease).unwrap().checkpoint_remaining_ns, Some(NS_PER_SEC));
    assert!(matches!(f.call(3, Op::LeaseTimeToLive { lease }), Some(Response::TimeToLive { remaining_ns: NS_PER_SEC, .. })));
    f.apply(Command::Checkpoint { remaining: vec![(lease, TTL_NS)] });
    assert_eq!(f.sm.leases().get(lease).unwrap().checkpoint_remaining_ns, None);
}

fn stamped() -> Fixture {
    Fixture::with(ExpiryStrategy::LeaderStampedWall, Bugs::default())
}

#[test]
fn stamped_grant_records_leader_wall_plus_ttl() {
    let mut f = stamped();
    f.ctx.wall_ns = 100 * NS_PER_SEC;
    let lease = f.grant(1);
    assert_eq!(f.sm.leases().get(lease).unwrap().expiry_wall_ns, Some(100 * NS_PER_SEC + TTL_NS));
}

#[test]
fn stamped_expiry_is_judged_by_this_servers_wall_clock() {
    // Two servers apply the same entries; one's wall clock runs ahead. It
    // expires the lease (and its keys) at the next entry; the other does not.
    // Divergence under skew is what leader-stamped-wall is kept for.
    let mut ahead = stamped();
    let mut behind = stamped();
    for f in [&mut ahead, &mut behind] {
        f.ctx.wall_ns = 10 * NS_PER_SEC;
        let lease = f.grant(1);
        f.put(1, "k", "v", Some(lease));
    }
    ahead.ctx.wall_ns = 10 * NS_PER_SEC + TTL_NS;
    behind.ctx.wall_ns = 10 * NS_PER_SEC + TTL_NS - 1;
    let effects = ahead.noop();
    assert!(
        matches!(&effects[..], [Effect::Event(ServiceEvent::LeaseRevoked { cause: RevokeCause::WallClockExpiry, deleted_keys, .. })] if deleted_keys == &vec!["k".to_string()])
    );
    assert!(behind.noop().is_empty());
    assert_eq!(ahead.value("k"), None);
    assert_eq!(behind.value("k").as_deref(), Some("v"));
}

#[test]
fn stamped_refresh_extends_and_never_shortens() {
    let mut f = stamped();
    f.ctx.wall_ns = 10 * NS_PER_SEC;
    let lease = f.grant(1);
    let req = ClientRequest { client: 7, seq: 1, op: Op::LeaseKeepAlive { lease } };
    let later = 20 * NS_PER_SEC;
    let effects = f.apply(Command::Refresh { req: req.clone(), lease, expiry_wall_ns: later });
    assert_eq!(reply_to(&effects, 7, 1), Some(Response::KeepAlive { lease, ttl_ns: TTL_NS }));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LeaseRefreshed { lease, expiry_wall_ns: later })));
    let req = ClientRequest { seq: 2, ..req };
    f.apply(Command::Refresh { req, lease, expiry_wall_ns: 11 * NS_PER_SEC });
    assert_eq!(f.sm.leases().get(lease).unwrap().expiry_wall_ns, Some(later));
}

#[test]
fn stamped_refresh_of_a_revoked_lease_is_refused() {
    let mut f = stamped();
    let req = ClientRequest { client: 1, seq: 900, op: Op::LeaseKeepAlive { lease: 8 } };
    let effects = f.apply(Command::Refresh { req, lease: 8, expiry_wall_ns: NS_PER_SEC });
    assert_eq!(reply_to(&effects, 1, 900), Some(Response::Error(ServiceError::LeaseNotFound { lease: 8 })));
}

#[test]
fn planted_keepalive_after_revoke_answers_live() {
    let mut f = Fixture::with(ExpiryStrategy::LeaderStampedWall, bugs("keepalive-after-revoke"));
    let req = ClientRequest { client: 1, seq: 900, op: Op::LeaseKeepAlive { lease: 8 } };
    let effects = f.apply(Command::Refresh { req, lease: 8, expiry_wall_ns: NS_PER_SEC });
    assert!(matches!(reply_to(&effects, 1, 900), Some(Response::KeepAlive { lease: 8, .. })));
}

#[test]
fn expire_locally_ends_a_lease_outside_the_log() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.put(1, "k", "v", Some(lease));
    let applied = f.sm.applied_index();
    let mut ctx = f.ctx;
    let effects = f.sm.expire_locally(lease, &mut ctx);
    assert_eq!(
        effects,
        vec![Effect::Event(ServiceEvent::LeaseRevoked { lease, cause: RevokeCause::Expire, deleted_keys: vec!["k".into()] })]
    );
    assert_eq!(f.sm.applied_index(), applied, "no entry was applied");
    assert!(f.sm.expire_locally(lease, &mut ctx).is_empty());
}
