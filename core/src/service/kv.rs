//! The key-value store: values stamped with the revision (log index) of the
//! entry that last changed them, optionally attached to a lease.
//!
//! It exists apart from leases so that the rules "a revision is the log index
//! of the change" and "a key belongs to at most one lease" live in one place;
//! the state machine keeps the lease side of the attachment in step (the
//! consistent-core lease design: keys attached to a lease go when the lease
//! goes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::{LeaseId, LogIndex};

/// One stored value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KvValue {
    pub value: String,
    /// Revision of the entry that created the key (since it was last absent).
    pub create_revision: LogIndex,
    /// Revision of the entry that last changed it.
    pub mod_revision: LogIndex,
    /// The lease the key is attached to, if any.
    pub lease: Option<LeaseId>,
}

/// The store. `revision` is the index of the last entry that changed any key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Kv {
    values: BTreeMap<String, KvValue>,
    revision: LogIndex,
}

impl Kv {
    pub fn get(&self, key: &str) -> Option<&KvValue> {
        self.values.get(key)
    }

    /// The index of the last entry that changed the store (0: never changed).
    pub fn revision(&self) -> LogIndex {
        self.revision
    }

    /// Keys and values in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &KvValue)> {
        self.values.iter()
    }

    /// Keys from `start` on, in key order (a prefix scan without walking
    /// the whole store).
    pub fn iter_from<'a>(&'a self, start: &str) -> impl Iterator<Item = (&'a String, &'a KvValue)> {
        self.values.range::<str, _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
    }

    /// Writes `value` at revision `index`, attached to `lease`. Returns the
    /// lease the key was attached to before, so the caller can detach it.
    pub(crate) fn put(&mut self, key: &str, value: &str, lease: Option<LeaseId>, index: LogIndex) -> Option<LeaseId> {
        invariant!(index >= self.revision, "revisions only grow");
        self.revision = index;
        match self.values.get_mut(key) {
            Some(existing) => {
                let previous = existing.lease;
                existing.value = value.to_string();
                existing.mod_revision = index;
                existing.lease = lease;
                previous
            }
            None => {
                let stored = KvValue { value: value.to_string(), create_revision: index, mod_revision: index, lease };
                self.values.insert(key.to_string(), stored);
                None
            }
        }
    }

    /// Deletes `key` at revision `index`; the store's revision moves only if
    /// the key existed. Returns what was removed.
    pub(crate) fn delete(&mut self, key: &str, index: LogIndex) -> Option<KvValue> {
        let removed = self.values.remove(key);
        if removed.is_some() {
            invariant!(index >= self.revision, "revisions only grow");
            self.revision = index;
        }
        removed
    }
}
