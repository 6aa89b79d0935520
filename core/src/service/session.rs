//! Client sessions (Raft thesis §6.3): per client, the recorded answer of
//! its recent requests, so that a retried `(client, seq)` is answered from
//! the record instead of being applied twice.
//!
//! Memory is bounded by a window of sequence numbers per client: answers of
//! requests more than `window` below the client's highest sequence number are
//! forgotten, and such an old request that is not on record is refused with
//! `SessionExpired` rather than guessed at (the thesis's rule: never apply a
//! request whose fate is unknown). A lock acquire that is still queued is
//! recorded as pending and kept whatever its age, because it is still owed an
//! answer.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::service::Response;
use crate::types::ClientId;

/// How many recent sequence numbers per client keep their answers.
pub const DEFAULT_SESSION_WINDOW: u64 = 64;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Record {
    Answered(Response),
    /// A lock acquire waiting in a queue; answered when granted or dropped.
    Pending,
}

/// What the session knows about a `(client, seq)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Never seen: apply it.
    New,
    Answered(Response),
    Pending,
    /// Too old to tell: refuse (`SessionExpired`).
    Expired,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Session {
    records: BTreeMap<u64, Record>,
    highest_seq: u64,
}

impl Session {
    pub fn records(&self) -> impl Iterator<Item = (&u64, &Record)> {
        self.records.iter()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sessions {
    sessions: BTreeMap<ClientId, Session>,
    window: u64,
    /// Every `(client, seq)` recorded as pending, kept in step with the
    /// records by [`Sessions::record`] (their only writer), so the lock
    /// invariant "every waiter is pending, and nothing else is" costs the
    /// number of waiters, not a scan of every session after every apply.
    pending: BTreeSet<(ClientId, u64)>,
}

impl Sessions {
    pub fn new(window: u64) -> Self {
        Sessions { sessions: BTreeMap::new(), window: window.max(1), pending: BTreeSet::new() }
    }

    pub fn get(&self, client: ClientId) -> Option<&Session> {
        self.sessions.get(&client)
    }

    /// Clients with a session, in id order.
    pub fn clients(&self) -> Vec<ClientId> {
        self.sessions.keys().copied().collect()
    }

    /// Every `(client, seq)` whose record is pending, in order.
    pub fn pending(&self) -> &BTreeSet<(ClientId, u64)> {
        &self.pending
    }

    pub fn lookup(&self, client: ClientId, seq: u64) -> Lookup {
        let Some(session) = self.sessions.get(&client) else { return Lookup::New };
        match session.records.get(&seq) {
            Some(Record::Answered(response)) => Lookup::Answered(response.clone()),
            Some(Record::Pending) => Lookup::Pending,
            None if seq.saturating_add(self.window) <= session.highest_seq => Lookup::Expired,
            None => Lookup::New,
        }
    }

    pub(crate) fn record_pending(&mut self, client: ClientId, seq: u64) {
        self.record(client, seq, Record::Pending);
    }

    pub(crate) fn record_answer(&mut self, client: ClientId, seq: u64, response: Response) {
        self.record(client, seq, Record::Answered(response));
    }

    fn record(&mut self, client: ClientId, seq: u64, record: Record) {
        let window = self.window;
        let session = self.sessions.entry(client).or_default();
        session.highest_seq = session.highest_seq.max(seq);
        if record == Record::Pending {
            self.pending.insert((client, seq));
        } else {
            self.pending.remove(&(client, seq));
        }
        session.records.insert(seq, record);
        let floor = session.highest_seq.saturating_sub(window);
        // Forget answers that fell out of the window; pending acquires stay
        // until they are answered. Only the records at or below the floor
        // are looked at (a walk of the whole window per record was a
        // fortieth of a simulated run); usually one falls out per record.
        let expired: Vec<u64> = session.records.range(..=floor).filter(|(_, r)| !matches!(r, Record::Pending)).map(|(s, _)| *s).collect();
        for s in expired {
            session.records.remove(&s);
        }
    }
}
