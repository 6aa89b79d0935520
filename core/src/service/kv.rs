//! The key-value store as etcd's MVCC keeps it: byte keys and values, a
//! global revision, per-key create/mod revisions and version, and a history
//! of changes kept until compaction (for reads at a past revision and for
//! watches that replay).
//!
//! It exists apart from leases so that the rules "a revision is the log index
//! of the change" and "a key belongs to at most one lease" live in one place;
//! the state machine keeps the lease side of the attachment in step (the
//! consistent-core lease design: keys attached to a lease go when the lease
//! goes).
//!
//! The global revision is the index of the log entry that last changed the
//! store. It grows with every change, as etcd's does, but not by exactly one:
//! entries that change no key (lease grants, no-ops) leave gaps. Every change
//! made by one entry, however many keys it touches, carries that entry's
//! index, so a multi-key txn is one revision.
//!
//! Memory: the current values plus one [`Change`] per key changed since the
//! last compaction (each holding the value before and after). Compaction at
//! revision `c` drops every change below `c` (those at `c` stay, as etcd
//! keeps each key's revision `c`, so a watch may still start at `c`), so the history is
//! bounded by whatever compacts (etcd's Compact call; leasesim-node's
//! `--auto-compaction-*` flags).

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::byte_hash::ChunkedHasher;
use crate::service::history_bytes::HistoryBytes;
use crate::types::{LeaseId, LogIndex};

/// One stored value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KvValue {
    pub value: Vec<u8>,
    /// Revision of the entry that created the key (since it was last absent).
    pub create_revision: LogIndex,
    /// Revision of the entry that last changed it.
    pub mod_revision: LogIndex,
    /// Puts since the key was created (1 after the creating put); a delete
    /// resets it, as etcd's version does.
    pub version: u64,
    /// The lease the key is attached to, if any.
    pub lease: Option<LeaseId>,
}

/// One change of one key, at `revision`. `current: None` is a deletion.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    pub revision: LogIndex,
    pub key: Vec<u8>,
    pub prev: Option<KvValue>,
    pub current: Option<KvValue>,
}

/// etcd's key range: `range_end` empty means the single key `key`; `[0]`
/// means every key from `key` on; anything else the half-open range
/// `[key, range_end)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyRange {
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
}

impl KeyRange {
    pub fn single(key: &[u8]) -> Self {
        KeyRange { key: key.to_vec(), range_end: Vec::new() }
    }

    /// Every key starting with `prefix` (etcd's `GetPrefixRangeEnd`): the
    /// range ends at the prefix with its last byte below 0xff raised by
    /// one; every key from `\0` on for an empty prefix or one of 0xff bytes.
    pub fn prefix(prefix: &[u8]) -> Self {
        if prefix.is_empty() {
            return KeyRange { key: vec![0], range_end: vec![0] };
        }
        let mut end = prefix.to_vec();
        while let Some(last) = end.pop() {
            if last < 0xff {
                end.push(last + 1);
                return KeyRange { key: prefix.to_vec(), range_end: end };
            }
        }
        KeyRange { key: prefix.to_vec(), range_end: vec![0] }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        if self.range_end.is_empty() {
            return key == self.key.as_slice();
        }
        key >= self.key.as_slice() && (self.range_end == [0] || key < self.range_end.as_slice())
    }
}

/// Why a read or a compaction at some revision is refused (etcd's mvcc
/// errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RevisionError {
    /// Below the compaction: "mvcc: required revision has been compacted".
    Compacted { compact_revision: LogIndex },
    /// Above the store's revision: "mvcc: required revision is a future
    /// revision".
    Future { current: LogIndex },
}

