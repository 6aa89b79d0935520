//! The client side of a session (Raft thesis §6.3): numbers requests, finds
//! the leader by following hints, resends pending requests when the leader
//! is lost, and matches replies to requests.
//!
//! A resend reuses the request's sequence number, so the state machine
//! answers it from its session record instead of applying it twice.

use std::collections::BTreeMap;

use crate::service::{ClientRequest, ClientResponse, Op, Response, ServiceError};
use crate::types::{ClientId, NodeId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    pub id: ClientId,
    /// Servers to try, in order, when no leader is known.
    pub servers: Vec<NodeId>,
    /// Resend a request not answered within this long (own clock).
    pub request_timeout_ns: u64,
    /// How many redirects a request may follow before it waits for its
    /// timeout instead (bounds the retry storm while no leader exists).
    pub max_redirects: u32,
    /// First sequence number: a restarted client starts above everything
    /// its previous incarnation used, so its session record never answers a
    /// new request with an old answer.
    pub first_seq: u64,
}

/// A request that got its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub seq: u64,
    pub op: Op,
    pub response: Response,
    /// Own clock when the request was first sent.
    pub first_sent_ns: u64,
    /// Own clock when the copy that was answered was last sent (a resend
    /// restarts what a belief may count from: the server saw it later).
    pub last_sent_ns: u64,
    pub received_ns: u64,
    pub server: NodeId,
}

#[derive(Clone, Debug)]
struct Pending {
    op: Op,
    first_sent_ns: u64,
    last_sent_ns: u64,
    deadline_ns: u64,
    redirects: u32,
}

#[derive(Clone, Debug)]
pub struct Session {
    config: ClientConfig,
    leader_guess: Option<NodeId>,
    /// Round-robin cursor over `config.servers` when no leader is known.
    cursor: usize,
    next_seq: u64,
    pending: BTreeMap<u64, Pending>,
    outbox: Vec<(NodeId, ClientRequest)>,
}

impl Session {
    pub fn new(config: ClientConfig) -> Self {
        assert!(!config.servers.is_empty(), "a client needs at least one server");
        assert!(config.request_timeout_ns > 0);
        let next_seq = config.first_seq.max(1);
        Session { config, leader_guess: None, cursor: 0, next_seq, pending: BTreeMap::new(), outbox: Vec::new() }
    }

    pub fn leader_guess(&self) -> Option<NodeId> {
        self.leader_guess
    }

