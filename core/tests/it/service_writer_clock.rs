//! The `writer-clock` expiry strategy (the Juju lease design, Juju's lease
//! package), one rule per test: a claim writes its expiry in the claimant's
//! clock, an extension never shortens, an expiry applies only when the writer's
//! time is known past the expiry it wrote (its own acknowledgement or a
//! proposer's measured inference), a stale expiry loses to an extension, and no
//! server's clock is ever compared with the writer's.

use crate::service_harness;
use crate::service_support;

use leasesim_core::bugs::Bugs;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{Command, Effect, Op, Response, RevokeCause, ServiceError, ServiceEvent};
use leasesim_core::{ClientId, ExpiryStrategy, LeaseId, NS_PER_MS, NS_PER_SEC};
use service_harness::{ServiceCluster, ServiceClusterConfig};
use service_support::{reply_to, Fixture, TTL_NS};

const C1: ClientId = 1;
const C2: ClientId = 2;

fn fixture() -> Fixture {
    Fixture::with(ExpiryStrategy::WriterClock, Bugs::default())
}

fn claim(f: &mut Fixture, client: ClientId, writer_wall_ns: u64) -> LeaseId {
    match f.call(client, Op::LeaseClaim { ttl_ns: TTL_NS, writer_wall_ns }) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("claim: {other:?}"),
    }
}

fn expiry(f: &Fixture, lease: LeaseId) -> u64 {
    f.sm.leases().get(lease).and_then(|l| l.expiry_writer_ns).expect("a writer-clock lease")
}

#[test]
fn a_claim_writes_its_expiry_in_the_claimants_clock() {
    let mut f = fixture();
    f.ctx.wall_ns = 5 * NS_PER_SEC; // the server's own wall clock: irrelevant
    let lease = claim(&mut f, C1, 1_000 * NS_PER_SEC);
    let l = f.sm.leases().get(lease).unwrap();
    assert_eq!((l.writer, l.expiry_writer_ns, l.expiry_wall_ns), (Some(C1), Some(1_000 * NS_PER_SEC + TTL_NS), None));
    assert_eq!(f.sm.writer_clocks().acked_ns(C1), 1_000 * NS_PER_SEC);
    assert_eq!(f.sm.writer_remaining_ns(lease), Some(TTL_NS));
}

#[test]
fn an_extension_never_shortens_and_moves_with_the_writers_time() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    // The holder's clock stepped back: the expiry stays, the ack stays.
    let reply = f.call(C1, Op::LeaseExtend { lease, writer_wall_ns: 90 * NS_PER_SEC });
    assert_eq!(reply, Some(Response::KeepAlive { lease, ttl_ns: TTL_NS }));
    assert_eq!(expiry(&f, lease), 100 * NS_PER_SEC + TTL_NS);
    assert_eq!(f.sm.writer_clocks().acked_ns(C1), 100 * NS_PER_SEC, "acknowledged time never goes back");
    f.call(C1, Op::LeaseExtend { lease, writer_wall_ns: 101 * NS_PER_SEC });
    assert_eq!(expiry(&f, lease), 101 * NS_PER_SEC + TTL_NS);
    assert_eq!(f.sm.writer_remaining_ns(lease), Some(TTL_NS));
}

#[test]
fn an_expiry_applies_only_when_the_writers_time_is_past_it() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    let expiry_ns = expiry(&f, lease);
    let effects = f.apply(Command::WriterExpire { lease, expiry_ns, writer_ns: expiry_ns - 1 });
    assert!(f.sm.leases().contains(lease), "the inferred writer time is short of the expiry");
    assert!(!effects.iter().any(|e| matches!(e, Effect::Event(ServiceEvent::LeaseRevoked { .. }))));
    let effects = f.apply(Command::WriterExpire { lease, expiry_ns, writer_ns: expiry_ns });
    assert!(!f.sm.leases().contains(lease));
    assert!(effects.contains(&Effect::Event(ServiceEvent::LeaseRevoked { lease, cause: RevokeCause::Expire, deleted_keys: vec![] })));
}

