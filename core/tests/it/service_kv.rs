//! The KV store through the state machine: put / get / delete / cas, revisions
//! as log indexes, and attachment of keys to leases (the consistent-core lease
//! design).

use crate::service_support;

use leasesim_core::service::{Op, Response, ServiceError};
use service_support::Fixture;

#[test]
fn put_stamps_the_entry_index_as_revision() {
    let mut f = Fixture::new();
    f.noop();
    let index = f.next_index();
    assert_eq!(f.put(1, "a", "x", None), Some(Response::Done { revision: index }));
    assert_eq!(f.sm.kv().revision(), index);
    let stored = f.sm.kv().get("a").unwrap();
    assert_eq!((stored.create_revision, stored.mod_revision), (index, index));
    assert_eq!(f.sm.read_value("a"), Response::Value { value: Some("x".into()), revision: index });
}

#[test]
fn overwrite_keeps_create_revision_and_moves_mod_revision() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let created = f.sm.kv().get("a").unwrap().create_revision;
    let index = f.next_index();
    f.put(1, "a", "y", None);
    let stored = f.sm.kv().get("a").unwrap();
    assert_eq!((stored.value.as_slice(), stored.create_revision, stored.mod_revision), (&b"y"[..], created, index));
}

#[test]
fn get_of_absent_key_is_none_at_revision_zero() {
    let mut f = Fixture::new();
    assert_eq!(f.sm.read_value("nope"), Response::Value { value: None, revision: 0 });
    // A Get that reaches the log is answered the same way.
    assert_eq!(f.call(1, Op::Get { key: "nope".into() }), Some(Response::Value { value: None, revision: 0 }));
}

#[test]
fn delete_removes_and_stamps_revision() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let index = f.next_index();
    assert_eq!(f.call(1, Op::Delete { key: "a".into() }), Some(Response::Done { revision: index }));
    assert_eq!(f.value("a"), None);
    assert_eq!(f.sm.kv().revision(), index);
}

#[test]
fn delete_of_absent_key_changes_nothing() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let revision = f.sm.kv().revision();
    assert_eq!(f.call(1, Op::Delete { key: "b".into() }), Some(Response::Done { revision }));
    assert_eq!(f.sm.kv().revision(), revision);
    assert_eq!(f.value("a").as_deref(), Some("x"));
}

#[test]
fn cas_on_absent_key_with_expected_none_creates_it() {
    let mut f = Fixture::new();
    let index = f.next_index();
    let reply = f.call(1, Op::Cas { key: "a".into(), expected: None, value: "x".into(), lease: None });
    assert_eq!(reply, Some(Response::Cas { succeeded: true, current: Some("x".into()), revision: index }));
}

#[test]
fn cas_with_matching_value_swaps() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let index = f.next_index();
    let reply = f.call(1, Op::Cas { key: "a".into(), expected: Some("x".into()), value: "y".into(), lease: None });
    assert_eq!(reply, Some(Response::Cas { succeeded: true, current: Some("y".into()), revision: index }));
    assert_eq!(f.value("a").as_deref(), Some("y"));
}

#[test]
fn cas_with_wrong_value_fails_and_reports_current() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let written = f.sm.kv().get("a").unwrap().mod_revision;
    let reply = f.call(1, Op::Cas { key: "a".into(), expected: Some("z".into()), value: "y".into(), lease: None });
    assert_eq!(reply, Some(Response::Cas { succeeded: false, current: Some("x".into()), revision: written }));
    assert_eq!(f.sm.kv().revision(), written, "a failed cas changes nothing");
}

#[test]
fn cas_expecting_absent_fails_on_present_key() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let reply = f.call(1, Op::Cas { key: "a".into(), expected: None, value: "y".into(), lease: None });
    assert!(matches!(reply, Some(Response::Cas { succeeded: false, .. })));
    let reply = f.call(1, Op::Cas { key: "b".into(), expected: Some("x".into()), value: "y".into(), lease: None });
    assert_eq!(reply, Some(Response::Cas { succeeded: false, current: None, revision: 0 }));
}

#[test]
fn put_with_missing_lease_is_refused_and_writes_nothing() {
    let mut f = Fixture::new();
    assert_eq!(f.put(1, "a", "x", Some(77)), Some(Response::Error(ServiceError::LeaseNotFound { lease: 77 })));
    assert_eq!(f.value("a"), None);
    assert_eq!(f.sm.kv().revision(), 0);
}

#[test]
fn cas_with_missing_lease_is_refused() {
    let mut f = Fixture::new();
    let reply = f.call(1, Op::Cas { key: "a".into(), expected: None, value: "x".into(), lease: Some(5) });
    assert_eq!(reply, Some(Response::Error(ServiceError::LeaseNotFound { lease: 5 })));
    assert_eq!(f.value("a"), None);
}

#[test]
fn put_with_lease_attaches_and_rewrites_move_the_attachment() {
    let mut f = Fixture::new();
    let l1 = f.grant(1);
    let l2 = f.grant(1);
    f.put(1, "a", "x", Some(l1));
    assert!(f.sm.leases().get(l1).unwrap().keys.contains(&b"a"[..]));
    assert_eq!(f.sm.kv().get("a").unwrap().lease, Some(l1));
    f.put(1, "a", "y", Some(l2));
    assert!(!f.sm.leases().get(l1).unwrap().keys.contains(&b"a"[..]));
    assert!(f.sm.leases().get(l2).unwrap().keys.contains(&b"a"[..]));
    // A put without a lease detaches (etcd semantics).
    f.put(1, "a", "z", None);
    assert!(f.sm.leases().get(l2).unwrap().keys.is_empty());
    assert_eq!(f.sm.kv().get("a").unwrap().lease, None);
}

#[test]
fn cas_with_lease_attaches() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.call(1, Op::Cas { key: "a".into(), expected: None, value: "x".into(), lease: Some(lease) });
    assert!(f.sm.leases().get(lease).unwrap().keys.contains(&b"a"[..]));
}

#[test]
fn delete_detaches_from_lease() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.put(1, "a", "x", Some(lease));
    f.call(1, Op::Delete { key: "a".into() });
    assert!(f.sm.leases().get(lease).unwrap().keys.is_empty());
    assert_eq!(f.sm.check_invariants(), Ok(()));
}

#[test]
fn noop_entries_advance_the_applied_index_only() {
    let mut f = Fixture::new();
    f.put(1, "a", "x", None);
    let revision = f.sm.kv().revision();
    f.noop();
    f.noop();
    assert_eq!(f.sm.applied_index(), revision + 2);
    assert_eq!(f.sm.kv().revision(), revision);
}
