//! Client sessions (Raft thesis §6.3): a retried `(client, seq)` is answered
//! from the record and never applied twice; a queued acquire stays queued;
//! memory per client is bounded by a window of sequence numbers.

use crate::service_support;

use leasesim_core::service::session::{Lookup, DEFAULT_SESSION_WINDOW};
use leasesim_core::service::{Effect, Op, Response, ServiceError, ServiceEvent};
use service_support::{reply_to, Fixture};

fn put(key: &str, value: &str) -> Op {
    Op::Put { key: key.into(), value: value.into(), lease: None }
}

#[test]
fn a_retried_write_is_answered_from_the_record() {
    let mut f = Fixture::new();
    let first = f.request(1, 1, put("a", "x"));
    let revision = f.sm.kv().revision();
    f.put(2, "a", "y", None);
    let retry = f.request(1, 1, put("a", "x"));
    assert_eq!(reply_to(&retry, 1, 1), reply_to(&first, 1, 1));
    assert!(retry.contains(&Effect::Event(ServiceEvent::RequestDeduplicated { client: 1, seq: 1 })));
    assert!(!retry.iter().any(|e| matches!(e, Effect::Event(ServiceEvent::RequestApplied { .. }))));
    assert_eq!(f.value("a").as_deref(), Some("y"), "the retry did not overwrite the later write");
    assert!(f.sm.kv().revision() > revision);
}

#[test]
fn a_retried_grant_does_not_grant_twice() {
    let mut f = Fixture::new();
    let op = Op::LeaseGrant { ttl_ns: service_support::TTL_NS, id: None };
    let first = reply_to(&f.request(1, 1, op.clone()), 1, 1);
    let retry = reply_to(&f.request(1, 1, op), 1, 1);
    assert_eq!(first, retry);
    assert_eq!(f.sm.leases().len(), 1);
}

#[test]
fn a_retried_queued_acquire_stays_queued_and_is_answered_when_granted() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    f.request(1, 1, Op::LockAcquire { key: "k".into(), lease: l1 });
    let token = f.sm.locks().holder("k").unwrap().token;
    let acquire = Op::LockAcquire { key: "k".into(), lease: l2 };
    f.request(2, 1, acquire.clone());
    let retry = f.request(2, 1, acquire.clone());
    assert_eq!(retry, vec![Effect::Event(ServiceEvent::RequestDeduplicated { client: 2, seq: 1 })], "no answer yet, nothing applied");
    assert_eq!(f.sm.sessions().lookup(2, 1), Lookup::Pending);
    assert_eq!(f.sm.locks().get("k").unwrap().waiters.len(), 1);
    let granted = f.request(1, 2, Op::LockRelease { key: "k".into(), token });
    let answer = reply_to(&granted, 2, 1).expect("answered by the granting entry");
    // A retry after the grant gets the same answer from the record.
    assert_eq!(reply_to(&f.request(2, 1, acquire), 2, 1), Some(answer));
}

#[test]
fn a_dropped_waiter_is_answered_and_the_answer_recorded() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    f.request(1, 1, Op::LockAcquire { key: "k".into(), lease: l1 });
    f.request(2, 1, Op::LockAcquire { key: "k".into(), lease: l2 });
    f.call(2, Op::LeaseRevoke { lease: l2 });
    let expected = Response::Error(ServiceError::LeaseNotFound { lease: l2 });
    assert_eq!(f.sm.sessions().lookup(2, 1), Lookup::Answered(expected));
}

#[test]
fn requests_within_the_window_may_arrive_out_of_order() {
    let mut f = Fixture::new();
    f.request(1, 5, put("a", "5"));
    let effects = f.request(1, 3, put("b", "3"));
    assert!(effects.contains(&Effect::Event(ServiceEvent::RequestApplied { client: 1, seq: 3 })));
    assert_eq!(f.value("b").as_deref(), Some("3"));
}

#[test]
fn answers_below_the_window_are_forgotten_and_such_retries_refused() {
    let mut f = Fixture::new();
    let window = DEFAULT_SESSION_WINDOW;
    f.request(1, 1, put("a", "1"));
    f.request(1, 1 + window, put("a", "late"));
    let session = f.sm.sessions().get(1).unwrap();
    assert!(session.records().all(|(seq, _)| *seq > 1), "seq 1 fell out of the window");
    let retry = f.request(1, 1, put("a", "1"));
    assert_eq!(reply_to(&retry, 1, 1), Some(Response::Error(ServiceError::SessionExpired)));
    assert_eq!(f.value("a").as_deref(), Some("late"), "the old request was not applied again");
    // Never seen and too old: also refused, not guessed at.
    let stray = f.request(1, 0, put("a", "0"));
    assert_eq!(reply_to(&stray, 1, 0), Some(Response::Error(ServiceError::SessionExpired)));
}

