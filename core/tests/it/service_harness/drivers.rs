//! Scripted clients: lock clients (lease, keep-alive, acquire, hold,
//! release; sometimes crash or revoke), KV clients (put / get / cas),
//! registry clients (a key attached to a kept-alive lease, until they die),
//! and a manual client tests drive step by step.
//!
//! Every answer a client gets is also reported to the checker (lease
//! acknowledgements with the first send time of the request, the earliest
//! moment the answer can speak for; KV answers, whose calls the harness
//! recorded as they first left).

use std::collections::BTreeMap;

use leasesim_core::service::{ClientRequest, ClientResponse, Op, Response, ServiceError};
use leasesim_core::{ClientId, LeaseId, NodeId, NS_PER_MS};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::checker::ServiceChecker;
use super::rpc::{Answer, Rpc};

/// Feeds what an answer proves to the checker.
pub fn report(checker: &mut ServiceChecker, now_ns: u64, answer: &Answer) {
    match (&answer.req.op, &answer.body) {
        (Op::LeaseGrant { .. }, Response::LeaseGranted { lease, ttl_ns }) => {
            checker.lease_acked(now_ns, answer.req.client, *lease, answer.first_sent_ns, *ttl_ns, false)
        }
        (Op::LeaseKeepAlive { .. }, Response::KeepAlive { lease, ttl_ns }) => {
            checker.lease_acked(now_ns, answer.req.client, *lease, answer.first_sent_ns, *ttl_ns, true)
        }
        (_, body) => checker.kv_returned(now_ns, answer.req.client, answer.req.seq, body),
    }
}

#[derive(Clone, Debug)]
enum LockState {
    NoLease { retry_at_ns: u64 },
    Idle { until_ns: u64 },
    Acquiring { key: String, seq: u64 },
    Holding { key: String, token: u64, until_ns: u64 },
    Releasing { seq: u64 },
    Revoking { seq: u64 },
}

/// Takes a lease, keeps it alive, and cycles acquire / hold / release.
#[derive(Clone, Debug)]
pub struct LockClient {
    pub rpc: Rpc,
    rng: ChaCha8Rng,
    keys: Vec<String>,
    ttl_ns: u64,
    lease: Option<LeaseId>,
    grant_seq: Option<u64>,
    keepalive_seq: Option<u64>,
    next_keepalive_ns: u64,
    state: LockState,
    silent_until_ns: u64,
    /// Per hold: chance the client crashes (goes silent) instead of releasing.
    pub crash_rate: f64,
    /// Per hold: chance it revokes its lease instead of releasing.
    pub revoke_rate: f64,
    /// Keep-alive period as a fraction of the TTL.
    pub keepalive_divisor: u64,
}

impl LockClient {
    pub fn new(id: ClientId, servers: Vec<NodeId>, keys: &[&str], ttl_ns: u64, seed: u64) -> Self {
        LockClient {
            rpc: Rpc::new(id, servers),
            rng: ChaCha8Rng::seed_from_u64(seed ^ (id << 32)),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            ttl_ns,
            lease: None,
            grant_seq: None,
            keepalive_seq: None,
            next_keepalive_ns: 0,
            state: LockState::NoLease { retry_at_ns: 0 },
            silent_until_ns: 0,
            crash_rate: 0.05,
            revoke_rate: 0.05,
            keepalive_divisor: 4,
        }
    }

    pub fn lease(&self) -> Option<LeaseId> {
        self.lease
    }

    /// Stops keeping its lease alive (a crash that loses nothing but time).
    pub fn crash(&mut self, now_ns: u64, for_ns: u64) {
        self.rpc.forget_all();
        self.lease = None;
        self.grant_seq = None;
        self.keepalive_seq = None;
        self.silent_until_ns = now_ns + for_ns;
        self.state = LockState::NoLease { retry_at_ns: self.silent_until_ns };
    }

    fn lost_lease(&mut self, now_ns: u64) {
        if let LockState::Acquiring { seq, .. } = &self.state {
            self.rpc.forget(*seq);
        }
        if let Some(seq) = self.keepalive_seq.take() {
            self.rpc.forget(seq);
        }
        self.lease = None;
        self.state = LockState::NoLease { retry_at_ns: now_ns + 10 * NS_PER_MS };
    }

