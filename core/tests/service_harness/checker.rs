//! The harness's checkers. Every server event and every lease
//! acknowledgement a client gets is recorded, stamped with harness (true)
//! time, as the judge's observations (`leasesim-judge`), and the invariants
//! the judge knows are judged there, by the very checkers the simulator runs
//! ([`JUDGED`], [`JUDGED_MONOTONIC`]); this file does not restate them.
//!
//! The rules below are the harness's own, for what only this harness sees
//! (they are checked as events happen): each names its rule and where it
//! comes from.
//! - `stale-read`: a read sent after a write was acknowledged sees it.
//!
//! Rules the harness used to keep and the judge now holds:
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

use std::collections::BTreeMap;

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_core::{ClientId, ExpiryStrategy, LeaseId, LogIndex, NodeId};
use leasesim_judge::checkers::{RunRecord, CHECKERS, FULL_LOG_CHECKERS};
use leasesim_judge::observe::{Event, Obs, ObsLog};
use leasesim_judge::vocab::Proc;

/// The judge's invariants the harness holds every run to, over the whole
/// run's observations.
pub const JUDGED: &[&str] = &["state-machine-safety", "token-monotonic", "holder-lease", "promote-extension", "applied-twice"];

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
    /// The harness's own rules' violations, as they fired.
    own: Vec<ServiceViolation>,
    /// Everything the judge judges, in harness (true) time order.
    obs: Vec<Obs>,
    writes: BTreeMap<String, Vec<(u64, LogIndex)>>,
    /// Counts of what was observed, so tests can tell a run did something.
    pub seen: BTreeMap<&'static str, u64>,
}

impl ServiceChecker {
    pub fn new(settings: CheckSettings) -> Self {
        ServiceChecker { settings, own: Vec::new(), obs: Vec::new(), writes: BTreeMap::new(), seen: BTreeMap::new() }
    }

    fn fire(&mut self, check: &'static str, at_ns: u64, detail: String) {
        self.own.push(ServiceViolation { check, at_ns, detail });
    }

    /// Every violation so far: the judge's verdicts on the recorded
    /// observations, then the harness's own rules', each in time order.
    pub fn violations(&self) -> Vec<ServiceViolation> {
        let mut all = self.judged();
        all.extend(self.own.iter().cloned());
        all
    }

    pub fn fired(&self, check: &str) -> bool {
        self.violations().iter().any(|v| v.check == check)
    }

    /// The judge's checkers over what was recorded. Harness clocks do not
    /// drift or step (servers' clocks are offset from true time, no more),
    /// so the run never leaves the design's assumptions and needs no clock
    /// histories; the end-of-run and workload-specific invariants
    /// (liveness, linearizable, task and belief rules) are not the harness's.
    fn judged(&self) -> Vec<ServiceViolation> {
        let ids = match self.settings.monotonic() {
            true => [JUDGED, JUDGED_MONOTONIC].concat(),
            false => JUDGED.to_vec(),
        };
        let mut found = self.judge(&ids, self.obs.clone());
        found.sort_by(|a, b| (a.at_ns, a.check).cmp(&(b.at_ns, b.check)));
        found
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
            .flat_map(|(_, check)| check(&run))
            .map(|v| ServiceViolation { check: v.invariant, at_ns: v.at_ns, detail: v.detail })
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

    /// A write of `key` at `revision` was acknowledged to a client.
    pub fn write_acked(&mut self, at_ns: u64, key: &str, revision: LogIndex) {
        self.writes.entry(key.to_string()).or_default().push((at_ns, revision));
    }

    /// A read of `key`, first sent at `first_sent_ns`, returned `revision`.
    pub fn read_returned(&mut self, at_ns: u64, key: &str, first_sent_ns: u64, revision: LogIndex) {
        self.count("reads");
        let latest = self.writes.get(key).and_then(|w| w.iter().filter(|(t, _)| *t < first_sent_ns).map(|(_, r)| *r).max());
        if let Some(latest) = latest.filter(|l| *l > revision) {
            let detail = format!("read of {key} sent at {first_sent_ns} saw revision {revision}, {latest} was acknowledged before");
            self.fire("stale-read", at_ns, detail);
        }
    }
}