/// The store. `revision` is the index of the last entry that changed any key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Kv {
    values: BTreeMap<Vec<u8>, KvValue>,
    revision: LogIndex,
    /// Every change above `compact_revision`, in revision order. Each is
    /// shared, not owned: the whole store is copied into every snapshot a
    /// server takes, and with owned changes that deep copy (and freeing the
    /// snapshot it replaced) was 40% of a chaos run's instructions. `Arc`
    /// hashes, compares and serializes as the change itself, so digests and
    /// the snapshot format do not change.
    #[serde(default)]
    history: VecDeque<Arc<Change>>,
    /// The last compaction's revision (0: never compacted).
    #[serde(default)]
    compact_revision: LogIndex,
    /// `history`'s hash bytes, for the applied-state digest (a cache).
    /// Boxed: the store travels inside snapshot messages, and every message
    /// is moved by value through the simulated network.
    #[serde(skip)]
    history_bytes: Box<HistoryBytes>,
}

impl Kv {
    pub fn get<K: AsRef<[u8]> + ?Sized>(&self, key: &K) -> Option<&KvValue> {
        self.values.get(key.as_ref())
    }

    /// The index of the last entry that changed the store (0: never changed).
    pub fn revision(&self) -> LogIndex {
        self.revision
    }

    /// The revision of the last compaction (0: never compacted).
    pub fn compact_revision(&self) -> LogIndex {
        self.compact_revision
    }

    /// The changes kept (every change above the compaction), oldest first.
    pub fn history(&self) -> &VecDeque<Arc<Change>> {
        &self.history
    }

    /// Writes exactly what the derived `Hash` writes, but the history's
    /// changes as one copy of their cached bytes (the full-state link of the
    /// applied digest; see `history_bytes`).
    pub fn hash_gathered(&self, hasher: &mut ChunkedHasher) {
        self.values.hash(hasher);
        self.revision.hash(hasher);
        if self.history_bytes.covers(&self.history) {
            // `VecDeque`'s `Hash`: its length, then each element.
            hasher.write_usize(self.history.len());
            hasher.write_long(self.history_bytes.bytes());
        } else {
            self.history.hash(hasher);
        }
        self.compact_revision.hash(hasher);
        self.history_bytes.hash(hasher);
    }