    pub fn wake(&mut self, now_ns: u64) {
        if now_ns < self.silent_until_ns {
            return;
        }
        self.rpc.resend_due(now_ns);
        if let Some(lease) = self.lease {
            if self.keepalive_seq.is_none() && now_ns >= self.next_keepalive_ns {
                self.keepalive_seq = Some(self.rpc.call(now_ns, Op::LeaseKeepAlive { lease }));
                self.next_keepalive_ns = now_ns + self.ttl_ns / self.keepalive_divisor;
            }
        }
        match self.state.clone() {
            LockState::NoLease { retry_at_ns } if now_ns >= retry_at_ns && self.grant_seq.is_none() => {
                self.grant_seq = Some(self.rpc.call(now_ns, Op::LeaseGrant { ttl_ns: self.ttl_ns, id: None }));
            }
            LockState::Idle { until_ns } if now_ns >= until_ns => {
                let Some(lease) = self.lease else { return };
                let key = self.keys[self.rng.gen_range(0..self.keys.len())].clone();
                let seq = self.rpc.call(now_ns, Op::LockAcquire { key: key.clone(), lease });
                self.state = LockState::Acquiring { key, seq };
            }
            LockState::Holding { key, token, until_ns } if now_ns >= until_ns => {
                let roll: f64 = self.rng.gen();
                if roll < self.crash_rate {
                    self.crash(now_ns, 3 * self.ttl_ns);
                } else if let (true, Some(lease)) = (roll < self.crash_rate + self.revoke_rate, self.lease) {
                    let seq = self.rpc.call(now_ns, Op::LeaseRevoke { lease });
                    self.state = LockState::Revoking { seq };
                } else {
                    let seq = self.rpc.call(now_ns, Op::LockRelease { key, token });
                    self.state = LockState::Releasing { seq };
                }
            }
            _ => {}
        }
    }

    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse, checker: &mut ServiceChecker) {
        if now_ns < self.silent_until_ns {
            return;
        }
        let Some(answer) = self.rpc.on_response(now_ns, resp) else { return };
        report(checker, now_ns, &answer);
        let seq = answer.req.seq;
        if self.grant_seq == Some(seq) {
            self.grant_seq = None;
            match answer.body {
                Response::LeaseGranted { lease, .. } => {
                    self.lease = Some(lease);
                    self.next_keepalive_ns = now_ns + self.ttl_ns / self.keepalive_divisor;
                    self.state = LockState::Idle { until_ns: now_ns };
                }
                _ => self.state = LockState::NoLease { retry_at_ns: now_ns + 50 * NS_PER_MS },
            }
            return;
        }
        if self.keepalive_seq == Some(seq) {
            self.keepalive_seq = None;
            if let Response::Error(ServiceError::LeaseNotFound { lease }) = answer.body {
                if Some(lease) == self.lease {
                    self.lost_lease(now_ns);
                }
            }
            return;
        }
        let think_ns = self.rng.gen_range(0..100) * NS_PER_MS;
        match (&self.state, answer.body) {
            (LockState::Acquiring { key, seq: s }, body) if *s == seq => {
                self.state = match body {
                    Response::LockGranted { token, .. } => {
                        let hold_ns = self.rng.gen_range(20..300) * NS_PER_MS;
                        LockState::Holding { key: key.clone(), token, until_ns: now_ns + hold_ns }
                    }
                    Response::Error(ServiceError::LeaseNotFound { .. }) => return self.lost_lease(now_ns),
                    _ => LockState::Idle { until_ns: now_ns + think_ns },
                };
            }
            (LockState::Releasing { seq: s }, _) if *s == seq => self.state = LockState::Idle { until_ns: now_ns + think_ns },
            (LockState::Revoking { seq: s }, _) if *s == seq => {
                self.lease = None;
                if let Some(seq) = self.keepalive_seq.take() {
                    self.rpc.forget(seq);
                }
                self.state = LockState::NoLease { retry_at_ns: now_ns + think_ns };
            }
            _ => {}
        }
    }

    pub fn next_wake_ns(&self) -> u64 {
        let state_ns = match &self.state {
            LockState::NoLease { retry_at_ns } if self.grant_seq.is_none() => *retry_at_ns,
            LockState::Idle { until_ns } | LockState::Holding { until_ns, .. } => *until_ns,
            _ => u64::MAX,
        };
        let keepalive_ns = if self.lease.is_some() && self.keepalive_seq.is_none() { self.next_keepalive_ns } else { u64::MAX };
        state_ns.min(keepalive_ns).min(self.rpc.next_wake_ns().unwrap_or(u64::MAX))
    }
}

