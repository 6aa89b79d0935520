//! The Raft lock-service design's data store as its own process (`leasesim-node store`): HTTP
//! POST of a `WriteRequest {clientID, fencingToken {key, value}, data}`,
//! answered `{success}`. A write is accepted only if its token is at least
//! the highest this store has accepted for that key (stale tokens are
//! refused: that is what fencing is for), and it is appended to a text file
//! and fsynced before the answer. On restart the file is read back, so the
//! highest tokens survive.
//!
//! The file has one line per accepted write: key, token, client id and the
//! data, tab-separated, the data JSON-quoted so any text fits on one line.
//!
//! `POST /task` serves the task workers' rows (`store_tasks.rs`), kept in a
//! file of their own.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::store_tasks::{TaskRows, TaskWriteRequest, TaskWriteResponse};

#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Where to listen (http://host:port).
    #[arg(long, default_value = "http://127.0.0.1:8000", value_parser = crate::members::parse_url)]
    pub listen_url: SocketAddr,
    /// The text file accepted writes are appended to.
    #[arg(long, default_value = "data.txt")]
    pub file: PathBuf,
    /// Accept every write whatever its token (a store that does not check
    /// fencing tokens: the hazard fencing exists for, as a scenario's
    /// `fenced = false` lock workload asks).
    #[arg(long)]
    pub unfenced: bool,
    /// The text file accepted task-row writes are appended to (default:
    /// beside `--file`, its extension replaced by `tasks.txt`).
    #[arg(long)]
    pub task_file: Option<PathBuf>,
    /// Accept a task's completion whatever its token (the planted bug
    /// `completion-without-token-check`).
    #[arg(long)]
    pub unchecked_completions: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencingToken {
    pub key: String,
    pub value: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteRequest {
    #[serde(rename = "clientID")]
    pub client_id: String,
    #[serde(rename = "fencingToken")]
    pub fencing_token: FencingToken,
    pub data: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteResponse {
    pub success: bool,
    /// Why a write was refused (absent on success).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// The store's state: the file and the highest token accepted per key.
pub struct DataStore {
    file: File,
    highest: BTreeMap<String, u64>,
    /// Accept stale tokens too (`--unfenced`).
    unfenced: bool,
}

impl DataStore {
    /// Whether it accepts stale tokens too (`--unfenced`).
    pub fn unfenced(mut self, unfenced: bool) -> Self {
        self.unfenced = unfenced;
        self
    }

    /// Opens `path`, reading back every write it holds.
    pub fn open(path: &Path) -> std::io::Result<DataStore> {
        let mut highest = BTreeMap::new();
        if path.exists() {
            for line in BufReader::new(File::open(path)?).lines() {
                let line = line?;
                let mut fields = line.splitn(4, '\t');
                if let (Some(key), Some(token)) = (fields.next(), fields.next().and_then(|t| t.parse::<u64>().ok())) {
                    let top = highest.entry(key.to_string()).or_insert(0);
                    *top = (*top).max(token);
                }
                // A torn last line (a crash mid-append) has no token: skipped.
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(DataStore { file, highest, unfenced: false })
    }

    /// Accepts or refuses one write; an accepted one is durable on return.
    pub fn write(&mut self, req: &WriteRequest) -> std::io::Result<WriteResponse> {
        let key = &req.fencing_token.key;
        let token = req.fencing_token.value;
        if key.is_empty() || key.contains(['\t', '\n']) {
            return Ok(refused("the token's key must be non-empty text without tabs or newlines"));
        }
        if let Some(top) = self.highest.get(key).filter(|top| token < **top && !self.unfenced) {
            return Ok(refused(&format!("stale fencing token {token} for {key}: {top} was already accepted")));
        }
        let client = req.client_id.replace(['\t', '\n'], " ");
        let data = serde_json::to_string(&req.data).unwrap_or_default();
        writeln!(self.file, "{key}\t{token}\t{client}\t{data}")?;
        self.file.sync_data()?;
        let top = self.highest.entry(key.clone()).or_insert(token);
        *top = (*top).max(token);
        Ok(WriteResponse { success: true, error: None })
    }

    pub fn highest(&self, key: &str) -> Option<u64> {
        self.highest.get(key).copied()
    }
}

fn refused(why: &str) -> WriteResponse {
    WriteResponse { success: false, error: Some(why.to_string()) }
}

type Shared = Arc<Mutex<DataStore>>;

async fn handle_write(State(store): State<Shared>, body: Result<Json<WriteRequest>, JsonRejection>) -> (StatusCode, Json<WriteResponse>) {
    let Json(req) = match body {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, Json(refused(&e.body_text()))),
    };
    let result = store.lock().expect("store lock").write(&req);
    match result {
        Ok(resp) => (StatusCode::OK, Json(resp)),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, Json(refused(&format!("cannot persist: {e}")))),
    }
}

type SharedTasks = Arc<Mutex<TaskRows>>;

async fn handle_task(
    State(tasks): State<SharedTasks>,
    body: Result<Json<TaskWriteRequest>, JsonRejection>,
) -> Result<Json<TaskWriteResponse>, (StatusCode, String)> {
    let Json(req) = body.map_err(|e| (StatusCode::BAD_REQUEST, e.body_text()))?;
    let verdict = tasks.lock().expect("tasks lock").write(&req);
    match verdict {
        Ok(verdict) => Ok(Json(TaskWriteResponse { verdict })),
        Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, format!("cannot persist: {e}"))),
    }
}

/// The store's HTTP routes: POST `/` and `/write`, and `/task`.
pub fn router(store: DataStore, tasks: TaskRows) -> Router {
    let shared: Shared = Arc::new(Mutex::new(store));
    let tasks: SharedTasks = Arc::new(Mutex::new(tasks));
    let rows = Router::new().route("/task", post(handle_task)).with_state(tasks);
    Router::new().route("/", post(handle_write)).route("/write", post(handle_write)).with_state(shared).merge(rows)
}

/// Runs the store until the process stops.
pub async fn run(args: StoreArgs) -> Result<(), String> {
    let store = DataStore::open(&args.file).map_err(|e| format!("--file {}: {e}", args.file.display()))?.unfenced(args.unfenced);
    let task_file = args.task_file.clone().unwrap_or_else(|| args.file.with_extension("tasks.txt"));
    let tasks = TaskRows::open(&task_file, !args.unchecked_completions).map_err(|e| format!("--task-file {}: {e}", task_file.display()))?;
    let listener = tokio::net::TcpListener::bind(args.listen_url).await.map_err(|e| format!("--listen-url {}: {e}", args.listen_url))?;
    tracing::info!(listen = %args.listen_url, file = %args.file.display(), pid = std::process::id(), "data store started");
    axum::serve(listener, router(store, tasks)).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(key: &str, value: u64, data: &str) -> WriteRequest {
        WriteRequest { client_id: "c1".into(), fencing_token: FencingToken { key: key.into(), value }, data: data.into() }
    }

    #[test]
    fn stale_tokens_are_refused_and_the_file_survives_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.txt");
        let mut store = DataStore::open(&path).unwrap();
        assert!(store.write(&write("k", 5, "a\tb\nc")).unwrap().success);
        assert!(store.write(&write("k", 5, "same token again")).unwrap().success);
        let stale = store.write(&write("k", 4, "late")).unwrap();
        assert!(!stale.success && stale.error.unwrap().contains("stale"));
        assert!(store.write(&write("other", 1, "x")).unwrap().success);
        drop(store);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        let mut again = DataStore::open(&path).unwrap();
        assert_eq!(again.highest("k"), Some(5));
        assert!(!again.write(&write("k", 3, "after restart")).unwrap().success);
    }

    #[test]
    fn an_unfenced_store_takes_stale_tokens_and_remembers_the_highest() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = DataStore::open(&dir.path().join("data.txt")).unwrap().unfenced(true);
        assert!(store.write(&write("k", 5, "new")).unwrap().success);
        assert!(store.write(&write("k", 4, "stale, taken anyway")).unwrap().success);
        assert_eq!(store.highest("k"), Some(5));
    }

    #[test]
    fn the_json_names_are_seed_001s() {
        let req: WriteRequest = serde_json::from_str(r#"{"clientID":"c","fencingToken":{"key":"k","value":7},"data":"d"}"#).unwrap();
        assert_eq!(req.fencing_token.value, 7);
        assert_eq!(serde_json::to_string(&WriteResponse { success: true, error: None }).unwrap(), r#"{"success":true}"#);
    }
}
