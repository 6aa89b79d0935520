//! Range reads over the leader's state machine, for what core's single-key
//! `Get` cannot answer (etcd's `Range` with `range_end`, used by etcdctl's
//! `get --prefix` and its lock recipe).
//!
//! Linearizable by construction: the range is taken on the leader right
//! after it answered a `Get` through the read index, so the state it reads
//! includes every write acknowledged before the request began.

use leasesim_core::service::kv::KvValue;
use leasesim_core::service::StateMachine;
use serde::{Deserialize, Serialize};

/// etcd's key range: `range_end` empty means the single key `key`; `[0]`
/// means every key from `key` on; anything else the half-open range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeSpec {
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
}

/// The keys a range found, in key order, and the store's revision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeView {
    pub kvs: Vec<(String, KvValue)>,
    pub revision: u64,
}

impl RangeSpec {
    pub fn contains(&self, key: &[u8]) -> bool {
        if self.range_end.is_empty() {
            return key == self.key.as_slice();
        }
        key >= self.key.as_slice() && (self.range_end == [0] || key < self.range_end.as_slice())
    }

    /// Reads the range from `sm`.
    pub fn read(&self, sm: &StateMachine) -> RangeView {
        let kv = sm.kv();
        let kvs = if self.range_end.is_empty() {
            String::from_utf8(self.key.clone()).ok().and_then(|k| kv.get(&k).map(|v| (k, v.clone()))).into_iter().collect()
        } else {
            kv.iter().filter(|(k, _)| self.contains(k.as_bytes())).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        RangeView { kvs, revision: kv.revision() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_etcd_rules() {
        let single = RangeSpec { key: b"a".to_vec(), range_end: vec![] };
        assert!(single.contains(b"a") && !single.contains(b"ab"));
        let prefix = RangeSpec { key: b"a".to_vec(), range_end: b"b".to_vec() };
        assert!(prefix.contains(b"a") && prefix.contains(b"azz") && !prefix.contains(b"b"));
        let from = RangeSpec { key: b"m".to_vec(), range_end: vec![0] };
        assert!(from.contains(b"zzz") && !from.contains(b"a"));
    }
}