    /// Sends a new request; returns its sequence number.
    pub fn submit(&mut self, now_ns: u64, op: Op) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let pending =
            Pending { op, first_sent_ns: now_ns, last_sent_ns: now_ns, deadline_ns: now_ns + self.config.request_timeout_ns, redirects: 0 };
        self.pending.insert(seq, pending);
        self.send(seq);
        seq
    }

    /// Forgets a pending request (its answer, if any, will be ignored).
    pub fn cancel(&mut self, seq: u64) {
        self.pending.remove(&seq);
    }

    pub fn is_pending(&self, seq: u64) -> bool {
        self.pending.contains_key(&seq)
    }

    /// A reply arrived. Returns the completion if it answers a pending
    /// request; redirects and retryable errors are handled here.
    pub fn on_response(&mut self, now_ns: u64, response: ClientResponse) -> Option<Completion> {
        assert_eq!(response.client, self.config.id, "reply routed to the wrong client");
        let pending = self.pending.get_mut(&response.seq)?;
        match response.body {
            Response::Error(ServiceError::NotLeader { leader_hint }) => {
                pending.redirects += 1;
                let may_retry_now = pending.redirects <= self.config.max_redirects;
                self.leader_guess = leader_hint.filter(|hint| *hint != response.from);
                if self.leader_guess.is_none() {
                    self.advance_cursor_past(response.from);
                }
                if may_retry_now {
                    self.resend(now_ns, response.seq);
                }
                None
            }
            Response::Error(ServiceError::Retry) => {
                self.resend(now_ns, response.seq);
                None
            }
            body => {
                self.leader_guess = Some(response.from);
                let pending = self.pending.remove(&response.seq).expect("checked above");
                Some(Completion {
                    seq: response.seq,
                    op: pending.op,
                    response: body,
                    first_sent_ns: pending.first_sent_ns,
                    last_sent_ns: pending.last_sent_ns,
                    received_ns: now_ns,
                    server: response.from,
                })
            }
        }
    }

    /// Resends requests whose timeout passed, to the next server: the
    /// leader may be gone.
    pub fn tick(&mut self, now_ns: u64) {
        let expired: Vec<u64> = self.pending.iter().filter(|(_, p)| p.deadline_ns <= now_ns).map(|(seq, _)| *seq).collect();
        if expired.is_empty() {
            return;
        }
        // One lost leader explains every timeout at once: move on once.
        if let Some(leader) = self.leader_guess.take() {
            self.advance_cursor_past(leader);
        } else {
            self.cursor = (self.cursor + 1) % self.config.servers.len();
        }
        for seq in expired {
            if let Some(pending) = self.pending.get_mut(&seq) {
                pending.redirects = 0;
            }
            self.resend(now_ns, seq);
        }
    }

    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.pending.values().map(|p| p.deadline_ns).min()
    }

    /// Requests to send now, with their destination.
    pub fn take_sends(&mut self) -> Vec<(NodeId, ClientRequest)> {
        std::mem::take(&mut self.outbox)
    }

    fn resend(&mut self, now_ns: u64, seq: u64) {
        let timeout_ns = self.config.request_timeout_ns;
        if let Some(pending) = self.pending.get_mut(&seq) {
            pending.last_sent_ns = now_ns;
            pending.deadline_ns = now_ns + timeout_ns;
            self.send(seq);
        }
    }

    fn send(&mut self, seq: u64) {
        let pending = &self.pending[&seq];
        let target = self.leader_guess.unwrap_or(self.config.servers[self.cursor]);
        let request = ClientRequest { client: self.config.id, seq, op: pending.op.clone() };
        self.outbox.push((target, request));
    }

    fn advance_cursor_past(&mut self, server: NodeId) {
        let servers = &self.config.servers;
        if let Some(position) = servers.iter().position(|s| *s == server) {
            self.cursor = (position + 1) % servers.len();
        } else {
            self.cursor = (self.cursor + 1) % servers.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::Response;

    fn session() -> Session {
        Session::new(ClientConfig { id: 7, servers: vec![1, 2, 3], request_timeout_ns: 100, max_redirects: 2, first_seq: 1 })
    }

    fn reply(seq: u64, from: NodeId, body: Response) -> ClientResponse {
        ClientResponse { client: 7, seq, from, body }
    }

    #[test]
    fn first_request_goes_to_the_first_server() {
        let mut s = session();
        let seq = s.submit(0, Op::LeaseList);
        assert_eq!(seq, 1);
        let sends = s.take_sends();
        assert_eq!(sends.len(), 1);
        assert_eq!(sends[0].0, 1);
        assert_eq!(sends[0].1.seq, 1);
    }

    /// Every new request gets the next sequence number (a resend reuses
    /// its own): two requests sharing one would be answered from one
    /// session record.
    #[test]
    fn each_request_gets_the_next_sequence_number_and_stays_pending_until_answered() {
        let mut s = Session::new(ClientConfig { id: 7, servers: vec![1, 2, 3], request_timeout_ns: 100, max_redirects: 2, first_seq: 5 });
        assert_eq!(s.submit(0, Op::LeaseList), 5);
        assert_eq!(s.submit(0, Op::LeaseList), 6);
        assert_eq!(s.submit(0, Op::LeaseList), 7);
        assert_eq!(s.take_sends().iter().map(|(_, r)| r.seq).collect::<Vec<_>>(), vec![5, 6, 7]);
        assert!(s.is_pending(6));
        assert!(s.on_response(1, reply(6, 1, Response::Leases { ids: vec![] })).is_some());
        assert!(!s.is_pending(6));
        assert!(s.is_pending(5) && s.is_pending(7));
    }

    #[test]
    fn follows_a_leader_hint_and_remembers_the_leader() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        s.take_sends();
        let hint = Response::Error(ServiceError::NotLeader { leader_hint: Some(3) });
        assert!(s.on_response(5, reply(1, 1, hint)).is_none());
        let sends = s.take_sends();
        assert_eq!(sends[0].0, 3, "follows the hint");
        assert_eq!(sends[0].1.seq, 1, "a retry keeps its sequence number");
        let done = s.on_response(9, reply(1, 3, Response::Leases { ids: vec![] })).unwrap();
        assert_eq!((done.first_sent_ns, done.last_sent_ns, done.received_ns), (0, 5, 9));
        assert_eq!(s.leader_guess(), Some(3));
        s.submit(10, Op::LeaseList);
        assert_eq!(s.take_sends()[0].0, 3);
    }

    #[test]
    fn redirects_are_bounded() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        s.take_sends();
        for round in 0..3 {
            let hint = Response::Error(ServiceError::NotLeader { leader_hint: None });
            s.on_response(round, reply(1, 1 + round % 3, hint));
        }
        assert_eq!(s.take_sends().len(), 2, "the third redirect waits for the timeout");
        s.tick(200);
        assert_eq!(s.take_sends().len(), 1, "the timeout resends");
    }

    #[test]
    fn timeout_moves_on_from_a_silent_leader() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        s.take_sends();
        s.tick(99);
        assert!(s.take_sends().is_empty());
        s.tick(100);
        let sends = s.take_sends();
        assert_eq!(sends[0].0, 2, "server 1 did not answer: try server 2");
        assert_eq!(s.next_deadline_ns(), Some(200));
    }

    #[test]
    fn duplicate_and_stale_replies_are_ignored() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        assert!(s.on_response(1, reply(1, 1, Response::Leases { ids: vec![] })).is_some());
        assert!(s.on_response(2, reply(1, 1, Response::Leases { ids: vec![] })).is_none());
        assert!(s.on_response(2, reply(42, 1, Response::Leases { ids: vec![] })).is_none());
    }

    fn session_of_four() -> Session {
        Session::new(ClientConfig { id: 7, servers: vec![1, 2, 3, 4], request_timeout_ns: 100, max_redirects: 2, first_seq: 1 })
    }

    /// A timeout on the leader guess means that server may be gone: the
    /// retry goes to the server after it in the list, not back to it nor to
    /// an arbitrary one.
    #[test]
    fn a_timeout_on_the_leader_guess_retries_the_server_after_it() {
        let mut s = session_of_four();
        s.submit(0, Op::LeaseList);
        let hint = Response::Error(ServiceError::NotLeader { leader_hint: Some(3) });
        s.on_response(1, reply(1, 1, hint));
        assert_eq!(s.take_sends().last().map(|(to, _)| *to), Some(3), "follows the hint");
        s.tick(101);
        assert_eq!(s.take_sends().iter().map(|(to, _)| *to).collect::<Vec<_>>(), vec![4]);
    }

    /// A leader guess outside the client's list (a spare that joined and
    /// leads) gives no position to step past: the cursor steps by one.
    #[test]
    fn a_timeout_on_a_leader_outside_the_list_steps_the_cursor_by_one() {
        let mut s = session_of_four();
        s.submit(0, Op::LeaseList);
        let hint = Response::Error(ServiceError::NotLeader { leader_hint: Some(9) });
        s.on_response(1, reply(1, 1, hint));
        assert_eq!(s.take_sends().last().map(|(to, _)| *to), Some(9), "follows the hint");
        s.tick(101);
        assert_eq!(s.take_sends().iter().map(|(to, _)| *to).collect::<Vec<_>>(), vec![2]);
    }

    /// A request the workload gave up on is forgotten: never re-sent on a
    /// timeout, and a late reply to it completes nothing.
    #[test]
    fn a_cancelled_request_is_neither_resent_nor_completed() {
        let mut s = session();
        let seq = s.submit(0, Op::LeaseList);
        s.take_sends();
        s.cancel(seq);
        assert!(!s.is_pending(seq));
        s.tick(1_000);
        assert!(s.take_sends().is_empty(), "nothing to resend");
        assert!(s.on_response(1_001, reply(seq, 1, Response::Leases { ids: vec![] })).is_none());
    }
}
