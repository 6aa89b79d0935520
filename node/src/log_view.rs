//! A member's Raft log as `GET /log` reports it: its snapshot point and the
//! terms of the entries after it, as runs of one term each. A test runner
//! (`leasesim-real`) reads it once the clients have stopped, so that the
//! judge can check durability and log matching on real members as it does
//! on the simulator's, which reads its servers' memory. Runs, not one line
//! per entry, because a long run's log is thousands of entries of a few
//! terms. Read-only: nothing here changes the member.

use std::fmt::Debug;

use leasesim_core::raft::RaftNode;
use serde::{Deserialize, Serialize};

/// Entries `first..=last`, all of term `term`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermRun {
    pub first: u64,
    pub last: u64,
    pub term: u64,
}

/// The log: everything up to `snapshot_index` is compacted into the
/// snapshot; `runs` cover `snapshot_index + 1 ..= last_index` in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogView {
    pub snapshot_index: u64,
    pub last_index: u64,
    pub commit_index: u64,
    pub runs: Vec<TermRun>,
}

impl LogView {
    /// The log of `raft` now.
    pub fn of<C: Clone + Debug + PartialEq, S: Clone + Debug>(raft: &RaftNode<C, S>) -> LogView {
        let first = raft.first_index();
        let last = raft.last_index();
        let terms = (first..=last).map(|index| (index, raft.entry_term(index).unwrap_or(0)));
        LogView { snapshot_index: first.saturating_sub(1), last_index: last, commit_index: raft.commit_index(), runs: runs(terms) }
    }

    /// `(index, term)` of every entry, the judge's `log_terms`.
    pub fn entries(&self) -> Vec<(u64, u64)> {
        self.runs.iter().flat_map(|r| (r.first..=r.last).map(move |i| (i, r.term))).collect()
    }
}

/// Consecutive `(index, term)` pairs of one term joined into runs.
pub fn runs(terms: impl Iterator<Item = (u64, u64)>) -> Vec<TermRun> {
    let mut out: Vec<TermRun> = Vec::new();
    for (index, term) in terms {
        match out.last_mut() {
            Some(run) if run.term == term && run.last + 1 == index => run.last = index,
            _ => out.push(TermRun { first: index, last: index, term }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_join_consecutive_entries_of_one_term() {
        let terms = [(5, 1), (6, 1), (7, 2), (8, 2), (9, 2), (10, 4)];
        let got = runs(terms.into_iter());
        let want =
            vec![TermRun { first: 5, last: 6, term: 1 }, TermRun { first: 7, last: 9, term: 2 }, TermRun { first: 10, last: 10, term: 4 }];
        assert_eq!(got, want);
        let view = LogView { snapshot_index: 4, last_index: 10, commit_index: 9, runs: got };
        assert_eq!(view.entries(), terms.to_vec(), "runs expand back to the entries");
        assert!(runs(std::iter::empty()).is_empty());
    }
}
