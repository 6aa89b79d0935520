//! The replicated state machine: applies committed entries, in index order,
//! to the KV store, the lease table, the lock queues and the client sessions.
//!
//! Applying is deterministic given the entry and this server's
//! [`ApplyContext`]; under `leader-monotonic` the context does not matter, so
//! every server ends in the same state (Raft's state machine safety carried up
//! to the service). Under `leader-stamped-wall` each server first expires the
//! leases whose stamp its own wall clock has passed (the Raft lock-service
//! design: "each node checks the expiry time before modifying its local lock
//! state"), so servers with skewed clocks may disagree: that divergence is what
//! the clock-skew research measures. Skew is not the only source: a server that
//! applies an entry late (catching up after an isolation, or replaying its log
//! after a restart) judges it by its clock at that later moment, as the Raft
//! lock-service design does ("a follower might apply the log entry
//! after the lock has already expired").
//!
//! Operations that end a lease or free a lock only mark keys; grants happen
//! once per key at the end of the entry, so one entry grants a key at most
//! once and the token (the entry's index) is unique per key.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::bugs::Bugs;
use crate::raft::{Entry, Payload};
use crate::service::auth::AuthStore;
use crate::service::effects::{Batch, Effect};
use crate::service::kv::Kv;
use crate::service::lease::{Lease, Leases};
use crate::service::lock::{Holder, Locks, Waiter};
use crate::service::session::{Lookup, Sessions, DEFAULT_SESSION_WINDOW};
use crate::service::writer_clock::WriterClocks;
use crate::service::{ClientRequest, Command, Op, Response, ServiceError};
use crate::service::{ReleaseCause, RevokeCause, ServiceEvent};
use crate::types::{ClientId, ExpiryStrategy, LeaseId, LogIndex, Term};

/// Cluster-wide settings the state machine applies by. Every server must use
/// the same, or their states diverge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineSettings {
    pub expiry: ExpiryStrategy,
    /// Smallest TTL a grant may ask for. A lease shorter than an election
    /// could expire merely because the cluster was electing a leader; etcd
    /// sets its minimum to 1.5 × the election timeout (`minLeaseTTL`).
    pub min_ttl_ns: u64,
    /// Sequence numbers per client whose answers are kept (see `session`).
    pub session_window: u64,
    pub bugs: Bugs,
}

/// The shortest lease a cluster grants: 1.5 × its longest election timeout
/// (etcd's `minLeaseTTL` rule). Scenario and study files are checked
/// against the same rule before any run.
pub fn min_ttl_ns(election_timeout_max_ns: u64) -> u64 {
    election_timeout_max_ns.saturating_mul(3) / 2
}

impl MachineSettings {
    /// Settings with the etcd-style minimum TTL for `election_timeout_max_ns`.
    pub fn new(expiry: ExpiryStrategy, election_timeout_max_ns: u64, bugs: Bugs) -> Self {
        MachineSettings { expiry, min_ttl_ns: min_ttl_ns(election_timeout_max_ns), session_window: DEFAULT_SESSION_WINDOW, bugs }
    }
}

/// What this server brings to an apply besides the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyContext {
    /// This server's wall clock (`leader-stamped-wall` judges expiry by it).
    pub wall_ns: u64,
    /// This process's own count of lock grants since it started. Used only by
    /// the planted bug `token_from_local_counter`; not replicated, so it
    /// restarts from zero with the process.
    pub local_grants: u64,
    /// Every this many indices the whole state joins the digest chain
    /// (every server of a cluster must use the same; see
    /// [`FULL_STATE_DIGEST_EVERY`]).
    pub full_state_digest_every: LogIndex,
    /// Every this many indices the structural invariants are checked (in
    /// builds that check invariants at all).
    pub invariants_every: LogIndex,
    /// Both walks above cost time in the size of the state (keys and
    /// their history); with this on, both periods are multiplied by the
    /// power of two that keeps the walking per entry near
    /// [`WALK_RECORDS_PER_STEP`] records, so a real member holding many
    /// keys does not pay a whole-state walk every few entries. The period
    /// is a function of the index and the state alone, so members holding
    /// the same state still chain the same digests.
    pub scale_walks_with_state: bool,
}

