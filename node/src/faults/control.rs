//! The test control endpoint (`--unsafe-test-control-url`): a small HTTP
//! server of its own through which a test runner skews this member's
//! clocks at run time. It is for tests only (unauthenticated, and a skewed
//! clock breaks the lease guarantees on purpose), so it binds loopback
//! addresses only and does not exist unless the flag is given.
//!
//! Routes (JSON in and out; a bad request is answered 400 with
//! `{"error": "..."}` naming what is wrong):
//! - `GET /clock`: each clock's rate, offset and reading.
//! - `POST /clock` with `{"monotonic": {"rate": 2.0}, "wall": {"step_ms": -1000}}`:
//!   per clock, `rate` (continuous from now), `offset_ms` (the total step
//!   from the real clock) or `step_ms` (a step from now); the monotonic
//!   clock only steps forward. All or nothing.
//! - `GET /failpoint`: the armed failpoint entries, oldest first
//!   (`{"armed": [{"id": 3, "point": "after-sync"}]}`).
//! - `POST /failpoint` with `{"id": 3, "point": "after-send:vote-reply"}`
//!   arms entry 3 (replacing an entry 3 armed before) and leaves the
//!   others; `{"id": 3, "point": null}` disarms entry 3 alone; with
//!   `"claim": "/run/dir/claims/3"` the entry is shared with the other
//!   members armed under that path, and fires only in the first to reach
//!   it (it creates the file; failpoint.rs says why). The member
//!   SIGKILLs itself when it next reaches a point some entry waits at,
//!   and its event log's `crashed` line names that entry
//!   (faults/failpoint.rs lists the points); with `"action": "pause"` it
//!   stops itself there instead (SIGSTOP, after a `paused` line naming
//!   the entry) until the runner sends SIGCONT.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::clock::{ClockChange, ClockSource};
use super::failpoint::{Action, Failpoints};

/// What the endpoint controls.
#[derive(Clone)]
pub struct Controls {
    pub clocks: Arc<ClockSource>,
    pub failpoints: Arc<Failpoints>,
}

/// `POST /failpoint`'s body: which entry, and its point (`None`:
/// disarm it).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Arm {
    id: u64,
    point: Option<String>,
    #[serde(default)]
    claim: Option<std::path::PathBuf>,
    /// Crash unless it says `pause`.
    #[serde(default)]
    action: Action,
}

type Answer = (StatusCode, Json<Value>);

fn refused(error: String) -> Answer {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": error })))
}

/// Binds `addr` (refused unless it is a loopback address).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    if !addr.ip().is_loopback() {
        return Err(format!("--unsafe-test-control-url {addr}: the test control endpoint listens on loopback addresses only"));
    }
    TcpListener::bind(addr).await.map_err(|e| format!("--unsafe-test-control-url {addr}: {e}"))
}

pub fn router(controls: Controls) -> Router {
    Router::new()
        .route("/clock", get(get_clock).post(post_clock))
        .route("/failpoint", get(get_failpoint).post(post_failpoint))
        .with_state(controls)
}

/// Serves until the process stops.
pub async fn serve(listener: TcpListener, controls: Controls) {
    if let Ok(addr) = listener.local_addr() {
        tracing::warn!("--unsafe-test-control-url: test control endpoint on http://{addr} (clocks can be skewed)");
    }
    if let Err(e) = axum::serve(listener, router(controls)).await {
        tracing::error!("the test control endpoint stopped: {e}");
    }
}

async fn get_clock(State(controls): State<Controls>) -> Answer {
    (StatusCode::OK, Json(json!(controls.clocks.report())))
}

/// The body as JSON whatever its content type says (`curl -d` sends
/// form-encoded headers).
fn parse<T: serde::de::DeserializeOwned>(route: &str, body: &[u8]) -> Result<T, Answer> {
    serde_json::from_slice(body).map_err(|e| refused(format!("{route}: {e}")))
}

