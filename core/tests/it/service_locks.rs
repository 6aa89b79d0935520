//! Lock queues through the state machine: FIFO grants, fencing tokens as grant
//! indexes, release by the holder only, and what a lease's end does to the
//! locks it holds and waits for (the Raft lock-service design; etcd #11456).

use crate::service_support;

use leasesim_core::bugs::Bugs;
use leasesim_core::service::{Effect, Op, ReleaseCause, Response, ServiceError, ServiceEvent};
use leasesim_core::{ClientId, ExpiryStrategy, LeaseId, NS_PER_SEC};
use service_support::{bugs, replies, reply_to, Fixture, TTL_NS};

fn acquire(f: &mut Fixture, client: ClientId, seq: u64, key: &str, lease: LeaseId) -> Vec<Effect> {
    f.request(client, seq, Op::LockAcquire { key: key.into(), lease })
}

fn release(f: &mut Fixture, client: ClientId, key: &str, token: u64) -> Option<Response> {
    f.call(client, Op::LockRelease { key: key.into(), token })
}

fn holder(f: &Fixture, key: &str) -> Option<(ClientId, u64)> {
    f.sm.locks().holder(key).map(|h| (h.client, h.token))
}

#[test]
fn acquire_of_a_free_lock_is_granted_at_its_own_index() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    let index = f.next_index();
    let effects = acquire(&mut f, 1, 1, "k", lease);
    assert_eq!(
        effects,
        vec![
            Effect::Event(ServiceEvent::RequestApplied { client: 1, seq: 1 }),
            Effect::Event(ServiceEvent::LockQueued { key: "k".into(), client: 1, seq: 1, lease }),
            Effect::Event(ServiceEvent::LockGranted { key: "k".into(), client: 1, seq: 1, lease, token: index }),
            Effect::Reply { client: 1, seq: 1, body: Response::LockGranted { key: "k".into(), token: index } },
        ]
    );
    assert_eq!(holder(&f, "k"), Some((1, index)));
}

#[test]
fn acquire_with_missing_lease_is_refused() {
    let mut f = Fixture::new();
    let effects = acquire(&mut f, 1, 1, "k", 33);
    assert_eq!(reply_to(&effects, 1, 1), Some(Response::Error(ServiceError::LeaseNotFound { lease: 33 })));
    assert_eq!(holder(&f, "k"), None);
}

#[test]
fn busy_lock_queues_the_request_without_an_answer() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    let effects = acquire(&mut f, 2, 1, "k", l2);
    assert_eq!(
        effects,
        vec![
            Effect::Event(ServiceEvent::RequestApplied { client: 2, seq: 1 }),
            Effect::Event(ServiceEvent::LockQueued { key: "k".into(), client: 2, seq: 1, lease: l2 })
        ]
    );
    assert_eq!(f.sm.locks().get("k").unwrap().waiters.len(), 1);
}

#[test]
fn release_hands_the_lock_to_the_next_waiter_in_the_same_entry() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    let (_, token) = holder(&f, "k").unwrap();
    acquire(&mut f, 2, 1, "k", l2);
    let index = f.next_index();
    let effects = f.request(1, 2, Op::LockRelease { key: "k".into(), token });
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockReleased {
        key: "k".into(),
        client: 1,
        token,
        cause: ReleaseCause::Release { by: 1 }
    })));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockGranted { key: "k".into(), client: 2, seq: 1, lease: l2, token: index })));
    assert_eq!(
        replies(&effects),
        vec![(1, 2, Response::Released { key: "k".into() }), (2, 1, Response::LockGranted { key: "k".into(), token: index }),]
    );
    assert!(index > token, "tokens grow");
}

