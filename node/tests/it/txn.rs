//! etcd's Txn through the gRPC API: a compare on `mod_revision` and the put
//! it guards are one step (core's `CompareAndPut`), so a rewrite of the
//! same value between a client's read and its txn fails the txn, as on
//! etcd. The same compare-and-set is asked of a follower (forwarded), and
//! the same steps run against Debian's etcd 3.4 when it is installed (CI
//! installs it): both must refuse the stale txn.

use crate::common;

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

/// A client's txn op, and a txn nested as one.
fn op(request: TxnOp) -> RequestOp {
    RequestOp { request: Some(request) }
}

fn put_op(key: &str, value: &str) -> RequestOp {
    op(TxnOp::RequestPut(PutRequest { key: key.into(), value: value.into(), prev_kv: true, ..Default::default() }))
}

fn value_is(key: &str, value: &str) -> Compare {
    Compare {
        key: key.into(),
        result: CompareResult::Equal as i32,
        target: CompareTarget::Value as i32,
        target_union: Some(TargetUnion::Value(value.into())),
        ..Default::default()
    }
}

fn nested(compare: Vec<Compare>, success: Vec<RequestOp>, failure: Vec<RequestOp>) -> RequestOp {
    op(TxnOp::RequestTxn(TxnRequest { compare, success, failure }))
}

/// What a txn answered, headers hidden (see [`without_number`]).
fn answer_text<T: std::fmt::Debug>(answer: Result<tonic::Response<T>, tonic::Status>) -> String {
    match answer {
        Ok(r) => ["cluster_id", "member_id", "raft_term", "member_id: _, revision"]
            .iter()
            .fold(format!("{:?}", r.into_inner()), |text, field| without_number(&text, field)),
        Err(status) => format!("error {:?}: {}", status.code(), status.message()),
    }
}

