//! The disk format's one rule: what a [`PersistOp`] does to what a node has
//! on disk ([`Persisted`]), and which writes a correct node never asks for.
//! Every host's disk carries out writes with [`Persisted::apply`] (the
//! simulator's, the server harness's, leasesim-testkit's); the testkit also
//! refuses, with [`Persisted::refusal`], writes that break the format or go
//! backwards, which is how durability mistakes surface there as readable
//! violations. (The simulator carries them out and lets its checkers judge
//! from what the servers reported.)

use crate::types::{LogIndex, Term};

use super::types::{PersistOp, Persisted};

impl<C, S> Persisted<C, S> {
    /// The last index the snapshot covers (0 without one).
    pub fn snapshot_index(&self) -> LogIndex {
        self.snapshot.as_ref().map_or(0, |s| s.last_index)
    }

    /// The last index on disk, in the log or the snapshot.
    pub fn last_index(&self) -> LogIndex {
        self.entries.last().map_or(self.snapshot_index(), |e| e.index)
    }

    /// The term of the last entry on disk, in the log or the snapshot.
    pub fn last_term(&self) -> Term {
        match (self.entries.last(), &self.snapshot) {
            (Some(e), _) => e.term,
            (None, Some(s)) => s.last_term,
            (None, None) => 0,
        }
    }

    /// Why a correct node would never ask for `op` on this disk: a term
    /// going back, a second vote in one term, a truncation into the
    /// snapshot, an append that leaves a gap, a snapshot that does not
    /// advance. `None` when `op` is fine.
    pub fn refusal(&self, op: &PersistOp<C, S>) -> Option<String> {
        match op {
            PersistOp::SetHardState(hs) => {
                let old = self.hard_state;
                if hs.term < old.term {
                    return Some(format!("term on disk would go back from {} to {}", old.term, hs.term));
                }
                if hs.term == old.term && old.voted_for.is_some() && hs.voted_for != old.voted_for {
                    return Some(format!("second vote in term {}: {:?} after {:?}", hs.term, hs.voted_for, old.voted_for));
                }
            }
            PersistOp::TruncateFrom(index) => {
                let snapshot_index = self.snapshot_index();
                if *index <= snapshot_index {
                    return Some(format!("truncate from {index} reaches into the snapshot (at {snapshot_index})"));
                }
            }
            PersistOp::Append(entries) => {
                let expected = self.last_index() + 1;
                if entries.first().is_some_and(|e| e.index != expected) {
                    return Some(format!("append at {} but the disk log ends at {}", entries[0].index, expected - 1));
                }
            }
            PersistOp::SaveSnapshot(snapshot) => {
                let (old, last) = (self.snapshot_index(), snapshot.last_index);
                if last <= old {
                    return Some(format!("snapshot at {last} does not advance the one at {old}"));
                }
                if self.entries.iter().find(|e| e.index > last).is_some_and(|e| e.index != last + 1) {
                    return Some(format!("entries after the snapshot at {last} are not contiguous"));
                }
            }
        }
        None
    }

    /// Carries out one write. Panics only on an append that does not follow
    /// the log's last entry, which no disk could store.
    pub fn apply(&mut self, op: PersistOp<C, S>) {
        match op {
            PersistOp::SetHardState(hard_state) => self.hard_state = hard_state,
            PersistOp::TruncateFrom(index) => self.entries.retain(|e| e.index < index),
            PersistOp::Append(entries) => {
                if let (Some(last), Some(first)) = (self.entries.last(), entries.first()) {
                    assert_eq!(last.index + 1, first.index, "appends must be contiguous");
                }
                self.entries.extend(entries);
            }
            PersistOp::SaveSnapshot(snapshot) => {
                let last_index = snapshot.last_index;
                self.entries.retain(|e| e.index > last_index);
                self.snapshot = Some(snapshot);
            }
        }
    }
}

