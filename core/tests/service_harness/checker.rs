//! The harness's checkers: every server event and every client observation
//! goes through here as it happens, against true (harness) time.
//!
//! Each check names its rule and where it comes from; ids match
//! SCENARIO-FORMAT.md where the simulator has the same invariant.
//! - `state-machine-safety`: one entry per index on every server (Raft §5.4.3).
//! - `token-monotonic`: a later grant of a key has a larger token, and every
//!   server reports the same token for one grant (fencing, the Raft lock-service design).
//! - `release-by-owner`: only the holder releases (the Raft lock-service design).
//! - `fifo-order`: a server grants a key's waiters in queue (commit) order.
//! - `revoke-same-index`: a lease and its attached keys go at the same index
//!   on every server, and no server keeps them past it (the consistent-core lease design).
//! - `keepalive-after-revoke`: no keep-alive answered live after the revoke.
//! - `applied-twice`: a `(client, seq)` executes at one index only (thesis §6.3).
//! - `holder-lease`: a lock is never granted under a lease already ended
//!   (etcd #11456).
//! - `promote-extension`: a new leader does not expire a lease it inherited
//!   sooner than extension + TTL after taking over, unless it renewed it
//!   since (etcd's `Promote`).
//! - `lease-early-expiry`: no lease ends by expiry before TTL after the first
//!   send of its last acknowledged grant or keep-alive (clocks do not drift
//!   in the harness, so drift_bound = 0).
//! - `stale-read`: a read sent after a write was acknowledged sees it.
//!
//! Under `leader-stamped-wall` servers judge expiry by their own wall clocks
//! when they apply, so their states diverge by design (the Raft lock-service
//! design), even without skew: a server that applies entries late (catching up
//! after an isolation or a restart) judges them by its present clock. The
//! checks that assume one shared state (`revoke-same-index`,
//! `lease-early-expiry`, and `release-by-owner`, since one token can name
//! different holders on diverged servers) are then off;
//! `keepalive-after-revoke` and
//! `holder-lease` are judged per server.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{ReleaseCause, RevokeCause, StateMachine};
use leasesim_core::{ClientId, LeaseId, LogIndex, NodeId, Term};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub check: &'static str,
    pub at_ns: u64,
    pub detail: String,
}

/// What the checkers need to know about the cluster's settings.
#[derive(Clone, Copy, Debug)]
pub struct CheckSettings {
    /// `leader-monotonic` (all servers agree on state) or not.
    pub monotonic: bool,
    pub extension_ns: u64,
    /// With checkpoints a new leader may legitimately use less than the TTL.
    pub checkpoints: bool,
}

#[derive(Clone, Debug)]
struct Revocation {
    index: LogIndex,
    deleted_keys: Vec<String>,
    at_ns: u64,
    cause: RevokeCause,
}

/// One server's view, rebuilt from its events (reset on restart).
#[derive(Clone, Debug, Default)]
struct ServerModel {
    queues: BTreeMap<String, VecDeque<(ClientId, u64)>>,
    holders: BTreeMap<String, (ClientId, u64)>,
    /// A snapshot replaced the state: waiters queued before it are unknown.
    unknown_prefix: bool,
    revoked: BTreeSet<LeaseId>,
    leader_since_ns: Option<u64>,
    renewed: BTreeMap<LeaseId, u64>,
    /// Highest applied index already checked against `revocations`.
    checked_through: LogIndex,
}

pub struct Checker {
    settings: CheckSettings,
    pub violations: Vec<Violation>,
    applied: BTreeMap<LogIndex, (Term, u64)>,
    tokens: BTreeMap<String, BTreeMap<LogIndex, u64>>,
    servers: BTreeMap<NodeId, ServerModel>,
    revocations: BTreeMap<LeaseId, Revocation>,
    executed: BTreeMap<(ClientId, u64), LogIndex>,
    granted_at: BTreeMap<LeaseId, (u64, u64)>,
    /// Per lease: the latest end of a client's belief (first send + TTL).
    belief_end: BTreeMap<LeaseId, u64>,
    writes: BTreeMap<String, Vec<(u64, LogIndex)>>,
    /// Counts of what was observed, so tests can tell a run did something.
    pub seen: BTreeMap<&'static str, u64>,
}