/// `text` with every `field: 123` shown as `field: _`. Headers are hidden
/// whole: besides the ids, sub-responses' headers differ (etcd gives a
/// range in a txn the revision it read at, before the txn's writes;
/// leasesim-node gives every sub-response the txn's header), an older
/// difference than nested txns. The keys' revisions are compared.
fn without_number(text: &str, field: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let marker = format!("{field}: ");
    while let Some(at) = rest.find(&marker) {
        out.push_str(&rest[..at + marker.len()]);
        out.push('_');
        rest = rest[at + marker.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// Nested txns (etcd 3.3+): answers and refusals, as text to compare.
fn nested_txn_transcript(kind: Kind) -> Vec<String> {
    let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
    cluster.wait_for_leader();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        kv.put(PutRequest { key: b"a".to_vec(), value: b"1".to_vec(), ..Default::default() }).await.unwrap();
        let range = |key: &str| op(TxnOp::RequestRange(RangeRequest { key: key.into(), ..Default::default() }));
        let txns = vec![
            // The nested compare sees `a` as it was before the outer put.
            TxnRequest {
                compare: vec![],
                success: vec![
                    put_op("a", "2"),
                    nested(vec![value_is("a", "1")], vec![put_op("b", "then")], vec![put_op("b", "else")]),
                    range("b"),
                ],
                failure: vec![],
            },
            // The failure branch of the outer txn, holding a nested txn that fails.
            TxnRequest {
                compare: vec![value_is("a", "1")],
                success: vec![],
                failure: vec![nested(vec![value_is("b", "nope")], vec![], vec![range("a"), put_op("c", "x")])],
            },
            // Refused: a key put by the parent and by a nested txn.
            TxnRequest {
                compare: vec![],
                success: vec![put_op("k", "x"), nested(vec![], vec![put_op("k", "y")], vec![])],
                failure: vec![],
            },
            // Refused: a nested txn beyond what its parent left of the 128.
            TxnRequest {
                compare: vec![],
                success: (0..127)
                    .map(|i| put_op(&format!("n{i}"), "x"))
                    .chain([nested(vec![], vec![put_op("last", "x")], vec![])])
                    .collect(),
                failure: vec![],
            },
            // Refused: an empty operation inside a nested txn.
            TxnRequest { compare: vec![], success: vec![nested(vec![], vec![RequestOp { request: None }], vec![])], failure: vec![] },
        ];
        let mut transcript = Vec::new();
        for txn in txns {
            transcript.push(answer_text(kv.txn(txn).await));
        }
        let read = kv.range(RangeRequest { key: b"a".to_vec(), range_end: b"z".to_vec(), ..Default::default() }).await.unwrap();
        transcript.push(format!("{:?}", read.into_inner().kvs));
        transcript
    })
}

#[test]
fn nested_txns_answer_as_etcd_3_4_answers() {
    let ours = nested_txn_transcript(Kind::Leasesim);
    assert!(ours[0].contains("succeeded: true") && ours[0].contains("value: [116, 104, 101, 110]"), "the nested then-branch: {ours:?}");
    assert!(ours[2].starts_with("error InvalidArgument: etcdserver: duplicate key"), "{ours:?}");
    assert!(ours[3].starts_with("error InvalidArgument: etcdserver: too many operations"), "{ours:?}");
    if common::have_etcd() {
        let etcd = nested_txn_transcript(Kind::Etcd);
        for (i, (a, b)) in ours.iter().zip(&etcd).enumerate() {
            assert_eq!(a, b, "step {i}: leasesim-node (left) and etcd 3.4 (right) differ");
        }
    }
}

/// Puts with `ignore_value` / `ignore_lease` (etcd 3.3+), plainly and in a
/// txn branch that does not run, as text to compare: etcd's gRPC layer
/// refuses a value or lease given with them ("value is provided", "lease is
/// provided", after "key is not provided"), and its applier a missing key.
fn ignore_options_transcript(kind: Kind) -> Vec<String> {
    let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
    cluster.wait_for_leader();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        let put = |key: &str, value: &str, lease: i64, ignore_value: bool, ignore_lease: bool| PutRequest {
            key: key.into(),
            value: value.into(),
            lease,
            prev_kv: true,
            ignore_value,
            ignore_lease,
        };
        let puts = vec![
            put("missing", "", 0, true, false),
            put("missing", "", 0, false, true),
            put("k", "1", 0, false, false),
            put("k", "2", 0, true, false),
            put("k", "", 7, false, true),
            put("k", "2", 7, true, true),
            put("", "2", 0, true, false),
            put("k", "", 0, true, true),
        ];
        let mut transcript = Vec::new();
        // Revisions differ by design (leasesim's are log indices): hidden.
        for request in puts {
            transcript.push(without_number(&answer_text(kv.put(request).await), "revision"));
        }
        let unrun = TxnRequest { compare: vec![], success: vec![], failure: vec![op(TxnOp::RequestPut(put("k", "", 7, false, true)))] };
        transcript.push(answer_text(kv.txn(unrun).await));
        let read = kv.range(RangeRequest { key: b"k".to_vec(), ..Default::default() }).await.unwrap();
        transcript.push(without_number(&format!("{:?}", read.into_inner().kvs), "revision"));
        transcript
    })
}

#[test]
fn ignore_options_answer_as_etcd_3_4_answers() {
    let ours = ignore_options_transcript(Kind::Leasesim);
    let expected_errors = [
        (0, "key not found"),
        (1, "key not found"),
        (3, "value is provided"),
        (4, "lease is provided"),
        (5, "value is provided"),
        (6, "key is not provided"),
        (8, "lease is provided"),
    ];
    for (step, message) in expected_errors {
        assert_eq!(ours[step], format!("error InvalidArgument: etcdserver: {message}"), "step {step}: {ours:?}");
    }
    assert!(ours[7].contains("prev_kv: Some") && ours[9].contains("value: [49]"), "the options alone keep the value: {ours:?}");
    if common::have_etcd() {
        let etcd = ignore_options_transcript(Kind::Etcd);
        for (i, (a, b)) in ours.iter().zip(&etcd).enumerate() {
            assert_eq!(a, b, "step {i}: leasesim-node (left) and etcd 3.4 (right) differ");
        }
    }
}
