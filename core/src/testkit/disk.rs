//! A node's simulated disk: what survives a crash. It carries out the
//! node's PersistOps in order and refuses ones that break the disk format
//! or go backwards (a term decreasing, a second vote in one term), which is
//! how durability mistakes surface as readable violations.

use crate::raft::{PersistOp, Persisted};
use crate::types::LogIndex;

use super::toy::ToyState;

#[derive(Clone, Debug, Default)]
pub struct Disk {
    pub persisted: Persisted<u64, ToyState>,
    /// PersistOps carried out so far (for statistics).
    pub writes: u64,
}

impl Disk {
    pub fn snapshot_index(&self) -> LogIndex {
        self.persisted.snapshot.as_ref().map_or(0, |s| s.last_index)
    }

    pub fn last_index(&self) -> LogIndex {
        self.persisted.entries.last().map_or(self.snapshot_index(), |e| e.index)
    }

    pub fn last_term(&self) -> u64 {
        match (self.persisted.entries.last(), &self.persisted.snapshot) {
            (Some(e), _) => e.term,
            (None, Some(s)) => s.last_term,
            (None, None) => 0,
        }
    }

    /// Carries out one write, or says why the node should never have asked.
    pub fn apply(&mut self, op: PersistOp<u64, ToyState>) -> Result<(), String> {
        self.writes += 1;
        let p = &mut self.persisted;
        match op {
            PersistOp::SetHardState(hs) => {
                let old = p.hard_state;
                if hs.term < old.term {
                    return Err(format!("term on disk would go back from {} to {}", old.term, hs.term));
                }
                if hs.term == old.term && old.voted_for.is_some() && hs.voted_for != old.voted_for {
                    return Err(format!("second vote in term {}: {:?} after {:?}", hs.term, hs.voted_for, old.voted_for));
                }
                p.hard_state = hs;
            }
            PersistOp::TruncateFrom(index) => {
                let snapshot_index = self.snapshot_index();
                if index <= snapshot_index {
                    return Err(format!("truncate from {index} reaches into the snapshot (at {snapshot_index})"));
                }
                self.persisted.entries.retain(|e| e.index < index);
            }
            PersistOp::Append(entries) => {
                let expected = self.last_index() + 1;
                if entries.first().is_some_and(|e| e.index != expected) {
                    return Err(format!("append at {} but the disk log ends at {}", entries[0].index, expected - 1));
                }
                self.persisted.entries.extend(entries);
            }
            PersistOp::SaveSnapshot(snapshot) => {
                let old = self.snapshot_index();
                if snapshot.last_index <= old {
                    return Err(format!("snapshot at {} does not advance the one at {old}", snapshot.last_index));
                }
                let last = snapshot.last_index;
                self.persisted.entries.retain(|e| e.index > last);
                if self.persisted.entries.first().is_some_and(|e| e.index != last + 1) {
                    return Err(format!("entries after the snapshot at {last} are not contiguous"));
                }
                self.persisted.snapshot = Some(snapshot);
            }
        }
        Ok(())
    }
}