#[test]
fn the_writers_own_acknowledgement_suffices_to_expire() {
    let mut f = fixture();
    let old = claim(&mut f, C1, 100 * NS_PER_SEC);
    let expiry_ns = expiry(&f, old);
    // The same client acknowledges a later time by claiming another lease (the
    // Juju lease design: "a fresh client D will be able to expire lease L
    // earlier").
    claim(&mut f, C1, expiry_ns + NS_PER_SEC);
    assert_eq!(f.sm.writer_remaining_ns(old), Some(0));
    f.apply(Command::WriterExpire { lease: old, expiry_ns, writer_ns: 0 });
    assert!(!f.sm.leases().contains(old), "acknowledged past its expiry by its own writer");
}

#[test]
fn an_expiry_raced_by_an_extension_is_stale_and_refused() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    let seen_ns = expiry(&f, lease);
    f.call(C1, Op::LeaseExtend { lease, writer_wall_ns: 101 * NS_PER_SEC });
    f.apply(Command::WriterExpire { lease, expiry_ns: seen_ns, writer_ns: u64::MAX });
    assert!(f.sm.leases().contains(lease), "the proposer saw an expiry the lease no longer carries");
}

#[test]
fn no_server_clock_is_compared_with_the_writers() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    // A server whose wall clock is hours ahead applies entries: nothing ends.
    f.ctx.wall_ns = 10_000 * NS_PER_SEC;
    f.noop();
    f.call(C2, Op::Put { key: "k".into(), value: "v".into(), lease: None });
    assert!(f.sm.leases().contains(lease));
    // Another client's clock far ahead does not expire C1's lease either.
    claim(&mut f, C2, 10_000 * NS_PER_SEC);
    f.apply(Command::WriterExpire { lease, expiry_ns: expiry(&f, lease), writer_ns: 0 });
    assert!(f.sm.leases().contains(lease));
}

#[test]
fn a_plain_grant_has_no_writer_and_a_later_reading_does_not_shorten_it() {
    // The regression the simulator found (chaos-nemesis under writer-clock):
    // a plain grant used to be written relative to the client's last
    // acknowledged time, long past, so the client's next fresh reading
    // made the lease look expired and the leader ended it at once.
    let mut f = fixture();
    claim(&mut f, C1, 50 * NS_PER_SEC);
    let lease = match f.call(C1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("grant: {other:?}"),
    };
    let l = f.sm.leases().get(lease).unwrap();
    assert_eq!((l.writer, l.expiry_writer_ns), (None, None), "no reading, no writer");
    assert_eq!(f.sm.writer_remaining_ns(lease), None, "the leader measures it");
    claim(&mut f, C1, 200 * NS_PER_SEC);
    assert_eq!(f.sm.writer_remaining_ns(lease), None, "a fresh reading says nothing about it");
    assert!(f.sm.leases().contains(lease));
}

#[test]
fn a_measured_expiry_applies_only_if_no_renewal_came_after_it() {
    let mut f = fixture();
    let lease = match f.call(C1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("grant: {other:?}"),
    };
    let granted = f.sm.leases().get(lease).unwrap().renewed_index;
    assert_eq!(f.call(C1, Op::LeaseKeepAlive { lease }), Some(Response::KeepAlive { lease, ttl_ns: TTL_NS }));
    let renewed = f.sm.leases().get(lease).unwrap().renewed_index;
    assert!(renewed > granted, "a plain keep-alive renews it in the log");
    f.apply(Command::MeasuredExpire { lease, renewed_index: granted });
    assert!(f.sm.leases().contains(lease), "an expiry proposed before the renewal is stale");
    f.apply(Command::MeasuredExpire { lease, renewed_index: renewed });
    assert!(!f.sm.leases().contains(lease));
}

#[test]
fn a_plain_keep_alive_turns_a_writers_lease_into_a_measured_one() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    assert_eq!(f.call(C1, Op::LeaseKeepAlive { lease }), Some(Response::KeepAlive { lease, ttl_ns: TTL_NS }));
    assert_eq!(f.sm.writer_remaining_ns(lease), None, "a renewal in no clock is measured by the leader");
    // A reading makes it a writer's lease again.
    assert!(matches!(f.call(C1, Op::LeaseExtend { lease, writer_wall_ns: 300 * NS_PER_SEC }), Some(Response::KeepAlive { .. })));
    assert_eq!(expiry(&f, lease), 300 * NS_PER_SEC + TTL_NS);
}