/// With [`ApplyContext::scale_walks_with_state`], each doubling of the
/// periods comes with this many more records (keys, history changes,
/// leases) in the state.
pub const WALK_RECORDS_PER_STEP: u64 = 1024;

impl Default for ApplyContext {
    fn default() -> Self {
        ApplyContext {
            wall_ns: 0,
            local_grants: 0,
            full_state_digest_every: FULL_STATE_DIGEST_EVERY,
            invariants_every: 1,
            scale_walks_with_state: false,
        }
    }
}

/// A stored value as the simulator's text API answers it (values written
/// through it are text; bytes from etcd's API are shown lossily).
fn text(value: &[u8]) -> String {
    String::from_utf8_lossy(value).into_owned()
}

/// The service state: the Raft snapshot type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateMachine {
    /// Boxed: a snapshot carries the whole state machine inside a peer
    /// message, and the settings inline made every message on the
    /// simulated wire larger (the snapshot variant sets its size).
    pub(crate) settings: Box<MachineSettings>,
    pub(crate) kv: Kv,
    pub(crate) leases: Leases,
    pub(crate) locks: Locks,
    pub(crate) sessions: Sessions,
    /// `writer-clock`: the latest time each client acknowledged (the Juju lease design).
    pub(crate) writer_clocks: WriterClocks,
    pub(crate) applied_index: LogIndex,
    pub(crate) applied_term: Term,
    /// A digest of every state this machine has been in, chained entry by
    /// entry (see [`StateMachine::applied_digest`]). Part of the state, so
    /// a snapshot carries it and an install or a restart resumes the chain.
    #[serde(default)]
    pub(crate) applied_digest: u64,
    /// etcd's users, roles and permissions (empty unless a node's Auth
    /// service wrote to it). Boxed: the state travels inside snapshot
    /// messages, which should not grow for a store most runs never use.
    #[serde(default)]
    pub(crate) auth: Box<AuthStore>,
}

/// Every this many indices the whole state joins the digest chain, so that
/// a change no effect names (a session record, a change made outside the
/// log) still shows within this many entries. The default (the
/// simulator's); a server may set another in its `ServerConfig`
/// (leasesim-node does, because the walk costs time in the size of the
/// state, history included).
pub const FULL_STATE_DIGEST_EVERY: LogIndex = 32;

impl StateMachine {
    pub fn new(settings: MachineSettings) -> Self {
        let sessions = Sessions::new(settings.session_window);
        StateMachine {
            settings: Box::new(settings),
            kv: Kv::default(),
            leases: Leases::default(),
            locks: Locks::default(),
            sessions,
            writer_clocks: WriterClocks::default(),
            applied_index: 0,
            applied_term: 0,
            applied_digest: 0,
            auth: Box::default(),
        }
    }