async fn post_clock(State(controls): State<Controls>, body: Bytes) -> Answer {
    let change: ClockChange = match parse("POST /clock", &body) {
        Ok(change) => change,
        Err(answer) => return answer,
    };
    match controls.clocks.apply(&change) {
        Ok(report) => (StatusCode::OK, Json(json!(report))),
        Err(e) => refused(format!("POST /clock: {e}")),
    }
}

async fn get_failpoint(State(controls): State<Controls>) -> Answer {
    (StatusCode::OK, Json(json!({ "armed": controls.failpoints.armed() })))
}

async fn post_failpoint(State(controls): State<Controls>, body: Bytes) -> Answer {
    let arm: Arm = match parse("POST /failpoint", &body) {
        Ok(arm) => arm,
        Err(answer) => return answer,
    };
    let done = match arm.point {
        Some(point) => controls.failpoints.arm(arm.id, &point, arm.action, arm.claim),
        // Disarming an entry the member no longer holds (it fired, or a
        // restart emptied the set) is no error: nothing waits there.
        None => {
            controls.failpoints.disarm(arm.id);
            Ok(())
        }
    };
    match done {
        Ok(()) => (StatusCode::OK, Json(json!({ "armed": controls.failpoints.armed() }))),
        Err(e) => refused(format!("POST /failpoint: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::failpoint::Fired;
    use super::*;

    async fn post(controls: &Controls, body: &str) -> Answer {
        post_failpoint(State(controls.clone()), Bytes::from(body.to_string())).await
    }

    #[tokio::test]
    async fn each_post_arms_or_disarms_one_entry_and_leaves_the_others() {
        let controls = Controls { clocks: Arc::default(), failpoints: Arc::default() };
        assert_eq!(post(&controls, r#"{"id": 4, "point": "after-sync"}"#).await.0, StatusCode::OK);
        let (status, Json(armed)) = post(&controls, r#"{"id": 6, "point": "timer"}"#).await;
        assert_eq!(
            (status, armed),
            (StatusCode::OK, json!({ "armed": [{ "id": 4, "point": "after-sync" }, { "id": 6, "point": "timer" }] }))
        );
        assert_eq!(post(&controls, r#"{"id": 4, "point": null}"#).await.0, StatusCode::OK);
        let (_, Json(armed)) = get_failpoint(State(controls.clone())).await;
        assert_eq!(armed, json!({ "armed": [{ "id": 6, "point": "timer" }] }), "entry 6 stayed");
        // A shared entry's claim path is taken with it.
        let claim = std::env::temp_dir().join(format!("leasesim-control-test-claim-{}", std::process::id()));
        let body = json!({ "id": 8, "point": "timer", "claim": claim }).to_string();
        assert_eq!(post(&controls, &body).await.0, StatusCode::OK);
        let crash = |id| Some(Fired { id, action: Action::Crash });
        assert_eq!(controls.failpoints.reached("timer"), crash(6), "the older entry first");
        assert_eq!(controls.failpoints.reached("timer"), crash(8));
        assert!(std::fs::remove_file(&claim).is_ok(), "entry 8 fired under its claim");
        let (status, Json(error)) = post(&controls, r#"{"point": "timer"}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(error["error"].as_str().unwrap().contains("POST /failpoint: missing field `id`"), "{error}");
        // A pause entry says so, and fires as one.
        let (status, Json(armed)) = post(&controls, r#"{"id": 9, "point": "after-sync", "action": "pause"}"#).await;
        assert_eq!((status, armed), (StatusCode::OK, json!({ "armed": [{ "id": 9, "point": "after-sync", "action": "pause" }] })));
        assert_eq!(controls.failpoints.reached("after-sync"), Some(Fired { id: 9, action: Action::Pause }));
        let (status, Json(error)) = post(&controls, r#"{"id": 2, "point": "timer", "action": "nap"}"#).await;
        assert!(status == StatusCode::BAD_REQUEST && error["error"].as_str().unwrap().contains("unknown variant `nap`"), "{error}");
        let (status, Json(error)) = post(&controls, r#"{"id": 1, "point": "after"}"#).await;
        assert!(status == StatusCode::BAD_REQUEST && error["error"].as_str().unwrap().contains("unknown failpoint `after`"), "{error}");
    }
}