/// Random puts, gets and compare-and-sets on a few keys, one at a time.
#[derive(Clone, Debug)]
pub struct KvClient {
    pub rpc: Rpc,
    rng: ChaCha8Rng,
    keys: Vec<String>,
    /// Send reads to a random server instead of the leader (for the
    /// `stale_follower_reads` bug; correct servers redirect).
    pub read_anywhere: bool,
    in_flight: Option<u64>,
    next_op_ns: u64,
    writes: u64,
    last_value: BTreeMap<String, Option<String>>,
}

impl KvClient {
    pub fn new(id: ClientId, servers: Vec<NodeId>, keys: usize, seed: u64) -> Self {
        KvClient {
            rpc: Rpc::new(id, servers),
            rng: ChaCha8Rng::seed_from_u64(seed ^ (id << 32) ^ 0x6b76),
            keys: (0..keys).map(|k| format!("kv{k}")).collect(),
            read_anywhere: false,
            in_flight: None,
            next_op_ns: 0,
            writes: 0,
            last_value: BTreeMap::new(),
        }
    }

    pub fn wake(&mut self, now_ns: u64) {
        self.rpc.resend_due(now_ns);
        if self.in_flight.is_some() || now_ns < self.next_op_ns {
            return;
        }
        let key = self.keys[self.rng.gen_range(0..self.keys.len())].clone();
        let roll: f64 = self.rng.gen();
        let seq = if roll < 0.4 {
            let op = Op::Get { key };
            if self.read_anywhere {
                let servers = self.rpc.servers().to_vec();
                let server = servers[self.rng.gen_range(0..servers.len())];
                self.rpc.call_at(now_ns, server, op)
            } else {
                self.rpc.call(now_ns, op)
            }
        } else {
            self.writes += 1;
            let value = format!("c{}-{}", self.rpc.client, self.writes);
            if roll < 0.8 {
                self.rpc.call(now_ns, Op::Put { key, value, lease: None })
            } else {
                let expected = self.last_value.get(&key).cloned().flatten();
                self.rpc.call(now_ns, Op::Cas { key, expected, value, lease: None })
            }
        };
        self.in_flight = Some(seq);
    }

    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse, checker: &mut ServiceChecker) {
        let Some(answer) = self.rpc.on_response(now_ns, resp) else { return };
        report(checker, now_ns, &answer);
        match (&answer.req.op, &answer.body) {
            (Op::Get { key }, Response::Value { value, .. }) | (Op::Cas { key, .. }, Response::Cas { current: value, .. }) => {
                self.last_value.insert(key.clone(), value.clone());
            }
            _ => {}
        }
        if self.in_flight == Some(answer.req.seq) {
            self.in_flight = None;
            self.next_op_ns = now_ns + self.rng.gen_range(5..40) * NS_PER_MS;
        }
    }

    pub fn next_wake_ns(&self) -> u64 {
        let op_ns = if self.in_flight.is_none() { self.next_op_ns } else { u64::MAX };
        op_ns.min(self.rpc.next_wake_ns().unwrap_or(u64::MAX))
    }
}

/// Registers `/services/c<id>` under a kept-alive lease, then dies at
/// `dies_at_ns`: its key must disappear with its lease.
#[derive(Clone, Debug)]
pub struct RegistryClient {
    pub rpc: Rpc,
    ttl_ns: u64,
    lease: Option<LeaseId>,
    pending: Option<u64>,
    keepalive_seq: Option<u64>,
    next_keepalive_ns: u64,
    registered: bool,
    pub dies_at_ns: u64,
    dead: bool,
}

impl RegistryClient {
    pub fn new(id: ClientId, servers: Vec<NodeId>, ttl_ns: u64, dies_at_ns: u64) -> Self {
        RegistryClient {
            rpc: Rpc::new(id, servers),
            ttl_ns,
            lease: None,
            pending: None,
            keepalive_seq: None,
            next_keepalive_ns: 0,
            registered: false,
            dies_at_ns,
            dead: false,
        }
    }

    fn key(&self) -> String {
        format!("/services/c{}", self.rpc.client)
    }

