//! The client side of a node's own APIs: turns one API call into a core
//! request with a `(client, seq)` identity, hands it to the driver, and
//! retries it (same identity, so the state machine applies it at most once)
//! while there is no leader or leadership moves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasesim_core::raft::ConfChange;
use leasesim_core::service::{ClientRequest, Op, Response, ServiceError};
use leasesim_core::{ClientId, LogIndex};
use tokio::sync::{mpsc, oneshot, watch};

use crate::driver::{Answer, Input, MemberStatus};
use crate::view::{RangeSpec, RangeView};

/// How long one attempt waits for its answer.
const ATTEMPT: Duration = Duration::from_secs(3);
/// How long a request keeps retrying before it gives up.
const GIVE_UP: Duration = Duration::from_secs(15);

/// Why a call failed (mapped to gRPC codes by the API layers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No leader answered in time.
    Unavailable(String),
    /// The service refused the request.
    Service(ServiceError),
    Stopped,
}

/// A cloneable handle on the local driver.
#[derive(Clone)]
pub struct Front {
    inputs: mpsc::UnboundedSender<Input>,
    status: watch::Receiver<MemberStatus>,
    clients: Arc<ClientIds>,
}

/// Client identities. A call checks one out of a pool for its duration and
/// takes its next sequence number, so each identity has one request in
/// flight (its session window is never crowded) and the replicated session
/// table grows only with the peak number of concurrent calls.
struct ClientIds {
    base: u64,
    next: AtomicU64,
    free: Mutex<Vec<(ClientId, u64)>>,
}

/// A checked-out identity, returned to the pool when dropped.
struct Lease<'a> {
    ids: &'a ClientIds,
    client: ClientId,
    seq: u64,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.ids.free.lock().expect("client pool").push((self.client, self.seq));
    }
}

impl ClientIds {
    fn take(&self) -> Lease<'_> {
        let (client, seq) = self
            .free
            .lock()
            .expect("client pool")
            .pop()
            .unwrap_or_else(|| (self.base.wrapping_add(self.next.fetch_add(1, Ordering::Relaxed)), 0));
        Lease { ids: self, client, seq: seq + 1 }
    }
}

impl Front {
    pub fn new(inputs: mpsc::UnboundedSender<Input>, status: watch::Receiver<MemberStatus>) -> Self {
        // Ids above 2^40 keep clear of the small ids scenarios and tools use.
        let base = (rand::random::<u64>() >> 8) | (1 << 40);
        Front { inputs, status, clients: Arc::new(ClientIds { base, next: AtomicU64::new(0), free: Mutex::default() }) }
    }

    /// Hands `input` to the driver (an error once it has stopped).
    pub fn send(&self, input: Input) -> Result<(), CallError> {
        self.inputs.send(input).map_err(|_| CallError::Stopped)
    }

    /// This member's latest published status.
    pub fn status(&self) -> MemberStatus {
        self.status.borrow().clone()
    }

    /// A receiver that wakes at every status change.
    pub fn status_watch(&self) -> watch::Receiver<MemberStatus> {
        self.status.clone()
    }

    /// Runs `op` to completion: the service's answer, or why there is none.
    pub async fn call(&self, op: Op) -> Result<Response, CallError> {
        self.call_view(op, None).await.map(|a| a.resp)
    }

    /// Like [`Front::call`], and also reads `view` on the leader once the op
    /// is answered.
    pub async fn call_view(&self, op: Op, view: Option<RangeSpec>) -> Result<Answer, CallError> {
        // The identity stays checked out until the call ends.
        let identity = self.clients.take();
        self.call_with(ClientRequest { client: identity.client, seq: identity.seq, op }, view).await
    }

    /// A serializable read of `view`: this member's own applied state,
    /// answered whether or not it knows a leader.
    pub async fn local_view(&self, view: RangeSpec) -> Result<RangeView, CallError> {
        let (reply, answer) = oneshot::channel();
        self.send(Input::LocalRange { view, reply })?;
        answer.await.map_err(|_| CallError::Stopped)
    }

    /// Like [`Front::call`], under the identity the caller named
    /// (`--unsafe-test-client-ids`, faults/client_ids.rs) instead of a
    /// pooled one.
    pub async fn call_as(&self, (client, seq): (ClientId, u64), op: Op) -> Result<Response, CallError> {
        self.call_with(ClientRequest { client, seq, op }, None).await.map(|a| a.resp)
    }

    /// Sends `req` until it is answered (same identity each time, so it is
    /// applied at most once).
    async fn call_with(&self, req: ClientRequest, view: Option<RangeSpec>) -> Result<Answer, CallError> {
        let waits_for_grant = matches!(req.op, Op::LockAcquire { .. });
        let started = Instant::now();
        loop {
            let (tx, rx) = oneshot::channel();
            let input = Input::Client { req: req.clone(), view: view.clone(), reply: tx };
            self.inputs.send(input).map_err(|_| CallError::Stopped)?;
            let attempt = if waits_for_grant { Duration::from_secs(5) } else { ATTEMPT };
            // No answer (the waiter was dropped or the answer lost), no
            // leader, or leadership moved: ask again.
            if let Ok(Ok(answer)) = tokio::time::timeout(attempt, rx).await {
                match answer.resp {
                    Response::Error(ServiceError::NotLeader { .. } | ServiceError::Retry) => {}
                    Response::Error(e) => return Err(CallError::Service(e)),
                    _ => return Ok(answer),
                }
            }
            if !waits_for_grant && started.elapsed() > GIVE_UP {
                return Err(CallError::Unavailable("no leader answered in time".into()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A membership change, through the leader.
    pub async fn conf_change(&self, change: ConfChange) -> Result<LogIndex, CallError> {
        let started = Instant::now();
        loop {
            let (tx, rx) = oneshot::channel();
            self.inputs.send(Input::ConfChange { change, reply: tx }).map_err(|_| CallError::Stopped)?;
            match rx.await {
                Ok(Ok(index)) => return Ok(index),
                Ok(Err(e)) if started.elapsed() > GIVE_UP => return Err(CallError::Unavailable(e)),
                Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(_) => return Err(CallError::Stopped),
            }
        }
    }
}
