//! The client side of a session (Raft thesis §6.3): numbers requests, finds
//! the leader by following hints, resends pending requests when the leader
//! is lost, and matches replies to requests.
//!
//! A resend reuses the request's sequence number, so the state machine
//! answers it from its session record instead of applying it twice.
//!
//! A timeout is evidence against one server only: the one the request was
//! last sent to. Charging it to whatever the leader guess is by then drops a
//! leader found (and heard from) after that send, and sends the retry back
//! towards the silent server (reports/sim-vs-real.md, "failover-stall
//! traced", a: membership-change seeds 0 and 3 waited two and three
//! timeouts where one does).

use std::collections::{BTreeMap, BTreeSet};

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
    /// Where the copy now awaited went: a timeout says nothing about any
    /// other server.
    sent_to: NodeId,
}

#[derive(Clone, Debug)]
pub struct Session {
    config: ClientConfig,
    leader_guess: Option<NodeId>,
    /// Own clock when the leader guess was learned (a hint naming a new
    /// server) or last heard from (any answer from it). A hint repeating
    /// the guess confirms nothing: it may be as stale as the guess.
    guess_since_ns: u64,
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
        Session { config, leader_guess: None, guess_since_ns: 0, cursor: 0, next_seq, pending: BTreeMap::new(), outbox: Vec::new() }
    }

    pub fn leader_guess(&self) -> Option<NodeId> {
        self.leader_guess
    }

    /// Sends a new request; returns its sequence number.
    pub fn submit(&mut self, now_ns: u64, op: Op) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let deadline_ns = now_ns + self.config.request_timeout_ns;
        let sent_to = self.target();
        let pending = Pending { op, first_sent_ns: now_ns, last_sent_ns: now_ns, deadline_ns, redirects: 0, sent_to };
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
                self.learn_guess(now_ns, leader_hint.filter(|hint| *hint != response.from));
                if self.leader_guess.is_none() {
                    self.advance_cursor_past(response.from);
                }
                if may_retry_now {
                    self.resend(now_ns, response.seq);
                }
                None
            }
            Response::Error(ServiceError::Retry) => {
                if self.leader_guess == Some(response.from) {
                    self.guess_since_ns = now_ns;
                }
                self.resend(now_ns, response.seq);
                None
            }
            body => {
                self.leader_guess = Some(response.from);
                self.guess_since_ns = now_ns;
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

    /// Resends requests whose timeout passed: the server each was last sent
    /// to may be gone. Only those servers are suspected: a leader guess
    /// learned since (another request was answered or redirected there)
    /// stays, and the cursor steps off a suspect, never onto one.
    pub fn tick(&mut self, now_ns: u64) {
        let expired: Vec<u64> = self.pending.iter().filter(|(_, p)| p.deadline_ns <= now_ns).map(|(seq, _)| *seq).collect();
        if expired.is_empty() {
            return;
        }
        let silent: BTreeSet<NodeId> = expired.iter().map(|seq| self.pending[seq].sent_to).collect();
        // Only a copy sent to the guess since it was learned or last heard
        // from refutes it.
        let refutes = |p: &Pending, leader: NodeId| p.sent_to == leader && p.last_sent_ns >= self.guess_since_ns;
        let refuted = self.leader_guess.filter(|leader| expired.iter().any(|seq| refutes(&self.pending[seq], *leader)));
        match (refuted, self.leader_guess) {
            (Some(leader), _) => {
                self.leader_guess = None;
                self.advance_cursor_past(leader);
                self.step_cursor_off(&silent);
            }
            (None, Some(_)) => {}
            (None, None) => self.step_cursor_off(&silent),
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

    /// Where a request goes now: the leader guess, else the cursor's server.
    fn target(&self) -> NodeId {
        self.leader_guess.unwrap_or(self.config.servers[self.cursor])
    }

    fn send(&mut self, seq: u64) {
        let target = self.target();
        let pending = self.pending.get_mut(&seq).expect("only pending requests are sent");
        pending.sent_to = target;
        let request = ClientRequest { client: self.config.id, seq, op: pending.op.clone() };
        self.outbox.push((target, request));
    }

    fn learn_guess(&mut self, now_ns: u64, guess: Option<NodeId>) {
        if guess != self.leader_guess {
            self.guess_since_ns = now_ns;
        }
        self.leader_guess = guess;
    }

    fn advance_cursor_past(&mut self, server: NodeId) {
        let servers = &self.config.servers;
        if let Some(position) = servers.iter().position(|s| *s == server) {
            self.cursor = (position + 1) % servers.len();
        } else {
            self.cursor = (self.cursor + 1) % servers.len();
        }
    }

    /// If the cursor is on a server in `silent`, moves it to the next one
    /// that is not (by one if all are: go round). A cursor that has moved
    /// since the send (a redirect without a hint) stays where it is.
    fn step_cursor_off(&mut self, silent: &BTreeSet<NodeId>) {
        let servers = &self.config.servers;
        let n = servers.len();
        if !silent.contains(&servers[self.cursor]) {
            return;
        }
        let next = (1..=n).map(|k| (self.cursor + k) % n).find(|i| !silent.contains(&servers[*i]));
        self.cursor = next.unwrap_or((self.cursor + 1) % n);
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

    fn destinations(s: &mut Session) -> Vec<NodeId> {
        s.take_sends().iter().map(|(to, _)| *to).collect()
    }

    fn not_leader(hint: Option<NodeId>) -> Response {
        Response::Error(ServiceError::NotLeader { leader_hint: hint })
    }

    /// A session of servers 1, 2, 3 that found the leader s3 at time 2
    /// (redirected by s1, answered by s3) and has nothing pending.
    fn led_by_s3() -> Session {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        s.on_response(1, reply(1, 1, not_leader(Some(3))));
        assert!(s.on_response(2, reply(1, 3, Response::Leases { ids: vec![] })).is_some());
        s.take_sends();
        s
    }

    /// membership-change seed 0, client c1 (reports/sim-vs-real.md,
    /// "failover-stall traced", a): its keep-alive went to the leader s3
    /// just before s3 crashed; its release, timed out at s3, found the new
    /// leader s4 (outside the client's list) through s2's hint and was
    /// answered there. When the keep-alive times out, only s3 is to blame:
    /// it goes to s4, which has just answered, not round the list onto s3.
    #[test]
    fn a_timeout_keeps_a_leader_found_after_the_timed_out_request_was_sent() {
        let mut s = led_by_s3();
        let release = s.submit(10, Op::LeaseList);
        let keep_alive = s.submit(20, Op::LeaseList);
        assert_eq!(destinations(&mut s), vec![3, 3], "both go to the leader s3, which then crashes");
        s.tick(110);
        assert_eq!(destinations(&mut s), vec![1], "the release timed out at s3: on to the next server");
        s.on_response(111, reply(release, 1, not_leader(None)));
        s.on_response(112, reply(release, 2, not_leader(Some(4))));
        assert_eq!(destinations(&mut s), vec![2, 4]);
        assert!(s.on_response(113, reply(release, 4, Response::Leases { ids: vec![] })).is_some());
        s.tick(120);
        let sends = s.take_sends();
        assert_eq!(sends.iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(4, keep_alive)], "to the leader found since");
        assert_eq!(s.leader_guess(), Some(4));
    }

    /// A guess that answered after the request was sent to it is alive: the
    /// copy was lost, not the server, and the retry goes back to it.
    #[test]
    fn a_timeout_keeps_a_guess_heard_from_since_the_send() {
        let mut s = led_by_s3();
        let slow = s.submit(10, Op::LeaseList);
        let quick = s.submit(20, Op::LeaseList);
        assert!(s.on_response(30, reply(quick, 3, Response::Leases { ids: vec![] })).is_some());
        s.take_sends();
        s.tick(110);
        assert_eq!(s.take_sends().iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(3, slow)]);
    }

    /// With no leader known, each timeout moves the request to the server
    /// after the silent one, wrapping at the list's end: every server is
    /// tried in turn, from every cursor position.
    #[test]
    fn without_a_guess_successive_timeouts_walk_round_the_list() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        assert_eq!(destinations(&mut s), vec![1]);
        s.tick(100);
        assert_eq!(destinations(&mut s), vec![2]);
        s.tick(200);
        assert_eq!(destinations(&mut s), vec![3]);
        s.tick(300);
        assert_eq!(destinations(&mut s), vec![1], "past the last server, back to the first");
    }

    /// When copies to every server time out at once there is no server to
    /// step onto: the cursor goes round by one, from the last server to the
    /// first.
    #[test]
    fn when_every_server_timed_out_the_cursor_goes_round_by_one() {
        let mut s = session();
        s.submit(0, Op::LeaseList);
        let second = s.submit(1, Op::LeaseList);
        s.on_response(2, reply(second, 1, not_leader(None)));
        let third = s.submit(3, Op::LeaseList);
        s.on_response(4, reply(third, 2, not_leader(None)));
        assert_eq!(destinations(&mut s), vec![1, 1, 2, 2, 3], "one copy awaited at each server, the cursor on the last");
        s.tick(110);
        assert_eq!(destinations(&mut s), vec![1, 1, 1]);
    }

    /// A `Retry` from the guess is an answer from it: the guess is alive,
    /// so a copy sent to it before that answer and then timed out does not
    /// refute it, and the retry goes back to it.
    #[test]
    fn a_retry_from_the_guess_saves_it_from_an_earlier_copys_timeout() {
        let mut s = led_by_s3();
        let slow = s.submit(10, Op::LeaseList);
        let busy = s.submit(20, Op::LeaseList);
        assert!(s.on_response(30, reply(busy, 3, Response::Error(ServiceError::Retry))).is_none());
        assert_eq!(s.take_sends().iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(3, slow), (3, busy), (3, busy)]);
        s.tick(110);
        assert_eq!(s.take_sends().iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(3, slow)]);
        assert_eq!(s.leader_guess(), Some(3));
    }

    /// A `Retry` from another server says nothing about the guess: the
    /// timeout of a copy sent to the guess still drops it.
    #[test]
    fn a_retry_from_another_server_does_not_save_the_guess() {
        let mut s = led_by_s3();
        let stuck = s.submit(10, Op::LeaseList);
        let other = s.submit(20, Op::LeaseList);
        s.on_response(30, reply(other, 2, Response::Error(ServiceError::Retry)));
        s.take_sends();
        s.tick(110);
        assert_eq!(s.take_sends().iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(1, stuck)], "past s3, wrapping to s1");
        assert_eq!(s.leader_guess(), None);
    }

    /// A hint that repeats the guess is no news (its sender may not have
    /// noticed the crash yet): the timeout still drops the guess.
    #[test]
    fn a_hint_repeating_the_guess_does_not_save_it_from_a_timeout() {
        let mut s = led_by_s3();
        let stuck = s.submit(10, Op::LeaseList);
        let other = s.submit(20, Op::LeaseList);
        s.on_response(30, reply(other, 2, not_leader(Some(3))));
        s.take_sends();
        s.tick(110);
        let sends = s.take_sends();
        assert_eq!(sends.iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(1, stuck)], "past s3, wrapping to s1");
        assert_eq!(s.leader_guess(), None);
    }

    /// membership-change seed 4, client c2: its keep-alive timed out at the
    /// crashed leader s3; the cursor wraps to s1, removed earlier, which
    /// now names no leader (`Server::leader_hint`), so the request moves on
    /// to s2 and through its hint to the new leader s4 instead of back to
    /// s3, as it did three times while s1 still named s3.
    #[test]
    fn after_a_timeout_at_the_crashed_leader_a_removed_server_passes_the_request_on() {
        let mut s = led_by_s3();
        let keep_alive = s.submit(10, Op::LeaseList);
        assert_eq!(destinations(&mut s), vec![3]);
        s.tick(110);
        assert_eq!(destinations(&mut s), vec![1], "past s3 the list wraps to s1");
        s.on_response(111, reply(keep_alive, 1, not_leader(None)));
        assert_eq!(destinations(&mut s), vec![2], "no hint from s1: the next server");
        s.on_response(112, reply(keep_alive, 2, not_leader(Some(4))));
        assert_eq!(destinations(&mut s), vec![4]);
    }

    /// Without a guess, a timeout moves the cursor only off the servers the
    /// expired requests went to: a cursor that a hintless redirect already
    /// moved on stays.
    #[test]
    fn without_a_guess_the_cursor_steps_off_the_silent_server_only() {
        let mut s = session();
        let first = s.submit(0, Op::LeaseList);
        let second = s.submit(10, Op::LeaseList);
        assert_eq!(destinations(&mut s), vec![1, 1]);
        s.on_response(20, reply(second, 1, not_leader(None)));
        assert_eq!(destinations(&mut s), vec![2]);
        s.tick(100);
        assert_eq!(s.take_sends().iter().map(|(to, r)| (*to, r.seq)).collect::<Vec<_>>(), vec![(2, first)]);
    }
}
