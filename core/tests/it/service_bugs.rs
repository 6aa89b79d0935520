//! Every harness check fires on the planted bug it exists for, and stays
//! quiet on the same scenario without the bug. Two checks have no planted
//! bug in this layer (fifo-order, applied-twice); they are shown firing on a
//! doctored event stream instead (and in the judge's own tests), and the
//! harness's KV recording is shown feeding `linearizable` both ways on a
//! crafted log: a stale read fires, a concurrent or possibly-applied one
//! does not.

use crate::service_harness;

use leasesim_core::bugs::Bugs;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{Op, Response, ServiceEvent};
use leasesim_core::{ExpiryStrategy, LeaseId, NS_PER_MS, NS_PER_SEC};
use service_harness::checker::{CheckSettings, ServiceChecker};
use service_harness::{ServiceCluster, ServiceClusterConfig};

fn bugs(name: &str) -> Bugs {
    let mut bugs = Bugs::default();
    bugs.enable(name).expect("known bug");
    bugs
}

fn cluster(seed: u64, bugs: Bugs) -> ServiceCluster {
    let mut cfg = ServiceClusterConfig::new(3, seed);
    cfg.bugs = bugs;
    ServiceCluster::new(cfg)
}

/// Runs `scenario` without and with the bug: quiet without, `check` fires
/// with.
fn assert_catches(bug: &str, check: &str, scenario: impl Fn(Bugs) -> ServiceCluster) {
    let clean = scenario(Bugs::default());
    assert_eq!(clean.violations(), &[], "without {bug}");
    let buggy = scenario(bugs(bug));
    assert!(buggy.checker.fired(check), "{bug} should fire {check}; got {:?}", buggy.violations());
}

fn grant(c: &mut ServiceCluster, client: u64) -> LeaseId {
    match c.call(client, Op::LeaseGrant { ttl_ns: service_harness::TTL_NS, id: None }, NS_PER_SEC).map(|a| a.body) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("grant: {other:?}"),
    }
}

#[test]
fn token_monotonic_catches_token_from_local_counter() {
    assert_catches("token-from-local-counter", "token-monotonic", |bugs| {
        let mut cfg = ServiceClusterConfig::new(3, 11);
        cfg.bugs = bugs;
        cfg.snapshot_every_entries = 10;
        let mut c = ServiceCluster::new(cfg);
        c.add_lock_client(1, &["a"]);
        c.add_lock_client(2, &["a"]);
        c.run_until(3 * NS_PER_SEC);
        // A restarted server counts its grants from zero again, from its
        // snapshot on; a replacement leader hands out its own numbers.
        let leader = c.wait_for_leader();
        c.crash(leader);
        c.run_until(4 * NS_PER_SEC);
        c.restart(leader);
        c.run_until(6 * NS_PER_SEC);
        c
    });
}

#[test]
fn release_by_owner_catches_release_without_owner_check() {
    assert_catches("release-without-owner-check", "release-by-owner", |bugs| {
        let mut c = cluster(12, bugs);
        c.add_lock_client(1, &["a"]);
        c.add_manual_client(9);
        c.run_until(NS_PER_SEC);
        // A client that never held the lock releases it with a made-up token.
        for _ in 0..10 {
            c.call(9, Op::LockRelease { key: "a".into(), token: 1 }, NS_PER_SEC);
            c.run_until(c.now_ns + 50 * NS_PER_MS);
        }
        c
    });
}

#[test]
fn keepalive_after_revoke_catches_its_bug() {
    assert_catches("keepalive-after-revoke", "keepalive-after-revoke", |bugs| {
        let mut c = cluster(13, bugs);
        c.add_manual_client(9);
        c.wait_for_leader();
        let lease = grant(&mut c, 9);
        let revoked = c.call(9, Op::LeaseRevoke { lease }, NS_PER_SEC).expect("answered");
        assert_eq!(revoked.body, Response::LeaseRevoked { lease });
        c.call(9, Op::LeaseKeepAlive { lease }, NS_PER_SEC);
        c
    });
}

