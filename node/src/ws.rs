//! The Raft lock-service design's WebSocket lock API (`--listen-lock-urls`): clients keep one
//! WebSocket to the leader, send `LockRequest {commandType, key, clientId,
//! ttl}` and are told `LockAcquireReply {success, fencingToken {key,
//! value}}` on the same connection when the lock is theirs (waiters queue
//! FIFO in core's replicated lock queues). A release is sent the same way
//! and gets no reply. A member that is not the leader redirects: its first
//! message is `{redirect: true, leaderId, leaderAddr}` and it closes.
//!
//! `commandType` 0 acquires, 1 releases; `ttl` is in milliseconds. Each
//! acquire is backed by a lease of that TTL that nobody keeps alive, so the
//! lock is released when the TTL runs out (the Raft lock-service design: "automatically release
//! the lock after the specified duration"), and the fencing token is the
//! revision of the grant. Anything unreadable gets `{success: false,
//! error}` and the connection goes on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use leasesim_core::service::{Op, Response, ServiceError};
use leasesim_core::NS_PER_MS;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::driver::Input;
use crate::front::CallError;
use crate::log_view::LogView;
use crate::node_handle::NodeHandle;
use crate::store::FencingToken;

pub const ACQUIRE: u8 = 0;
pub const RELEASE: u8 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockRequest {
    pub command_type: u8,
    pub key: String,
    pub client_id: String,
    /// Milliseconds (acquire only).
    #[serde(default)]
    pub ttl: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockAcquireReply {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fencing_token: Option<FencingToken>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderInfo {
    pub redirect: bool,
    pub leader_id: u64,
    pub leader_addr: String,
}

fn failure(error: String) -> LockAcquireReply {
    LockAcquireReply { success: false, fencing_token: None, error: Some(error) }
}

/// Locks this connection holds: key → (token, lease).
type Held = Arc<Mutex<BTreeMap<String, (u64, u64)>>>;

/// Serves the lock API on `listener`: `GET /ws` (WebSocket),
/// `GET /leader` (who leads, and its lock URL) and `GET /log` (this
/// member's Raft log as term runs, read-only: `log_view.rs`).
pub async fn serve(node: NodeHandle, listener: TcpListener) {
    let app = Router::new().route("/ws", get(upgrade)).route("/leader", get(leader)).route("/log", get(log)).with_state(node);
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!("lock API stopped: {e}");
    }
}

/// The leader as this member knows it; `redirect` when it is another.
fn leader_info(node: &NodeHandle) -> LeaderInfo {
    let status = node.front.status();
    let leader = status.leader.unwrap_or(0);
    let leader_addr = node.directory.lock().expect("directory lock").get(&leader).map(|m| m.lock_url.clone());
    let leader_addr = leader_addr.unwrap_or_default().replacen("http://", "ws://", 1);
    let leader_addr = if leader_addr.is_empty() { leader_addr } else { format!("{leader_addr}/ws") };
    LeaderInfo { redirect: leader != 0 && leader != status.id && !leader_addr.is_empty(), leader_id: leader, leader_addr }
}

async fn leader(State(node): State<NodeHandle>) -> Json<LeaderInfo> {
    Json(leader_info(&node))
}

async fn log(State(node): State<NodeHandle>) -> Result<Json<LogView>, (StatusCode, String)> {
    let (reply, answer) = oneshot::channel();
    let stopped = || (StatusCode::SERVICE_UNAVAILABLE, "this member's driver has stopped".to_string());
    node.front.send(Input::Log { reply }).map_err(|_| stopped())?;
    answer.await.map(Json).map_err(|_| stopped())
}

async fn upgrade(ws: WebSocketUpgrade, State(node): State<NodeHandle>) -> impl IntoResponse {
    ws.on_upgrade(move |socket| connection(socket, node))
}

async fn connection(socket: WebSocket, node: NodeHandle) {
    let (mut sink, mut stream) = socket.split();
    let info = leader_info(&node);
    if info.redirect {
        let text = serde_json::to_string(&info).unwrap_or_default();
        let _ = sink.send(Message::Text(text)).await;
        let _ = sink.close().await;
        return;
    }
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<LockAcquireReply>();
    let writer = tokio::spawn(async move {
        while let Some(reply) = out_rx.recv().await {
            let text = serde_json::to_string(&reply).unwrap_or_default();
            if sink.send(Message::Text(text)).await.is_err() {
                return;
            }
        }
    });
    let held: Held = Arc::default();
    while let Some(Ok(message)) = stream.next().await {
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                let _ = out_tx.send(failure("send LockRequest as JSON text".into()));
                continue;
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let req: LockRequest = match serde_json::from_str(&text) {
            Ok(req) => req,
            Err(e) => {
                let _ = out_tx.send(failure(format!("not a LockRequest: {e}")));
                continue;
            }
        };
        if req.key.is_empty() {
            let _ = out_tx.send(failure("the key is empty".into()));
            continue;
        }
        match req.command_type {
            ACQUIRE => {
                tokio::spawn(acquire(node.clone(), req, held.clone(), out_tx.clone()));
            }
            RELEASE => {
                let Some((token, lease)) = held.lock().expect("held lock").remove(&req.key) else {
                    continue;
                };
                let front = node.front.clone();
                tokio::spawn(async move {
                    let _ = front.call(Op::LockRelease { key: req.key, token }).await;
                    let _ = front.call(Op::LeaseRevoke { lease }).await;
                });
            }
            other => {
                let _ = out_tx.send(failure(format!("unknown commandType {other} (0 acquires, 1 releases)")));
            }
        }
    }
    drop(out_tx);
    let _ = writer.await;
}

/// Grants a lease of the request's TTL, queues for the lock under it, and
/// tells the client once the lock is granted.
async fn acquire(node: NodeHandle, req: LockRequest, held: Held, out: mpsc::UnboundedSender<LockAcquireReply>) {
    let mut ttl_ns = req.ttl.max(1).saturating_mul(NS_PER_MS);
    let lease = loop {
        match node.front.call(Op::LeaseGrant { ttl_ns, id: None }).await {
            Ok(Response::LeaseGranted { lease, .. }) => break lease,
            // A TTL shorter than an election is raised to the minimum.
            Err(CallError::Service(ServiceError::TtlTooShort { min_ns })) if ttl_ns < min_ns => ttl_ns = min_ns,
            other => {
                let _ = out.send(failure(format!("cannot grant the lock's lease: {other:?}")));
                return;
            }
        }
    };
    match node.front.call(Op::LockAcquire { key: req.key.clone(), lease }).await {
        Ok(Response::LockGranted { key, token }) => {
            held.lock().expect("held lock").insert(key.clone(), (token, lease));
            let reply = LockAcquireReply { success: true, fencing_token: Some(FencingToken { key, value: token }), error: None };
            let _ = out.send(reply);
        }
        other => {
            tracing::debug!(client = %req.client_id, "lock {} not granted: {other:?}", req.key);
            let _ = out.send(failure(format!("lock not granted: {other:?}")));
        }
    }
}
