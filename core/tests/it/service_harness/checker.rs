//! The harness's checkers. Every server event, every lease
//! acknowledgement a client gets and every KV call and answer is recorded,
//! stamped with harness (true) time, as the judge's observations
//! (`leasesim-judge`), and the invariants the judge knows are judged there,
//! by the very checkers the simulator runs ([`JUDGED`],
//! [`JUDGED_MONOTONIC`]); this file restates none of them, and keeps no
//! rule of its own.
//!
//! Rules the harness used to keep and the judge now holds:
//! - `stale-read` (a read sent after a write was acknowledged sees it) is
//!   the real-time half of `linearizable` (Herlihy & Wing 1990: an
//!   operation that returned before another was called is ordered before
//!   it), which the simulator and real runs already judged under that
//!   name. The harness's rule compared revisions; `linearizable` compares
//!   values, which for the harness's KV clients is as strong (each write's
//!   value is unique, `c<client>-<n>`), and it also sees what the revision
//!   rule missed: two reads out of order, and a read older than a write
//!   whose acknowledgement was lost but which another read already saw. It
//!   needs every call, answered or not (an unanswered write may take effect
//!   at any later time), so the harness records each KV request as it
//!   first leaves its client (`kv_called`), not only the answered ones.
//!   Calls on keys written under a lease (the registry clients' keys) are
//!   left out: the KV model knows no lease's life, and the simulator feeds
//!   it only its KV workload's lease-free calls.
//!   `stale_read_catches_stale_follower_reads` in `service_bugs.rs` plants
//!   `stale-follower-reads` and sees `linearizable` fire.
//! - `holder-lease` (a lock granted under an ended lease, etcd #11456),
//!   `promote-extension` (a new leader expiring an inherited lease sooner
//!   than extension + TTL, etcd's `Promote`) and `applied-twice` (a
//!   `(client, seq)` executed at two indexes, thesis §6.3) are judge
//!   checkers (`judge/src/checkers/`).
//! - `revoke-same-index` (a lease and its keys go at the same index on every
//!   server, and no server keeps them past it) was a special case of the
//!   judge's `replica-divergence`: a server that ends a lease at another
//!   index, or keeps it past the index where the others ended it, applies
//!   that index to a different state, and the chained state digest of every
//!   `Applied` shows it (`revoke_same_index_is_replica_divergence` in
//!   `service_bugs.rs` plants `follower-expires-leases` and sees it fire).
//!
//! Where the harness's old copies of the judge's rules disagreed with the
//! simulator's, the judge's semantics won:
//! - `keepalive-after-revoke`: the harness flagged any keep-alive answer
//!   after a revoke; the judge ignores answers with a zero TTL (an answer
//!   that promises nothing cannot break the lease's promise to the next
//!   holder: it is a refusal) and compares an answer produced by applying a
//!   logged renewal by log index, not time (a server re-applying renewals
//!   logged before the revoke only repeats stale replies).
//! - `fifo-order`: the harness replayed each server's queue separately and
//!   gave up on a key after a snapshot; the judge replays each key's queue
//!   once, from the first report of every entry, so a snapshot loses nothing.
//! - `token-monotonic`, `release-by-owner`: the judge checks every grant
//!   against the highest earlier token in log order, and a release against
//!   its entry's owner; a server reporting a different token for one index
//!   is `state-machine-safety`'s (the entries' fingerprints differ).
//!
//! Under `leader-stamped-wall` servers judge expiry by their own wall clocks
//! when they apply, so their states diverge by design (the Raft lock-service
//! design), even without skew: a server that applies entries late (catching up
//! after an isolation or a restart) judges them by its present clock. The
//! checks that assume one shared state (`replica-divergence`,
//! `lease-early-expiry`, and `release-by-owner`, since one token can name
//! different holders on diverged servers) are then off; the judge's
//! `holder-lease` holds each server to its own view. The judge's `fifo-order` and `keepalive-after-revoke`
//! are off too: they replay one state (each key's queue, each lease's end)
//! from the first report of every entry, which diverged servers do not
//! share, and judging each server's own reports alone fails as well (a
//! restart or a snapshot replaces a server's queues without events, and a
//! server replaying old renewals after a restart may now judge the lease
//! expired at an earlier index). Under `leader-stamped-wall` the harness
//! therefore no longer checks those two rules.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{Op, Response, ServiceEvent};
use leasesim_core::{ClientId, ExpiryStrategy, LeaseId, NodeId};
use leasesim_judge::checkers::{RunRecord, CHECKERS, FULL_LOG_CHECKERS};
use leasesim_judge::observe::{Event, Obs, ObsLog};
use leasesim_judge::vocab::Proc;