    pub fn settings(&self) -> &MachineSettings {
        &self.settings
    }
    pub fn kv(&self) -> &Kv {
        &self.kv
    }
    pub fn leases(&self) -> &Leases {
        &self.leases
    }
    pub fn locks(&self) -> &Locks {
        &self.locks
    }
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }
    pub fn auth(&self) -> &AuthStore {
        &self.auth
    }
    /// Index of the last applied entry (0: none).
    pub fn applied_index(&self) -> LogIndex {
        self.applied_index
    }
    pub fn applied_term(&self) -> Term {
        self.applied_term
    }

    /// The replica-divergence digest as of the applied index: XXH3 over the
    /// previous digest, the entry's index and term and the effects applying
    /// it had (every lease ended, lock granted, reply owed…), and, every
    /// [`FULL_STATE_DIGEST_EVERY`] indices, the whole state (keys, leases,
    /// locks and queues, sessions, writer clocks). Two servers that applied
    /// the same entries to the same state hold the same digest at every
    /// index; once they differ the chain keeps them apart, so comparing any
    /// later index shows it (FoundationDB's consistency check, TigerBeetle's
    /// state checker, at the cost of one small hash per entry).
    pub fn applied_digest(&self) -> u64 {
        self.applied_digest
    }

    /// `base`, or with `scaled` `base` × the power of two at or above
    /// records / [`WALK_RECORDS_PER_STEP`] (see
    /// [`ApplyContext::scale_walks_with_state`]).
    fn walk_period(&self, base: LogIndex, scaled: bool) -> LogIndex {
        let base = base.max(1);
        if !scaled {
            return base;
        }
        let records = (self.kv.len() + self.kv.history().len() + self.leases.len()) as u64;
        base.saturating_mul((records / WALK_RECORDS_PER_STEP).max(1).next_power_of_two())
    }

    fn chain_digest(&self, index: LogIndex, term: Term, effects: &[Effect], full_every: LogIndex) -> u64 {
        // The same digest as streaming into `Xxh3`, gathered in chunks.
        let mut hasher = crate::byte_hash::ChunkedHasher::new();
        self.applied_digest.hash(&mut hasher);
        index.hash(&mut hasher);
        term.hash(&mut hasher);
        effects.hash(&mut hasher);
        if index.is_multiple_of(full_every.max(1)) {
            self.kv.hash_gathered(&mut hasher);
            self.leases.hash(&mut hasher);
            self.locks.hash(&mut hasher);
            self.sessions.hash(&mut hasher);
            self.writer_clocks.hash(&mut hasher);
            // Only once used, so that runs without auth (every simulated
            // run) keep the digests they had before the store existed.
            if !self.auth.is_empty() {
                self.auth.hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// Applies one log entry (no-ops and configuration entries only advance
    /// the applied index, and give `leader-stamped-wall` a moment to judge).
    pub fn apply_entry(&mut self, entry: &Entry<Command>, ctx: &mut ApplyContext) -> Vec<Effect> {
        let command = match &entry.payload {
            Payload::Command(command) => Some(command),
            Payload::Noop | Payload::Config(_) => None,
        };
        self.apply(entry.index, entry.term, command, ctx)
    }

    /// Applies the entry at `index`. Entries must come in increasing index
    /// order (gaps only after a snapshot install replaced the state).
    pub fn apply(&mut self, index: LogIndex, term: Term, command: Option<&Command>, ctx: &mut ApplyContext) -> Vec<Effect> {
        invariant!(index > self.applied_index, "entry {index} applied after {}", self.applied_index);
        let mut batch = Batch::new(index);
        if self.settings.expiry == ExpiryStrategy::LeaderStampedWall {
            for lease in self.leases.wall_expired(ctx.wall_ns) {
                self.end_lease(lease, RevokeCause::WallClockExpiry, &mut batch);
            }
        }
        match command {
            None => {}
            Some(Command::Request { req, stamp_wall_ns }) => {
                let stamp_wall_ns = *stamp_wall_ns;
                self.apply_logged(req, &mut batch, |sm, batch| sm.execute(req, stamp_wall_ns, batch));
            }
            Some(Command::Refresh { req, lease, expiry_wall_ns }) => {
                // Not run through the session: a refresh only ever moves the
                // stamp forward, so applying a retry again is harmless, and
                // its answer must say whether the lease lives *now*; a
                // recorded "alive" replayed after a revoke would be a
                // keep-alive answered live after the revoke.
                let body = self.refresh(*lease, *expiry_wall_ns, &mut batch);
                batch.push(Effect::Reply { client: req.client, seq: req.seq, body });
            }
            // An Expire for a lease already gone (revoked meanwhile, or
            // proposed twice across a leader change) changes nothing.
            Some(Command::Expire { lease }) => self.end_lease(*lease, RevokeCause::Expire, &mut batch),
            Some(Command::Checkpoint { remaining }) => self.checkpoint(remaining),
            Some(Command::WriterExpire { lease, expiry_ns, writer_ns }) => {
                self.writer_expire(*lease, *expiry_ns, *writer_ns, &mut batch);
            }
            Some(Command::MeasuredExpire { lease, renewed_index }) => {
                self.measured_expire(*lease, *renewed_index, &mut batch);
            }
        }
        self.grant_waiting(&mut batch, ctx);
        self.applied_index = index;
        self.applied_term = term;
        let digest_every = self.walk_period(ctx.full_state_digest_every, ctx.scale_walks_with_state);
        self.applied_digest = self.chain_digest(index, term, &batch.effects, digest_every);
        if index.is_multiple_of(self.walk_period(ctx.invariants_every, ctx.scale_walks_with_state)) {
            invariant_eq!(self.check_invariants(), Ok(()), "after applying index {index}");
        }
        batch.effects
    }

    /// Ends `lease` on this server alone, outside the log. Only the planted bug
    /// `follower_expires_leases` calls this: the correct design never changes
    /// replicated state except by applying an entry (the consistent-core lease
    /// design).
    pub fn expire_locally(&mut self, lease: LeaseId, ctx: &mut ApplyContext) -> Vec<Effect> {
        let mut batch = Batch::new(self.applied_index);
        if self.leases.contains(lease) {
            self.end_lease(lease, RevokeCause::Expire, &mut batch);
            self.grant_waiting(&mut batch, ctx);
        }
        batch.effects
    }

    /// Answers a read from this server's applied state.
    pub fn read_value(&self, key: &str) -> Response {
        match self.kv.get(key) {
            Some(v) => Response::Value { value: Some(text(&v.value)), revision: v.mod_revision },
            None => Response::Value { value: None, revision: 0 },
        }
    }

    pub fn lease_list(&self) -> Response {
        Response::Leases { ids: self.leases.ids() }
    }

    /// A `TimeToLive` answer; the caller supplies the remaining time because
    /// the replicated state keeps no clock (`leader-monotonic`).
    pub fn time_to_live(&self, lease: LeaseId, remaining_ns: u64) -> Response {
        match self.leases.get(lease) {
            Some(l) => Response::TimeToLive {
                lease,
                remaining_ns: remaining_ns.min(l.ttl_ns),
                granted_ttl_ns: l.ttl_ns,
                keys: l.keys.iter().cloned().collect(),
            },
            None => Response::Error(ServiceError::LeaseNotFound { lease }),
        }
    }

    /// Runs a client request through its session: answered from the record
    /// if seen before (thesis §6.3), executed otherwise. `exec` returns
    /// `None` for a request that waits (a queued acquire).
    fn apply_logged(&mut self, req: &ClientRequest, batch: &mut Batch, exec: impl FnOnce(&mut Self, &mut Batch) -> Option<Response>) {
        let (client, seq) = (req.client, req.seq);
        match self.sessions.lookup(client, seq) {
            Lookup::Answered(body) => {
                batch.push(ServiceEvent::RequestDeduplicated { client, seq });
                let body = self.revalidate(body);
                batch.push(Effect::Reply { client, seq, body });
            }
            Lookup::Pending => batch.push(ServiceEvent::RequestDeduplicated { client, seq }),
            Lookup::Expired => {
                let body = Response::Error(ServiceError::SessionExpired);
                batch.push(Effect::Reply { client, seq, body });
            }
            Lookup::New => {
                batch.push(ServiceEvent::RequestApplied { client, seq });
                match exec(self, batch) {
                    Some(body) => self.answer(client, seq, body, batch),
                    None => self.sessions.record_pending(client, seq),
                }
            }
        }
    }

    /// A recorded answer as it may be replayed now. A grant whose lease has
    /// since ended, or a lock grant since passed on, is not replayed as
    /// alive: the retry arrives later than the original and the client would
    /// time its belief from it.
    fn revalidate(&self, body: Response) -> Response {
        match body {
            Response::LeaseGranted { lease, .. } if !self.leases.contains(lease) => Response::Error(ServiceError::LeaseNotFound { lease }),
            // `writer-clock` extensions go through the session too.
            Response::KeepAlive { lease, .. } if !self.leases.contains(lease) => Response::Error(ServiceError::LeaseNotFound { lease }),
            Response::LockGranted { key, token } if self.locks.holder(&key).map(|h| h.token) != Some(token) => {
                Response::Error(ServiceError::NotLockHolder { key })
            }
            body => body,
        }
    }

    /// Records an answer in the session and owes it to the client.
    fn answer(&mut self, client: ClientId, seq: u64, body: Response, batch: &mut Batch) {
        self.sessions.record_answer(client, seq, body.clone());
        batch.push(Effect::Reply { client, seq, body });
    }

    fn execute(&mut self, req: &ClientRequest, stamp_wall_ns: u64, batch: &mut Batch) -> Option<Response> {
        let index = batch.index;
        let writer_clock = self.settings.expiry == ExpiryStrategy::WriterClock;
        Some(match &req.op {
            Op::LeaseGrant { ttl_ns, id } if writer_clock => self.claim_lease(req.client, *ttl_ns, *id, None, batch),
            Op::LeaseClaim { ttl_ns, writer_wall_ns } if writer_clock => {
                self.claim_lease(req.client, *ttl_ns, None, Some(*writer_wall_ns), batch)
            }
            Op::LeaseClaim { ttl_ns, .. } => self.grant_lease(*ttl_ns, None, stamp_wall_ns, batch),
            Op::LeaseKeepAlive { lease } if writer_clock => self.extend_lease(req.client, *lease, None, batch),
            Op::LeaseExtend { lease, writer_wall_ns } if writer_clock => {
                self.extend_lease(req.client, *lease, Some(*writer_wall_ns), batch)
            }
            Op::Get { key } => self.read_value(key),
            Op::Put { key, value, lease } => self.put(key, value, *lease, index),
            Op::Delete { key } => self.delete(key, index),
            Op::Cas { key, expected, value, lease } => {
                let holds = self.kv.get(key).map(|v| v.value.as_slice()) == expected.as_deref().map(str::as_bytes);
                self.put_if(key, holds, value, *lease, index)
            }
            Op::Txn(txn) => self.txn(txn, index),
            Op::Compact { revision } => self.compact(*revision),
            Op::LeaseGrant { ttl_ns, id } => self.grant_lease(*ttl_ns, *id, stamp_wall_ns, batch),
            Op::LeaseRevoke { lease } => {
                if !self.leases.contains(*lease) {
                    return Some(Response::Error(ServiceError::LeaseNotFound { lease: *lease }));
                }
                self.end_lease(*lease, RevokeCause::Revoke, batch);
                Response::LeaseRevoked { lease: *lease }
            }
            // The server never logs these (they are reads or leader-only),
            // but an entry carrying one still gets a deterministic answer.
            Op::LeaseKeepAlive { lease } | Op::LeaseExtend { lease, .. } => match self.leases.get(*lease) {
                Some(l) => Response::KeepAlive { lease: *lease, ttl_ns: l.ttl_ns },
                None => Response::Error(ServiceError::LeaseNotFound { lease: *lease }),
            },
            Op::LeaseTimeToLive { lease } => {
                let remaining_ns = self.leases.get(*lease).map_or(0, |l| l.checkpoint_remaining_ns.unwrap_or(l.ttl_ns));
                self.time_to_live(*lease, remaining_ns)
            }
            Op::LeaseList => self.lease_list(),
            Op::LockAcquire { key, lease } => return self.acquire(req, key, *lease, batch),
            Op::LockRelease { key, token } => self.release(req.client, key, *token, batch),
            Op::Auth(auth) => match self.auth.apply(auth) {
                Ok(answer) => Response::Auth(answer),
                Err(e) => Response::Error(ServiceError::Auth(e)),
            },
        })
    }

    fn put(&mut self, key: &str, value: &str, lease: Option<LeaseId>, index: LogIndex) -> Response {
        if let Some(lease) = lease.filter(|l| !self.leases.contains(*l)) {
            // The consistent-core lease design: "The lease to attach is not
            // available with the Consistent Core" is an error, checked when
            // applied.
            return Response::Error(ServiceError::LeaseNotFound { lease });
        }
        let previous = self.kv.put(key.as_bytes(), value.as_bytes(), lease, index);
        self.reattach(key.as_bytes(), previous.and_then(|p| p.lease), lease);
        Response::Done { revision: index }
    }

    fn delete(&mut self, key: &str, index: LogIndex) -> Response {
        match self.kv.delete(key.as_bytes(), index) {
            Some(removed) => {
                self.reattach(key.as_bytes(), removed.lease, None);
                Response::Done { revision: index }
            }
            None => Response::Done { revision: self.kv.revision() },
        }
    }

    /// The put of a compare-and-set whose compare `holds` (or not) on the
    /// key as it is now; a missing lease is refused first, whatever the
    /// compare said.
    fn put_if(&mut self, key: &str, holds: bool, value: &str, lease: Option<LeaseId>, index: LogIndex) -> Response {
        if let Some(lease) = lease.filter(|l| !self.leases.contains(*l)) {
            return Response::Error(ServiceError::LeaseNotFound { lease });
        }
        let current = self.kv.get(key);
        if !holds {
            return Response::Cas {
                succeeded: false,
                current: current.map(|v| text(&v.value)),
                revision: current.map_or(0, |v| v.mod_revision),
            };
        }
        let previous = self.kv.put(key.as_bytes(), value.as_bytes(), lease, index);
        self.reattach(key.as_bytes(), previous.and_then(|p| p.lease), lease);
        Response::Cas { succeeded: true, current: Some(value.to_string()), revision: index }
    }

    /// Moves `key`'s attachment from lease `from` to lease `to`.
    pub(crate) fn reattach(&mut self, key: &[u8], from: Option<LeaseId>, to: Option<LeaseId>) {
        if from == to {
            return;
        }
        if let Some(old) = from.and_then(|id| self.leases.get_mut(id)) {
            old.keys.remove(key);
        }
        if let Some(new) = to.and_then(|id| self.leases.get_mut(id)) {
            new.keys.insert(key.to_vec());
        }
    }

    pub(crate) fn grant_lease(&mut self, ttl_ns: u64, requested: Option<LeaseId>, stamp_wall_ns: u64, batch: &mut Batch) -> Response {
        if ttl_ns < self.settings.min_ttl_ns {
            return Response::Error(ServiceError::TtlTooShort { min_ns: self.settings.min_ttl_ns });
        }
        let id = match requested {
            // The consistent-core lease design: checking for a duplicate before
            // proposing is not enough with several grants in flight; check
            // again here.
            Some(id) if id != 0 && self.leases.contains(id) => {
                return Response::Error(ServiceError::DuplicateLease { lease: id });
            }
            // Id 0 means "none", as in etcd.
            Some(id) if id != 0 => id,
            _ => self.leases.free_id_from(batch.index),
        };
        let expiry_wall_ns = match self.settings.expiry {
            ExpiryStrategy::LeaderStampedWall => Some(stamp_wall_ns.saturating_add(ttl_ns)),
            ExpiryStrategy::LeaderMonotonic | ExpiryStrategy::WriterClock => None,
        };
        self.leases.insert(Lease {
            id,
            ttl_ns,
            granted_index: batch.index,
            keys: Default::default(),
            expiry_wall_ns,
            checkpoint_remaining_ns: None,
            writer: None,
            expiry_writer_ns: None,
            renewed_index: batch.index,
        });
        batch.push(ServiceEvent::LeaseGranted { lease: id, ttl_ns });
        Response::LeaseGranted { lease: id, ttl_ns }
    }

    /// `leader-stamped-wall` keep-alive: move the stamp, never backwards
    /// (the Juju lease design: "extend never shortens").
    fn refresh(&mut self, lease: LeaseId, expiry_wall_ns: u64, batch: &mut Batch) -> Response {
        match self.leases.get_mut(lease) {
            Some(l) => {
                let expiry = l.expiry_wall_ns.map_or(expiry_wall_ns, |e| e.max(expiry_wall_ns));
                l.expiry_wall_ns = Some(expiry);
                let ttl_ns = l.ttl_ns;
                batch.push(ServiceEvent::LeaseRefreshed { lease, expiry_wall_ns: expiry });
                Response::KeepAlive { lease, ttl_ns }
            }
            // Planted bug: a refresh of a revoked lease is answered live.
            None if self.settings.bugs.keepalive_after_revoke => Response::KeepAlive { lease, ttl_ns: self.settings.min_ttl_ns },
            None => Response::Error(ServiceError::LeaseNotFound { lease }),
        }
    }

    fn checkpoint(&mut self, remaining: &[(LeaseId, u64)]) {
        for (id, remaining_ns) in remaining {
            if let Some(lease) = self.leases.get_mut(*id) {
                // A remaining TTL of the full TTL or more is a reset (a
                // keep-alive renewed the lease since the last checkpoint).
                lease.checkpoint_remaining_ns = (*remaining_ns < lease.ttl_ns).then_some(*remaining_ns);
            }
        }
    }

    /// Joins the FIFO queue of `key`. Answered now only if this lease already
    /// holds the lock (or the request is refused); otherwise it waits and is
    /// answered by the entry that grants it.
    fn acquire(&mut self, req: &ClientRequest, key: &str, lease: LeaseId, batch: &mut Batch) -> Option<Response> {
        if !self.leases.contains(lease) {
            return Some(Response::Error(ServiceError::LeaseNotFound { lease }));
        }
        let queue = self.locks.queue_mut(key);
        if let Some(holder) = queue.holder.as_ref().filter(|h| h.lease == lease) {
            // Re-acquiring under the lease that holds it: the lock is already
            // this session's (as etcd's lock for one session).
            return Some(Response::LockGranted { key: key.to_string(), token: holder.token });
        }
        if queue.is_waiting(lease) {
            return Some(Response::Error(ServiceError::AlreadyQueued { key: key.to_string() }));
        }
        queue.waiters.push_back(Waiter { client: req.client, seq: req.seq, lease, queued_index: batch.index });
        batch.push(ServiceEvent::LockQueued { key: key.to_string(), client: req.client, seq: req.seq, lease });
        batch.dirty_keys.insert(key.to_string());
        None
    }

    fn release(&mut self, by: ClientId, key: &str, token: u64, batch: &mut Batch) -> Response {
        let check_owner = !self.settings.bugs.release_without_owner_check;
        let Some(queue) = self.locks.get_mut(key) else {
            return Response::Error(ServiceError::NotLockHolder { key: key.to_string() });
        };
        // Only the holder, identified by its token, may release (the token is
        // the capability; a stale token names an earlier holder).
        let is_holder = queue.holder.as_ref().is_some_and(|h| h.token == token || !check_owner);
        if !is_holder {
            return Response::Error(ServiceError::NotLockHolder { key: key.to_string() });
        }
        let holder = queue.holder.take().expect("checked above");
        batch.push(ServiceEvent::LockReleased {
            key: key.to_string(),
            client: holder.client,
            token: holder.token,
            cause: ReleaseCause::Release { by },
        });
        batch.dirty_keys.insert(key.to_string());
        Response::Released { key: key.to_string() }
    }

    /// Ends a lease: deletes its keys and releases its locks in this very entry
    /// on every server (the consistent-core lease design), and drops its
    /// waiters. A lease that is already gone is left alone.
    pub(crate) fn end_lease(&mut self, id: LeaseId, cause: RevokeCause, batch: &mut Batch) {
        let Some(lease) = self.leases.remove(id) else { return };
        let mut deleted_keys = Vec::new();
        for key in &lease.keys {
            if self.kv.get(key).is_some_and(|v| v.lease == Some(id)) {
                self.kv.delete(key, batch.index);
                deleted_keys.push(String::from_utf8_lossy(key).into_owned());
            }
        }
        batch.push(ServiceEvent::LeaseRevoked { lease: id, cause, deleted_keys });
        // Planted bug: waiters of the dead lease stay queued and are granted
        // without a second look (etcd #11456).
        let drop_waiters = !self.settings.bugs.grant_without_lease_check;
        for key in self.locks.keys_of_lease(id) {
            let queue = self.locks.get_mut(&key).expect("key listed by keys_of_lease");
            if let Some(holder) = queue.holder.take_if(|h| h.lease == id) {
                batch.push(ServiceEvent::LockReleased {
                    key: key.clone(),
                    client: holder.client,
                    token: holder.token,
                    cause: ReleaseCause::LeaseEnded,
                });
                batch.dirty_keys.insert(key.clone());
            }
            if drop_waiters {
                let (dropped, kept) = std::mem::take(&mut queue.waiters).into_iter().partition(|w| w.lease == id);
                queue.waiters = kept;
                for waiter in dropped {
                    self.drop_waiter(&key, waiter, batch);
                }
            }
        }
    }

    /// A waiter leaves without the lock; its acquire is answered.
    fn drop_waiter(&mut self, key: &str, waiter: Waiter, batch: &mut Batch) {
        let Waiter { client, seq, lease, .. } = waiter;
        batch.push(ServiceEvent::LockWaiterDropped { key: key.to_string(), client, seq, lease });
        self.answer(client, seq, Response::Error(ServiceError::LeaseNotFound { lease }), batch);
    }

    /// Grants every free lock marked in this entry to the first waiter whose
    /// lease is still alive (re-checked here: etcd #11456), without client
    /// polling (the Raft lock-service design's queues). Token = this entry's
    /// index.
    fn grant_waiting(&mut self, batch: &mut Batch, ctx: &mut ApplyContext) {
        let bugs = self.settings.bugs;
        for key in std::mem::take(&mut batch.dirty_keys) {
            while let Some(queue) = self.locks.get_mut(&key) {
                if queue.holder.is_some() {
                    break;
                }
                let Some(waiter) = queue.waiters.pop_front() else { break };
                if !bugs.grant_without_lease_check && !self.leases.contains(waiter.lease) {
                    self.drop_waiter(&key, waiter, batch);
                    continue;
                }
                let token = if bugs.token_from_local_counter {
                    ctx.local_grants += 1;
                    ctx.local_grants
                } else {
                    batch.index
                };
                invariant!(
                    token > queue.last_token || bugs.token_from_local_counter || bugs.follower_expires_leases,
                    "token {token} for {key} not above {}",
                    queue.last_token
                );
                queue.last_token = queue.last_token.max(token);
                let Waiter { client, seq, lease, .. } = waiter;
                queue.holder = Some(Holder { client, seq, lease, token, granted_index: batch.index });
                batch.push(ServiceEvent::LockGranted { key: key.clone(), client, seq, lease, token });
                self.answer(client, seq, Response::LockGranted { key: key.clone(), token }, batch);
                break;
            }
        }
    }
}
