//! Skewed clocks on real processes (`--unsafe-test-control-url`): a leader
//! whose monotonic clock runs twice as fast ends a lease early in true time
//! (measured here with this test's own `Instant`), and the same leader
//! without skew never does; bad control requests get a clear error, and
//! the endpoint binds loopback addresses only.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, http, http_when_up, Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::{LeaseGrantRequest, LeaseTimeToLiveRequest};

const TTL_S: i64 = 4;

/// Grants a lease of `TTL_S` on member `url` and returns how long, in true
/// time from just before the grant was sent, until the cluster no longer
/// knows it.
fn lease_lifetime(url: &str) -> Duration {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut lease = LeaseClient::new(common::channel(url).await);
        let sent = Instant::now();
        let granted = lease.lease_grant(LeaseGrantRequest { ttl: TTL_S, id: 0 }).await.expect("grant").into_inner();
        assert_eq!(granted.ttl, TTL_S, "the TTL was not raised to a minimum");
        loop {
            let ask = LeaseTimeToLiveRequest { id: granted.id, keys: false };
            let ttl = lease.lease_time_to_live(ask).await.expect("time to live").into_inner().ttl;
            if ttl == -1 {
                return sent.elapsed();
            }
            assert!(sent.elapsed() < Duration::from_secs(60), "the lease never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

fn set_clock(port: u16, body: &str) -> (u16, String) {
    http(port, "POST", "/clock", body).expect("the control endpoint answers")
}

#[test]
fn a_fast_leader_clock_ends_leases_early_and_an_exact_one_never_does() {
    let _timing = common::timing_lock();
    let control: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut cluster = ProcessCluster::start_each(3, 50, 500, Kind::Leasesim, &[], |i, _| {
        vec!["--unsafe-test-control-url".into(), format!("http://127.0.0.1:{}", control[i])]
    });
    let leader = cluster.wait_for_leader();
    let (code, body) = http_when_up(control[leader], "GET", "/clock", "");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"rate\":1.0"), "{body}");

    let exact = lease_lifetime(&cluster.url(leader));
    assert!(exact >= Duration::from_secs(TTL_S as u64), "an exact clock ended a {TTL_S} s lease after {exact:?}");

    // At rate 2 the leader counts 4 s in 2 s of true time. The bound is the
    // TTL itself, which an exact clock never beats (asserted above and
    // below). A try counts only if the sped-up member led throughout (same
    // term): on a loaded machine another member may take over, and its
    // exact clock then times the lease; a stall may also add 2 s. Either
    // is a miss, and a miss is tried again, up to three times in all; a
    // leader whose clock rate did nothing misses all three.
    let mut misses = Vec::new();
    let leader = loop {
        let leader = cluster.wait_for_leader();
        let term = cluster.status(leader).expect("leader status").raft_term;
        let (code, body) = set_clock(control[leader], r#"{"monotonic": {"rate": 2.0}}"#);
        assert_eq!(code, 200, "{body}");
        let fast = lease_lifetime(&cluster.url(leader));
        let led_throughout =
            cluster.status(leader).is_some_and(|s| s.raft_term == term && s.header.is_some_and(|h| h.member_id == s.leader));
        // Back to an exact rate: no jump, leases last again (below).
        let (code, body) = set_clock(control[leader], r#"{"monotonic": {"rate": 1.0}}"#);
        assert_eq!(code, 200, "{body}");
        if led_throughout && fast < Duration::from_secs(TTL_S as u64) {
            break leader;
        }
        misses.push((fast, led_throughout));
        assert!(misses.len() < 3, "a clock at rate 2 never ended a {TTL_S} s lease early (lifetime, led throughout): {misses:?}");
    };
    eprintln!("rate 2 ended a lease early after {} misses: {misses:?}", misses.len());

    let again = lease_lifetime(&cluster.url(leader));
    assert!(again >= Duration::from_secs(TTL_S as u64), "after the rate was restored a lease ended after {again:?}");
}

#[test]
fn bad_clock_requests_are_refused_with_the_reason() {
    let control = free_port();
    let cluster = ProcessCluster::start_each(1, 50, 500, Kind::Leasesim, &[], |_, _| {
        vec!["--unsafe-test-control-url".into(), format!("http://127.0.0.1:{control}")]
    });
    let (code, _) = http_when_up(control, "GET", "/clock", "");
    assert_eq!(code, 200);
    let cases = [
        (r#"{"monotonic": {"step_ms": -5}}"#, "never goes back"),
        (r#"{"wall": {"rate": 0}}"#, "wall: rate 0 is outside"),
        (r#"{"wall": {"offset_ms": 1, "step_ms": 1}}"#, "not both"),
        (r#"{"monotonic": {"speed": 2}}"#, "unknown field `speed`"),
        ("not json", "POST /clock"),
    ];
    for (body, reason) in cases {
        let (code, answer) = set_clock(control, body);
        assert_eq!(code, 400, "{body} was accepted: {answer}");
        assert!(answer.contains(reason), "{body}: expected `{reason}` in {answer}");
    }
    let (code, answer) = set_clock(control, r#"{"wall": {"step_ms": -3600000}}"#);
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("\"offset_ms\":-3600000.0"), "{answer}");
    drop(cluster);
}

#[test]
fn the_control_endpoint_binds_loopback_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
        .arg("--data-dir")
        .arg(dir.path().join("s1"))
        .args(["--listen-peer-urls", &format!("http://127.0.0.1:{}", free_port())])
        .args(["--listen-client-urls", &format!("http://127.0.0.1:{}", free_port())])
        .args(["--unsafe-test-control-url", "http://0.0.0.0:1"])
        .output()
        .expect("run leasesim-node");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback addresses only"), "{stderr}");
}
