//! The in-memory Raft log: the entries after the last snapshot, the
//! snapshot's boundary (index and term), and the commit index.
//!
//! It exists so that every index arithmetic question ("what is the term at
//! i?", "where does this term start?", "is that log at least as up to date as
//! mine?") is answered in one place, with the compaction boundary handled
//! once. It does no persistence itself: callers emit the matching
//! [`super::PersistOp`]s.

use std::collections::{vec_deque, VecDeque};

use super::types::Entry;
use crate::types::{LogIndex, Term};

#[derive(Clone, Debug)]
pub(crate) struct RaftLog<C> {
    /// Index and term of the last entry covered by the snapshot (0, 0 when
    /// there is none): the log's "previous entry" for its first real entry.
    snapshot_index: LogIndex,
    snapshot_term: Term,
    /// `entries[k]` has index `snapshot_index + 1 + k`.
    entries: VecDeque<Entry<C>>,
    /// Highest index known committed (Raft Figure 2, volatile state).
    pub(crate) commit_index: LogIndex,
}

impl<C: Clone> RaftLog<C> {
    pub(crate) fn new() -> Self {
        RaftLog { snapshot_index: 0, snapshot_term: 0, entries: VecDeque::new(), commit_index: 0 }
    }

    /// A log rebuilt from disk: the snapshot boundary and the entries after
    /// it. The commit index restarts at the snapshot (it is not persisted).
    pub(crate) fn restored(snapshot_index: LogIndex, snapshot_term: Term, entries: Vec<Entry<C>>) -> Self {
        let log = RaftLog { snapshot_index, snapshot_term, entries: entries.into(), commit_index: snapshot_index };
        invariant!(log.is_contiguous(), "restored log is not contiguous after the snapshot");
        log
    }

    pub(crate) fn snapshot_index(&self) -> LogIndex {
        self.snapshot_index
    }

    pub(crate) fn first_index(&self) -> LogIndex {
        self.snapshot_index + 1
    }

    pub(crate) fn last_index(&self) -> LogIndex {
        self.snapshot_index + self.entries.len() as u64
    }

    pub(crate) fn last_term(&self) -> Term {
        self.entries.back().map_or(self.snapshot_term, |e| e.term)
    }

    /// Term of the entry at `index`, including the snapshot's last entry
    /// (and index 0, term 0). `None` if compacted further back or beyond the
    /// end.
    pub(crate) fn term_at(&self, index: LogIndex) -> Option<Term> {
        if index == self.snapshot_index {
            Some(self.snapshot_term)
        } else {
            self.get(index).map(|e| e.term)
        }
    }

    pub(crate) fn get(&self, index: LogIndex) -> Option<&Entry<C>> {
        if index <= self.snapshot_index {
            return None;
        }
        self.entries.get((index - self.snapshot_index - 1) as usize)
    }

    /// Clones of the entries in `[from, to]` that are still in memory.
    pub(crate) fn slice(&self, from: LogIndex, to_inclusive: LogIndex) -> Vec<Entry<C>> {
        self.range(from, to_inclusive).cloned().collect()
    }

    /// The entries in `[from, to]` that are still in memory, borrowed: for
    /// a caller that copies them straight into a vector of its own, which
    /// `slice` would make it do through a second one.
    pub(crate) fn range(&self, from: LogIndex, to_inclusive: LogIndex) -> vec_deque::Iter<'_, Entry<C>> {
        let from = from.max(self.first_index());
        let to = to_inclusive.min(self.last_index());
        if from > to {
            return self.entries.range(0..0);
        }
        let start = (from - self.first_index()) as usize;
        let end = (to - self.first_index()) as usize;
        self.entries.range(start..=end)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry<C>> {
        self.entries.iter()
    }

    /// Appends entries that must directly follow the current last entry.
    pub(crate) fn append(&mut self, entries: impl IntoIterator<Item = Entry<C>>) {
        for entry in entries {
            assert_eq!(entry.index, self.last_index() + 1, "log append must be contiguous");
            self.entries.push_back(entry);
        }
    }

