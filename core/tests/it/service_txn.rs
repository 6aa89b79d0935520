//! etcd's Txn, Range and Compact through the state machine: one input
//! entry, its exact answer (every revision, version and prev_kv), and what
//! the store holds afterwards.

use crate::service_support;

use leasesim_core::service::kv::{KeyRange, KvValue, RevisionError};
use leasesim_core::service::{
    Compare, CompareResult, CompareTarget, DeleteRequest, KvError, Op, PutRequest, RangeRequest, RangeResponse, Response, ServiceError,
    SortOrder, SortTarget, TxnOp, TxnOpResponse, TxnRequest, TxnResponse,
};
use service_support::Fixture;

fn kv(value: &str, create_revision: u64, mod_revision: u64, version: u64) -> KvValue {
    KvValue { value: value.as_bytes().to_vec(), create_revision, mod_revision, version, lease: None }
}

fn put(key: &str, value: &str) -> TxnOp {
    TxnOp::Put(PutRequest { key: key.into(), value: value.into(), lease: None, prev_kv: true, ignore_value: false, ignore_lease: false })
}

fn delete(key: &str, range_end: &str) -> TxnOp {
    TxnOp::Delete(DeleteRequest { range: KeyRange { key: key.into(), range_end: range_end.into() }, prev_kv: true })
}

fn range(key: &str, range_end: &str, revision: u64) -> RangeRequest {
    RangeRequest { revision, ..RangeRequest::of(KeyRange { key: key.into(), range_end: range_end.into() }) }
}

fn compare(key: &str, target: CompareTarget, result: CompareResult) -> Compare {
    Compare { range: KeyRange::single(key.as_bytes()), target, result }
}

fn txn(compares: Vec<Compare>, success: Vec<TxnOp>, failure: Vec<TxnOp>) -> Op {
    Op::Txn(TxnRequest { compares, success, failure })
}

/// Writes through single-op txns; returns the revision of each.
fn write(f: &mut Fixture, ops: Vec<TxnOp>) -> u64 {
    match f.call(1, txn(vec![], ops, vec![])) {
        Some(Response::Txn(TxnResponse { revision, .. })) => revision,
        other => panic!("write failed: {other:?}"),
    }
}

#[test]
fn a_txn_with_several_compares_and_ops_applies_at_one_revision() {
    let mut f = Fixture::new();
    let r1 = write(&mut f, vec![put("a", "1"), put("b", "1")]);
    let compares = vec![
        compare("a", CompareTarget::Value(b"1".to_vec()), CompareResult::Equal),
        compare("b", CompareTarget::Version(1), CompareResult::Equal),
        compare("zz", CompareTarget::CreateRevision(0), CompareResult::Equal),
    ];
    let index = f.next_index();
    let success = vec![put("a", "2"), put("c", "3"), delete("b", ""), TxnOp::Range(range("a", "d", 0))];
    let reply = f.call(1, txn(compares, success, vec![put("x", "else")]));
    let expected = TxnResponse {
        succeeded: true,
        revision: index,
        responses: vec![
            TxnOpResponse::Put { prev_kv: Some(kv("1", r1, r1, 1)) },
            TxnOpResponse::Put { prev_kv: None },
            TxnOpResponse::Delete { deleted: 1, prev_kvs: vec![(b"b".to_vec(), kv("1", r1, r1, 1))] },
            TxnOpResponse::Range(RangeResponse {
                kvs: vec![(b"a".to_vec(), kv("2", r1, index, 2)), (b"c".to_vec(), kv("3", index, index, 1))],
                count: 2,
                more: false,
                revision: index,
            }),
        ],
    };
    assert_eq!(reply, Some(Response::Txn(expected)));
    let revisions: Vec<u64> = f.sm.kv().history().iter().map(|c| c.revision).collect();
    assert_eq!(revisions, vec![r1, r1, index, index, index], "every write of the txn at the one revision");
}

#[test]
fn a_failed_compare_runs_the_else_branch_only() {
    let mut f = Fixture::new();
    let r1 = write(&mut f, vec![put("a", "1")]);
    let index = f.next_index();
    let compares = vec![
        compare("a", CompareTarget::Value(b"1".to_vec()), CompareResult::Equal),
        compare("a", CompareTarget::Version(1), CompareResult::Greater),
    ];
    let reply = f.call(1, txn(compares, vec![put("then", "x")], vec![put("else", "y")]));
    let responses = vec![TxnOpResponse::Put { prev_kv: None }];
    assert_eq!(reply, Some(Response::Txn(TxnResponse { succeeded: false, revision: index, responses })));
    assert!(f.sm.kv().get("then").is_none());
    assert_eq!(f.sm.kv().get("a"), Some(&kv("1", r1, r1, 1)));
}

