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
