//! Shared fixture for the state machine's unit tests: a `StateMachine` fed
//! entries at consecutive indexes, with helpers to pull replies and events
//! out of the effects. (Each test crate uses a different subset.)

#![allow(dead_code)]

use std::collections::BTreeMap;

use leasesim_core::bugs::Bugs;
use leasesim_core::service::{ApplyContext, ClientRequest, Command, Effect, MachineSettings, Op, Response, StateMachine};
use leasesim_core::{ClientId, ExpiryStrategy, LeaseId, NS_PER_MS, NS_PER_SEC};

/// Largest election timeout the fixture pretends the cluster uses.
pub const ELECTION_MAX_NS: u64 = 300 * NS_PER_MS;
/// 1.5 × the largest election timeout.
pub const MIN_TTL_NS: u64 = 450 * NS_PER_MS;
pub const TTL_NS: u64 = 2 * NS_PER_SEC;

pub struct Fixture {
    pub sm: StateMachine,
    pub ctx: ApplyContext,
    pub term: u64,
    /// Highest sequence number each client used, so `call` picks the next.
    seqs: BTreeMap<ClientId, u64>,
}

/// The client `grant` uses, so test clients' own sequence numbers stay theirs.
pub const ADMIN: ClientId = 0;

impl Fixture {
    pub fn new() -> Self {
        Self::with(ExpiryStrategy::LeaderMonotonic, Bugs::default())
    }

    pub fn with(expiry: ExpiryStrategy, bugs: Bugs) -> Self {
        let sm = StateMachine::new(MachineSettings::new(expiry, ELECTION_MAX_NS, bugs));
        Fixture { sm, ctx: ApplyContext::default(), term: 1, seqs: BTreeMap::new() }
    }

    /// The index the next entry gets.
    pub fn next_index(&self) -> u64 {
        self.sm.applied_index() + 1
    }

    pub fn apply(&mut self, command: Command) -> Vec<Effect> {
        let index = self.next_index();
        self.sm.apply(index, self.term, Some(&command), &mut self.ctx)
    }

    pub fn noop(&mut self) -> Vec<Effect> {
        let index = self.next_index();
        self.sm.apply(index, self.term, None, &mut self.ctx)
    }

    /// Applies `op` from `client` with sequence number `seq`.
    pub fn request(&mut self, client: ClientId, seq: u64, op: Op) -> Vec<Effect> {
        let highest = self.seqs.entry(client).or_default();
        *highest = (*highest).max(seq);
        let stamp_wall_ns = self.ctx.wall_ns;
        self.apply(Command::Request { req: ClientRequest { client, seq, op }, stamp_wall_ns })
    }

    /// Applies `op` from `client` with a fresh sequence number and returns
    /// the reply owed to it (None: it waits).
    pub fn call(&mut self, client: ClientId, op: Op) -> Option<Response> {
        let seq = self.seqs.get(&client).copied().unwrap_or(0) + 1;
        reply_to(&self.request(client, seq, op), client, seq)
    }

    /// Grants a lease (from [`ADMIN`]: who asks does not matter to leases).
    pub fn grant(&mut self, _for_client: ClientId) -> LeaseId {
        match self.call(ADMIN, Op::LeaseGrant { ttl_ns: TTL_NS, id: None }) {
            Some(Response::LeaseGranted { lease, .. }) => lease,
            other => panic!("grant failed: {other:?}"),
        }
    }

    pub fn put(&mut self, client: ClientId, key: &str, value: &str, lease: Option<LeaseId>) -> Option<Response> {
        self.call(client, Op::Put { key: key.into(), value: value.into(), lease })
    }

    pub fn value(&self, key: &str) -> Option<String> {
        self.sm.kv().get(key).map(|v| String::from_utf8(v.value.clone()).expect("the fixture writes text"))
    }
}

/// The reply owed to `(client, seq)` among `effects`, if any.
pub fn reply_to(effects: &[Effect], client: ClientId, seq: u64) -> Option<Response> {
    effects.iter().find_map(|e| match e {
        Effect::Reply { client: c, seq: s, body } if *c == client && *s == seq => Some(body.clone()),
        _ => None,
    })
}

pub fn replies(effects: &[Effect]) -> Vec<(ClientId, u64, Response)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Reply { client, seq, body } => Some((*client, *seq, body.clone())),
            _ => None,
        })
        .collect()
}

pub fn bugs(name: &str) -> Bugs {
    let mut bugs = Bugs::default();
    bugs.enable(name).expect("known bug");
    bugs
}