#[test]
fn version_counts_puts_since_creation_and_a_delete_resets_it() {
    let mut f = Fixture::new();
    let r1 = write(&mut f, vec![put("k", "1")]);
    let r2 = write(&mut f, vec![put("k", "2")]);
    assert_eq!(f.sm.kv().get("k"), Some(&kv("2", r1, r2, 2)));
    write(&mut f, vec![delete("k", "")]);
    let r4 = write(&mut f, vec![put("k", "3")]);
    assert_eq!(f.sm.kv().get("k"), Some(&kv("3", r4, r4, 1)));
    // A version compare sees the counter, not "present or not".
    let reply = f.call(1, txn(vec![compare("k", CompareTarget::Version(2), CompareResult::Less)], vec![], vec![]));
    assert!(matches!(reply, Some(Response::Txn(TxnResponse { succeeded: true, .. }))), "{reply:?}");
}

#[test]
fn etcd_request_checks_refuse_the_txn_and_change_nothing() {
    let mut f = Fixture::new();
    write(&mut f, vec![put("a", "1")]);
    let revision = f.sm.kv().revision();
    let cases = vec![
        (txn(vec![], vec![put("", "x")], vec![]), KvError::EmptyKey),
        (txn(vec![compare("", CompareTarget::Version(0), CompareResult::Equal)], vec![], vec![]), KvError::EmptyKey),
        (txn(vec![], vec![put("b", "x"), put("b", "y")], vec![]), KvError::DuplicateKey),
        (txn(vec![], vec![], vec![put("c", "x"), delete("a", "d")]), KvError::DuplicateKey),
        (txn(vec![], (0..129).map(|i| put(&format!("k{i}"), "x")).collect(), vec![]), KvError::TooManyOps),
        (
            txn(vec![], vec![TxnOp::Range(range("a", "", revision + 1))], vec![]),
            KvError::Revision(RevisionError::Future { current: revision }),
        ),
    ];
    for (op, error) in cases {
        assert_eq!(f.call(1, op), Some(Response::Error(ServiceError::Kv(error))));
    }
    // 128 operations and deletes that overlap each other are fine.
    let ok = txn(vec![], (0..128).map(|i| put(&format!("k{i}"), "x")).collect(), vec![delete("a", ""), delete("a", "b")]);
    assert!(matches!(f.call(1, ok), Some(Response::Txn(_))));
    assert_eq!(f.sm.kv().history().len(), 1 + 128, "only the valid txn wrote");
    assert!(f.sm.kv().revision() > revision);
}

#[test]
fn a_put_to_a_missing_lease_refuses_the_whole_txn() {
    let mut f = Fixture::new();
    let mut leased =
        PutRequest { key: b"l".to_vec(), value: b"v".to_vec(), lease: Some(99), prev_kv: false, ignore_value: false, ignore_lease: false };
    let reply = f.call(1, txn(vec![], vec![put("first", "x"), TxnOp::Put(leased.clone())], vec![]));
    assert_eq!(reply, Some(Response::Error(ServiceError::LeaseNotFound { lease: 99 })));
    assert!(f.sm.kv().get("first").is_none(), "nothing of the txn applied");
    leased.lease = None;
    // etcd refuses a value given with ignore_value before it looks for the key.
    leased.value = vec![];
    leased.ignore_value = true;
    let reply = f.call(1, txn(vec![], vec![TxnOp::Put(leased)], vec![]));
    assert_eq!(reply, Some(Response::Error(ServiceError::Kv(KvError::KeyNotFound))));
}

/// etcd's `checkPutRequest`: `ignore_value` with a value and `ignore_lease`
/// with a lease are refused before anything is judged, in etcd's order
/// (key, value, lease), in a plain put and in a nested txn alike.
#[test]
fn ignore_options_given_a_value_or_lease_are_refused_as_etcd_refuses_them() {
    let mut f = Fixture::new();
    write(&mut f, vec![put("k", "1")]);
    let revision = f.sm.kv().revision();
    let plain = PutRequest { key: b"k".to_vec(), value: vec![], lease: None, prev_kv: false, ignore_value: false, ignore_lease: false };
    let cases = vec![
        (PutRequest { value: b"v".to_vec(), ignore_value: true, ..plain.clone() }, KvError::ValueProvided),
        (PutRequest { lease: Some(7), ignore_lease: true, ..plain.clone() }, KvError::LeaseProvided),
        (
            PutRequest { value: b"v".to_vec(), lease: Some(7), ignore_value: true, ignore_lease: true, ..plain.clone() },
            KvError::ValueProvided,
        ),
        (PutRequest { key: vec![], value: b"v".to_vec(), ignore_value: true, ..plain.clone() }, KvError::EmptyKey),
    ];
    for (bad, error) in cases {
        assert_eq!(f.call(1, txn(vec![], vec![TxnOp::Put(bad.clone())], vec![])), Some(Response::Error(ServiceError::Kv(error))));
        let deep = txn(vec![], vec![], vec![nested(vec![], vec![], vec![TxnOp::Put(bad)])]);
        assert_eq!(f.call(1, deep), Some(Response::Error(ServiceError::Kv(error))), "in a nested txn's branch that would not run");
    }
    assert_eq!(f.sm.kv().revision(), revision, "nothing refused was written");
    // The options alone, on a key that exists, keep its value.
    let keep = PutRequest { ignore_value: true, ignore_lease: true, ..plain };
    assert!(matches!(f.call(1, txn(vec![], vec![TxnOp::Put(keep)], vec![])), Some(Response::Txn(_))));
    assert_eq!(f.sm.kv().get("k").map(|v| v.value.clone()), Some(b"1".to_vec()));
}