#[test]
fn a_retried_extension_after_the_lease_ended_is_not_answered_live() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    let effects = f.request(C1, 7, Op::LeaseExtend { lease, writer_wall_ns: 101 * NS_PER_SEC });
    assert!(matches!(reply_to(&effects, C1, 7), Some(Response::KeepAlive { .. })));
    f.call(C2, Op::LeaseRevoke { lease });
    let effects = f.request(C1, 7, Op::LeaseExtend { lease, writer_wall_ns: 101 * NS_PER_SEC });
    assert_eq!(reply_to(&effects, C1, 7), Some(Response::Error(ServiceError::LeaseNotFound { lease })));
}

fn cluster_call(c: &mut ServiceCluster, op: Op) -> Response {
    c.call(9, op, 3 * NS_PER_SEC).expect("answered").body
}

/// Through the servers: extensions keep the lease, a leader's wall clock
/// an hour off changes nothing, and left alone the lease is expired through
/// the log no sooner than its TTL after the last extension.
#[test]
fn servers_expire_by_the_writers_clock_not_their_own() {
    let mut cfg = ServiceClusterConfig::new(3, 21);
    cfg.expiry = ExpiryStrategy::WriterClock;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    for server in 1..=3 {
        c.set_wall_offset(server, 3_600 * NS_PER_SEC as i64);
    }
    let mut writer_wall_ns = 7 * NS_PER_SEC; // the client's own clock
    let lease = match cluster_call(&mut c, Op::LeaseClaim { ttl_ns: TTL_NS, writer_wall_ns }) {
        Response::LeaseGranted { lease, .. } => lease,
        other => panic!("claim: {other:?}"),
    };
    let granted_at = c.now_ns;
    let mut last_extension = granted_at;
    while c.now_ns < granted_at + 3 * NS_PER_SEC {
        c.run_until(c.now_ns + 400 * NS_PER_MS);
        writer_wall_ns += 400 * NS_PER_MS;
        last_extension = c.now_ns; // the send: the server's TTL cannot start earlier
        assert_eq!(cluster_call(&mut c, Op::LeaseExtend { lease, writer_wall_ns }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
    }
    let revoked = |c: &ServiceCluster| {
        c.events_where(|t, _, e| {
            matches!(e, ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease: l, .. }, .. } if *l == lease).then_some(t)
        })
    };
    assert!(revoked(&c).is_empty(), "kept alive by its writer");
    c.run_until(c.now_ns + 3 * NS_PER_SEC);
    let revoked = revoked(&c);
    assert_eq!(revoked.len(), 3, "expired on every server through one entry");
    assert!(revoked[0] >= last_extension + TTL_NS, "not before TTL after the last extension");
    assert_eq!(c.violations(), &[]);
}

/// Promote's extension, as `leader-monotonic` has it (see `service_server.rs`).
const EXTENSION_NS: u64 = 300 * NS_PER_MS;

fn writer_cluster(seed: u64) -> ServiceCluster {
    let mut cfg = ServiceClusterConfig::new(3, seed);
    cfg.expiry = ExpiryStrategy::WriterClock;
    let mut c = ServiceCluster::new(cfg);
    c.record_events = true;
    c.add_manual_client(9);
    c
}

fn first_revocation(c: &ServiceCluster, lease: LeaseId) -> Option<u64> {
    c.events_where(|t, _, e| {
        matches!(e, ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease: l, .. }, .. } if *l == lease).then_some(t)
    })
    .into_iter()
    .min()
}

/// A claim written in the leader's own term was answered by this leader,
/// which renewed nothing on another clock: its deadline is the writer's
/// remaining time, with no Promote extension (the lease must not outlive
/// its TTL by an extension on a stable leader).
#[test]
fn a_current_term_claim_expires_one_ttl_after_it_applies_with_no_extension() {
    let mut c = writer_cluster(22);
    c.wait_for_leader();
    let lease = match cluster_call(&mut c, Op::LeaseClaim { ttl_ns: TTL_NS, writer_wall_ns: 7 * NS_PER_SEC }) {
        Response::LeaseGranted { lease, .. } => lease,
        other => panic!("claim: {other:?}"),
    };
    let answered_at = c.now_ns;
    c.run_until(c.now_ns + TTL_NS + 2 * EXTENSION_NS);
    let first = first_revocation(&c, lease).expect("expired");
    assert!(first >= answered_at + TTL_NS - 50 * NS_PER_MS, "expired at {first}, answered at {answered_at}");
    assert!(first < answered_at + TTL_NS + EXTENSION_NS / 2, "expired at {first}, answered at {answered_at}: extended");
    assert_eq!(c.violations(), &[]);
}

