//! Range reads over the leader's state machine, for what core's single-key
//! `Get` cannot answer: etcd's `Range` with `range_end`, a past revision,
//! limit, sort and count (core's `RangeRequest`, run on the leader's store).
//!
//! Linearizable by construction: the range is taken on the leader right
//! after it answered a `Get` through the read index (or, under
//! --lease-reads, from its lease), so the state it reads includes every
//! write acknowledged before the request began. A serializable range is
//! the same read on any member's own state (etcd/kv.rs).
//!
//! The alarms' reserved keys (see `nospace`) live in the same store but
//! are no client's: a client's range skips them, and counts and limits as
//! if they were not there.

use leasesim_core::service::kv::{KeyRange, KvValue, RevisionError};
use leasesim_core::service::{RangeRequest, StateMachine};
use serde::{Deserialize, Serialize};

use crate::nospace::{is_reserved, ALARM_PREFIX};

/// What to read: one of etcd's range requests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeSpec {
    pub request: RangeRequest,
    /// A client's read: leave the reserved keys out (the alarm service
    /// reads them with `false`).
    pub hide_reserved: bool,
}

/// The keys a range found (in the order asked), its count and whether the
/// limit cut it, and the store's revision; or why the revision asked for
/// cannot be read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeView {
    pub kvs: Vec<(Vec<u8>, KvValue)>,
    pub count: u64,
    pub more: bool,
    pub revision: u64,
    pub error: Option<RevisionError>,
}

impl RangeSpec {
    /// Every key of `[key, range_end)` (etcd's range rules), now,
    /// reserved keys included.
    pub fn keys(key: Vec<u8>, range_end: Vec<u8>) -> Self {
        RangeSpec { request: RangeRequest::of(KeyRange { key, range_end }), hide_reserved: false }
    }

    /// A client's range request.
    pub fn client(request: RangeRequest) -> Self {
        RangeSpec { request, hide_reserved: true }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.request.range.contains(key)
    }

    /// Reads the range from `sm`, without the reserved keys.
    pub fn read(&self, sm: &StateMachine) -> RangeView {
        let revision = sm.kv().revision();
        let reserved = match self.reserved_in_range(sm).map(|n| if self.hide_reserved { n } else { 0 }) {
            Ok(n) => n,
            Err(e) => return RangeView { revision, error: Some(e), ..RangeView::default() },
        };
        let mut request = self.request.clone();
        if request.limit > 0 {
            // Room for the reserved keys that will be taken out.
            request.limit += reserved;
        }
        match sm.range(&request) {
            Ok(found) => {
                let mut kvs = found.kvs;
                kvs.retain(|(k, _)| !self.hide_reserved || !is_reserved(k));
                let limit = self.request.limit as usize;
                let cut = limit > 0 && kvs.len() > limit;
                kvs.truncate(if cut { limit } else { kvs.len() });
                RangeView { kvs, count: found.count - reserved, more: found.more || cut, revision: found.revision, error: None }
            }
            Err(e) => RangeView { revision, error: Some(e), ..RangeView::default() },
        }
    }

    /// How many reserved keys the range holds at the revision asked.
    fn reserved_in_range(&self, sm: &StateMachine) -> Result<u64, RevisionError> {
        let mut end = ALARM_PREFIX.as_bytes().to_vec();
        *end.last_mut().expect("non-empty prefix") += 1;
        let alarms = KeyRange { key: ALARM_PREFIX.as_bytes().to_vec(), range_end: end };
        let found = sm.kv().range(&alarms, self.request.revision)?;
        Ok(found.iter().filter(|(k, _)| self.contains(k)).count() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_etcd_rules() {
        let single = RangeSpec::keys(b"a".to_vec(), vec![]);
        assert!(single.contains(b"a") && !single.contains(b"ab"));
        let prefix = RangeSpec::keys(b"a".to_vec(), b"b".to_vec());
        assert!(prefix.contains(b"a") && prefix.contains(b"azz") && !prefix.contains(b"b"));
        let from = RangeSpec::keys(b"m".to_vec(), vec![0]);
        assert!(from.contains(b"zzz") && !from.contains(b"a"));
    }
}