    /// How many keys are stored.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Keys and values in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &KvValue)> {
        self.values.iter()
    }

    /// Keys from `start` on, in key order (a prefix scan without walking
    /// the whole store).
    pub fn iter_from<'a>(&'a self, start: &[u8]) -> impl Iterator<Item = (&'a Vec<u8>, &'a KvValue)> {
        self.values.range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
    }

    /// The keys of `range` as they were at `at_revision` (0: now), in key
    /// order: the current values with every later change undone.
    pub fn range(&self, range: &KeyRange, at_revision: LogIndex) -> Result<Vec<(Vec<u8>, KvValue)>, RevisionError> {
        self.check_readable(at_revision)?;
        let mut found: BTreeMap<Vec<u8>, KvValue> = if range.range_end.is_empty() {
            self.values.get(&range.key).map(|v| (range.key.clone(), v.clone())).into_iter().collect()
        } else {
            self.iter_from(&range.key).take_while(|(k, _)| range.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        if at_revision != 0 {
            for change in self.history.iter().rev().take_while(|c| c.revision > at_revision) {
                if !range.contains(&change.key) {
                    continue;
                }
                match &change.prev {
                    Some(prev) => found.insert(change.key.clone(), prev.clone()),
                    None => found.remove(&change.key),
                };
            }
        }
        Ok(found.into_iter().collect())
    }

    /// Whether a read at `revision` (0: now) can be answered.
    pub fn check_readable(&self, revision: LogIndex) -> Result<(), RevisionError> {
        if revision > self.revision {
            return Err(RevisionError::Future { current: self.revision });
        }
        if revision != 0 && revision < self.compact_revision {
            return Err(RevisionError::Compacted { compact_revision: self.compact_revision });
        }
        Ok(())
    }

    /// Forgets every change below `revision` (etcd's Compact): reads and
    /// watches from below it are refused from now on. As etcd, compacting at or below the
    /// last compaction, or above the store's revision, is an error.
    pub fn compact(&mut self, revision: LogIndex) -> Result<(), RevisionError> {
        if revision <= self.compact_revision {
            return Err(RevisionError::Compacted { compact_revision: self.compact_revision });
        }
        if revision > self.revision {
            return Err(RevisionError::Future { current: self.revision });
        }
        while self.history.front().is_some_and(|c| c.revision < revision) {
            self.history.pop_front();
            self.history_bytes.popped_front(&self.history);
        }
        self.compact_revision = revision;
        Ok(())
    }

    /// Writes `value` at revision `index`, attached to `lease`. Returns the
    /// key's previous state, so the caller can detach its lease.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8], lease: Option<LeaseId>, index: LogIndex) -> Option<KvValue> {
        invariant!(index >= self.revision, "revisions only grow");
        self.revision = index;
        let prev = self.values.get(key).cloned();
        let stored = KvValue {
            value: value.to_vec(),
            create_revision: prev.as_ref().map_or(index, |p| p.create_revision),
            mod_revision: index,
            version: prev.as_ref().map_or(1, |p| p.version + 1),
            lease,
        };
        self.values.insert(key.to_vec(), stored.clone());
        self.history.push_back(Arc::new(Change { revision: index, key: key.to_vec(), prev: prev.clone(), current: Some(stored) }));
        self.history_bytes.pushed(&self.history);
        prev
    }

    /// Deletes `key` at revision `index`; the store's revision moves only if
    /// the key existed. Returns what was removed.
    pub(crate) fn delete(&mut self, key: &[u8], index: LogIndex) -> Option<KvValue> {
        let removed = self.values.remove(key);
        if let Some(prev) = &removed {
            invariant!(index >= self.revision, "revisions only grow");
            self.revision = index;
            self.history.push_back(Arc::new(Change { revision: index, key: key.to_vec(), prev: Some(prev.clone()), current: None }));
            self.history_bytes.pushed(&self.history);
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::byte_hash::ByteHasher;

    /// The digests of what the derived `Hash` and `hash_gathered` write
    /// for `kv` (a long history is streamed, not gathered).
    fn derived_and_gathered(kv: &Kv) -> (u64, u64) {
        let (mut derived, mut gathered) = (ByteHasher::new(), ChunkedHasher::new());
        kv.hash(&mut derived);
        kv.hash_gathered(&mut gathered);
        (derived.finish(), gathered.finish())
    }

    #[test]
    fn the_gathered_hash_writes_what_the_derived_hash_writes() {
        let mut kv = store();
        let same = |kv: &Kv, when: &str| {
            let (derived, gathered) = derived_and_gathered(kv);
            assert_eq!(derived, gathered, "{when}");
        };
        assert!(kv.history_bytes.covers(&kv.history));
        same(&kv, "after puts and a delete");
        kv.compact(7).unwrap();
        same(&kv, "after a compaction");
        kv.put(b"c", b"with a lease", Some(4), 11);
        same(&kv, "a key with a lease");
        // A store whose cache was not kept (a deserialized snapshot): the
        // digest walks the history, and the next change rebuilds the cache.
        *kv.history_bytes = HistoryBytes::default();
        assert!(!kv.history_bytes.covers(&kv.history));
        same(&kv, "without the cache");
        kv.delete(b"a", 12);
        assert!(kv.history_bytes.covers(&kv.history), "rebuilt");
        same(&kv, "after the rebuild");
        // Many compactions: the dropped prefix is reclaimed as it goes.
        for index in 13..800u64 {
            kv.put(format!("k{}", index % 7).as_bytes(), &index.to_ne_bytes(), (index % 3 == 0).then_some(index), index);
            if index % 100 == 0 {
                kv.compact(index - 20).unwrap();
                same(&kv, &format!("compacted at {}", index - 20));
            }
        }
        same(&kv, "at the end");
        assert!(kv.history_bytes.bytes().len() >= 4096, "long enough to be streamed: {:?}", kv.history_bytes);
        assert!(kv.history_bytes.bytes.len() < 2 * kv.history_bytes.bytes().len() + 4096, "{:?}", kv.history_bytes);
    }

    #[test]
    fn a_copied_store_shares_its_changes() {
        let kv = store();
        let copy = kv.clone();
        // A snapshot copies the store: the changes must be shared, not
        // copied one by one (that copy was most of a chaos run's cost).
        assert!(kv.history().iter().zip(copy.history()).all(|(a, b)| Arc::ptr_eq(a, b)));
        assert_eq!(kv.history().len(), copy.history().len());
    }

    fn store() -> Kv {
        let mut kv = Kv::default();
        kv.put(b"a", b"1", None, 3);
        kv.put(b"b", b"1", None, 3);
        kv.put(b"a", b"2", None, 5);
        kv.delete(b"b", 7);
        kv.put(b"a", b"3", None, 9);
        kv
    }

    fn values(kvs: &[(Vec<u8>, KvValue)]) -> Vec<(&[u8], &[u8], u64)> {
        kvs.iter().map(|(k, v)| (k.as_slice(), v.value.as_slice(), v.version)).collect()
    }

    #[test]
    fn a_range_at_a_past_revision_undoes_later_changes() {
        let kv = store();
        let all = KeyRange { key: vec![0], range_end: vec![0] };
        assert_eq!(values(&kv.range(&all, 0).unwrap()), vec![(&b"a"[..], &b"3"[..], 3)]);
        assert_eq!(values(&kv.range(&all, 3).unwrap()), vec![(&b"a"[..], &b"1"[..], 1), (&b"b"[..], &b"1"[..], 1)]);
        assert_eq!(values(&kv.range(&all, 6).unwrap()), vec![(&b"a"[..], &b"2"[..], 2), (&b"b"[..], &b"1"[..], 1)]);
        assert_eq!(values(&kv.range(&all, 8).unwrap()), vec![(&b"a"[..], &b"2"[..], 2)]);
        assert_eq!(values(&kv.range(&KeyRange::single(b"b"), 4).unwrap()), vec![(&b"b"[..], &b"1"[..], 1)]);
        assert_eq!(kv.range(&all, 2).unwrap(), vec![], "before the first write: empty");
        assert_eq!(kv.range(&all, 10), Err(RevisionError::Future { current: 9 }));
    }

    #[test]
    fn version_counts_puts_and_a_delete_resets_it() {
        let mut kv = store();
        assert_eq!(kv.get("a").map(|v| (v.version, v.create_revision, v.mod_revision)), Some((3, 3, 9)));
        kv.delete(b"a", 11);
        kv.put(b"a", b"x", None, 12);
        assert_eq!(kv.get("a").map(|v| (v.version, v.create_revision, v.mod_revision)), Some((1, 12, 12)));
    }

    #[test]
    fn compaction_drops_history_and_refuses_older_reads() {
        let mut kv = store();
        assert_eq!(kv.history().len(), 5);
        assert_eq!(kv.compact(5), Ok(()));
        assert_eq!(kv.history().iter().map(|c| c.revision).collect::<Vec<_>>(), vec![5, 7, 9], "the compaction's own revision stays");
        let all = KeyRange { key: vec![0], range_end: vec![0] };
        assert_eq!(kv.range(&all, 4), Err(RevisionError::Compacted { compact_revision: 5 }));
        assert_eq!(values(&kv.range(&all, 5).unwrap()), vec![(&b"a"[..], &b"2"[..], 2), (&b"b"[..], &b"1"[..], 1)]);
        assert_eq!(kv.compact(5), Err(RevisionError::Compacted { compact_revision: 5 }));
        assert_eq!(kv.compact(10), Err(RevisionError::Future { current: 9 }));
        assert_eq!(kv.compact(9), Ok(()));
        assert_eq!(kv.history().iter().map(|c| c.revision).collect::<Vec<_>>(), vec![9], "only the last revision is kept");
    }
}