fn claim_on(c: &mut ServiceCluster) -> LeaseId {
    match cluster_call(c, Op::LeaseClaim { ttl_ns: TTL_NS, writer_wall_ns: 7 * NS_PER_SEC }) {
        Response::LeaseGranted { lease, .. } => lease,
        other => panic!("claim: {other:?}"),
    }
}

/// Crashes the leader, waits for the next, and returns it with the time it
/// was elected and when the lease was first revoked in the 3 s that follow.
fn fail_over(c: &mut ServiceCluster, leader: leasesim_core::NodeId, lease: LeaseId) -> (u64, Option<u64>) {
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
    (elected_at, first_revocation(c, lease))
}

fn expires_after_extension_plus_ttl(elected_at: u64, first: Option<u64>) {
    let first = first.expect("expired: the new leader armed the lease");
    assert!(first >= elected_at + EXTENSION_NS + TTL_NS - 50 * NS_PER_MS, "expired at {first}, elected at {elected_at}");
    assert!(first < elected_at + EXTENSION_NS + TTL_NS + 100 * NS_PER_MS, "expired at {first}, elected at {elected_at}");
}

/// etcd's Promote under `writer-clock`: a new leader arms every lease it
/// inherits (already applied when it wins) at now + extension + the writer's
/// remaining time, so a lease whose holder is gone still ends, neither
/// earlier nor much later.
#[test]
fn a_new_writer_clock_leader_expires_inherited_leases_after_extension_plus_remaining() {
    let mut c = writer_cluster(23);
    let leader = c.wait_for_leader();
    let lease = claim_on(&mut c);
    while !c.state_machines().iter().all(|(_, sm)| sm.leases().contains(lease)) {
        c.run_until(c.now_ns + 10 * NS_PER_MS);
    }
    let (elected_at, first) = fail_over(&mut c, leader, lease);
    expires_after_extension_plus_ttl(elected_at, first);
    assert_eq!(c.violations(), &[]);
}

/// A claim of the old leader's term that the new leader applies only after
/// winning may have been answered, and extended, on the old leader's clock:
/// it gets the Promote extension as inherited leases do.
#[test]
fn an_earlier_term_claim_applied_after_the_election_gets_the_promote_extension() {
    let mut c = writer_cluster(23);
    let leader = c.wait_for_leader();
    let lease = claim_on(&mut c);
    let applied = c.state_machines().iter().filter(|(id, sm)| *id != leader && sm.leases().contains(lease)).count();
    assert_eq!(applied, 0, "the followers must not have applied the claim yet: the test needs it applied after the election");
    let (elected_at, first) = fail_over(&mut c, leader, lease);
    expires_after_extension_plus_ttl(elected_at, first);
    assert_eq!(c.violations(), &[]);
}

/// As a grant: a `writer-clock` claim below the minimum TTL is certain to be
/// refused, so the leader answers it at once and logs nothing.
#[test]
fn a_short_claim_is_refused_without_proposing() {
    let mut c = writer_cluster(24);
    let leader = c.wait_for_leader();
    let before = c.server(leader).unwrap().raft().last_index();
    let short = cluster_call(&mut c, Op::LeaseClaim { ttl_ns: 100 * NS_PER_MS, writer_wall_ns: 7 * NS_PER_SEC });
    assert_eq!(short, Response::Error(ServiceError::TtlTooShort { min_ns: 450 * NS_PER_MS }));
    assert_eq!(c.server(leader).unwrap().raft().last_index(), before, "nothing was proposed");
}