#[test]
fn memory_per_client_is_bounded_but_pending_acquires_are_kept() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    f.request(1, 1, Op::LockAcquire { key: "k".into(), lease: l1 });
    f.request(2, 1, Op::LockAcquire { key: "k".into(), lease: l2 });
    for seq in 2..(4 * DEFAULT_SESSION_WINDOW) {
        f.request(2, seq, put("x", "v"));
    }
    let session = f.sm.sessions().get(2).unwrap();
    assert!(session.records().count() as u64 <= DEFAULT_SESSION_WINDOW + 1);
    assert_eq!(f.sm.sessions().lookup(2, 1), Lookup::Pending, "still owed an answer");
}

#[test]
fn sessions_are_per_client() {
    let mut f = Fixture::new();
    f.request(1, 1, put("a", "from-1"));
    let effects = f.request(2, 1, put("a", "from-2"));
    assert!(effects.contains(&Effect::Event(ServiceEvent::RequestApplied { client: 2, seq: 1 })));
    assert_eq!(f.value("a").as_deref(), Some("from-2"));
    assert_eq!(f.sm.sessions().clients(), vec![1, 2]);
}

#[test]
fn a_retried_refresh_is_applied_again_and_never_shortens() {
    use leasesim_core::service::{ClientRequest, Command};
    let mut f = Fixture::with(leasesim_core::ExpiryStrategy::LeaderStampedWall, Default::default());
    let lease = f.grant(1);
    let stamp = f.sm.leases().get(lease).unwrap().expiry_wall_ns.unwrap();
    let req = ClientRequest { client: 1, seq: 77, op: Op::LeaseKeepAlive { lease } };
    let first = f.apply(Command::Refresh { req: req.clone(), lease, expiry_wall_ns: stamp + 50 });
    let retry = f.apply(Command::Refresh { req: req.clone(), lease, expiry_wall_ns: stamp + 10 });
    assert_eq!(reply_to(&first, 1, 77), reply_to(&retry, 1, 77));
    assert_eq!(f.sm.leases().get(lease).unwrap().expiry_wall_ns, Some(stamp + 50));
    // After a revoke the same retry is refused, not replayed as alive.
    f.call(1, Op::LeaseRevoke { lease });
    let late = f.apply(Command::Refresh { req, lease, expiry_wall_ns: stamp + 90 });
    assert_eq!(reply_to(&late, 1, 77), Some(Response::Error(ServiceError::LeaseNotFound { lease })));
}

#[test]
fn a_replayed_grant_of_an_ended_lease_is_not_replayed_as_alive() {
    let mut f = Fixture::new();
    let op = Op::LeaseGrant { ttl_ns: service_support::TTL_NS, id: None };
    let lease = match reply_to(&f.request(1, 1, op.clone()), 1, 1) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("{other:?}"),
    };
    f.call(2, Op::LeaseRevoke { lease });
    let retry = f.request(1, 1, op);
    assert_eq!(reply_to(&retry, 1, 1), Some(Response::Error(ServiceError::LeaseNotFound { lease })));
    assert!(f.sm.leases().is_empty(), "and nothing was granted again");
}

#[test]
fn a_replayed_lock_grant_since_passed_on_is_not_replayed_as_held() {
    let mut f = Fixture::new();
    let (l1, l2) = (f.grant(1), f.grant(2));
    let acquire = Op::LockAcquire { key: "k".into(), lease: l1 };
    f.request(1, 1, acquire.clone());
    let token = f.sm.locks().holder("k").unwrap().token;
    assert_eq!(reply_to(&f.request(1, 1, acquire.clone()), 1, 1), Some(Response::LockGranted { key: "k".into(), token }));
    f.request(2, 1, Op::LockAcquire { key: "k".into(), lease: l2 });
    f.call(9, Op::LeaseRevoke { lease: l1 });
    let retry = f.request(1, 1, acquire);
    assert_eq!(reply_to(&retry, 1, 1), Some(Response::Error(ServiceError::NotLockHolder { key: "k".into() })));
}