/// The judge's invariants the harness holds every run to, over the whole
/// run's observations.
pub const JUDGED: &[&str] =
    &["state-machine-safety", "token-monotonic", "holder-lease", "promote-extension", "applied-twice", "linearizable"];

/// The judge's invariants that assume one shared state: `leader-monotonic`
/// only (see the module's notes).
pub const JUDGED_MONOTONIC: &[&str] =
    &["release-by-owner", "lease-early-expiry", "fifo-order", "keepalive-after-revoke", "replica-divergence"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceViolation {
    pub check: &'static str,
    pub at_ns: u64,
    pub detail: String,
}

/// What the checkers need to know about the cluster's settings.
#[derive(Clone, Copy, Debug)]
pub struct CheckSettings {
    pub expiry: ExpiryStrategy,
    pub extension_ns: u64,
}

impl CheckSettings {
    /// `leader-monotonic`: all servers agree on state.
    fn monotonic(&self) -> bool {
        self.expiry == ExpiryStrategy::LeaderMonotonic
    }
}

pub struct ServiceChecker {
    settings: CheckSettings,
    /// Everything the judge judges, in harness (true) time order.
    obs: Vec<Obs>,
    /// The key of each KV request recorded as called (a resend is the
    /// same call).
    kv_keys: BTreeMap<(ClientId, u64), String>,
    /// Keys some call wrote under a lease (registry keys): their KV calls
    /// are left out of `linearizable`, whose model knows no lease's life
    /// (the lease's own checkers judge those keys), as the simulator feeds
    /// it only its KV workload's lease-free calls.
    leased_keys: BTreeSet<String>,
    /// Counts of what was observed, so tests can tell a run did something.
    pub seen: BTreeMap<&'static str, u64>,
}

impl ServiceChecker {
    pub fn new(settings: CheckSettings) -> Self {
        ServiceChecker { settings, obs: Vec::new(), kv_keys: BTreeMap::new(), leased_keys: BTreeSet::new(), seen: BTreeMap::new() }
    }

    /// Every violation so far: the judge's verdicts on the recorded
    /// observations, in time order.
    pub fn violations(&self) -> Vec<ServiceViolation> {
        self.judged()
    }

    pub fn fired(&self, check: &str) -> bool {
        self.violations().iter().any(|v| v.check == check)
    }

    /// The judge's checkers over what was recorded. Harness clocks do not
    /// drift or step (servers' clocks are offset from true time, no more),
    /// so the run never leaves the design's assumptions and needs no clock
    /// histories; the end-of-run and workload-specific invariants
    /// (liveness, task and belief rules) are not the harness's.
    fn judged(&self) -> Vec<ServiceViolation> {
        let ids = match self.settings.monotonic() {
            true => [JUDGED, JUDGED_MONOTONIC].concat(),
            false => JUDGED.to_vec(),
        };
        let mut found = self.judge(&ids, self.obs.iter().filter(|o| !self.on_a_leased_key(o)).cloned().collect());
        found.sort_by(|a, b| (a.at_ns, a.check).cmp(&(b.at_ns, b.check)));
        found
    }

    /// Whether `o` is a KV call or answer of a key written under a lease.
    fn on_a_leased_key(&self, o: &Obs) -> bool {
        let Proc::Client(client) = o.proc else { return false };
        let seq = match &o.event {
            Event::KvCall { seq, .. } | Event::KvReturn { seq, .. } => *seq,
            _ => return false,
        };
        self.kv_keys.get(&(client, seq)).is_some_and(|key| self.leased_keys.contains(key))
    }

    /// The judge's invariants `ids` over `obs`.
    fn judge(&self, ids: &[&str], obs: Vec<Obs>) -> Vec<ServiceViolation> {
        let end_ns = obs.last().map_or(0, |o| o.at_ns);
        let obs = ObsLog::from(obs);
        let clocks = BTreeMap::new();
        let (servers, registry_ttl_ns) = (BTreeMap::new(), BTreeMap::new());
        let run = RunRecord {
            obs: &obs,
            clocks: &clocks,
            drift_bound: 0.0,
            expiry: self.settings.expiry,
            election_timeout_max_ns: self.settings.extension_ns,
            settle_at_ns: 0,
            end_ns,
            servers: &servers,
            registry_ttl_ns: &registry_ttl_ns,
            lock_wait_bound_ns: 0,
            commit_backlog_ns: 0,
            task_pace: None,
        };
        CHECKERS
            .iter()
            .chain(FULL_LOG_CHECKERS)
            .filter(|(id, _)| ids.contains(id))
            .flat_map(|(_, check)| {
                let judgement = check(&run);
                // A check the harness could not decide fails the test as a
                // violation would: a test must not pass on a search that gave up.
                let undecided = judgement.not_judged.into_iter().map(move |n| ServiceViolation {
                    check: n.invariant,
                    at_ns: end_ns,
                    detail: format!("not judged: needs {}", n.needs),
                });
                judgement
                    .violations
                    .into_iter()
                    .map(|v| ServiceViolation { check: v.invariant, at_ns: v.at_ns, detail: v.detail })
                    .chain(undecided)
            })
            .collect()
    }

    fn count(&mut self, what: &'static str) {
        *self.seen.entry(what).or_default() += 1;
    }

    /// A server process restarted: its volatile view starts over.
    pub fn restarted(&mut self, at_ns: u64, server: NodeId) {
        self.obs.push(Obs { at_ns, proc: Proc::Server(server), event: Event::Restarted });
    }

    pub fn observe(&mut self, at_ns: u64, server: NodeId, event: &ServerEvent) {
        self.obs.push(Obs { at_ns, proc: Proc::Server(server), event: Event::Server { event: event.clone() } });
        match event {
            ServerEvent::Raft(RaftEvent::BecameLeader { .. }) => self.count("leaders"),
            ServerEvent::SnapshotInstalled { .. } => self.count("snapshots"),
            ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { .. }, .. } => self.count("deduplicated"),
            ServerEvent::Service { event: ServiceEvent::LeaseGranted { .. }, .. } => self.count("grants"),
            ServerEvent::Service { event: ServiceEvent::LeaseRevoked { .. }, .. } => self.count("revocations"),
            ServerEvent::Service { event: ServiceEvent::LockGranted { .. }, .. } => self.count("lock-grants"),
            ServerEvent::KeepAliveAnswered { .. } => self.count("keepalives"),
            ServerEvent::ExpiryProposed { .. } => self.count("expiries"),
            _ => {}
        }
    }

    /// Client `client` got a grant (or a keep-alive, `keepalive`) for
    /// `lease`: it may believe in it until `first_sent_ns + ttl_ns`, which
    /// the judge's `lease-early-expiry` holds the cluster to.
    pub fn lease_acked(&mut self, at_ns: u64, client: ClientId, lease: LeaseId, first_sent_ns: u64, ttl_ns: u64, keepalive: bool) {
        let event = Event::LeaseAcked { lease, ttl_ns, sent_at_ns: first_sent_ns, keepalive };
        self.obs.push(Obs { at_ns, proc: Proc::Client(client), event });
    }

    /// Client `client` sent KV request `seq` (`op`) for the first time: from
    /// now on it may take effect, answered or not.
    pub fn kv_called(&mut self, at_ns: u64, client: ClientId, seq: u64, op: &Op) {
        let (key, lease) = match op {
            Op::Get { key } | Op::Delete { key } => (key, None),
            Op::Put { key, lease, .. } | Op::Cas { key, lease, .. } => (key, *lease),
            _ => return,
        };
        if lease.is_some() {
            self.leased_keys.insert(key.clone());
        }
        if let Entry::Vacant(first) = self.kv_keys.entry((client, seq)) {
            first.insert(key.clone());
            self.obs.push(Obs { at_ns, proc: Proc::Client(client), event: Event::KvCall { seq, op: op.clone() } });
        }
    }

    /// Client `client`'s KV request `seq` got its final answer `response`.
    pub fn kv_returned(&mut self, at_ns: u64, client: ClientId, seq: u64, response: &Response) {
        if self.kv_keys.contains_key(&(client, seq)) {
            if matches!(response, Response::Value { .. }) {
                self.count("reads");
            }
            self.obs.push(Obs { at_ns, proc: Proc::Client(client), event: Event::KvReturn { seq, response: response.clone() } });
        }
    }
}
