//! The Raft lock-service design's interfaces on a real cluster: the WebSocket lock API (FIFO
//! waiters told on their own connection, release without reply, redirect
//! to the leader, garbage answered with errors) and the data store taking
//! fenced writes and refusing stale tokens.

use crate::common;

use std::time::Duration;

use common::{http_when_up, start_store, ProcessCluster};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next_json(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("an answer within 30 s")
            .expect("the connection is open")
            .expect("a message");
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).expect("JSON");
        }
    }
}

async fn send(socket: &mut Socket, value: Value) {
    socket.send(Message::Text(value.to_string())).await.expect("send");
}

fn write(store_port: u16, client: &str, token: &Value, data: &str) -> Value {
    let body = json!({"clientID": client, "fencingToken": token, "data": data}).to_string();
    let (code, body) = http_when_up(store_port, "POST", "/write", &body);
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).expect("a WriteResponse")
}

#[test]
fn websocket_locks_are_fifo_fenced_and_redirect_to_the_leader() {
    let mut cluster = ProcessCluster::start(3);
    let (mut store, store_port) = start_store(&cluster.dir.path().join("data.txt"), &cluster.dir.path().join("store.log"));

    // The leader knows it leads before its followers hear of it (at its
    // first heartbeat): ask the follower until it names the leader (asked
    // again who leads, should a loaded machine have let another win).
    let ws = |cluster: &ProcessCluster, i: usize| format!("ws://127.0.0.1:{}/ws", cluster.members[i].lock_port);
    let (mut leader, mut follower, mut info) = (0, 1, Value::Null);
    for _ in 0..300 {
        leader = cluster.wait_for_leader();
        follower = (leader + 1) % 3;
        let (_, body) = http_when_up(cluster.members[follower].lock_port, "GET", "/leader", "");
        info = serde_json::from_str(&body).unwrap();
        if info["leaderAddr"] == ws(&cluster, leader).as_str() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let leader_ws = ws(&cluster, leader);
    assert_eq!(info["leaderAddr"], leader_ws.as_str(), "{info}");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        // A follower redirects.
        let follower_ws = format!("ws://127.0.0.1:{}/ws", cluster.members[follower].lock_port);
        let (mut socket, _) = tokio_tungstenite::connect_async(&follower_ws).await.expect("connect to a follower");
        let redirect = next_json(&mut socket).await;
        assert_eq!(redirect["redirect"], true);
        assert_eq!(redirect["leaderAddr"], leader_ws.as_str());

        let (mut a, _) = tokio_tungstenite::connect_async(&leader_ws).await.expect("connect A");
        let (mut b, _) = tokio_tungstenite::connect_async(&leader_ws).await.expect("connect B");
        // Garbage gets an error and the connection goes on.
        send(&mut a, json!("not a request")).await;
        assert_eq!(next_json(&mut a).await["success"], false);
        a.send(Message::Binary(vec![1, 2, 3])).await.unwrap();
        assert_eq!(next_json(&mut a).await["success"], false);
        send(&mut a, json!({"commandType": 7, "key": "k", "clientId": "a", "ttl": 1})).await;
        assert!(next_json(&mut a).await["error"].as_str().unwrap().contains("commandType"));

        send(&mut a, json!({"commandType": 0, "key": "printer", "clientId": "a", "ttl": 30000})).await;
        let granted_a = next_json(&mut a).await;
        assert_eq!(granted_a["success"], true, "{granted_a}");
        let token_a = granted_a["fencingToken"].clone();
        assert_eq!(token_a["key"], "printer");

        // B queues behind A, and is told on its own connection once A releases.
        send(&mut b, json!({"commandType": 0, "key": "printer", "clientId": "b", "ttl": 30000})).await;
        assert_eq!(write(store_port, "a", &token_a, "from a")["success"], true);
        send(&mut a, json!({"commandType": 1, "key": "printer", "clientId": "a"})).await;
        let granted_b = next_json(&mut b).await;
        assert_eq!(granted_b["success"], true, "{granted_b}");
        let token_b = granted_b["fencingToken"].clone();
        assert!(token_b["value"].as_u64() > token_a["value"].as_u64(), "{token_a} then {token_b}");

        // The store takes B's token and refuses A's, now stale.
        assert_eq!(write(store_port, "b", &token_b, "from b")["success"], true);
        let stale = write(store_port, "a", &token_a, "late write from a");
        assert_eq!(stale["success"], false, "{stale}");
    });
    let data = std::fs::read_to_string(cluster.dir.path().join("data.txt")).unwrap();
    assert_eq!(data.lines().count(), 2, "{data}");
    assert!(data.contains("from b") && !data.contains("late write"));

    let (code, _) = http_when_up(store_port, "POST", "/write", "{garbage");
    assert_eq!(code, 400);
    assert!(matches!(store.try_wait(), Ok(None)), "the store crashed");
    let _ = store.kill();
    for i in 0..3 {
        assert!(cluster.running(i), "member {i} crashed; see {}", cluster.log_path(i).display());
    }
}
