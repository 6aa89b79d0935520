//! A client's request layer: sequence numbers, leader discovery by hints,
//! and retries that reuse the sequence number (so the server's session can
//! tell a retry from a new request, Raft thesis §6.3).

use std::collections::BTreeMap;

use leasesim_core::service::{ClientRequest, ClientResponse, Op, Response, ServiceError};
use leasesim_core::{ClientId, NodeId, NS_PER_MS};

/// No answer within this long: resend to the next server.
pub const TIMEOUT_NS: u64 = 150 * NS_PER_MS;
/// Lock acquires wait in queues; resend them less eagerly.
pub const ACQUIRE_TIMEOUT_NS: u64 = 600 * NS_PER_MS;
/// After a NotLeader or Retry: resend after this long.
pub const BACKOFF_NS: u64 = 10 * NS_PER_MS;

#[derive(Clone, Debug)]
struct Pending {
    req: ClientRequest,
    first_sent_ns: u64,
    resend_at_ns: u64,
    /// The last resend was scheduled by an answer (keep the target), not by
    /// silence (try another server).
    redirected: bool,
}

/// A final answer to one request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub req: ClientRequest,
    pub first_sent_ns: u64,
    pub body: Response,
}

#[derive(Clone, Debug)]
pub struct Rpc {
    pub client: ClientId,
    servers: Vec<NodeId>,
    target: NodeId,
    next_seq: u64,
    pending: BTreeMap<u64, Pending>,
    /// Requests to send, drained by the harness.
    pub outbox: Vec<(NodeId, ClientRequest)>,
}

impl Rpc {
    pub fn new(client: ClientId, servers: Vec<NodeId>) -> Self {
        let target = servers[(client as usize) % servers.len()];
        Rpc { client, servers, target, next_seq: 0, pending: BTreeMap::new(), outbox: Vec::new() }
    }

    fn timeout(op: &Op) -> u64 {
        if matches!(op, Op::LockAcquire { .. }) {
            ACQUIRE_TIMEOUT_NS
        } else {
            TIMEOUT_NS
        }
    }

    /// Sends `op` to the believed leader; returns its sequence number.
    pub fn call(&mut self, now_ns: u64, op: Op) -> u64 {
        let target = self.target;
        self.call_at(now_ns, target, op)
    }

    /// Sends `op` to `server` first (later retries follow hints as usual).
    pub fn call_at(&mut self, now_ns: u64, server: NodeId, op: Op) -> u64 {
        self.next_seq += 1;
        let seq = self.next_seq;
        let req = ClientRequest { client: self.client, seq, op };
        let resend_at_ns = now_ns + Self::timeout(&req.op);
        self.outbox.push((server, req.clone()));
        self.pending.insert(seq, Pending { req, first_sent_ns: now_ns, resend_at_ns, redirected: false });
        seq
    }

    /// Handles a reply: a final answer, or a redirection to retry.
    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse) -> Option<Answer> {
        let pending = self.pending.get_mut(&resp.seq)?;
        match resp.body {
            Response::Error(ServiceError::NotLeader { leader_hint }) => {
                self.target = match leader_hint.filter(|h| *h != resp.from) {
                    Some(hint) => hint,
                    None => next_after(&self.servers, resp.from),
                };
                pending.resend_at_ns = now_ns + BACKOFF_NS;
                pending.redirected = true;
                None
            }
            Response::Error(ServiceError::Retry) => {
                pending.resend_at_ns = now_ns + BACKOFF_NS;
                pending.redirected = true;
                None
            }
            body => {
                let pending = self.pending.remove(&resp.seq).expect("looked up above");
                Some(Answer { req: pending.req, first_sent_ns: pending.first_sent_ns, body })
            }
        }
    }

    /// Resends whatever is due, with the same sequence number.
    pub fn resend_due(&mut self, now_ns: u64) {
        let mut target = self.target;
        for pending in self.pending.values_mut().filter(|p| p.resend_at_ns <= now_ns) {
            if !pending.redirected {
                target = next_after(&self.servers, target);
            }
            pending.redirected = false;
            pending.resend_at_ns = now_ns + Self::timeout(&pending.req.op);
            self.outbox.push((target, pending.req.clone()));
        }
        self.target = target;
    }

    pub fn next_wake_ns(&self) -> Option<u64> {
        self.pending.values().map(|p| p.resend_at_ns).min()
    }

    pub fn is_pending(&self, seq: u64) -> bool {
        self.pending.contains_key(&seq)
    }

    /// Gives up on every request (the client process "crashed").
    pub fn forget_all(&mut self) {
        self.pending.clear();
        self.outbox.clear();
    }

    pub fn forget(&mut self, seq: u64) {
        self.pending.remove(&seq);
    }

    pub fn servers(&self) -> &[NodeId] {
        &self.servers
    }
}

fn next_after(servers: &[NodeId], current: NodeId) -> NodeId {
    let pos = servers.iter().position(|s| *s == current).unwrap_or(0);
    servers[(pos + 1) % servers.len()]
}
