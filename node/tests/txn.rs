//! etcd's Txn through the gRPC API: a compare on `mod_revision` and the put
//! it guards are one step (core's `CompareAndPut`), so a rewrite of the
//! same value between a client's read and its txn fails the txn, as on
//! etcd. The same compare-and-set is asked of a follower (forwarded), and
//! the same steps run against Debian's etcd 3.4 when it is installed (CI
//! installs it): both must refuse the stale txn.

mod common;

use common::{Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::request_op::Request as TxnOp;
use leasesim_node::pb::etcdserverpb::{Compare, PutRequest, RangeRequest, RequestOp, TxnRequest};

fn guarded_put(key: &[u8], mod_revision: i64, value: &[u8]) -> TxnRequest {
    let compare = Compare {
        key: key.to_vec(),
        result: CompareResult::Equal as i32,
        target: CompareTarget::Mod as i32,
        target_union: Some(TargetUnion::ModRevision(mod_revision)),
        ..Default::default()
    };
    let put = PutRequest { key: key.to_vec(), value: value.to_vec(), ..Default::default() };
    TxnRequest { compare: vec![compare], success: vec![RequestOp { request: Some(TxnOp::RequestPut(put)) }], failure: vec![] }
}

#[test]
fn a_mod_revision_compare_sees_a_rewrite_of_the_same_value() {
    the_rewrite_fails_a_stale_txn(Kind::Leasesim);
}

#[test]
fn etcd_refuses_the_same_stale_txn() {
    if common::have_etcd() {
        the_rewrite_fails_a_stale_txn(Kind::Etcd);
    }
}

fn the_rewrite_fails_a_stale_txn(kind: Kind) {
    let mut cluster = ProcessCluster::start_kind(kind, 3, 50, 500);
    let leader = cluster.wait_for_leader();
    let follower = (leader + 1) % 3;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(follower)).await);
        let put = |value: &[u8]| PutRequest { key: b"k".to_vec(), value: value.to_vec(), ..Default::default() };
        kv.put(put(b"x")).await.unwrap();
        let read = kv.range(RangeRequest { key: b"k".to_vec(), ..Default::default() }).await.unwrap().into_inner();
        let seen = read.kvs[0].mod_revision;
        // Another writer puts the same value: a new revision (the ABA).
        kv.put(put(b"x")).await.unwrap();
        let stale = kv.txn(guarded_put(b"k", seen, b"y")).await.unwrap().into_inner();
        assert!(!stale.succeeded, "{kind:?}: a txn guarded by a superseded mod_revision went through");
        let read = kv.range(RangeRequest { key: b"k".to_vec(), ..Default::default() }).await.unwrap().into_inner();
        assert_eq!(read.kvs[0].value, b"x");
        let current = read.kvs[0].mod_revision;
        assert!(current > seen);
        let fresh = kv.txn(guarded_put(b"k", current, b"y")).await.unwrap().into_inner();
        assert!(fresh.succeeded);
        let written = fresh.header.unwrap().revision;
        let read = kv.range(RangeRequest { key: b"k".to_vec(), ..Default::default() }).await.unwrap().into_inner();
        assert_eq!((read.kvs[0].value.as_slice(), read.kvs[0].mod_revision), (b"y".as_slice(), written));
    });
}
