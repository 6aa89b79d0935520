//! One watcher's view of core's changes as etcd's watch responses: which
//! changes it wants (its range, NOPUT/NODELETE filters), how each becomes an
//! `mvccpb.Event` (with `prev_kv` when asked), and etcd's fragmenting of a
//! response larger than a request may be (`fragment`).

use leasesim_core::service::kv::{Change, KeyRange};
use leasesim_core::LogIndex;
use prost::Message;

use super::kv::key_value;
use crate::pb::etcdserverpb::watch_create_request::FilterType;
use crate::pb::etcdserverpb::{WatchCreateRequest, WatchResponse};
use crate::pb::mvccpb::event::EventType;
use crate::pb::mvccpb::{Event, KeyValue};

/// One watch of a stream.
#[derive(Debug)]
pub struct Watcher {
    pub range: KeyRange,
    pub prev_kv: bool,
    pub no_put: bool,
    pub no_delete: bool,
    pub progress_notify: bool,
    pub fragment: bool,
    /// The next revision to deliver: every change of the range below it
    /// has been sent.
    pub next: LogIndex,
    /// Events went out since the last progress tick (no notification due).
    pub sent_since_tick: bool,
}

impl Watcher {
    /// A watcher for `create`, delivering from `next` on. etcd's
    /// `range_end` of `[0]` means every key from `key` on.
    pub fn new(create: &WatchCreateRequest, next: LogIndex) -> Self {
        let has = |f: FilterType| create.filters.contains(&(f as i32));
        Watcher {
            range: KeyRange { key: create.key.clone(), range_end: create.range_end.clone() },
            prev_kv: create.prev_kv,
            no_put: has(FilterType::Noput),
            no_delete: has(FilterType::Nodelete),
            progress_notify: create.progress_notify,
            fragment: create.fragment,
            next,
            sent_since_tick: false,
        }
    }

    /// The events of `changes` this watcher wants, from `self.next` on.
    pub fn events<'a>(&self, changes: impl IntoIterator<Item = &'a Change>) -> Vec<Event> {
        changes
            .into_iter()
            .filter(|c| c.revision >= self.next && self.range.contains(&c.key))
            .filter(|c| if c.current.is_some() { !self.no_put } else { !self.no_delete })
            .map(|c| self.event(c))
            .collect()
    }

    fn event(&self, change: &Change) -> Event {
        let prev_kv = change.prev.as_ref().filter(|_| self.prev_kv).map(|p| key_value(&change.key, p, false));
        match &change.current {
            Some(now) => Event { r#type: EventType::Put as i32, kv: Some(key_value(&change.key, now, false)), prev_kv },
            // etcd's tombstone: the key and the deleting revision only.
            None => {
                let kv = KeyValue { key: change.key.clone(), mod_revision: change.revision as i64, ..Default::default() };
                Event { r#type: EventType::Delete as i32, kv: Some(kv), prev_kv }
            }
        }
    }
}

/// etcd's `sendFragments`: a response of two or more events whose encoding
/// reaches `max_bytes` goes out in pieces, each marked `fragment` but the
/// last, each as large as fits (at least one event).
pub fn fragments(response: WatchResponse, max_bytes: usize) -> Vec<WatchResponse> {
    if response.encoded_len() < max_bytes || response.events.len() < 2 {
        return vec![response];
    }
    let mut pieces = Vec::new();
    let mut rest = response.events.clone().into_iter().peekable();
    while rest.peek().is_some() {
        let mut piece = WatchResponse { events: Vec::new(), fragment: true, ..response.clone() };
        while let Some(event) = rest.peek() {
            piece.events.push(event.clone());
            if piece.events.len() > 1 && piece.encoded_len() >= max_bytes {
                piece.events.pop();
                break;
            }
            rest.next();
        }
        piece.fragment = rest.peek().is_some();
        pieces.push(piece);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::service::kv::KvValue;

    fn value(v: &str, rev: u64) -> KvValue {
        KvValue { value: v.as_bytes().to_vec(), create_revision: 1, mod_revision: rev, version: 1, lease: None }
    }

    fn change(key: &str, rev: u64, current: Option<&str>, prev: Option<&str>) -> Change {
        Change {
            revision: rev,
            key: key.as_bytes().to_vec(),
            prev: prev.map(|p| value(p, rev - 1)),
            current: current.map(|c| value(c, rev)),
        }
    }

    #[test]
    fn filters_range_and_prev_kv_shape_the_events() {
        let create = WatchCreateRequest {
            key: b"a".to_vec(),
            range_end: b"c".to_vec(),
            prev_kv: true,
            filters: vec![FilterType::Noput as i32],
            ..Default::default()
        };
        let w = Watcher::new(&create, 3);
        let changes = [
            change("a", 2, None, Some("x")),
            change("b", 3, Some("y"), None),
            change("b", 4, None, Some("y")),
            change("z", 5, None, Some("q")),
        ];
        let events = w.events(&changes);
        assert_eq!(events.len(), 1, "below next, a put and outside the range are left out: {events:?}");
        let kv = events[0].kv.as_ref().unwrap();
        assert_eq!((events[0].r#type, kv.key.as_slice(), kv.mod_revision, kv.version), (EventType::Delete as i32, &b"b"[..], 4, 0));
        assert_eq!(events[0].prev_kv.as_ref().map(|p| p.value.clone()), Some(b"y".to_vec()));
        let plain = Watcher::new(&WatchCreateRequest { key: b"b".to_vec(), ..Default::default() }, 1);
        assert_eq!(
            plain.events(&changes).iter().map(|e| (e.r#type, e.prev_kv.is_some())).collect::<Vec<_>>(),
            vec![(0, false), (1, false)]
        );
    }

    #[test]
    fn a_large_response_goes_out_in_fragments_marked_all_but_the_last() {
        let event = |i: u8| Event { kv: Some(KeyValue { key: vec![i], value: vec![0; 100], ..Default::default() }), ..Default::default() };
        let response = WatchResponse { watch_id: 7, events: (0..10).map(event).collect(), ..Default::default() };
        let three = WatchResponse { watch_id: 7, fragment: true, events: (0..3).map(event).collect(), ..Default::default() }.encoded_len();
        let pieces = fragments(response.clone(), three + 1);
        assert_eq!(
            pieces.iter().map(|p| (p.events.len(), p.fragment)).collect::<Vec<_>>(),
            vec![(3, true), (3, true), (3, true), (1, false)]
        );
        assert!(pieces.iter().all(|p| p.watch_id == 7));
        assert_eq!(pieces.into_iter().flat_map(|p| p.events).collect::<Vec<_>>(), response.events);
        assert_eq!(fragments(response.clone(), usize::MAX), vec![response], "small enough: whole");
    }
}
