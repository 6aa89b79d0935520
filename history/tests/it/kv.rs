//! Hand-made KV-with-leases histories whose verdicts are clear by reading:
//! leases join keys into one partition, revoke and expiry delete attached
//! keys, and unknown outcomes cut both ways.

use leasesim_history::history::{History, KvInput, KvOutput, Operation};
use leasesim_history::{check_kv, CheckOptions, Verdict};

fn op(client: u64, call_ns: u64, return_ns: u64, input: KvInput, output: KvOutput) -> Operation {
    Operation { client, call_ns, return_ns: Some(return_ns), input, output: Some(output) }
}

fn put(key: &str, value: &str, lease: Option<u64>) -> KvInput {
    KvInput::Put { key: key.into(), value: value.into(), lease }
}

fn get(key: &str) -> KvInput {
    KvInput::Get { key: key.into() }
}

fn value(v: Option<&str>) -> KvOutput {
    KvOutput::Value(v.map(str::to_string))
}

/// Lease 7 with keys a and b attached, revoked; then reads of a and b.
fn revoked_lease(b_after: Option<&str>) -> History {
    History {
        ops: vec![
            op(1, 0, 1, KvInput::LeaseGrant { lease: Some(7) }, KvOutput::LeaseGranted { lease: 7 }),
            op(1, 2, 3, put("a", "1", Some(7)), KvOutput::Ok),
            op(2, 2, 3, put("b", "2", Some(7)), KvOutput::Ok),
            op(3, 2, 3, put("c", "3", None), KvOutput::Ok),
            op(1, 4, 5, KvInput::LeaseRevoke { lease: 7 }, KvOutput::LeaseRevoked),
            op(2, 6, 7, get("a"), value(None)),
            op(3, 6, 7, get("b"), value(b_after)),
            op(3, 8, 9, get("c"), value(Some("3"))),
            op(1, 8, 9, put("a", "4", Some(7)), KvOutput::LeaseNotFound),
        ],
    }
}

#[test]
fn revoke_deletes_every_attached_key() {
    let report = check_kv(&revoked_lease(None), &CheckOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Linearizable);
    assert_eq!(report.partitions, 2, "a, b and lease 7 together; c alone");
}

#[test]
fn a_key_surviving_its_lease_is_caught_with_the_revoke_in_the_window() {
    let history = revoked_lease(Some("2"));
    let report = check_kv(&history, &CheckOptions::default()).unwrap();
    let Verdict::NotLinearizable { window } = report.verdict else { panic!("expected a violation: {report:?}") };
    assert!(window.contains(&4) && window.contains(&6), "revoke and the stale get: {window:?}");
    assert!(!window.contains(&3) && !window.contains(&7), "key c is another partition: {window:?}");
    assert!(report.window_minimal);
}

#[test]
fn expiry_is_an_operation_the_cluster_performs() {
    let mut ops = vec![
        op(1, 0, 1, KvInput::LeaseGrant { lease: Some(3) }, KvOutput::LeaseGranted { lease: 3 }),
        op(1, 2, 3, put("svc", "up", Some(3)), KvOutput::Ok),
        // The cluster's expiry overlaps both reads: either order is fine.
        op(0, 4, 20, KvInput::LeaseExpire { lease: 3 }, KvOutput::LeaseExpired),
        op(2, 5, 6, get("svc"), value(Some("up"))),
        op(2, 7, 8, get("svc"), value(None)),
    ];
    let report = check_kv(&History { ops: ops.clone() }, &CheckOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Linearizable);
    // A key back after it was seen gone, with nobody writing it: no.
    ops.push(op(2, 21, 22, get("svc"), value(Some("up"))));
    let report = check_kv(&History { ops }, &CheckOptions::default()).unwrap();
    assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "{report:?}");
}

#[test]
fn unknown_revoke_may_apply_late_but_not_undo_itself() {
    let mut ops = vec![
        op(1, 0, 1, KvInput::LeaseGrant { lease: Some(1) }, KvOutput::LeaseGranted { lease: 1 }),
        op(1, 2, 3, put("k", "v", Some(1)), KvOutput::Ok),
        Operation { client: 1, call_ns: 4, return_ns: Some(5), input: KvInput::LeaseRevoke { lease: 1 }, output: None },
        op(2, 10, 11, get("k"), value(Some("v"))),
        op(2, 12, 13, get("k"), value(None)),
    ];
    let report = check_kv(&History { ops: ops.clone() }, &CheckOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Linearizable, "the revoke took effect after the first get");
    ops.push(op(2, 14, 15, get("k"), value(Some("v"))));
    let report = check_kv(&History { ops }, &CheckOptions::default()).unwrap();
    assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "{report:?}");
}

#[test]
fn cluster_chosen_lease_ids_join_their_keys() {
    let ops = vec![
        op(1, 0, 1, KvInput::LeaseGrant { lease: None }, KvOutput::LeaseGranted { lease: 42 }),
        op(1, 2, 3, put("x", "1", Some(42)), KvOutput::Ok),
        op(1, 4, 5, KvInput::LeaseRevoke { lease: 42 }, KvOutput::LeaseRevoked),
        op(2, 6, 7, get("x"), value(Some("1"))),
    ];
    let report = check_kv(&History { ops }, &CheckOptions::default()).unwrap();
    assert_eq!(report.partitions, 1);
    assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "{report:?}");
}

#[test]
fn a_zero_budget_answers_unknown_never_a_guess() {
    let report = check_kv(&revoked_lease(None), &CheckOptions { budget_steps: 0, shrink_budget_steps: 0 }).unwrap();
    assert_eq!(report.verdict, Verdict::Unknown);
}

#[test]
fn an_invalid_history_is_an_error() {
    let ops = vec![Operation { client: 1, call_ns: 5, return_ns: None, input: get("a"), output: Some(value(None)) }];
    let err = check_kv(&History { ops }, &CheckOptions::default()).unwrap_err();
    assert_eq!(err.op_index, 0);
}
