//! The task rows' words (the multi-instance lease design's `tasks` table,
//! `host::task_table`): which write a worker made and what the row made of it.
//! Observations carry them and `task-once` / `task-lost` judge them.

use serde::{Deserialize, Serialize};

/// Which of a worker's two writes to a task row this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStep {
    /// The worker took the task under its claim.
    Start,
    /// The worker's result: the task is done.
    Complete,
}

/// What the row made of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskVerdict {
    Accepted,
    /// A newer claim's token reached the row first.
    StaleToken {
        highest: u64,
    },
    /// The task is already done (by this write's earlier copy, or another).
    AlreadyDone,
}

/// One task row of the data store, and the rule it applies to a write:
/// a write is accepted only if its token is at least the highest the row
/// has accepted (fencing, per task), and nothing is accepted once the task
/// is done (the multi-instance lease design's "processed check"). Both
/// worlds' stores apply this one rule: the simulator's (`host::task_table`)
/// and leasesim-node's data store (`node/src/store_tasks.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    pub highest_token: u64,
    pub done: bool,
}

impl TaskRow {
    /// Applies one write of `step` with `token`; `check_completion_token`
    /// false is the planted bug `completion-without-token-check`.
    pub fn apply(&mut self, step: TaskStep, token: u64, check_completion_token: bool) -> TaskVerdict {
        if self.done {
            return TaskVerdict::AlreadyDone;
        }
        let unchecked = step == TaskStep::Complete && !check_completion_token;
        if token < self.highest_token && !unchecked {
            return TaskVerdict::StaleToken { highest: self.highest_token };
        }
        self.highest_token = self.highest_token.max(token);
        self.done = step == TaskStep::Complete;
        TaskVerdict::Accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_start_fences_out_an_older_completion_and_a_done_row_takes_nothing() {
        let mut row = TaskRow::default();
        assert_eq!(row.apply(TaskStep::Start, 10, true), TaskVerdict::Accepted);
        assert_eq!(row.apply(TaskStep::Start, 20, true), TaskVerdict::Accepted);
        assert_eq!(row.apply(TaskStep::Complete, 10, true), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(row.apply(TaskStep::Complete, 20, true), TaskVerdict::Accepted);
        assert_eq!(row.apply(TaskStep::Complete, 20, true), TaskVerdict::AlreadyDone);
        assert_eq!(row.apply(TaskStep::Start, 30, true), TaskVerdict::AlreadyDone);
    }

    #[test]
    fn the_planted_bug_skips_the_token_check_of_completions_only() {
        let mut row = TaskRow::default();
        row.apply(TaskStep::Start, 20, false);
        assert_eq!(row.apply(TaskStep::Start, 10, false), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(row.apply(TaskStep::Complete, 10, false), TaskVerdict::Accepted);
        assert_eq!(row.highest_token, 20, "the stale completion does not lower the row's highest token");
    }
}
