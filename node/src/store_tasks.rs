//! The data store's task rows (the multi-instance lease design's `tasks`
//! table), served by `leasesim-node store` at `POST /task` beside its
//! fenced key writes: a task worker writes a `start` when it takes a task
//! and a `complete` with its result, each with its claim's fencing token,
//! and the row answers with the judge's [`TaskVerdict`]. The rule is the
//! judge vocabulary's [`TaskRow`], the very one the simulator's store
//! applies, so `task-once` judges both worlds' stores alike.
//!
//! Accepted writes are appended to their own text file and fsynced before
//! the answer (`task \t token \t step \t client` per line); a restarted
//! store reads them back, so a SIGKILL loses no row, as the simulator's
//! rows survive its store's crash. `--unchecked-completions` is the
//! planted bug `completion-without-token-check`.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use leasesim_judge::vocab::{TaskRow, TaskStep, TaskVerdict};
use serde::{Deserialize, Serialize};

/// A worker's write to a task row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskWriteRequest {
    #[serde(rename = "clientID")]
    pub client_id: String,
    pub task: u64,
    pub token: u64,
    pub step: TaskStep,
}

/// What the row made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskWriteResponse {
    pub verdict: TaskVerdict,
}

/// Every task row, and the file that keeps them.
pub struct TaskRows {
    file: File,
    rows: BTreeMap<u64, TaskRow>,
    /// False: the planted bug `completion-without-token-check`.
    check_completion_token: bool,
}

impl TaskRows {
    /// Opens `path`, replaying every accepted write it holds.
    pub fn open(path: &Path, check_completion_token: bool) -> std::io::Result<TaskRows> {
        let mut rows: BTreeMap<u64, TaskRow> = BTreeMap::new();
        if path.exists() {
            for line in BufReader::new(File::open(path)?).lines() {
                // A torn last line (a crash mid-append) does not parse: skipped,
                // as its write was never answered.
                if let Some((task, token, step)) = parse(&line?) {
                    rows.entry(task).or_default().apply(step, token, check_completion_token);
                }
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(TaskRows { file, rows, check_completion_token })
    }

    /// Applies one write; an accepted one is durable on return.
    pub fn write(&mut self, req: &TaskWriteRequest) -> std::io::Result<TaskVerdict> {
        let mut row = self.rows.get(&req.task).copied().unwrap_or_default();
        let verdict = row.apply(req.step, req.token, self.check_completion_token);
        if verdict == TaskVerdict::Accepted {
            let client = req.client_id.replace(['\t', '\n'], " ");
            writeln!(self.file, "{}\t{}\t{}\t{client}", req.task, req.token, step_name(req.step))?;
            self.file.sync_data()?;
            self.rows.insert(req.task, row);
        }
        Ok(verdict)
    }
}

fn step_name(step: TaskStep) -> &'static str {
    match step {
        TaskStep::Start => "start",
        TaskStep::Complete => "complete",
    }
}

fn parse(line: &str) -> Option<(u64, u64, TaskStep)> {
    let mut fields = line.split('\t');
    let task = fields.next()?.parse().ok()?;
    let token = fields.next()?.parse().ok()?;
    let step = match fields.next()? {
        "start" => TaskStep::Start,
        "complete" => TaskStep::Complete,
        _ => return None,
    };
    fields.next()?;
    Some((task, token, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(task: u64, token: u64, step: TaskStep) -> TaskWriteRequest {
        TaskWriteRequest { client_id: "c2".into(), task, token, step }
    }

    #[test]
    fn rows_fence_by_token_and_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.tasks.txt");
        let mut rows = TaskRows::open(&path, true).unwrap();
        assert_eq!(rows.write(&write(1, 10, TaskStep::Start)).unwrap(), TaskVerdict::Accepted);
        assert_eq!(rows.write(&write(1, 20, TaskStep::Start)).unwrap(), TaskVerdict::Accepted);
        assert_eq!(rows.write(&write(1, 10, TaskStep::Complete)).unwrap(), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(rows.write(&write(2, 5, TaskStep::Complete)).unwrap(), TaskVerdict::Accepted);
        drop(rows);
        // A write torn by a kill mid-append is not replayed.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"1\t30\tcomp").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4, "the three accepted writes and the torn one");
        let mut again = TaskRows::open(&path, true).unwrap();
        assert_eq!(again.write(&write(1, 15, TaskStep::Complete)).unwrap(), TaskVerdict::StaleToken { highest: 20 });
        assert_eq!(again.write(&write(2, 50, TaskStep::Start)).unwrap(), TaskVerdict::AlreadyDone);
    }

    #[test]
    fn unchecked_completions_take_a_stale_token() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = TaskRows::open(&dir.path().join("t.txt"), false).unwrap();
        rows.write(&write(1, 20, TaskStep::Start)).unwrap();
        assert_eq!(rows.write(&write(1, 10, TaskStep::Complete)).unwrap(), TaskVerdict::Accepted);
    }

    #[test]
    fn the_json_is_the_judges_words() {
        let req: TaskWriteRequest = serde_json::from_str(r#"{"clientID":"c2","task":3,"token":7,"step":"complete"}"#).unwrap();
        assert_eq!(req, write(3, 7, TaskStep::Complete));
        let stale = TaskWriteResponse { verdict: TaskVerdict::StaleToken { highest: 9 } };
        assert_eq!(serde_json::to_string(&stale).unwrap(), r#"{"verdict":{"stale-token":{"highest":9}}}"#);
    }
}
