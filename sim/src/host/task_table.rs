//! The data store's task rows (the multi-instance lease design's `tasks`
//! table): a worker writes a
//! `Start` when it takes a task and a `Complete` with its result, each
//! carrying its claim's fencing token (the claim's revision).
//!
//! A row accepts a write only if its token is at least the highest the row has
//! accepted (the Raft lock-service design's fencing rule, per task), and
//! nothing after the task is done (the multi-instance lease design's "processed
//! check": a second completion is a conflict). The `Start` matters: it tells
//! the store about a newer claim before its holder completes, so a superseded
//! worker's late completion is rejected by its token. `task-once` judges what
//! the rows accepted.
//!
//! The planted bug `completion-without-token-check` skips the token check
//! for completions.
//!
//! The rows' words (`TaskStep`, `TaskVerdict`) and their rule (`TaskRow`)
//! are in the judge's `vocab`, where the observations and the checkers read
//! them and leasesim-node's data store applies the same rule; the messages (`TaskWrite`,
//! `TaskReply`) travel on `world::wire`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::world::wire::TaskWrite;
use leasesim_judge::vocab::{TaskRow as Row, TaskVerdict};

/// Every task row. The rows are owned by the simulator so that they survive
/// the store's crash (a real store keeps them on disk).
pub struct TaskTable {
    rows: Arc<Mutex<BTreeMap<u64, Row>>>,
    /// Planted bug `completion-without-token-check`.
    skip_completion_token_check: bool,
}

/// The durable part of the task table, created once per run.
#[derive(Clone, Default)]
pub struct TaskRows(Arc<Mutex<BTreeMap<u64, Row>>>);

impl TaskTable {
    pub fn new(rows: TaskRows, skip_completion_token_check: bool) -> Self {
        TaskTable { rows: rows.0, skip_completion_token_check }
    }

    pub fn apply(&self, write: &TaskWrite) -> TaskVerdict {
        let mut rows = self.rows.lock().expect("single-threaded simulation");
        rows.entry(write.task).or_default().apply(write.step, write.token, !self.skip_completion_token_check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_judge::vocab::TaskStep;

    fn write(task: u64, token: u64, step: TaskStep) -> TaskWrite {
        TaskWrite { client: 1, task, token, step, request_id: 1 }
    }

    #[test]
    fn a_newer_start_fences_out_an_older_completion() {
        let table = TaskTable::new(TaskRows::default(), false);
        assert_eq!(table.apply(&write(1, 10, TaskStep::Start)), TaskVerdict::Accepted);
        assert_eq!(table.apply(&write(1, 20, TaskStep::Start)), TaskVerdict::Accepted);
        assert_eq!(table.apply(&write(1, 10, TaskStep::Complete)), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(table.apply(&write(1, 20, TaskStep::Complete)), TaskVerdict::Accepted);
        assert_eq!(table.apply(&write(2, 5, TaskStep::Complete)), TaskVerdict::Accepted, "rows are per task");
    }

    #[test]
    fn a_done_task_takes_nothing_more() {
        let table = TaskTable::new(TaskRows::default(), false);
        assert_eq!(table.apply(&write(1, 10, TaskStep::Complete)), TaskVerdict::Accepted);
        assert_eq!(table.apply(&write(1, 20, TaskStep::Start)), TaskVerdict::AlreadyDone);
        assert_eq!(table.apply(&write(1, 10, TaskStep::Complete)), TaskVerdict::AlreadyDone);
    }

    #[test]
    fn the_planted_bug_skips_the_token_check_of_completions_only() {
        let table = TaskTable::new(TaskRows::default(), true);
        table.apply(&write(1, 20, TaskStep::Start));
        assert_eq!(table.apply(&write(1, 10, TaskStep::Start)), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(table.apply(&write(1, 10, TaskStep::Complete)), TaskVerdict::Accepted);
    }

    #[test]
    fn rows_survive_a_new_table_over_the_same_rows() {
        let rows = TaskRows::default();
        TaskTable::new(rows.clone(), false).apply(&write(3, 7, TaskStep::Complete));
        assert_eq!(TaskTable::new(rows, false).apply(&write(3, 9, TaskStep::Start)), TaskVerdict::AlreadyDone);
    }
}