#[test]
fn revoke_same_index_is_replica_divergence() {
    // The harness's old rule (a lease ends at one index on every server,
    // and no server keeps it past that index) is the judge's
    // replica-divergence: the follower that ends a lease on its own clock
    // applies that index to a different state.
    assert_catches("follower-expires-leases", "replica-divergence", |bugs| {
        let mut c = cluster(14, bugs);
        c.add_registry_client(1, 10 * NS_PER_SEC);
        c.add_lock_client(2, &["a"]);
        c.run_until(4 * NS_PER_SEC);
        c
    });
}

#[test]
fn lease_early_expiry_also_catches_follower_expires_leases() {
    let mut c = cluster(14, bugs("follower-expires-leases"));
    c.add_registry_client(1, 10 * NS_PER_SEC);
    c.run_until(4 * NS_PER_SEC);
    assert!(c.checker.fired("lease-early-expiry"), "{:?}", c.violations());
}

#[test]
fn holder_lease_catches_grant_without_lease_check() {
    assert_catches("grant-without-lease-check", "holder-lease", |bugs| {
        let mut c = cluster(15, bugs);
        c.add_manual_client(8);
        c.add_manual_client(9);
        c.wait_for_leader();
        let holder = grant(&mut c, 8);
        let waiter = grant(&mut c, 9);
        let granted = c.call(8, Op::LockAcquire { key: "a".into(), lease: holder }, NS_PER_SEC).expect("granted");
        let Response::LockGranted { token, .. } = granted.body else { panic!("{granted:?}") };
        c.submit(9, Op::LockAcquire { key: "a".into(), lease: waiter });
        c.run_until(c.now_ns + 100 * NS_PER_MS);
        // The waiter's lease ends while it waits; then the lock comes free.
        c.call(9, Op::LeaseRevoke { lease: waiter }, NS_PER_SEC);
        c.call(8, Op::LockRelease { key: "a".into(), token }, NS_PER_SEC);
        c.run_until(c.now_ns + 100 * NS_PER_MS);
        c
    });
}

#[test]
fn promote_extension_catches_no_promote_extension() {
    assert_catches("no-promote-extension", "promote-extension", |bugs| {
        let mut c = cluster(16, bugs);
        c.add_manual_client(9);
        let leader = c.wait_for_leader();
        // A lease nobody keeps alive, then a leader change before it expires.
        grant(&mut c, 9);
        c.run_until(c.now_ns + 50 * NS_PER_MS);
        c.crash(leader);
        c.run_until(c.now_ns + 4 * NS_PER_SEC);
        c.restart(leader);
        c.run_until(c.now_ns + NS_PER_SEC);
        c
    });
}

/// A stale read (sent after a write was acknowledged, yet missing it) is
/// `linearizable`'s to catch, as in the simulator and in real runs: the
/// harness's own `stale-read` rule is gone.
#[test]
fn stale_read_catches_stale_follower_reads() {
    assert_catches("stale-follower-reads", "linearizable", |bugs| {
        let mut c = cluster(17, bugs);
        c.add_manual_client(9);
        let leader = c.wait_for_leader();
        let put = |value: &str| Op::Put { key: "x".into(), value: value.into(), lease: None };
        c.call(9, put("1"), NS_PER_SEC).expect("first write");
        c.run_until(c.now_ns + 100 * NS_PER_MS);
        // One follower falls behind (cut from its peers, not from clients).
        let follower = (1..=3).find(|s| *s != leader).expect("a follower");
        c.isolate(follower, false);
        c.call(9, put("2"), NS_PER_SEC).expect("second write");
        let seq = c.submit_to(9, follower, Op::Get { key: "x".into() });
        c.run_until(c.now_ns + NS_PER_SEC);
        assert!(c.answer(9, seq).is_some(), "the read was answered");
        c
    });
}

fn synthetic_checker() -> ServiceChecker {
    ServiceChecker::new(CheckSettings { expiry: ExpiryStrategy::LeaderMonotonic, extension_ns: 0 })
}