#[test]
fn reads_at_past_revisions_until_compacted() {
    let mut f = Fixture::new();
    let r1 = write(&mut f, vec![put("a", "1")]);
    let r2 = write(&mut f, vec![put("a", "2")]);
    let r3 = write(&mut f, vec![delete("a", "")]);
    let at = |f: &Fixture, revision| f.sm.range(&range("a", "", revision));
    assert_eq!(at(&f, r1).map(|r| r.kvs), Ok(vec![(b"a".to_vec(), kv("1", r1, r1, 1))]));
    assert_eq!(at(&f, r2).map(|r| r.kvs), Ok(vec![(b"a".to_vec(), kv("2", r1, r2, 2))]));
    assert_eq!(at(&f, r3).map(|r| r.kvs), Ok(vec![]));
    assert_eq!(f.call(1, Op::Compact { revision: r2 }), Some(Response::Compacted { revision: r2 }));
    assert_eq!(at(&f, r1), Err(RevisionError::Compacted { compact_revision: r2 }));
    assert_eq!(at(&f, r2).map(|r| r.kvs), Ok(vec![(b"a".to_vec(), kv("2", r1, r2, 2))]));
    let again = f.call(1, Op::Compact { revision: r1 });
    assert_eq!(again, Some(Response::Error(ServiceError::Kv(KvError::Revision(RevisionError::Compacted { compact_revision: r2 })))));
    let future = f.call(1, Op::Compact { revision: r3 + 100 });
    assert_eq!(future, Some(Response::Error(ServiceError::Kv(KvError::Revision(RevisionError::Future { current: r3 })))));
    let kept: Vec<u64> = f.sm.kv().history().iter().map(|c| c.revision).collect();
    assert_eq!(kept, vec![r2, r3], "the compaction's own revision (a watch may start there) and the delete above it");
}

#[test]
fn range_counts_sorts_and_limits_as_etcd() {
    let mut f = Fixture::new();
    write(&mut f, vec![put("a", "3"), put("b", "1"), put("c", "2")]);
    write(&mut f, vec![put("b", "4")]);
    let all = range("a", "z", 0);
    let keys = |r: RangeRequest| {
        let found = f.sm.range(&r).unwrap();
        let keys: Vec<String> =
            found.kvs.iter().map(|(k, v)| format!("{}={}", String::from_utf8_lossy(k), String::from_utf8_lossy(&v.value))).collect();
        (keys, found.count, found.more)
    };
    assert_eq!(keys(RangeRequest { limit: 2, ..all.clone() }), (vec!["a=3".into(), "b=4".into()], 3, true));
    let by_value = RangeRequest { sort_order: SortOrder::Descend, sort_target: SortTarget::Value, ..all.clone() };
    assert_eq!(keys(by_value), (vec!["b=4".into(), "a=3".into(), "c=2".into()], 3, false));
    // Ties stay in key order when descending, as etcd's.
    let by_mod = RangeRequest { sort_order: SortOrder::Descend, sort_target: SortTarget::Mod, ..all.clone() };
    assert_eq!(keys(by_mod), (vec!["b=4".into(), "a=3".into(), "c=2".into()], 3, false));
    // A target other than the key sorts ascending without being asked.
    let by_version = RangeRequest { sort_target: SortTarget::Version, limit: 1, ..all.clone() };
    assert_eq!(keys(by_version), (vec!["a=3".into()], 3, true));
    assert_eq!(keys(RangeRequest { count_only: true, ..all.clone() }), (vec![], 3, false));
    assert_eq!(keys(RangeRequest { keys_only: true, ..range("b", "", 0) }), (vec!["b=".into()], 1, false));
    let from_c = RangeRequest { min_mod_revision: f.sm.kv().revision(), ..all };
    assert_eq!(keys(from_c), (vec!["b=4".into()], 3, false), "count is before the filters, as etcd's");
}