#[test]
fn release_with_a_wrong_token_is_refused() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    let (_, token) = holder(&f, "k").unwrap();
    acquire(&mut f, 2, 1, "k", l2);
    let refused = Some(Response::Error(ServiceError::NotLockHolder { key: "k".into() }));
    assert_eq!(release(&mut f, 2, "k", token + 1), refused, "a waiter cannot release");
    assert_eq!(release(&mut f, 1, "k", token - 1), refused, "a stale token names an earlier holder");
    assert_eq!(release(&mut f, 1, "other", token), Some(Response::Error(ServiceError::NotLockHolder { key: "other".into() })));
    assert_eq!(holder(&f, "k"), Some((1, token)));
}

#[test]
fn release_of_a_free_lock_is_refused() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    acquire(&mut f, 1, 1, "k", lease);
    let (_, token) = holder(&f, "k").unwrap();
    assert_eq!(release(&mut f, 1, "k", token), Some(Response::Released { key: "k".into() }));
    assert_eq!(release(&mut f, 1, "k", token), Some(Response::Error(ServiceError::NotLockHolder { key: "k".into() })));
}

#[test]
fn reacquire_under_the_holding_lease_returns_the_same_token() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    acquire(&mut f, 1, 1, "k", lease);
    let (_, token) = holder(&f, "k").unwrap();
    let effects = acquire(&mut f, 1, 2, "k", lease);
    assert_eq!(reply_to(&effects, 1, 2), Some(Response::LockGranted { key: "k".into(), token }));
    assert!(!effects.iter().any(|e| matches!(e, Effect::Event(ServiceEvent::LockGranted { .. }))), "not a new grant");
}

#[test]
fn a_lease_waits_in_a_queue_once() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    acquire(&mut f, 2, 1, "k", l2);
    let effects = acquire(&mut f, 2, 2, "k", l2);
    assert_eq!(reply_to(&effects, 2, 2), Some(Response::Error(ServiceError::AlreadyQueued { key: "k".into() })));
    assert_eq!(f.sm.locks().get("k").unwrap().waiters.len(), 1);
}

#[test]
fn waiters_are_granted_in_commit_order_with_growing_tokens() {
    let mut f = Fixture::new();
    let leases: Vec<LeaseId> = (1..=4).map(|c| f.grant(c)).collect();
    for (i, lease) in leases.iter().enumerate() {
        acquire(&mut f, i as ClientId + 1, 1, "k", *lease);
    }
    let mut order = Vec::new();
    let mut tokens = Vec::new();
    while let Some((client, token)) = holder(&f, "k") {
        order.push(client);
        tokens.push(token);
        release(&mut f, client, "k", token);
    }
    assert_eq!(order, vec![1, 2, 3, 4]);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn holders_lease_end_releases_and_grants_the_next_live_waiter() {
    let mut f = Fixture::new();
    let (l1, l2, l3) = (f.grant(1), f.grant(2), f.grant(3));
    acquire(&mut f, 1, 1, "k", l1);
    let (_, token) = holder(&f, "k").unwrap();
    acquire(&mut f, 2, 1, "k", l2);
    acquire(&mut f, 3, 1, "k", l3);
    let index = f.next_index();
    let effects = f.request(9, 1, Op::LeaseRevoke { lease: l1 });
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockReleased {
        key: "k".into(),
        client: 1,
        token,
        cause: ReleaseCause::LeaseEnded
    })));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockGranted { key: "k".into(), client: 2, seq: 1, lease: l2, token: index })));
    assert_eq!(reply_to(&effects, 2, 1), Some(Response::LockGranted { key: "k".into(), token: index }));
}

#[test]
fn waiters_lease_end_drops_it_and_answers_its_acquire() {
    let mut f = Fixture::new();
    let (l1, l2, l3) = (f.grant(1), f.grant(2), f.grant(3));
    acquire(&mut f, 1, 1, "k", l1);
    acquire(&mut f, 2, 1, "k", l2);
    acquire(&mut f, 3, 1, "k", l3);
    let effects = f.request(9, 1, Op::LeaseRevoke { lease: l2 });
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockWaiterDropped { key: "k".into(), client: 2, seq: 1, lease: l2 })));
    assert_eq!(reply_to(&effects, 2, 1), Some(Response::Error(ServiceError::LeaseNotFound { lease: l2 })));
    let (_, token) = holder(&f, "k").unwrap();
    release(&mut f, 1, "k", token);
    assert_eq!(holder(&f, "k").map(|h| h.0), Some(3), "the dropped waiter is skipped");
}

