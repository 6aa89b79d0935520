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
