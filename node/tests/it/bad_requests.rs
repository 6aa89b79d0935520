//! Bad requests get etcd's errors, and never crash a member: unknown
//! leases, TTLs out of range, oversized values, empty keys.

use crate::common;

use common::{have_etcdctl, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::lease_client::LeaseClient;
use leasesim_node::pb::etcdserverpb::{LeaseGrantRequest, PutRequest, RangeRequest};

fn stderr_of(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "expected a failure, got: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_requests_get_errors_not_crashes() {
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    let all = cluster.endpoints();

    if have_etcdctl() {
        etcdctl_errors(&cluster, &all);
    }
    grpc_errors(&cluster);
    // Still serving, every member alive.
    let mut kv = None;
    for i in 0..3 {
        assert!(cluster.running(i), "member {i} crashed; see {}", cluster.log_path(i).display());
        kv = kv.or(cluster.status(i));
    }
    assert!(kv.is_some());
}

fn etcdctl_errors(cluster: &ProcessCluster, all: &str) {
    let err = stderr_of(&cluster.etcdctl(all, &["put", "--lease=12345", "k", "v"]));
    assert!(err.contains("requested lease not found"), "{err}");
    let err = stderr_of(&cluster.etcdctl(all, &["lease", "revoke", "12345"]));
    assert!(err.contains("requested lease not found"), "{err}");
    let err = stderr_of(&cluster.etcdctl(all, &["lease", "grant", "9000000001"]));
    assert!(err.contains("too large lease TTL"), "{err}");
    // A TTL below the minimum is raised to it, as etcd does.
    let out = cluster.ctl_ok(&["lease", "grant", "1"]);
    assert!(out.contains("granted with TTL("), "{out}");
    assert!(!out.contains("TTL(1s)"), "a 1 s lease is shorter than an election: {out}");

    assert_eq!(cluster.ctl_ok(&["put", "after", "ok"]).trim(), "OK");
}

fn grpc_errors(cluster: &ProcessCluster) {
    let url = cluster.url(0);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&url).await).max_encoding_message_size(8 << 20);
        let huge = vec![b'x'; 2 << 20];
        let err = kv.put(PutRequest { key: b"big".to_vec(), value: huge, ..Default::default() }).await.unwrap_err();
        assert!(err.message().contains("too large") || err.code() == tonic::Code::ResourceExhausted, "an oversized value: {err:?}");
        let err = kv.put(PutRequest { key: Vec::new(), value: b"v".to_vec(), ..Default::default() }).await.unwrap_err();
        assert_eq!(err.message(), "etcdserver: key is not provided");
        // Keys and values are bytes: not UTF-8 is fine, and reads back as written.
        kv.put(PutRequest { key: vec![0xff, 0xfe], value: vec![0x80, 0], ..Default::default() }).await.expect("bytes are accepted");
        let got = kv.range(RangeRequest { key: vec![0xff, 0xfe], ..Default::default() }).await.unwrap().into_inner();
        assert_eq!(got.kvs.iter().map(|kv| kv.value.clone()).collect::<Vec<_>>(), vec![vec![0x80, 0]]);
        let err = kv.range(RangeRequest { key: b"k".to_vec(), revision: 1 << 40, ..Default::default() }).await.unwrap_err();
        assert_eq!((err.code(), err.message()), (tonic::Code::OutOfRange, "etcdserver: mvcc: required revision is a future revision"));
        let mut lease = LeaseClient::new(common::channel(&url).await);
        let err = lease.lease_grant(LeaseGrantRequest { ttl: 10, id: -5 }).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
    });
}
