//! What a watch needs from the store, as pure reads of [`Kv`]'s history:
//! the changes one applied entry made (which the server hands its host as
//! an output of apply, so the host can fan them out to watchers without
//! polling), and the changes of a key range from a revision on (which a
//! watcher that starts in the past, or fell behind, catches up from: etcd's
//! "unsynced" watchers read the same way).
//!
//! A [`Change`] is a watch event: `current: Some` is a PUT carrying the
//! key's new value, `None` a DELETE; `prev` is the value before (etcd's
//! `prev_kv`). Every change of one entry carries that entry's index as its
//! revision, so a multi-key txn or a lease expiry that deletes several keys
//! is one revision, as on etcd.

use crate::service::kv::{Change, KeyRange, Kv, RevisionError};
use crate::types::LogIndex;

/// Changes of a key range read from the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsRead {
    /// In revision order (and, within a revision, in the order applied).
    pub events: Vec<Change>,
    /// Every change of the range up to and including this revision is in
    /// `events` (from the revision asked for on): the reader continues
    /// from `upto + 1`. Below the store's revision only when `max_events`
    /// cut the read, always at a revision boundary so that one revision's
    /// changes are never split between two reads.
    pub upto: LogIndex,
}

impl Kv {
    /// The changes the entry at `index` made, in the order it made them
    /// (empty for an entry that changed no key). Read right after applying
    /// that entry: a later compaction may drop them.
    pub fn changes_at(&self, index: LogIndex) -> impl Iterator<Item = &Change> {
        let newest_first = self.history().iter().rev().take_while(move |c| c.revision >= index);
        let count = newest_first.filter(|c| c.revision == index).count();
        self.history().range(self.history().len() - count..).map(|c| &**c)
    }

    /// The changes of `range` at revisions `from` and above, at most
    /// `max_events` of them (but never half a revision: a revision with
    /// more changes than that is read whole). A `from` above the store's
    /// revision reads nothing yet; below the compaction it is etcd's
    /// compacted error, since the changes in between are gone. A change at
    /// the compaction revision itself comes without its previous value, as
    /// on etcd.
    pub fn events(&self, range: &KeyRange, from: LogIndex, max_events: usize) -> Result<EventsRead, RevisionError> {
        if from < self.compact_revision() {
            return Err(RevisionError::Compacted { compact_revision: self.compact_revision() });
        }
        let history = self.history();
        let first = history.partition_point(|c| c.revision < from);
        let mut events: Vec<Change> = Vec::new();
        for change in history.range(first..) {
            let full = events.len() >= max_events.max(1);
            if full && events.last().is_some_and(|last| last.revision != change.revision) {
                let upto = events.last().expect("checked").revision;
                return Ok(EventsRead { events, upto });
            }
            if range.contains(&change.key) {
                let mut event = Change::clone(change);
                // etcd reads a change's previous value at the revision
                // before it, which the compaction took.
                if event.revision <= self.compact_revision() {
                    event.prev = None;
                }
                events.push(event);
            }
        }
        Ok(EventsRead { events, upto: self.revision().max(from.saturating_sub(1)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: &Option<crate::service::kv::KvValue>) -> Option<&[u8]> {
        v.as_ref().map(|v| v.value.as_slice())
    }

    /// (revision, key, value after, value before).
    type Summary<'a> = (LogIndex, &'a [u8], Option<&'a [u8]>, Option<&'a [u8]>);

    fn kinds(events: &[Change]) -> Vec<Summary<'_>> {
        events.iter().map(|c| (c.revision, c.key.as_slice(), value(&c.current), value(&c.prev))).collect()
    }

    fn all() -> KeyRange {
        KeyRange { key: vec![0], range_end: vec![0] }
    }

    #[test]
    fn put_put_delete_are_three_events_with_their_previous_values() {
        let mut kv = Kv::default();
        kv.put(b"k", b"1", None, 4);
        assert_eq!(kinds(&kv.changes_at(4).cloned().collect::<Vec<_>>()), vec![(4, &b"k"[..], Some(&b"1"[..]), None)]);
        kv.put(b"k", b"2", None, 5);
        kv.delete(b"k", 6);
        let read = kv.events(&KeyRange::single(b"k"), 1, 100).unwrap();
        assert_eq!(
            kinds(&read.events),
            vec![
                (4, &b"k"[..], Some(&b"1"[..]), None),
                (5, &b"k"[..], Some(&b"2"[..]), Some(&b"1"[..])),
                (6, &b"k"[..], None, Some(&b"2"[..])),
            ]
        );
        assert_eq!(read.upto, 6);
        let delete = &read.events[2];
        assert_eq!(delete.prev.as_ref().map(|p| (p.version, p.create_revision, p.mod_revision)), Some((2, 4, 5)));
        assert_eq!(kinds(&kv.events(&KeyRange::single(b"k"), 6, 100).unwrap().events), vec![(6, &b"k"[..], None, Some(&b"2"[..]))]);
        let later = kv.events(&KeyRange::single(b"k"), 9, 100).unwrap();
        assert_eq!((later.events.len(), later.upto), (0, 8), "a future start reads nothing and resumes from itself");
    }

    #[test]
    fn a_read_keeps_to_its_range_and_cuts_only_between_revisions() {
        let mut kv = Kv::default();
        kv.put(b"a", b"1", None, 3);
        kv.put(b"b", b"1", None, 3);
        kv.put(b"c", b"1", None, 3);
        kv.put(b"a", b"2", None, 7);
        kv.put(b"z", b"2", None, 8);
        let prefix = KeyRange { key: b"a".to_vec(), range_end: b"d".to_vec() };
        let cut = kv.events(&prefix, 1, 1).unwrap();
        assert_eq!(
            cut.events.iter().map(|c| (c.revision, c.key.clone())).collect::<Vec<_>>(),
            vec![(3, b"a".to_vec()), (3, b"b".to_vec()), (3, b"c".to_vec())]
        );
        assert_eq!(cut.upto, 3, "a revision is read whole, then the read stops");
        let rest = kv.events(&prefix, cut.upto + 1, 1).unwrap();
        assert_eq!(kinds(&rest.events), vec![(7, &b"a"[..], Some(&b"2"[..]), Some(&b"1"[..]))]);
        assert_eq!(rest.upto, 7, "full: cut before the next revision");
        let last = kv.events(&prefix, rest.upto + 1, 1).unwrap();
        assert_eq!((last.events.len(), last.upto), (0, 8), "the change of z is outside the range but read past");
        assert_eq!(kv.changes_at(3).count(), 3, "the three keys of one entry");
        assert_eq!(kv.changes_at(5).count(), 0, "an index that changed nothing");
    }

    #[test]
    fn a_start_below_the_compaction_is_refused() {
        let mut kv = Kv::default();
        kv.put(b"k", b"1", None, 2);
        kv.put(b"k", b"2", None, 4);
        kv.put(b"k", b"3", None, 6);
        kv.compact(4).unwrap();
        assert_eq!(kv.events(&all(), 3, 10), Err(RevisionError::Compacted { compact_revision: 4 }));
        let at = kv.events(&all(), 4, 10).unwrap();
        assert_eq!(kinds(&at.events), vec![(4, &b"k"[..], Some(&b"2"[..]), None), (6, &b"k"[..], Some(&b"3"[..]), Some(&b"2"[..]))]);
    }
}