#[test]
fn fifo_order_fires_on_a_grant_out_of_queue_order() {
    let mut checker = synthetic_checker();
    let queued =
        |client, index| ServerEvent::Service { index, event: ServiceEvent::LockQueued { key: "a".into(), client, seq: 1, lease: client } };
    checker.observe(1, 1, &queued(1, 5));
    checker.observe(1, 1, &queued(2, 6));
    checker.observe(1, 1, &queued(3, 7));
    let granted = |client, index| ServerEvent::Service {
        index,
        event: ServiceEvent::LockGranted { key: "a".into(), client, seq: 1, lease: client, token: index },
    };
    checker.observe(2, 1, &granted(1, 7));
    assert!(!checker.fired("fifo-order"));
    checker.observe(3, 1, &granted(3, 9));
    assert!(checker.fired("fifo-order"), "{:?}", checker.violations());
}

#[test]
fn applied_twice_fires_on_one_request_at_two_indexes() {
    let mut checker = synthetic_checker();
    checker.observe(1, 1, &ServerEvent::Service { index: 20, event: ServiceEvent::RequestApplied { client: 4, seq: 9 } });
    checker.observe(1, 2, &ServerEvent::Service { index: 20, event: ServiceEvent::RequestApplied { client: 4, seq: 9 } });
    assert!(!checker.fired("applied-twice"), "the same entry on two servers is one application");
    checker.observe(2, 1, &ServerEvent::Service { index: 23, event: ServiceEvent::RequestApplied { client: 4, seq: 9 } });
    assert!(checker.fired("applied-twice"));
}

/// Feeds `checker` a put of `value` by client 1 (seq `seq`), called at
/// `call_ms` and acknowledged at `ack_ms` (never, if `None`).
fn put(checker: &mut ServiceChecker, seq: u64, value: &str, call_ms: u64, ack_ms: Option<u64>) {
    checker.kv_called(call_ms * NS_PER_MS, 1, seq, &Op::Put { key: "x".into(), value: value.into(), lease: None });
    if let Some(ack_ms) = ack_ms {
        checker.kv_returned(ack_ms * NS_PER_MS, 1, seq, &Response::Done { revision: seq });
    }
}

/// Feeds `checker` a get by client 2 called at `call_ms` that read `value`.
fn get(checker: &mut ServiceChecker, seq: u64, call_ms: u64, value: &str) {
    checker.kv_called(call_ms * NS_PER_MS, 2, seq, &Op::Get { key: "x".into() });
    // A resend is the same call, not a second one.
    checker.kv_called((call_ms + 1) * NS_PER_MS, 2, seq, &Op::Get { key: "x".into() });
    let answer = Response::Value { value: Some(value.into()), revision: 1 };
    checker.kv_returned((call_ms + 5) * NS_PER_MS, 2, seq, &answer);
}

#[test]
fn a_read_sent_after_an_acknowledged_write_that_misses_it_fires_linearizable() {
    let mut checker = synthetic_checker();
    put(&mut checker, 1, "v1", 0, Some(10));
    put(&mut checker, 2, "v2", 20, Some(30));
    get(&mut checker, 1, 40, "v1");
    assert!(checker.fired("linearizable"), "{:?}", checker.violations());
    assert_eq!(checker.seen.get("reads"), Some(&1));
}

#[test]
fn a_read_concurrent_with_a_write_or_after_an_unanswered_one_may_miss_it() {
    // Sent before v2 was acknowledged: it may be ordered before v2.
    let mut checker = synthetic_checker();
    put(&mut checker, 1, "v1", 0, Some(10));
    put(&mut checker, 2, "v2", 20, Some(50));
    get(&mut checker, 1, 40, "v1");
    assert_eq!(checker.violations(), &[]);
    // v2 was never answered: it may take effect later, or never; a read
    // may see v1 and another v2.
    let mut checker = synthetic_checker();
    put(&mut checker, 1, "v1", 0, Some(10));
    put(&mut checker, 2, "v2", 20, None);
    get(&mut checker, 1, 40, "v1");
    get(&mut checker, 2, 60, "v2");
    assert_eq!(checker.violations(), &[]);
}