/// The disk rule one write at a time: each refusal `refusal` gives, at its
/// boundary, and what `apply` leaves on disk. Core's own nodes never ask for
/// a refused write, so only these tests look at the refusals (the testkit's
/// strict disk relies on them).
#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::types::{Entry, HardState, Payload, Snapshot};
    use super::*;

    type Disk = Persisted<u64, ()>;
    type Op = PersistOp<u64, ()>;

    fn entry(index: LogIndex, term: Term) -> Entry<u64> {
        Entry { term, index, payload: Payload::Command(index) }
    }

    fn snapshot(last_index: LogIndex, last_term: Term) -> Snapshot<()> {
        Snapshot { last_index, last_term, voters: BTreeSet::from([1]), data: () }
    }

    /// Term 3 with a vote for 2, a snapshot at 4 (term 2), entries 5 and 6.
    fn disk() -> Disk {
        Persisted {
            hard_state: HardState { term: 3, voted_for: Some(2) },
            snapshot: Some(snapshot(4, 2)),
            entries: vec![entry(5, 2), entry(6, 3)],
        }
    }

    fn hard_state(term: Term, voted_for: Option<u64>) -> Op {
        PersistOp::SetHardState(HardState { term, voted_for })
    }

    #[test]
    fn the_last_index_and_term_come_from_the_log_then_the_snapshot() {
        let mut d = disk();
        assert_eq!((d.snapshot_index(), d.last_index(), d.last_term()), (4, 6, 3));
        d.entries.clear();
        assert_eq!((d.snapshot_index(), d.last_index(), d.last_term()), (4, 4, 2));
        assert_eq!((Disk::default().snapshot_index(), Disk::default().last_index(), Disk::default().last_term()), (0, 0, 0));
    }

    #[test]
    fn a_term_never_goes_back_and_a_term_holds_one_vote() {
        let d = disk();
        assert_eq!(d.refusal(&hard_state(2, None)), Some("term on disk would go back from 3 to 2".to_string()));
        assert_eq!(d.refusal(&hard_state(3, Some(2))), None, "the same vote again");
        assert_eq!(d.refusal(&hard_state(3, Some(1))), Some("second vote in term 3: Some(1) after Some(2)".to_string()));
        assert_eq!(d.refusal(&hard_state(4, Some(1))), None, "a new term, a new vote");
        let unvoted = Persisted { hard_state: HardState { term: 3, voted_for: None }, ..disk() };
        assert_eq!(unvoted.refusal(&hard_state(3, Some(1))), None, "the first vote of the term");
    }

    #[test]
    fn a_truncation_stops_above_the_snapshot() {
        let d = disk();
        assert_eq!(d.refusal(&PersistOp::TruncateFrom(4)), Some("truncate from 4 reaches into the snapshot (at 4)".to_string()));
        assert_eq!(d.refusal(&PersistOp::TruncateFrom(3)), Some("truncate from 3 reaches into the snapshot (at 4)".to_string()));
        assert_eq!(d.refusal(&PersistOp::TruncateFrom(5)), None);
    }

    #[test]
    fn an_append_follows_the_last_entry() {
        let d = disk();
        assert_eq!(d.refusal(&PersistOp::Append(vec![entry(7, 3)])), None);
        assert_eq!(d.refusal(&PersistOp::Append(vec![entry(8, 3)])), Some("append at 8 but the disk log ends at 6".to_string()));
        assert_eq!(d.refusal(&PersistOp::Append(vec![entry(6, 3)])), Some("append at 6 but the disk log ends at 6".to_string()));
        assert_eq!(d.refusal(&PersistOp::Append(Vec::new())), None, "nothing to append");
    }

    #[test]
    fn a_snapshot_advances_and_keeps_the_entries_after_it_contiguous() {
        let d = disk();
        assert_eq!(d.refusal(&PersistOp::SaveSnapshot(snapshot(4, 2))), Some("snapshot at 4 does not advance the one at 4".to_string()));
        assert_eq!(d.refusal(&PersistOp::SaveSnapshot(snapshot(3, 2))), Some("snapshot at 3 does not advance the one at 4".to_string()));
        assert_eq!(d.refusal(&PersistOp::SaveSnapshot(snapshot(5, 2))), None, "entry 6 follows it");
        assert_eq!(d.refusal(&PersistOp::SaveSnapshot(snapshot(6, 3))), None, "no entry after it");
        let gap = Persisted { entries: vec![entry(5, 2), entry(7, 3)], ..disk() };
        assert_eq!(
            gap.refusal(&PersistOp::SaveSnapshot(snapshot(5, 2))),
            Some("entries after the snapshot at 5 are not contiguous".to_string())
        );
    }

    #[test]
    fn apply_truncates_appends_and_compacts() {
        let mut d = disk();
        d.apply(PersistOp::TruncateFrom(6));
        assert_eq!(d.entries, vec![entry(5, 2)]);
        d.apply(PersistOp::Append(vec![entry(6, 4), entry(7, 4)]));
        d.apply(PersistOp::SaveSnapshot(snapshot(6, 4)));
        assert_eq!((d.snapshot, d.entries), (Some(snapshot(6, 4)), vec![entry(7, 4)]));
        d = disk();
        d.apply(hard_state(5, None));
        assert_eq!(d.hard_state, HardState { term: 5, voted_for: None });
    }
}
