//! etcd's Range request over the store: the keys of a range at a revision,
//! filtered, sorted, counted and limited exactly as etcd 3.4's applier does
//! (`applierV3backend.Range`), so that a client sees the same `count`,
//! `more` and order from leasesim as from etcd.

use serde::{Deserialize, Serialize};

use crate::service::kv::{KeyRange, Kv, KvValue, RevisionError};
use crate::types::LogIndex;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortOrder {
    #[default]
    None,
    Ascend,
    Descend,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SortTarget {
    #[default]
    Key,
    Version,
    Create,
    Mod,
    Value,
}

/// etcd's `RangeRequest`. Zero in `revision`, `limit` and the four filters
/// means "not asked", as in etcd.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RangeRequest {
    pub range: KeyRange,
    pub revision: LogIndex,
    pub limit: u64,
    pub keys_only: bool,
    pub count_only: bool,
    pub sort_order: SortOrder,
    pub sort_target: SortTarget,
    pub min_mod_revision: LogIndex,
    pub max_mod_revision: LogIndex,
    pub min_create_revision: LogIndex,
    pub max_create_revision: LogIndex,
}

/// What a range found. `count` is every key of the range at the revision
/// (before filters and limit, as etcd counts); `more` says the limit cut
/// the list; `revision` is the store's (not the one read at).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RangeResponse {
    pub kvs: Vec<(Vec<u8>, KvValue)>,
    pub count: u64,
    pub more: bool,
    pub revision: LogIndex,
}

impl RangeRequest {
    /// Every key of `range`, now.
    pub fn of(range: KeyRange) -> Self {
        RangeRequest { range, ..RangeRequest::default() }
    }

    fn keeps(&self, v: &KvValue) -> bool {
        let at_least = |bound: LogIndex, x: LogIndex| bound == 0 || x >= bound;
        let at_most = |bound: LogIndex, x: LogIndex| bound == 0 || x <= bound;
        at_least(self.min_mod_revision, v.mod_revision)
            && at_most(self.max_mod_revision, v.mod_revision)
            && at_least(self.min_create_revision, v.create_revision)
            && at_most(self.max_create_revision, v.create_revision)
    }

    /// Runs the range on `kv`.
    pub fn run(&self, kv: &Kv) -> Result<RangeResponse, RevisionError> {
        let mut kvs = kv.range(&self.range, self.revision)?;
        let count = kvs.len() as u64;
        kvs.retain(|(_, v)| self.keeps(v));
        // etcd sorts ascending by default only for a target other than the
        // key (the store already yields key order).
        let order = match (self.sort_order, self.sort_target) {
            (SortOrder::None, SortTarget::Key) => SortOrder::None,
            (SortOrder::None, _) => SortOrder::Ascend,
            (order, _) => order,
        };
        if order != SortOrder::None {
            // Stable, with ties in key order both ways (as etcd's sort of a
            // short list: `sort.Reverse` flips the comparison, not the list).
            kvs.sort_by(|(ka, a), (kb, b)| {
                let ordering = match self.sort_target {
                    SortTarget::Key => ka.cmp(kb),
                    SortTarget::Version => a.version.cmp(&b.version),
                    SortTarget::Create => a.create_revision.cmp(&b.create_revision),
                    SortTarget::Mod => a.mod_revision.cmp(&b.mod_revision),
                    SortTarget::Value => a.value.cmp(&b.value),
                };
                if order == SortOrder::Descend {
                    ordering.reverse()
                } else {
                    ordering
                }
            });
        }
        let mut more = false;
        if self.limit > 0 && kvs.len() as u64 > self.limit {
            kvs.truncate(self.limit as usize);
            more = true;
        }
        if self.count_only {
            kvs.clear();
        } else if self.keys_only {
            kvs.iter_mut().for_each(|(_, v)| v.value.clear());
        }
        Ok(RangeResponse { kvs, count, more, revision: kv.revision() })
    }
}