#[test]
fn bytes_that_are_not_utf8_round_trip() {
    let mut f = Fixture::new();
    let value = vec![0xff, 0x00, 0xfe];
    let op = PutRequest { key: vec![0x80, 1], value: value.clone(), lease: None, prev_kv: false, ignore_value: false, ignore_lease: false };
    write(&mut f, vec![TxnOp::Put(op)]);
    assert_eq!(f.sm.kv().get(&[0x80u8, 1][..]).map(|v| v.value.clone()), Some(value));
}

fn nested(compares: Vec<Compare>, success: Vec<TxnOp>, failure: Vec<TxnOp>) -> TxnOp {
    TxnOp::Txn(TxnRequest { compares, success, failure })
}

#[test]
fn a_nested_txn_judges_every_compare_before_any_write_and_shares_the_revision() {
    let mut f = Fixture::new();
    let r1 = write(&mut f, vec![put("a", "1")]);
    let index = f.next_index();
    // The outer put changes `a` first, yet the nested compare (a = 1) is
    // judged on the store before the txn, as etcd's compareToPath does.
    let inner = nested(
        vec![compare("a", CompareTarget::Value(b"1".to_vec()), CompareResult::Equal)],
        vec![put("b", "then")],
        vec![put("b", "else")],
    );
    let never = nested(vec![], vec![put("never", "x")], vec![]);
    let reply = f.call(1, txn(vec![], vec![put("a", "2"), inner, TxnOp::Range(range("b", "", 0))], vec![never]));
    let b = kv("then", index, index, 1);
    let expected = TxnResponse {
        succeeded: true,
        revision: index,
        responses: vec![
            TxnOpResponse::Put { prev_kv: Some(kv("1", r1, r1, 1)) },
            TxnOpResponse::Txn(TxnResponse { succeeded: true, revision: index, responses: vec![TxnOpResponse::Put { prev_kv: None }] }),
            TxnOpResponse::Range(RangeResponse { kvs: vec![(b"b".to_vec(), b.clone())], count: 1, more: false, revision: index }),
        ],
    };
    assert_eq!(reply, Some(Response::Txn(expected)));
    assert_eq!(f.sm.kv().get("b"), Some(&b));
    assert!(f.sm.kv().get("never").is_none(), "the branch not taken ran");
}

#[test]
fn nested_txns_are_checked_as_etcd_checks_them() {
    let mut f = Fixture::new();
    write(&mut f, vec![put("a", "1")]);
    let before = f.sm.kv().history().len();
    let puts = |n: usize| (0..n).map(|i| put(&format!("n{i}"), "x")).collect::<Vec<_>>();
    let cases = vec![
        // A nested txn may use only what its parent left of the 128.
        (txn(vec![], vec![put("p", "x"), nested(vec![], puts(128), vec![])], vec![]), KvError::TooManyOps),
        (txn(vec![], vec![nested(vec![], vec![put("", "x")], vec![])], vec![]), KvError::EmptyKey),
        // A key put by the parent and by a nested txn, or deleted by one.
        (txn(vec![], vec![put("k", "x"), nested(vec![], vec![put("k", "y")], vec![])], vec![]), KvError::DuplicateKey),
        (txn(vec![], vec![delete("a", "z"), nested(vec![], vec![], vec![put("k", "y")])], vec![]), KvError::DuplicateKey),
        (txn(vec![], vec![nested(vec![], vec![delete("k", "")], vec![]), put("k", "y")], vec![]), KvError::DuplicateKey),
        // Two nested txns: the second's put under the first's delete.
        (
            txn(vec![], vec![nested(vec![], vec![delete("k", "")], vec![]), nested(vec![], vec![put("k", "y")], vec![])], vec![]),
            KvError::DuplicateKey,
        ),
    ];
    for (op, error) in cases {
        assert_eq!(f.call(1, op.clone()), Some(Response::Error(ServiceError::Kv(error))), "{op:?}");
    }
    assert_eq!(f.sm.kv().history().len(), before, "a refused txn wrote");
    // The two branches of one nested txn may put the same key (only one
    // runs); 126 ops beside a nested txn of one op fit (127 do not: the
    // parent's 128 leave the nested one nothing).
    let ok = txn(vec![], vec![nested(vec![], vec![put("k", "then")], vec![put("k", "else")])], vec![]);
    assert!(matches!(f.call(1, ok), Some(Response::Txn(TxnResponse { succeeded: true, .. }))));
    let with = |n: usize| {
        let mut ops = puts(n);
        ops.push(nested(vec![], vec![put("last", "x")], vec![]));
        txn(vec![], ops, vec![])
    };
    assert_eq!(f.call(1, with(127)), Some(Response::Error(ServiceError::Kv(KvError::TooManyOps))));
    assert!(matches!(f.call(1, with(126)), Some(Response::Txn(_))));
    assert_eq!(f.sm.kv().get("last").map(|v| v.value.clone()), Some(b"x".to_vec()));
}
