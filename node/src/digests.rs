//! The state digests behind `HashKV` and the corruption check: for each of
//! the latest applied log indices, the state machine's chained
//! replica-divergence digest (`StateMachine::applied_digest`, the one the
//! simulator's `replica-divergence` checker compares). Two members that
//! applied the same entries to the same state hold the same digest at every
//! index, and once they differ the chain keeps them apart.
//!
//! In leasesim a revision is the log index of a change, so "the hash of the
//! store at revision R" is the digest at index R. The driver records every
//! applied index here; the API reads it without asking the driver.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use leasesim_core::LogIndex;

/// Indices kept: older ones answer "compacted", as etcd does for revisions
/// below its compaction.
pub const KEPT_INDICES: usize = 100_000;

/// Why there is no digest for an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// Not applied yet here (etcd's `ErrFutureRev`).
    Future,
    /// Older than what is kept, or applied before this process started and
    /// covered by its snapshot (etcd's `ErrCompacted`).
    Compacted,
}

#[derive(Debug, Default)]
pub struct DigestRing {
    /// (index, digest), indices increasing.
    kept: VecDeque<(LogIndex, u64)>,
}

pub type Digests = Arc<Mutex<DigestRing>>;

impl DigestRing {
    /// Records the digest after applying `index` (or installing a snapshot
    /// up to it). Indices only grow.
    pub fn record(&mut self, index: LogIndex, digest: u64) {
        match self.kept.back() {
            Some((last, _)) if *last >= index => return,
            _ if index == 0 => return,
            _ => {}
        }
        if self.kept.len() == KEPT_INDICES {
            self.kept.pop_front();
        }
        self.kept.push_back((index, digest));
    }

    /// The digest as of `index`.
    pub fn at(&self, index: LogIndex) -> Result<u64, Missing> {
        match self.kept.back() {
            Some((last, _)) if index > *last => return Err(Missing::Future),
            None => return Err(Missing::Future),
            _ => {}
        }
        match self.kept.binary_search_by_key(&index, |(i, _)| *i) {
            Ok(pos) => Ok(self.kept[pos].1),
            Err(_) => Err(Missing::Compacted),
        }
    }

    /// The latest applied index and its digest.
    pub fn latest(&self) -> Option<(LogIndex, u64)> {
        self.kept.back().copied()
    }

    /// The oldest index kept.
    pub fn oldest(&self) -> Option<LogIndex> {
        self.kept.front().map(|(i, _)| *i)
    }
}

/// etcd's hashes are 32 bits: both halves of the 64-bit digest folded in.
pub fn fold(digest: u64) -> u32 {
    (digest ^ (digest >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_answer_by_index_and_say_why_not() {
        let mut ring = DigestRing::default();
        assert_eq!(ring.at(1), Err(Missing::Future));
        ring.record(5, 50);
        ring.record(6, 60);
        ring.record(9, 90); // a snapshot install skipped 7 and 8
        ring.record(9, 91); // never twice
        assert_eq!(ring.at(6), Ok(60));
        assert_eq!(ring.at(9), Ok(90));
        assert_eq!(ring.at(10), Err(Missing::Future));
        assert_eq!(ring.at(4), Err(Missing::Compacted));
        assert_eq!(ring.at(7), Err(Missing::Compacted));
        assert_eq!((ring.latest(), ring.oldest()), (Some((9, 90)), Some(5)));
        assert_eq!(fold(0x1234_5678_0000_0001), 0x1234_5679);
    }
}