    pub fn wake(&mut self, now_ns: u64) {
        if now_ns >= self.dies_at_ns {
            self.rpc.forget_all();
            self.dead = true;
            return;
        }
        self.rpc.resend_due(now_ns);
        match (self.lease, self.pending) {
            (None, None) => self.pending = Some(self.rpc.call(now_ns, Op::LeaseGrant { ttl_ns: self.ttl_ns, id: None })),
            (Some(lease), None) if !self.registered => {
                let op = Op::Put { key: self.key(), value: "up".into(), lease: Some(lease) };
                self.pending = Some(self.rpc.call(now_ns, op));
            }
            _ => {}
        }
        if let Some(lease) = self.lease {
            if self.keepalive_seq.is_none() && now_ns >= self.next_keepalive_ns {
                self.keepalive_seq = Some(self.rpc.call(now_ns, Op::LeaseKeepAlive { lease }));
                self.next_keepalive_ns = now_ns + self.ttl_ns / 4;
            }
        }
    }

    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse, checker: &mut ServiceChecker) {
        if now_ns >= self.dies_at_ns {
            return;
        }
        let Some(answer) = self.rpc.on_response(now_ns, resp) else { return };
        report(checker, now_ns, &answer);
        let seq = answer.req.seq;
        if self.keepalive_seq == Some(seq) {
            self.keepalive_seq = None;
            if let Response::Error(ServiceError::LeaseNotFound { .. }) = answer.body {
                self.lease = None;
                self.registered = false;
            }
            return;
        }
        if self.pending == Some(seq) {
            self.pending = None;
            match answer.body {
                Response::LeaseGranted { lease, .. } => {
                    self.lease = Some(lease);
                    self.next_keepalive_ns = now_ns + self.ttl_ns / 4;
                }
                Response::Done { .. } => self.registered = true,
                Response::Error(ServiceError::LeaseNotFound { .. }) => self.lease = None,
                _ => {}
            }
        }
    }

    pub fn next_wake_ns(&self) -> u64 {
        if self.dead {
            return u64::MAX;
        }
        let mut next = self.rpc.next_wake_ns().unwrap_or(u64::MAX).min(self.dies_at_ns);
        let has_work = self.pending.is_none() && (self.lease.is_none() || !self.registered);
        if has_work {
            next = 0;
        }
        if self.lease.is_some() && self.keepalive_seq.is_none() {
            next = next.min(self.next_keepalive_ns);
        }
        next
    }
}

/// A client a test drives by hand: it sends what it is told and keeps the
/// answers.
#[derive(Clone, Debug)]
pub struct ManualClient {
    pub rpc: Rpc,
    pub answers: BTreeMap<u64, Answer>,
    /// Every reply received, redirections included.
    pub raw: Vec<ClientResponse>,
}

impl ManualClient {
    pub fn new(id: ClientId, servers: Vec<NodeId>) -> Self {
        ManualClient { rpc: Rpc::new(id, servers), answers: BTreeMap::new(), raw: Vec::new() }
    }

    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse, checker: &mut ServiceChecker) {
        self.raw.push(resp.clone());
        if let Some(answer) = self.rpc.on_response(now_ns, resp) {
            report(checker, now_ns, &answer);
            self.answers.insert(answer.req.seq, answer);
        }
    }
}

#[derive(Clone, Debug)]
pub enum Driver {
    Lock(LockClient),
    Kv(KvClient),
    Registry(RegistryClient),
    Manual(ManualClient),
}

impl Driver {
    pub fn wake(&mut self, now_ns: u64) {
        match self {
            Driver::Lock(c) => c.wake(now_ns),
            Driver::Kv(c) => c.wake(now_ns),
            Driver::Registry(c) => c.wake(now_ns),
            Driver::Manual(c) => c.rpc.resend_due(now_ns),
        }
    }

    pub fn on_response(&mut self, now_ns: u64, resp: ClientResponse, checker: &mut ServiceChecker) {
        match self {
            Driver::Lock(c) => c.on_response(now_ns, resp, checker),
            Driver::Kv(c) => c.on_response(now_ns, resp, checker),
            Driver::Registry(c) => c.on_response(now_ns, resp, checker),
            Driver::Manual(c) => c.on_response(now_ns, resp, checker),
        }
    }

    pub fn next_wake_ns(&self) -> u64 {
        match self {
            Driver::Lock(c) => c.next_wake_ns(),
            Driver::Kv(c) => c.next_wake_ns(),
            Driver::Registry(c) => c.next_wake_ns(),
            Driver::Manual(c) => c.rpc.next_wake_ns().unwrap_or(u64::MAX),
        }
    }

    pub fn rpc(&mut self) -> &mut Rpc {
        match self {
            Driver::Lock(c) => &mut c.rpc,
            Driver::Kv(c) => &mut c.rpc,
            Driver::Registry(c) => &mut c.rpc,
            Driver::Manual(c) => &mut c.rpc,
        }
    }

    pub fn take_outbox(&mut self) -> Vec<(NodeId, ClientRequest)> {
        std::mem::take(&mut self.rpc().outbox)
    }
}