#[test]
fn expire_entry_releases_locks_of_the_lease() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "a", l1);
    acquire(&mut f, 1, 2, "b", l1);
    acquire(&mut f, 2, 1, "b", l2);
    let index = f.next_index();
    let effects = f.apply(leasesim_core::service::Command::Expire { lease: l1 });
    let released: Vec<_> = effects.iter().filter(|e| matches!(e, Effect::Event(ServiceEvent::LockReleased { .. }))).collect();
    assert_eq!(released.len(), 2);
    assert_eq!(holder(&f, "a"), None);
    assert_eq!(holder(&f, "b"), Some((2, index)));
}

#[test]
fn stamped_wall_expiry_hands_the_lock_on_at_the_next_entry() {
    let mut f = Fixture::with(ExpiryStrategy::LeaderStampedWall, Bugs::default());
    f.ctx.wall_ns = NS_PER_SEC;
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    acquire(&mut f, 2, 1, "k", l2);
    // Client 2's lease was granted later but both expire at 1 s + TTL; push
    // client 2's stamp out so only client 1's lease lapses.
    let req = leasesim_core::service::ClientRequest { client: 2, seq: 2, op: Op::LeaseKeepAlive { lease: l2 } };
    f.apply(leasesim_core::service::Command::Refresh { req, lease: l2, expiry_wall_ns: 10 * NS_PER_SEC });
    f.ctx.wall_ns = NS_PER_SEC + TTL_NS;
    let index = f.next_index();
    let effects = f.noop();
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockGranted { key: "k".into(), client: 2, seq: 1, lease: l2, token: index })));
}

#[test]
fn planted_release_without_owner_check_lets_anyone_release() {
    let mut f = Fixture::with(ExpiryStrategy::LeaderMonotonic, bugs("release-without-owner-check"));
    let lease = f.grant(1);
    acquire(&mut f, 1, 1, "k", lease);
    let (_, token) = holder(&f, "k").unwrap();
    let effects = f.request(2, 1, Op::LockRelease { key: "k".into(), token: 12345 });
    assert!(effects.contains(&Effect::Event(ServiceEvent::LockReleased {
        key: "k".into(),
        client: 1,
        token,
        cause: ReleaseCause::Release { by: 2 }
    })));
    assert_eq!(holder(&f, "k"), None);
}

#[test]
fn planted_grant_without_lease_check_grants_a_dead_waiter() {
    let mut f = Fixture::with(ExpiryStrategy::LeaderMonotonic, bugs("grant-without-lease-check"));
    let (l1, l2) = (f.grant(1), f.grant(2));
    acquire(&mut f, 1, 1, "k", l1);
    let (_, token) = holder(&f, "k").unwrap();
    acquire(&mut f, 2, 1, "k", l2);
    f.call(9, Op::LeaseRevoke { lease: l2 });
    release(&mut f, 1, "k", token);
    let h = f.sm.locks().holder("k").unwrap();
    assert_eq!(h.lease, l2);
    assert!(!f.sm.leases().contains(l2), "the lock went to a dead lease");
}

#[test]
fn planted_token_from_local_counter_restarts_with_the_process() {
    let mut f = Fixture::with(ExpiryStrategy::LeaderMonotonic, bugs("token-from-local-counter"));
    let lease = f.grant(1);
    acquire(&mut f, 1, 1, "k", lease);
    let (_, first) = holder(&f, "k").unwrap();
    release(&mut f, 1, "k", first);
    f.ctx.local_grants = 0; // the process restarted
    acquire(&mut f, 1, 3, "k", lease);
    let (_, second) = holder(&f, "k").unwrap();
    assert_eq!((first, second), (1, 1), "a token repeats: fencing is broken");
}