    /// Drops every entry with index >= `index` (a conflicting suffix, Raft
    /// §5.3). Never reaches into the snapshot.
    pub(crate) fn truncate_from(&mut self, index: LogIndex) {
        assert!(index > self.snapshot_index, "cannot truncate into the snapshot");
        let keep = (index - self.snapshot_index - 1) as usize;
        self.entries.truncate(keep);
        self.commit_index = self.commit_index.min(self.last_index());
    }

    /// Forgets entries up to `index` (now covered by a snapshot whose last
    /// entry has `term`). Entries after it stay; if the log did not reach that
    /// far, it becomes empty and starts right after the snapshot.
    pub(crate) fn compact_to(&mut self, index: LogIndex, term: Term) {
        if index <= self.snapshot_index {
            return;
        }
        let drop = ((index - self.snapshot_index) as usize).min(self.entries.len());
        self.entries.drain(..drop);
        self.snapshot_index = index;
        self.snapshot_term = term;
        if self.entries.front().is_some_and(|e| e.index != index + 1) {
            self.entries.clear();
        }
        self.commit_index = self.commit_index.max(index);
    }

    /// Raft §5.4.1: a candidate's log is at least as up to date as ours if its
    /// last term is higher, or equal with a last index at least ours.
    pub(crate) fn is_up_to_date(&self, last_index: LogIndex, last_term: Term) -> bool {
        (last_term, last_index) >= (self.last_term(), self.last_index())
    }

    /// Follower side of fast backtracking: the first index of the term of the
    /// entry at `index`, searching back no further than `floor` (entries at or
    /// below the commit index match the leader anyway).
    pub(crate) fn first_index_of_term_at(&self, index: LogIndex, floor: LogIndex) -> LogIndex {
        let Some(term) = self.term_at(index) else {
            return index;
        };
        let mut first = index;
        while first > floor.max(self.first_index()) && self.term_at(first - 1) == Some(term) {
            first -= 1;
        }
        first
    }

    /// Leader side of fast backtracking: the last index at or below `up_to`
    /// holding an entry of `term`, if this log has any.
    pub(crate) fn last_index_of_term(&self, term: Term, up_to: LogIndex) -> Option<LogIndex> {
        let mut index = up_to.min(self.last_index());
        while index >= self.snapshot_index {
            match self.term_at(index) {
                Some(t) if t == term => return Some(index),
                // Terms never decrease along the log, so once below `term`
                // there is no entry of it further back.
                Some(t) if t < term => return None,
                Some(_) if index > 0 => index -= 1,
                _ => return None,
            }
        }
        None
    }

    /// Cheap structural check (O(1)): the ends agree with the positions.
    pub(crate) fn ends_consistent(&self) -> bool {
        let front_ok = self.entries.front().is_none_or(|e| e.index == self.first_index());
        let back_ok = self.entries.back().is_none_or(|e| e.index == self.last_index());
        front_ok && back_ok && self.commit_index <= self.last_index().max(self.snapshot_index)
    }

    /// Full structural check (O(n)): contiguous indices.
    pub(crate) fn is_contiguous(&self) -> bool {
        self.entries.iter().enumerate().all(|(k, e)| e.index == self.snapshot_index + 1 + k as u64)
    }

