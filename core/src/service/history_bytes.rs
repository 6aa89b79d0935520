//! The bytes `Hash` writes for the store's change history, kept as the
//! history grows, so that the applied-state digest's full-state link (every
//! `FULL_STATE_DIGEST_EVERY` indices) copies them instead of walking every
//! change kept since the last compaction field by field. Without it that
//! walk grew with the run: in the baseline it was 5% of all the
//! instructions of a simulated run, for 1 apply in 32.
//!
//! It is a cache, not state: it compares equal and hashes to nothing, is
//! not serialized, and is used only while it covers exactly the history's
//! changes (after a deserialized or otherwise foreign history it is rebuilt
//! at the next change, and the digest walks the history meanwhile).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::service::kv::Change;

/// The derived-`Hash` bytes of each change, oldest first, back to back.
#[derive(Clone, Default)]
pub(crate) struct HistoryBytes {
    pub(super) bytes: Vec<u8>,
    /// Bytes before this offset belong to changes compacted away.
    start: usize,
    /// The byte length of each change still kept, oldest first.
    lens: VecDeque<usize>,
}

/// Appends whatever `Hash` writes: the gathering half of `ByteHasher`.
struct Gather<'a>(&'a mut Vec<u8>);

impl Hasher for Gather<'_> {
    fn finish(&self) -> u64 {
        unreachable!("only gathers bytes")
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

impl HistoryBytes {
    /// Whether the cache holds exactly the bytes of `history`'s changes.
    pub(crate) fn covers(&self, history: &VecDeque<Arc<Change>>) -> bool {
        self.lens.len() == history.len()
    }

    /// The bytes of every change kept, as `history.hash` writes them after
    /// its length.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    /// `change` was just pushed onto the back of `history` (which now
    /// includes it).
    pub(crate) fn pushed(&mut self, history: &VecDeque<Arc<Change>>) {
        if self.lens.len() + 1 != history.len() {
            self.rebuild(history);
            return;
        }
        let change = history.back().expect("just pushed");
        let before = self.bytes.len();
        change.hash(&mut Gather(&mut self.bytes));
        self.lens.push_back(self.bytes.len() - before);
    }

    /// The oldest change was popped off `history`.
    pub(crate) fn popped_front(&mut self, history: &VecDeque<Arc<Change>>) {
        if self.lens.len() != history.len() + 1 {
            self.rebuild(history);
            return;
        }
        self.start += self.lens.pop_front().expect("covered one more change");
        // Reclaim the dropped prefix once it is most of the buffer, so a
        // long run's compactions keep the buffer the size of the history.
        if self.start > self.bytes.len() / 2 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
    }

    fn rebuild(&mut self, history: &VecDeque<Arc<Change>>) {
        *self = HistoryBytes::default();
        for change in history {
            let before = self.bytes.len();
            change.hash(&mut Gather(&mut self.bytes));
            self.lens.push_back(self.bytes.len() - before);
        }
    }
}

impl PartialEq for HistoryBytes {
    /// A cache of what the history already says: two stores are equal or not
    /// by their history alone.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for HistoryBytes {}

impl Hash for HistoryBytes {
    /// Writes nothing: the store's derived `Hash` stays what it was.
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl std::fmt::Debug for HistoryBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HistoryBytes({} changes, {} bytes)", self.lens.len(), self.bytes().len())
    }
}