impl Checker {
    pub fn new(settings: CheckSettings) -> Self {
        Checker {
            settings,
            violations: Vec::new(),
            applied: BTreeMap::new(),
            tokens: BTreeMap::new(),
            servers: BTreeMap::new(),
            revocations: BTreeMap::new(),
            executed: BTreeMap::new(),
            granted_at: BTreeMap::new(),
            belief_end: BTreeMap::new(),
            writes: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    fn fire(&mut self, check: &'static str, at_ns: u64, detail: String) {
        self.violations.push(Violation { check, at_ns, detail });
    }

    pub fn fired(&self, check: &str) -> bool {
        self.violations.iter().any(|v| v.check == check)
    }

    fn count(&mut self, what: &'static str) {
        *self.seen.entry(what).or_default() += 1;
    }

    /// A server process restarted: its volatile view starts over.
    pub fn restarted(&mut self, server: NodeId) {
        self.servers.insert(server, ServerModel::default());
    }

    pub fn observe(&mut self, at_ns: u64, server: NodeId, event: &ServerEvent) {
        match event {
            ServerEvent::Raft(RaftEvent::BecameLeader { .. }) => {
                let model = self.servers.entry(server).or_default();
                model.leader_since_ns = Some(at_ns);
                model.renewed.clear();
                self.count("leaders");
            }
            ServerEvent::Raft(RaftEvent::SteppedDown { .. }) => {
                self.servers.entry(server).or_default().leader_since_ns = None;
            }
            ServerEvent::Raft(_) => {}
            ServerEvent::Applied { index, term, fingerprint, .. } => self.on_applied(at_ns, server, *index, *term, *fingerprint),
            ServerEvent::SnapshotInstalled { .. } => {
                let model = self.servers.entry(server).or_default();
                model.queues.clear();
                model.holders.clear();
                model.revoked.clear();
                model.unknown_prefix = true;
                self.count("snapshots");
            }
            ServerEvent::RequestApplied { client, seq, index } => {
                let first = *self.executed.entry((*client, *seq)).or_insert(*index);
                if first != *index {
                    self.fire("applied-twice", at_ns, format!("s{server}: ({client}, {seq}) executed at {first} and {index}"));
                }
            }
            ServerEvent::RequestDeduplicated { .. } => self.count("deduplicated"),
            ServerEvent::LeaseGranted { lease, ttl_ns, .. } => {
                self.granted_at.entry(*lease).or_insert((at_ns, *ttl_ns));
                self.count("grants");
            }
            ServerEvent::LeaseRevoked { lease, index, cause, deleted_keys } => {
                self.on_revoked(at_ns, server, *lease, *index, *cause, deleted_keys)
            }
            ServerEvent::LeaseRefreshed { .. } | ServerEvent::CheckpointProposed { .. } => {}
            ServerEvent::LockQueued { key, client, seq, .. } => {
                let model = self.servers.entry(server).or_default();
                model.queues.entry(key.clone()).or_default().push_back((*client, *seq));
            }
            ServerEvent::LockWaiterDropped { key, client, seq, .. } => {
                let model = self.servers.entry(server).or_default();
                if let Some(queue) = model.queues.get_mut(key) {
                    queue.retain(|w| *w != (*client, *seq));
                }
            }
            ServerEvent::LockGranted { key, client, seq, lease, token, index } => {
                self.on_granted(at_ns, server, key, (*client, *seq), *lease, *token, *index)
            }
            ServerEvent::LockReleased { key, client, token, cause, index } => {
                if let (true, ReleaseCause::Release { by }) = (self.settings.monotonic, cause) {
                    if by != client {
                        self.fire("release-by-owner", at_ns, format!("s{server}: c{by} released {key} held by c{client} at {index}"));
                    }
                }
                let model = self.servers.entry(server).or_default();
                if let Some(holder) = model.holders.remove(key) {
                    if self.settings.monotonic && holder != (*client, *token) {
                        let detail = format!("s{server}: released {key} of {:?}, holder was {holder:?}", (client, token));
                        self.fire("release-by-owner", at_ns, detail);
                    }
                }
            }
            ServerEvent::KeepAliveAnswered { lease, client, .. } => {
                self.count("keepalives");
                let revoked = if self.settings.monotonic {
                    self.revocations.get(lease).map(|r| r.at_ns)
                } else {
                    self.servers.get(&server).filter(|m| m.revoked.contains(lease)).map(|_| at_ns)
                };
                if let Some(revoked_at) = revoked {
                    let detail = format!("s{server} answered c{client}'s keep-alive of lease {lease} live; revoked at {revoked_at}");
                    self.fire("keepalive-after-revoke", at_ns, detail);
                }
                self.servers.entry(server).or_default().renewed.insert(*lease, at_ns);
            }
            ServerEvent::ExpiryProposed { lease } => self.on_expiry_proposed(at_ns, server, *lease),
        }
    }

    fn on_applied(&mut self, at_ns: u64, server: NodeId, index: LogIndex, term: Term, fingerprint: u64) {
        let first = *self.applied.entry(index).or_insert((term, fingerprint));
        if first != (term, fingerprint) {
            self.fire("state-machine-safety", at_ns, format!("s{server} applied a different entry at {index}"));
        }
    }

    fn on_revoked(&mut self, at_ns: u64, server: NodeId, lease: LeaseId, index: LogIndex, cause: RevokeCause, keys: &[String]) {
        self.count("revocations");
        self.servers.entry(server).or_default().revoked.insert(lease);
        if cause != RevokeCause::Revoke && self.settings.monotonic {
            if let Some(end) = self.belief_end.get(&lease).copied().filter(|end| *end > at_ns) {
                let detail = format!("s{server} expired lease {lease} at {at_ns}, a client was promised it until {end}");
                self.fire("lease-early-expiry", at_ns, detail);
            }
        }
        if !self.settings.monotonic {
            return;
        }
        match self.revocations.get(&lease) {
            Some(first) if first.index != index || first.deleted_keys != keys => {
                let detail = format!(
                    "s{server} ended lease {lease} at {index} deleting {keys:?}; first seen at {} deleting {:?}",
                    first.index, first.deleted_keys
                );
                self.fire("revoke-same-index", at_ns, detail);
            }
            Some(_) => {}
            None => {
                let revocation = Revocation { index, deleted_keys: keys.to_vec(), at_ns, cause };
                self.revocations.insert(lease, revocation);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_granted(&mut self, at_ns: u64, server: NodeId, key: &str, who: (ClientId, u64), lease: LeaseId, token: u64, index: LogIndex) {
        self.count("lock-grants");
        // token-monotonic, across all servers.
        let tokens = self.tokens.entry(key.to_string()).or_default();
        let same = tokens.get(&index).copied();
        let before = tokens.range(..index).next_back().map(|(i, t)| (*i, *t));
        let after = tokens.range(index + 1..).next().map(|(i, t)| (*i, *t));
        tokens.insert(index, token);
        if same.is_some_and(|t| t != token) {
            self.fire("token-monotonic", at_ns, format!("s{server}: {key} granted at {index} with token {token}, elsewhere {same:?}"));
        }
        if let Some((i, t)) = before.filter(|(_, t)| *t >= token) {
            self.fire("token-monotonic", at_ns, format!("s{server}: {key} token {token} at {index} not above {t} at {i}"));
        }
        if let Some((i, t)) = after.filter(|(_, t)| *t <= token) {
            self.fire("token-monotonic", at_ns, format!("s{server}: {key} token {token} at {index} not below {t} at {i}"));
        }
        // holder-lease.
        let dead = if self.settings.monotonic {
            self.revocations.get(&lease).is_some_and(|r| r.index <= index)
        } else {
            self.servers.get(&server).is_some_and(|m| m.revoked.contains(&lease))
        };
        if dead {
            self.fire("holder-lease", at_ns, format!("s{server}: {key} granted at {index} under ended lease {lease}"));
        }
        // fifo-order, per server.
        let model = self.servers.entry(server).or_default();
        let queue = model.queues.entry(key.to_string()).or_default();
        let violation = match queue.iter().position(|w| *w == who) {
            Some(0) => {
                queue.pop_front();
                None
            }
            Some(pos) => {
                let ahead = queue[0];
                queue.remove(pos);
                Some(format!("s{server}: {key} granted to {who:?} at {index} ahead of {ahead:?}"))
            }
            None if model.unknown_prefix => None,
            None => Some(format!("s{server}: {key} granted to {who:?} at {index}, never queued")),
        };
        model.holders.insert(key.to_string(), (who.0, token));
        if let Some(detail) = violation {
            self.fire("fifo-order", at_ns, detail);
        }
    }

    fn on_expiry_proposed(&mut self, at_ns: u64, server: NodeId, lease: LeaseId) {
        self.count("expiries");
        if !self.settings.monotonic || self.settings.checkpoints {
            return;
        }
        let model = self.servers.entry(server).or_default();
        let (Some(since), Some(&(granted, ttl_ns))) = (model.leader_since_ns, self.granted_at.get(&lease)) else { return };
        let inherited = granted < since && !model.renewed.contains_key(&lease);
        let earliest = since + self.settings.extension_ns + ttl_ns;
        if inherited && at_ns < earliest {
            let detail = format!("s{server} (leader since {since}) expired inherited lease {lease} at {at_ns}, before {earliest}");
            self.fire("promote-extension", at_ns, detail);
        }
    }

    /// A client got a grant or keep-alive for `lease`: it may believe in it
    /// until `first_sent_ns + ttl_ns`.
    pub fn lease_acked(&mut self, at_ns: u64, lease: LeaseId, first_sent_ns: u64, ttl_ns: u64) {
        let end = first_sent_ns + ttl_ns;
        let belief = self.belief_end.entry(lease).or_default();
        *belief = (*belief).max(end);
        if !self.settings.monotonic {
            return;
        }
        if let Some(r) = self.revocations.get(&lease).filter(|r| r.cause != RevokeCause::Revoke && r.at_ns < end) {
            let detail = format!("lease {lease} expired at {}, a reply at {at_ns} promised it until {end}", r.at_ns);
            self.fire("lease-early-expiry", at_ns, detail);
        }
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

    /// State checks after a server step: no server keeps a lease past the
    /// index where it was revoked elsewhere (`leader-monotonic` only).
    pub fn check_state(&mut self, at_ns: u64, server: NodeId, sm: &StateMachine) {
        if !self.settings.monotonic {
            return;
        }
        let applied = sm.applied_index();
        let model = self.servers.entry(server).or_default();
        let from = model.checked_through;
        model.checked_through = applied;
        let mut found = Vec::new();
        for (lease, r) in &self.revocations {
            let newly_passed = r.index > from && r.index <= applied;
            if newly_passed && sm.leases().contains(*lease) {
                found.push(format!("s{server} applied {applied} and still has lease {lease}, revoked at {}", r.index));
            }
        }
        for detail in found {
            self.fire("revoke-same-index", at_ns, detail);
        }
    }

    /// After recording a revocation, servers already past its index are
    /// checked too (the revocation may be seen after they passed it).
    pub fn check_state_all<'a>(&mut self, at_ns: u64, servers: impl Iterator<Item = (NodeId, &'a StateMachine)>) {
        if !self.settings.monotonic {
            return;
        }
        let mut found = Vec::new();
        for (server, sm) in servers {
            for (lease, r) in &self.revocations {
                if r.index <= sm.applied_index() && sm.leases().contains(*lease) {
                    found.push(format!("s{server} applied {} and still has lease {lease}, revoked at {}", sm.applied_index(), r.index));
                }
            }
        }
        for detail in found {
            if !self.violations.iter().any(|v| v.detail == detail) {
                self.fire("revoke-same-index", at_ns, detail);
            }
        }
    }

    pub fn revocation_count(&self) -> usize {
        self.revocations.len()
    }
}
