//! What a watch reads from the state machine: the changes each applied
//! entry made (a txn's several keys at one revision, a lease expiry's
//! deletes) and, through a cluster of servers, the same changes handed to
//! the host as an output of apply on every server.

use crate::service_harness;
use crate::service_support;

use leasesim_core::service::kv::{Change, KeyRange, RevisionError};
use leasesim_core::service::{Command, DeleteRequest, Op, PutRequest, TxnOp, TxnRequest};
use leasesim_core::NS_PER_SEC;
use service_support::Fixture;

/// (revision, key, value after, value before) of each change.
fn summary(changes: &[Change]) -> Vec<(u64, String, Option<String>, Option<String>)> {
    let text = |v: &Option<leasesim_core::service::kv::KvValue>| v.as_ref().map(|v| String::from_utf8_lossy(&v.value).into_owned());
    changes.iter().map(|c| (c.revision, String::from_utf8_lossy(&c.key).into_owned(), text(&c.current), text(&c.prev))).collect()
}

fn put(key: &str, value: &str) -> TxnOp {
    TxnOp::Put(PutRequest { key: key.into(), value: value.into(), lease: None, prev_kv: false, ignore_value: false, ignore_lease: false })
}

fn s(text: &str) -> String {
    text.to_string()
}

#[test]
fn a_txn_changes_several_keys_at_one_revision() {
    let mut f = Fixture::new();
    f.put(1, "gone", "0", None);
    let index = f.next_index();
    let delete = TxnOp::Delete(DeleteRequest { range: KeyRange::single(b"gone"), prev_kv: false });
    f.call(1, Op::Txn(TxnRequest { compares: vec![], success: vec![put("a", "1"), put("b", "2"), delete], failure: vec![] }));
    let changes: Vec<Change> = f.sm.kv().changes_at(index).cloned().collect();
    assert_eq!(
        summary(&changes),
        vec![(index, s("a"), Some(s("1")), None), (index, s("b"), Some(s("2")), None), (index, s("gone"), None, Some(s("0"))),]
    );
    let read = f.sm.kv().events(&KeyRange { key: b"a".to_vec(), range_end: b"c".to_vec() }, index, 1).unwrap();
    assert_eq!(read.events.len(), 2, "a limit of one still reads the whole revision");
    assert_eq!(read.upto, index);
}

#[test]
fn a_lease_expiry_deletes_its_keys_at_the_expire_entrys_revision() {
    let mut f = Fixture::new();
    let lease = f.grant(1);
    f.put(1, "x", "1", Some(lease));
    f.put(1, "y", "2", Some(lease));
    f.put(1, "free", "3", None);
    let index = f.next_index();
    f.apply(Command::Expire { lease });
    let changes: Vec<Change> = f.sm.kv().changes_at(index).cloned().collect();
    assert_eq!(summary(&changes), vec![(index, s("x"), None, Some(s("1"))), (index, s("y"), None, Some(s("2")))]);
    assert_eq!(f.sm.kv().revision(), index);
}

#[test]
fn a_compacted_start_is_refused_with_the_compaction_revision() {
    let mut f = Fixture::new();
    f.put(1, "k", "1", None);
    let second = f.next_index();
    f.put(1, "k", "2", None);
    f.call(1, Op::Compact { revision: second });
    let all = KeyRange { key: vec![0], range_end: vec![0] };
    assert_eq!(f.sm.kv().events(&all, second - 1, 10), Err(RevisionError::Compacted { compact_revision: second }));
    assert_eq!(
        summary(&f.sm.kv().events(&all, second, 10).unwrap().events),
        vec![(second, s("k"), Some(s("2")), None)],
        "the value before the compaction is gone"
    );
}

#[test]
fn every_server_hands_its_host_each_change_once_in_revision_order() {
    let mut c = service_harness::ServiceCluster::new(service_harness::ServiceClusterConfig::new(3, 7));
    c.record_events = true;
    c.add_manual_client(9);
    let leader = c.wait_for_leader();
    for op in [
        Op::Put { key: "k".into(), value: "1".into(), lease: None },
        Op::Put { key: "k".into(), value: "2".into(), lease: None },
        Op::Delete { key: "k".into() },
        Op::Txn(TxnRequest { compares: vec![], success: vec![put("a", "1"), put("b", "1")], failure: vec![] }),
    ] {
        c.call(9, op, 3 * NS_PER_SEC).expect("answered");
    }
    c.run_until(c.now_ns + NS_PER_SEC);
    let history: Vec<Change> = c.server(leader).unwrap().state_machine().kv().history().iter().map(|c| (**c).clone()).collect();
    let values: Vec<_> = summary(&history).into_iter().map(|(_, k, now, before)| (k, now, before)).collect();
    assert_eq!(
        values,
        vec![
            (s("k"), Some(s("1")), None),
            (s("k"), Some(s("2")), Some(s("1"))),
            (s("k"), None, Some(s("2"))),
            (s("a"), Some(s("1")), None),
            (s("b"), Some(s("1")), None),
        ]
    );
    assert_eq!(history[3].revision, history[4].revision, "the txn is one revision");
    for id in 1..=3 {
        assert_eq!(c.changes.get(&id), Some(&history), "server {id} reported every change once, in order");
    }
}