    /// Full check (O(n)): terms never decrease and never exceed `term`.
    pub(crate) fn terms_monotonic(&self, term: Term) -> bool {
        let mut prev = self.snapshot_term;
        self.entries.iter().all(|e| {
            let ok = e.term >= prev && e.term <= term;
            prev = e.term;
            ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::Payload;

    fn log_of(indexes: &[LogIndex], commit_index: LogIndex) -> RaftLog<()> {
        let entries = indexes.iter().map(|&index| Entry { term: 1, index, payload: Payload::Noop }).collect();
        RaftLog { snapshot_index: 0, snapshot_term: 0, entries, commit_index }
    }

    /// The engine's self-check runs this after every step but only ever sees
    /// a healthy log; pin that each end and the commit index are checked.
    #[test]
    fn ends_consistent_rejects_a_wrong_front_a_wrong_back_or_a_commit_past_the_end() {
        assert!(log_of(&[1, 2], 2).ends_consistent());
        assert!(!log_of(&[5, 2], 0).ends_consistent(), "front");
        assert!(!log_of(&[1, 7], 0).ends_consistent(), "back");
        assert!(!log_of(&[1, 2], 3).ends_consistent(), "commit");
    }

    /// The two O(n) self-checks (debug builds, after every input) likewise
    /// only ever see healthy logs: pin that each flags the fault it exists for.
    #[test]
    fn is_contiguous_rejects_a_gap_in_the_indexes() {
        assert!(log_of(&[1, 2, 3], 0).is_contiguous());
        assert!(!log_of(&[1, 3], 0).is_contiguous(), "index 2 missing");
    }

    #[test]
    fn terms_monotonic_rejects_a_falling_term_and_a_term_past_the_current_one() {
        let log_of_terms = |terms: &[Term]| {
            let entries = terms.iter().enumerate().map(|(k, &term)| Entry { term, index: k as u64 + 1, payload: Payload::Noop }).collect();
            RaftLog::<()> { snapshot_index: 0, snapshot_term: 0, entries, commit_index: 0 }
        };
        assert!(log_of_terms(&[1, 1, 3]).terms_monotonic(3));
        assert!(!log_of_terms(&[2, 1]).terms_monotonic(2), "term 1 after term 2");
        assert!(!log_of_terms(&[1, 5]).terms_monotonic(3), "term 5 in term 3");
    }
}

/// The fast-backtracking lookups (conflict hints) on a log with terms
/// [1, 1, 2, 2, 2, 4] at indexes 1..=6.
#[cfg(test)]
mod hint_tests {
    use super::*;
    use crate::raft::Payload;

    fn log_of_terms(terms: &[Term]) -> RaftLog<()> {
        let mut log = RaftLog::new();
        log.append(terms.iter().enumerate().map(|(k, &term)| Entry { term, index: k as u64 + 1, payload: Payload::Noop }));
        log
    }

    #[test]
    fn first_index_of_term_at_walks_back_to_the_terms_first_entry_but_not_past_the_floor() {
        let log = log_of_terms(&[1, 1, 2, 2, 2, 4]);
        assert_eq!(log.first_index_of_term_at(5, 0), 3);
        assert_eq!(log.first_index_of_term_at(6, 0), 6);
        assert_eq!(log.first_index_of_term_at(2, 0), 1);
        assert_eq!(log.first_index_of_term_at(5, 4), 4, "the floor");
        assert_eq!(log.first_index_of_term_at(9, 0), 9, "beyond the log");
    }

    #[test]
    fn last_index_of_term_finds_the_last_entry_of_a_term_at_or_below_a_bound() {
        let log = log_of_terms(&[1, 1, 2, 2, 2, 4]);
        assert_eq!(log.last_index_of_term(2, 6), Some(5));
        assert_eq!(log.last_index_of_term(2, 4), Some(4), "the bound");
        assert_eq!(log.last_index_of_term(1, 9), Some(2));
        assert_eq!(log.last_index_of_term(4, 6), Some(6));
        assert_eq!(log.last_index_of_term(3, 6), None, "a term the log skips");
        assert_eq!(log.last_index_of_term(5, 6), None, "a later term");
    }

    #[test]
    fn last_index_of_term_sees_the_snapshots_last_entry() {
        let mut log = log_of_terms(&[1, 1, 2, 2, 2, 4]);
        log.compact_to(4, 2);
        assert_eq!(log.last_index_of_term(2, 6), Some(5));
        log.compact_to(5, 2);
        assert_eq!(log.last_index_of_term(2, 6), Some(5), "the snapshot's boundary");
        assert_eq!(log.last_index_of_term(1, 6), None, "compacted away");
    }
}