/// An etcd client under `writer-clock` sends no clock reading: its plain
/// grant and plain keep-alives make a lease without a writer, measured on
/// the leader's own clock as `leader-monotonic` measures it. Left alone
/// after its last keep-alive, it ends one TTL after that keep-alive was
/// sent, neither earlier (the holder believes it until then) nor an
/// extension later (a stable leader renewed it in its own term). No
/// simulator workload sends these under writer-clock; `leasesim-node`
/// serves them to etcdctl.
#[test]
fn a_lease_without_a_writer_is_measured_on_the_leaders_clock() {
    let mut c = writer_cluster(25);
    c.wait_for_leader();
    let grant = |c: &mut ServiceCluster| match cluster_call(c, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }) {
        Response::LeaseGranted { lease, .. } => lease,
        other => panic!("grant: {other:?}"),
    };
    // One lease never renewed (it ends on its grant's deadline alone), one
    // renewed by keep-alives.
    let sent_unrenewed = c.now_ns;
    let unrenewed = grant(&mut c);
    let unrenewed_answered = c.now_ns;
    let lease = grant(&mut c);
    assert!(c.state_machines().iter().all(|(_, sm)| sm.writer_remaining_ns(lease).is_none()), "a plain grant has no writer");
    let granted_at = c.now_ns;
    let mut last_sent = granted_at;
    while c.now_ns < granted_at + 3 * NS_PER_SEC {
        c.run_until(c.now_ns + 400 * NS_PER_MS);
        last_sent = c.now_ns;
        assert_eq!(cluster_call(&mut c, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns: TTL_NS });
    }
    let answered_at = c.now_ns;
    let first_unrenewed = first_revocation(&c, unrenewed).expect("a plain grant never renewed ends on its own deadline");
    assert!(first_unrenewed >= sent_unrenewed + TTL_NS, "ended at {first_unrenewed}, before TTL after the grant's send");
    assert!(first_unrenewed < unrenewed_answered + TTL_NS + EXTENSION_NS / 2, "ended at {first_unrenewed}: extended");
    assert_eq!(first_revocation(&c, lease), None, "renewed every 400 ms, the lease lives");
    c.run_until(c.now_ns + TTL_NS + 2 * EXTENSION_NS);
    let first = first_revocation(&c, lease).expect("left alone, a lease without a writer still ends");
    assert!(first >= last_sent + TTL_NS, "ended at {first}, before TTL after the last keep-alive's send at {last_sent}");
    assert!(first < answered_at + TTL_NS + EXTENSION_NS / 2, "ended at {first}, answered at {answered_at}: extended");
    assert_eq!(c.violations(), &[]);
}

/// Outside `writer-clock` a claim is a plain grant: the servers rewrite it
/// before logging (`without_writer_clock`), and the state machine applies
/// one that reaches the log anyway (a log written under another strategy)
/// the same way, with no writer and no expiry in a client's clock.
#[test]
fn outside_writer_clock_an_applied_claim_is_a_plain_grant() {
    let mut f = Fixture::new();
    let lease = match f.call(C1, Op::LeaseClaim { ttl_ns: TTL_NS, writer_wall_ns: 1_000 * NS_PER_SEC }) {
        Some(Response::LeaseGranted { lease, .. }) => lease,
        other => panic!("claim: {other:?}"),
    };
    let l = f.sm.leases().get(lease).unwrap();
    assert_eq!((l.writer, l.expiry_writer_ns), (None, None));
    assert_eq!(f.sm.writer_remaining_ns(lease), None);
}

/// Another client's extension writes its expiry in its own clock, which may
/// read behind the first writer's: the new expiry replaces the old one
/// without comparing the two clocks (the Juju lease design), even when it is
/// the smaller number; only the same writer's extension never shortens.
#[test]
fn another_writers_extension_replaces_the_expiry_without_comparing_clocks() {
    let mut f = fixture();
    let lease = claim(&mut f, C1, 100 * NS_PER_SEC);
    let reply = f.call(C2, Op::LeaseExtend { lease, writer_wall_ns: 50 * NS_PER_SEC });
    assert_eq!(reply, Some(Response::KeepAlive { lease, ttl_ns: TTL_NS }));
    let l = f.sm.leases().get(lease).unwrap();
    assert_eq!((l.writer, l.expiry_writer_ns), (Some(C2), Some(50 * NS_PER_SEC + TTL_NS)));
}
