//! The replica-divergence digest (`StateMachine::applied_digest`): the
//! simulator's `replica-divergence` checker compares it between servers at
//! the same applied index, so it is only as good as its power to tell two
//! states apart. These tests pin that power: replicas fed the same entries
//! agree at every index, and a replica that applied one different entry
//! disagrees from the first index whose digest covers the difference and at
//! every index after it (the chain never lets two diverged replicas meet
//! again). A digest that ignored its input would silence the checker
//! without any other test noticing (cargo-mutants: `applied_digest -> 0`).

use crate::service_support;

use leasesim_core::service::state_machine::FULL_STATE_DIGEST_EVERY;
use leasesim_core::service::Op;
use service_support::Fixture;

fn put(f: &mut Fixture, key: &str, value: &str) {
    f.put(1, key, value, None);
}

/// Applies `count` puts of distinct keys, recording the digest after each.
fn fill(f: &mut Fixture, count: u64, digests: &mut Vec<u64>) {
    for i in 0..count {
        put(f, &format!("k{i}"), "v");
        digests.push(f.sm.applied_digest());
    }
}

#[test]
fn replicas_fed_the_same_entries_agree_at_every_index_and_each_entry_moves_the_digest() {
    let (mut a, mut b) = (Fixture::new(), Fixture::new());
    let start = a.sm.applied_digest();
    let (mut da, mut db) = (Vec::new(), Vec::new());
    fill(&mut a, 2 * FULL_STATE_DIGEST_EVERY, &mut da);
    fill(&mut b, 2 * FULL_STATE_DIGEST_EVERY, &mut db);
    assert_eq!(da, db, "the same entries gave different digests");
    // Every applied entry changes the digest: a constant digest would make
    // every pair of replicas look alike.
    let mut previous = start;
    for (i, &d) in da.iter().enumerate() {
        assert_ne!(d, previous, "applying entry {} left the digest at {previous:#x}", i + 1);
        previous = d;
    }
}

#[test]
fn one_different_value_is_seen_by_the_next_full_state_digest_and_never_forgotten() {
    let (mut a, mut b) = (Fixture::new(), Fixture::new());
    // The same first entry, then a put whose value alone differs: its effects
    // (a reply carrying the revision) are the same on both, so only the
    // periodic whole-state hash can tell the replicas apart.
    put(&mut a, "x", "one");
    put(&mut b, "x", "two");
    assert_eq!(a.sm.applied_index(), b.sm.applied_index());
    let first_index = a.next_index(); // the index of the first entry `fill` applies
    let (mut da, mut db) = (Vec::new(), Vec::new());
    fill(&mut a, 3 * FULL_STATE_DIGEST_EVERY, &mut da);
    fill(&mut b, 3 * FULL_STATE_DIGEST_EVERY, &mut db);
    for (offset, (x, y)) in da.iter().zip(&db).enumerate() {
        let index = first_index + offset as u64;
        if index < FULL_STATE_DIGEST_EVERY {
            // Before the first whole-state hash only the entries' effects
            // are chained, and those are the same on both.
            assert_eq!(x, y, "index {index}: the replicas differ before the whole state is hashed");
        } else {
            assert_ne!(x, y, "replicas holding x=one and x=two agree at index {index}");
        }
    }
    assert_ne!(da.last(), db.last());
}

#[test]
fn an_entry_of_another_term_at_the_same_index_changes_the_digest_at_once() {
    let (mut a, mut b) = (Fixture::new(), Fixture::new());
    put(&mut a, "x", "v");
    b.term = 2;
    put(&mut b, "x", "v");
    assert_ne!(a.sm.applied_digest(), b.sm.applied_digest());
}

#[test]
fn a_lease_or_a_lock_held_by_one_replica_only_sets_it_apart() {
    // Same number of entries on both; a grants a lease and takes a lock
    // where b deletes absent keys (which change no state).
    let (mut a, mut b) = (Fixture::new(), Fixture::new());
    let lease = a.grant(1);
    b.call(1, Op::Delete { key: "absent".into() });
    assert_eq!(a.sm.applied_index(), b.sm.applied_index());
    assert_ne!(a.sm.applied_digest(), b.sm.applied_digest(), "a lease grant left the digest as a no-op delete did");
    let before = a.sm.applied_digest();
    a.call(1, Op::LockAcquire { key: "lock".into(), lease });
    assert_ne!(a.sm.applied_digest(), before);
}
