//! Lease expiry on the server side: who decides a lease is over, and when.
//!
//! `leader-monotonic` (the consistent-core lease design, etcd's lessor, the Xline lease design): only the
//! leader keeps deadlines, on its monotonic clock; on a deadline it proposes
//! `Expire` through the log. A new leader re-arms every lease at
//! now + extension + TTL (etcd's `Promote`): the old leader may have answered
//! keep-alives until check-quorum deposed it, up to one election timeout
//! after it lost the majority, so the extension must cover that. With
//! checkpoints on, the leader periodically logs remaining TTLs and a new
//! leader uses them instead of the full TTL; a keep-alive of a checkpointed
//! lease is answered only once a reset to the full TTL has committed, and a
//! new leader promotes only once it has applied an entry of its own term
//! (etcd's rule), so it has applied every such reset; otherwise it could use
//! a stale remaining TTL and expire the lease early.
//!
//! `leader-stamped-wall` (the Raft lock-service design): the stamps are replicated; the leader
//! proposes `Expire` when its wall clock passes one, and every server also
//! judges them itself when applying (see the state machine).
//!
//! `writer-clock` (the Juju lease design): the leader keeps deadlines on its monotonic
//! clock as `leader-monotonic` does, but arms them from the replicated
//! expiry: the time left on the writer's clock after its latest
//! acknowledgement, counted from when this leader applied it. On a deadline
//! it proposes `WriterExpire` with the writer time it infers (that
//! acknowledgement plus the duration it measured), and the state machine
//! applies it only if no extension moved the expiry meanwhile. A new leader
//! re-arms as Promote does, with the same extension.
//!
//! The planted bugs of this layer live here too: `follower_expires_leases`,
//! `no_promote_extension`, `keepalive_after_revoke`.

use std::collections::{BTreeMap, BTreeSet};

use crate::server::deadlines::LeaseDeadlines;
use crate::server::{Server, ServerEvent};
use crate::service::{ClientRequest, Command, Op, Response, ServiceError};
use crate::types::{ExpiryStrategy, LeaseId, LogIndex, Term};

/// The volatile lease bookkeeping of one server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct LeaseTracker {
    /// `Some(term)` while this server leads and has promoted its leases.
    pub leader_term: Option<Term>,
    /// `leader-monotonic` leader: deadlines on this process's clock.
    pub deadlines: LeaseDeadlines,
    /// Leases whose `Expire` is proposed but not yet applied: no keep-alive
    /// may renew them any more.
    pub expiring: BTreeSet<LeaseId>,
    pub next_checkpoint_ns: Option<u64>,
    /// Keep-alives waiting for their checkpoint reset (at that index) to
    /// commit before being answered.
    pub awaiting_reset: BTreeMap<LogIndex, Vec<ClientRequest>>,
    /// Planted bug `follower_expires_leases`: a non-leader's own deadlines.
    pub local: LeaseDeadlines,
}

impl Server {
    fn now_ns(&self) -> u64 {
        self.clocks.mono_ns
    }

    fn monotonic(&self) -> bool {
        self.config.expiry == ExpiryStrategy::LeaderMonotonic
    }

    /// Promotes or demotes the lease bookkeeping to match Raft's role.
    pub(super) fn sync_role(&mut self) {
        let leading = self.is_leader();
        let term = self.raft.term();
        if self.tracker.leader_term.is_some() && (!leading || self.tracker.leader_term != Some(term)) {
            self.demote();
        }
        if leading && self.tracker.leader_term.is_none() && self.may_promote(term) {
            self.promote(term);
        }
    }

    /// Whether `promote` may read the state machine yet. With checkpoints it
    /// reads each lease's remaining TTL, and the old leader answers a
    /// checkpointed lease's keep-alive once its reset to the full TTL is
    /// committed, which this server may not have applied yet: promoting then
    /// re-arms the lease from the older checkpoint, short of the TTL the
    /// holder was promised (leader-pause-checkpoint study, seeds 350310,
    /// 350316, 350363, 350379, 350423, 350429). So, as etcd does (its
    /// `applyEntryNormal` promotes the lessor when the leader applies the
    /// empty entry of its term), a leader promotes only once it has applied
    /// an entry of its own term, and with it everything committed before.
    /// Without checkpoints `promote` reads only which leases exist and their
    /// TTLs, and a grant applied later is armed with the extension then
    /// (`on_lease_granted`), so the leader promotes on election as before.
    fn may_promote(&self, term: Term) -> bool {
        self.config.checkpoint_interval_ns.is_none() || self.sm.applied_term() == term
    }

    fn extension_ns(&self) -> u64 {
        if self.config.bugs.no_promote_extension {
            0
        } else {
            self.config.promote_extension_ns
        }
    }

    /// etcd's `Promote`: re-arm every lease at now + extension + TTL (or the
    /// checkpointed remaining TTL).
    fn promote(&mut self, term: Term) {
        // Only a leader of `term` arms deadlines (the consistent-core lease
        // design: followers track nothing), and it does so once per term.
        assert!(self.is_leader() && self.raft.term() == term, "promote only as the leader of term {term}");
        assert!(self.tracker.leader_term.is_none(), "promote once per term: demote first");
        let now = self.now_ns();
        let extension = self.extension_ns();
        let tracker = &mut self.tracker;
        tracker.leader_term = Some(term);
        tracker.deadlines.clear();
        tracker.expiring.clear();
        tracker.local.clear();
        if self.config.expiry == ExpiryStrategy::WriterClock {
            for lease in self.sm.leases().iter() {
                let remaining = self.sm.writer_remaining_ns(lease.id).unwrap_or(lease.ttl_ns);
                tracker.deadlines.arm(lease.id, now + extension + remaining);
            }
        }
        if self.config.expiry == ExpiryStrategy::LeaderMonotonic {
            for lease in self.sm.leases().iter() {
                let remaining = lease.checkpoint_remaining_ns.unwrap_or(lease.ttl_ns);
                tracker.deadlines.arm(lease.id, now + extension + remaining);
            }
            tracker.next_checkpoint_ns = self.config.checkpoint_interval_ns.map(|every| now + every);
        }
    }

    /// Followers track nothing (the consistent-core lease design); whatever
    /// waited on leadership is told to retry.
    fn demote(&mut self) {
        assert!(self.tracker.leader_term.is_some(), "demote only what was promoted");
        self.proposed.clear();
        self.tracker.leader_term = None;
        self.tracker.deadlines.clear();
        self.tracker.expiring.clear();
        self.tracker.next_checkpoint_ns = None;
        let hint = Response::Error(ServiceError::NotLeader { leader_hint: self.raft.leader_id() });
        for req in std::mem::take(&mut self.tracker.awaiting_reset).into_values().flatten() {
            self.reply_to(&req, Response::Error(ServiceError::Retry));
        }
        // Reads confirmed while leading are still linearizable, except those
        // answered from the leader's own deadlines.
        let needs_leader = |r: &ClientRequest| matches!(r.op, Op::LeaseKeepAlive { .. } | Op::LeaseTimeToLive { .. });
        for req in self.reads.take_confirmed_where(needs_leader) {
            self.reply_to(&req, hint.clone());
        }
        if self.config.bugs.follower_expires_leases {
            self.arm_local_all();
        }
    }

    /// Planted bug `follower_expires_leases`: a non-leader arms its own
    /// deadline for every lease it does not track yet.
    fn arm_local_all(&mut self) {
        let now = self.now_ns();
        for lease in self.sm.leases().iter() {
            if self.tracker.local.deadline(lease.id).is_none() {
                self.tracker.local.arm(lease.id, now + lease.ttl_ns);
            }
        }
    }

    /// The state machine was replaced by a snapshot.
    pub(super) fn on_state_replaced(&mut self) {
        if self.config.bugs.follower_expires_leases && self.tracker.leader_term.is_none() {
            self.arm_local_all();
        }
    }

    pub(super) fn on_lease_granted(&mut self, lease: LeaseId, ttl_ns: u64, entry_term: Term) {
        let now = self.now_ns();
        match self.tracker.leader_term {
            // `writer-clock` leases granted without a reading have no
            // writer: measured on this leader's clock, as `leader-monotonic`.
            Some(term) if self.monotonic() || self.measured(lease) => {
                // A grant from an earlier term may have been answered by the
                // old leader already, and renewed by it: extend as Promote.
                let extension = if entry_term < term { self.extension_ns() } else { 0 };
                self.tracker.deadlines.arm(lease, now + extension + ttl_ns);
            }
            None if self.config.bugs.follower_expires_leases => self.tracker.local.arm(lease, now + ttl_ns),
            _ => {}
        }
    }

    /// `writer-clock`: `client` acknowledged its clock in an entry of
    /// `entry_term`; every lease it wrote gets its deadline from the new
    /// acknowledgement (an extension also invalidates a pending expiry).
    pub(super) fn on_writer_wrote(&mut self, client: crate::types::ClientId, entry_term: Term) {
        let Some(term) = self.tracker.leader_term else { return };
        let now = self.now_ns();
        // As for grants: an entry of an earlier term may have been answered
        // by the old leader, which renewed it on its own clock.
        let extension = if entry_term < term { self.extension_ns() } else { 0 };
        for lease in self.sm.leases_written_by(client) {
            let remaining = self.sm.writer_remaining_ns(lease).unwrap_or(0);
            self.tracker.deadlines.arm(lease, now + extension + remaining);
            self.tracker.expiring.remove(&lease);
        }
    }

    /// `writer-clock`: a lease without a writer's expiry (granted or renewed
    /// without a reading): its expiry is this leader's measured TTL.
    fn measured(&self, lease: LeaseId) -> bool {
        self.config.expiry == ExpiryStrategy::WriterClock && self.sm.writer_remaining_ns(lease).is_none()
    }

    /// `writer-clock`: a plain keep-alive renewed `lease` in an entry of
    /// `entry_term`; it lives its TTL from now on this leader's clock.
    pub(super) fn on_lease_renewed(&mut self, lease: LeaseId, entry_term: Term) {
        let Some(term) = self.tracker.leader_term else { return };
        let Some(ttl_ns) = self.sm.leases().get(lease).map(|l| l.ttl_ns) else { return };
        let extension = if entry_term < term { self.extension_ns() } else { 0 };
        self.tracker.deadlines.arm(lease, self.now_ns() + extension + ttl_ns);
        self.tracker.expiring.remove(&lease);
    }

    pub(super) fn on_lease_ended(&mut self, lease: LeaseId) {
        // Planted bug `keepalive_after_revoke`: the deadline outlives the
        // lease, and keep-alives are judged by the deadline alone.
        if !self.config.bugs.keepalive_after_revoke {
            self.tracker.deadlines.disarm(lease);
        }
        self.tracker.expiring.remove(&lease);
        self.tracker.local.disarm(lease);
    }

    /// After applying `index`: a leader waiting to promote (`may_promote`)
    /// does so now if the entry is of its term, before the reads this batch
    /// confirmed are served; keep-alives waiting for a checkpoint reset there
    /// can now be answered.
    pub(super) fn on_entry_applied(&mut self, index: LogIndex) {
        self.sync_role();
        if let Some(waiting) = self.tracker.awaiting_reset.remove(&index) {
            for req in waiting {
                self.answer_keepalive(req);
            }
        }
    }

    /// Proposes what the clocks call for: expiries, checkpoints; and, with
    /// the planted bug, expires leases locally on a follower.
    pub(super) fn lease_housekeeping(&mut self) {
        let now = self.now_ns();
        if self.tracker.leader_term.is_none() {
            // A leader waiting to promote is no follower.
            if self.config.bugs.follower_expires_leases && !self.is_leader() {
                for lease in self.tracker.local.pop_due(now) {
                    let mut ctx = self.config.apply_context(self.clocks.wall_ns, self.local_grants);
                    let effects = self.sm.expire_locally(lease, &mut ctx);
                    self.local_grants = ctx.local_grants;
                    let (index, term) = (self.sm.applied_index(), self.sm.applied_term());
                    self.handle_effects(effects, index, term);
                }
            }
            return;
        }
        let due: Vec<LeaseId> = match self.config.expiry {
            ExpiryStrategy::LeaderMonotonic => self.tracker.deadlines.pop_due(now),
            ExpiryStrategy::WriterClock => return self.propose_writer_expiries(now),
            ExpiryStrategy::LeaderStampedWall => {
                let wall = self.clocks.wall_ns;
                let expiring = &self.tracker.expiring;
                let stamped_out = |l: &&crate::service::lease::Lease| l.expiry_wall_ns.is_some_and(|e| e <= wall);
                self.sm.leases().iter().filter(stamped_out).map(|l| l.id).filter(|id| !expiring.contains(id)).collect()
            }
        };
        for lease in due {
            if self.raft.propose(now, Command::Expire { lease }).is_ok() {
                self.tracker.expiring.insert(lease);
                self.output.events.push(ServerEvent::ExpiryProposed { lease });
            }
        }
        self.maybe_checkpoint(now);
    }

    /// `writer-clock`: each due lease's expiry is proposed with the writer
    /// time this leader infers: the expiry plus how far past the deadline
    /// its own clock already is.
    fn propose_writer_expiries(&mut self, now: u64) {
        let due: Vec<(LeaseId, u64)> = self.tracker.deadlines.iter().filter(|(_, at)| *at <= now).collect();
        for (lease, deadline) in due {
            self.tracker.deadlines.disarm(lease);
            let Some(l) = self.sm.leases().get(lease) else { continue };
            let command = match l.expiry_writer_ns {
                Some(expiry_ns) => Command::WriterExpire { lease, expiry_ns, writer_ns: expiry_ns.saturating_add(now - deadline) },
                None => Command::MeasuredExpire { lease, renewed_index: l.renewed_index },
            };
            if self.raft.propose(now, command).is_ok() {
                self.tracker.expiring.insert(lease);
                self.output.events.push(ServerEvent::ExpiryProposed { lease });
            }
        }
    }

    fn maybe_checkpoint(&mut self, now: u64) {
        let (Some(due), Some(every)) = (self.tracker.next_checkpoint_ns, self.config.checkpoint_interval_ns) else { return };
        if now < due {
            return;
        }
        self.tracker.next_checkpoint_ns = Some(now + every);
        // A lease whose reset to the full TTL is in the log but not yet
        // applied here is left out: its deadline is the one the reset is
        // about to replace, and a checkpoint of it logged after the reset
        // would undo the reset for the next leader (fresh seed 360029 of
        // leader-pause-checkpoint-fresh: 102 ms early).
        let resetting: BTreeSet<LeaseId> = self
            .tracker
            .awaiting_reset
            .values()
            .flatten()
            .filter_map(|r| match r.op {
                Op::LeaseKeepAlive { lease } => Some(lease),
                _ => None,
            })
            .collect();
        let expiring = &self.tracker.expiring;
        let skip = |l: &LeaseId| expiring.contains(l) || resetting.contains(l);
        let remaining: Vec<(LeaseId, u64)> =
            self.tracker.deadlines.iter().filter(|(l, _)| !skip(l)).map(|(l, t)| (l, t.saturating_sub(now))).collect();
        if remaining.is_empty() {
            return;
        }
        let leases = remaining.len();
        if self.raft.propose(now, Command::Checkpoint { remaining }).is_ok() {
            self.output.events.push(ServerEvent::CheckpointProposed { leases });
        }
    }

    /// The next lease-related deadline on this process's monotonic clock.
    pub(super) fn lease_deadline_ns(&self) -> u64 {
        let tracker = &self.tracker;
        if tracker.leader_term.is_none() {
            // A leader waiting to promote runs no follower deadlines (see
            // `lease_housekeeping`): waking it for one would spin.
            return if self.is_leader() { u64::MAX } else { tracker.local.next().unwrap_or(u64::MAX) };
        }
        match self.config.expiry {
            ExpiryStrategy::WriterClock => tracker.deadlines.next().unwrap_or(u64::MAX),
            ExpiryStrategy::LeaderMonotonic => {
                tracker.deadlines.next().unwrap_or(u64::MAX).min(tracker.next_checkpoint_ns.unwrap_or(u64::MAX))
            }
            ExpiryStrategy::LeaderStampedWall => {
                // Wall stamps translated to this process's monotonic clock at
                // the last reading (a later wall jump is caught at the next
                // input, when housekeeping compares against the wall clock).
                let (mono, wall) = (self.clocks.mono_ns, self.clocks.wall_ns);
                self.sm
                    .leases()
                    .iter()
                    .filter(|l| !tracker.expiring.contains(&l.id))
                    .filter_map(|l| l.expiry_wall_ns)
                    .map(|e| mono.saturating_add(e.saturating_sub(wall)))
                    .min()
                    .unwrap_or(u64::MAX)
            }
        }
    }

    /// `leader-monotonic` keep-alive, once the read index confirmed this
    /// server still leads: renew the deadline and answer, or refuse a lease
    /// that is unknown, revoked or already expiring (the Xline lease design's
    /// `renew`).
    pub(super) fn answer_keepalive(&mut self, req: ClientRequest) {
        let Op::LeaseKeepAlive { lease } = req.op else { return };
        if self.tracker.leader_term.is_none() {
            let leader_hint = self.raft.leader_id();
            self.reply_to(&req, Response::Error(ServiceError::NotLeader { leader_hint }));
            return;
        }
        let armed = self.tracker.deadlines.deadline(lease).is_some() && !self.tracker.expiring.contains(&lease);
        let known = self.sm.leases().get(lease).map(|l| (l.ttl_ns, l.checkpoint_remaining_ns.is_some()));
        let live = armed && (known.is_some() || self.config.bugs.keepalive_after_revoke);
        if !live {
            self.reply_to(&req, Response::Error(ServiceError::LeaseNotFound { lease }));
            return;
        }
        let (ttl_ns, checkpointed) = known.unwrap_or((self.sm.settings().min_ttl_ns, false));
        if checkpointed && self.config.checkpoint_interval_ns.is_some() {
            let reset = Command::Checkpoint { remaining: vec![(lease, ttl_ns)] };
            match self.raft.propose(self.now_ns(), reset) {
                Ok(index) => self.tracker.awaiting_reset.entry(index).or_default().push(req),
                Err(error) => {
                    let body = self.refused(error);
                    self.reply_to(&req, body);
                }
            }
            return;
        }
        let now = self.now_ns();
        self.tracker.deadlines.arm(lease, now + ttl_ns);
        self.output.events.push(ServerEvent::KeepAliveAnswered { lease, client: req.client, seq: req.seq, ttl_ns, index: None });
        self.reply_to(&req, Response::KeepAlive { lease, ttl_ns });
    }

    /// Remaining time of a lease as this leader sees it.
    pub(super) fn time_to_live(&self, lease: LeaseId) -> Response {
        let Some(l) = self.sm.leases().get(lease) else {
            return Response::Error(ServiceError::LeaseNotFound { lease });
        };
        let remaining_ns = match self.config.expiry {
            ExpiryStrategy::LeaderMonotonic | ExpiryStrategy::WriterClock if self.tracker.expiring.contains(&lease) => 0,
            ExpiryStrategy::LeaderMonotonic | ExpiryStrategy::WriterClock => {
                self.tracker.deadlines.deadline(lease).map_or(l.ttl_ns, |d| d.saturating_sub(self.now_ns()))
            }
            ExpiryStrategy::LeaderStampedWall => l.expiry_wall_ns.map_or(0, |e| e.saturating_sub(self.clocks.wall_ns)),
        };
        self.sm.time_to_live(lease, remaining_ns)
    }
}

/// The leader's lease deadlines, one input at a time, on a one-server
/// cluster (it leads alone and commits what it proposes at once, so each
/// input's whole effect is in its own output).
#[cfg(test)]
mod deadline_tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::raft::{Persisted, RaftConfig};
    use crate::server::{Clocks, ServerConfig, ServerOutput};
    use crate::service::{ServiceEvent, SharedState};
    use crate::types::{NS_PER_MS, NS_PER_SEC};

    const TTL_NS: u64 = 5 * NS_PER_SEC;

    fn at(now_ns: u64) -> Clocks {
        Clocks { mono_ns: now_ns, wall_ns: now_ns }
    }

    /// A lone server and its disk.
    struct Solo {
        server: Server,
        disk: Persisted<Command, SharedState>,
    }

    impl Solo {
        /// Starts from `disk` at `start_ns` and leads from one second later.
        fn start(disk: Persisted<Command, SharedState>, start_ns: u64) -> Self {
            let config = ServerConfig::new(RaftConfig::new(1, BTreeSet::from([1])), ExpiryStrategy::LeaderMonotonic);
            Solo::start_with(config, disk, start_ns)
        }

        fn start_with(config: ServerConfig, disk: Persisted<Command, SharedState>, start_ns: u64) -> Self {
            let mut solo = Solo { server: Server::new(config, disk.clone(), 1, at(start_ns)), disk };
            solo.server.tick(at(start_ns + NS_PER_SEC));
            solo.output();
            assert!(solo.server.is_leader());
            solo
        }

        /// The output, its writes made durable first.
        fn output(&mut self) -> ServerOutput {
            let output = self.server.take_output();
            output.persist.iter().cloned().for_each(|op| self.disk.apply(op));
            output
        }

        fn ask(&mut self, now_ns: u64, seq: u64, op: Op) -> Vec<Response> {
            self.server.handle_client(at(now_ns), ClientRequest { client: 1, seq, op });
            self.output().replies.into_iter().map(|r| r.body).collect()
        }

        fn deadlines(&self) -> Vec<(LeaseId, u64)> {
            self.server.tracker.deadlines.iter().collect()
        }

        /// A lease granted at 2 s.
        fn granted() -> (Self, LeaseId) {
            let mut solo = Solo::start(Persisted::default(), 0);
            let replies = solo.ask(2 * NS_PER_SEC, 1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None });
            let [Response::LeaseGranted { lease, ttl_ns: TTL_NS }] = replies[..] else { panic!("{replies:?}") };
            (solo, lease)
        }
    }

    #[test]
    fn a_grant_is_armed_one_ttl_after_the_leader_applies_it() {
        let (solo, lease) = Solo::granted();
        assert_eq!(solo.deadlines(), vec![(lease, 2 * NS_PER_SEC + TTL_NS)]);
    }

    #[test]
    fn a_keep_alive_moves_the_deadline_to_one_ttl_from_its_answer() {
        let (mut solo, lease) = Solo::granted();
        let replies = solo.ask(4 * NS_PER_SEC, 2, Op::LeaseKeepAlive { lease });
        assert_eq!(replies, vec![Response::KeepAlive { lease, ttl_ns: TTL_NS }]);
        assert_eq!(solo.deadlines(), vec![(lease, 4 * NS_PER_SEC + TTL_NS)]);
    }

    #[test]
    fn the_expiry_is_proposed_at_the_deadline_and_not_a_nanosecond_before() {
        let (mut solo, lease) = Solo::granted();
        let deadline_ns = 2 * NS_PER_SEC + TTL_NS;
        solo.server.tick(at(deadline_ns - 1));
        assert_eq!(solo.output().events, vec![]);
        assert_eq!(solo.deadlines(), vec![(lease, deadline_ns)]);
        solo.server.tick(at(deadline_ns));
        let events = solo.output().events;
        assert_eq!(events.first(), Some(&ServerEvent::ExpiryProposed { lease }));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease: l, .. }, .. } if *l == lease)),
            "{events:?}"
        );
        assert_eq!(solo.deadlines(), vec![], "an ended lease leaves no deadline");
    }

    #[test]
    fn a_revoked_lease_is_disarmed_and_refused_a_keep_alive() {
        let (mut solo, lease) = Solo::granted();
        solo.ask(3 * NS_PER_SEC, 2, Op::LeaseRevoke { lease });
        assert_eq!(solo.deadlines(), vec![]);
        assert_eq!(solo.ask(3 * NS_PER_SEC, 3, Op::LeaseKeepAlive { lease }), vec![Response::Error(ServiceError::LeaseNotFound { lease })]);
    }

    /// Keep-alives answered from the leader's own deadlines, as etcd's
    /// lessor (`keepalive_read_index = false`), with a leader lease kept for
    /// them: answered only while the lease holds. After a silence longer
    /// than the lease (here 150 ms · 0.99 / 1.01 ≈ 147 ms), as after a
    /// pause, the answer is `Retry`, and the deadline stays where it was;
    /// the next heartbeat round (the lone server confirms its own) renews
    /// the lease and the same keep-alive is answered.
    #[test]
    fn a_keep_alive_from_the_leaders_deadlines_waits_for_its_lease() {
        let mut config = ServerConfig::new(RaftConfig::new(1, BTreeSet::from([1])), ExpiryStrategy::LeaderMonotonic);
        config.keepalive_read_index = false;
        config.raft.keepalive_lease_drift_ppm = Some(10_000);
        let mut solo = Solo::start_with(config, Persisted::default(), 0);
        let replies = solo.ask(2 * NS_PER_SEC, 1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None });
        let [Response::LeaseGranted { lease, .. }] = replies[..] else { panic!("{replies:?}") };
        let silent_since_ns = 2 * NS_PER_SEC;
        solo.server.tick(at(silent_since_ns));
        solo.output();
        let within_ns = silent_since_ns + 100 * NS_PER_MS;
        assert_eq!(solo.ask(within_ns, 2, Op::LeaseKeepAlive { lease }), vec![Response::KeepAlive { lease, ttl_ns: TTL_NS }]);
        let after_ns = silent_since_ns + 500 * NS_PER_MS;
        assert_eq!(solo.ask(after_ns, 3, Op::LeaseKeepAlive { lease }), vec![Response::Error(ServiceError::Retry)]);
        assert_eq!(solo.deadlines(), vec![(lease, within_ns + TTL_NS)], "a refused keep-alive renews nothing");
        solo.server.tick(at(after_ns + 1));
        solo.output();
        assert_eq!(solo.ask(after_ns + 2, 4, Op::LeaseKeepAlive { lease }), vec![Response::KeepAlive { lease, ttl_ns: TTL_NS }]);
    }

    /// The old leader may have renewed a lease it granted right up to its
    /// last moment, so a new leader gives it the extension on top of a full
    /// TTL (etcd's `Promote`), counted from when it applies the grant.
    #[test]
    fn a_grant_of_an_earlier_term_is_armed_with_the_promote_extension() {
        let (solo, lease) = Solo::granted();
        let restarted = Solo::start(solo.disk, 20 * NS_PER_SEC);
        let extension_ns = restarted.server.config.promote_extension_ns;
        assert_eq!(extension_ns, 300 * NS_PER_MS, "the largest election timeout");
        assert_eq!(restarted.deadlines(), vec![(lease, 21 * NS_PER_SEC + extension_ns + TTL_NS)]);
    }
}

/// Promote with checkpoints, one message at a time on a three-server
/// cluster with no latency: the exact sequence the leader-pause-checkpoint
/// study found (a keep-alive's reset committed, the leader gone before the
/// followers learn the commit, a follower elected), which a seeded run hits
/// in about 1 run in 30.
#[cfg(test)]
mod promote_tests {
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    use super::*;
    use crate::raft::{Persisted, RaftConfig};
    use crate::server::{Clocks, PeerMessage, ServerConfig};
    use crate::types::{NodeId, NS_PER_MS, NS_PER_SEC};

    const TTL_NS: u64 = 5 * NS_PER_SEC;

    /// Three servers, a mailbox, and the one server that is paused.
    struct Trio {
        servers: BTreeMap<NodeId, Server>,
        mail: VecDeque<(NodeId, NodeId, PeerMessage)>,
        paused: Option<NodeId>,
        now_ns: u64,
        replies: Vec<Response>,
    }

    impl Trio {
        fn new() -> Self {
            let voters = BTreeSet::from([1, 2, 3]);
            let config = |id| {
                let mut config = ServerConfig::new(RaftConfig::new(id, voters.clone()), ExpiryStrategy::LeaderMonotonic);
                config.checkpoint_interval_ns = Some(NS_PER_SEC);
                config
            };
            let clocks = Clocks::default();
            let servers = (1..=3).map(|id| (id, Server::new(config(id), Persisted::default(), id, clocks))).collect();
            Trio { servers, mail: VecDeque::new(), paused: None, now_ns: 0, replies: Vec::new() }
        }

        fn clocks(&self) -> Clocks {
            Clocks { mono_ns: self.now_ns, wall_ns: self.now_ns }
        }

        /// Collects `id`'s output: its messages into the mailbox (none from
        /// the paused server), its replies into `replies`.
        fn collect(&mut self, id: NodeId) {
            let output = self.servers.get_mut(&id).expect("a server").take_output();
            if self.paused != Some(id) {
                self.mail.extend(output.messages.into_iter().map(|(to, msg)| (id, to, msg)));
            }
            self.replies.extend(output.replies.into_iter().map(|r| r.body));
        }

        /// Delivers the oldest message (dropped if it touches the paused
        /// server); false when the mailbox is empty.
        fn deliver_one(&mut self) -> bool {
            let Some((from, to, msg)) = self.mail.pop_front() else { return false };
            if self.paused != Some(to) && self.paused != Some(from) {
                let clocks = self.clocks();
                self.servers.get_mut(&to).expect("a server").handle_peer(clocks, from, msg);
                self.collect(to);
            }
            true
        }

        fn deliver_all(&mut self) {
            while self.deliver_one() {}
        }

        /// Advances to `until_ns` in 10 ms steps, ticking every server that
        /// is not paused and delivering everything at once.
        fn run_until(&mut self, until_ns: u64) {
            while self.now_ns < until_ns {
                self.now_ns = (self.now_ns + 10 * NS_PER_MS).min(until_ns);
                for id in 1..=3 {
                    if self.paused != Some(id) {
                        let clocks = self.clocks();
                        self.servers.get_mut(&id).expect("a server").tick(clocks);
                        self.collect(id);
                    }
                }
                self.deliver_all();
            }
        }

        fn ask(&mut self, id: NodeId, seq: u64, op: Op) {
            let clocks = self.clocks();
            self.servers.get_mut(&id).expect("a server").handle_client(clocks, ClientRequest { client: 9, seq, op });
            self.collect(id);
        }

        fn leader(&self) -> Option<NodeId> {
            self.servers.iter().filter(|(id, s)| s.is_leader() && self.paused != Some(**id)).map(|(id, _)| *id).next()
        }

        fn server(&self, id: NodeId) -> &Server {
            &self.servers[&id]
        }
    }

    /// Server 1 leads (it alone is ticked at 1 s, past every election
    /// timeout), and a lease is granted at 1 s and checkpointed on every server by 2.5 s.
    fn checkpointed_lease() -> (Trio, LeaseId, u64) {
        let mut trio = Trio::new();
        trio.now_ns = NS_PER_SEC;
        let clocks = trio.clocks();
        trio.servers.get_mut(&1).expect("server 1").tick(clocks);
        trio.collect(1);
        trio.deliver_all();
        assert_eq!(trio.leader(), Some(1));
        trio.ask(1, 1, Op::LeaseGrant { ttl_ns: TTL_NS, id: None });
        trio.deliver_all();
        let Some(Response::LeaseGranted { lease, .. }) = trio.replies.pop() else { panic!("{:?}", trio.replies) };
        trio.run_until(2500 * NS_PER_MS);
        let remaining = trio.server(2).sm.leases().get(lease).and_then(|l| l.checkpoint_remaining_ns);
        let remaining = remaining.expect("a checkpoint applied on server 2");
        assert!(remaining < TTL_NS - 500 * NS_PER_MS, "{remaining}");
        (trio, lease, remaining)
    }

    /// The old leader answers the keep-alive once its reset commits; the
    /// followers hold the reset but never hear that it committed; one of
    /// them is elected. It must arm the lease a full TTL from when it applies
    /// that reset, not from the older checkpoint it had applied.
    #[test]
    fn a_new_leader_applies_a_committed_reset_before_it_promotes() {
        let (mut trio, lease, remaining) = checkpointed_lease();
        let answered_ns = trio.now_ns;
        trio.ask(1, 2, Op::LeaseKeepAlive { lease });
        let is_reset = |e: &crate::raft::Entry<Command>| matches!(&e.payload, crate::raft::Payload::Command(Command::Checkpoint { remaining }) if *remaining == vec![(lease, TTL_NS)]);
        // Deliver until the old leader committed the reset, then pause it.
        while !trio.server(1).raft.entries(1, trio.server(1).raft.commit_index()).iter().any(is_reset) {
            assert!(trio.deliver_one(), "the reset committed");
        }
        trio.paused = Some(1);
        assert_eq!(trio.replies, vec![Response::KeepAlive { lease, ttl_ns: TTL_NS }]);
        let reset_index = trio.server(1).raft.entries(1, trio.server(1).raft.last_index()).iter().find(|e| is_reset(e)).map(|e| e.index);
        let reset_index = reset_index.expect("a reset entry");
        for id in [2, 3] {
            assert!(trio.server(id).raft.last_index() >= reset_index, "server {id} holds the reset");
            assert!(trio.server(id).sm.applied_index() < reset_index, "server {id} has not applied it");
        }
        // Tick the followers until one is elected; stop before its Noop commits.
        while trio.leader().is_none() {
            trio.now_ns += 10 * NS_PER_MS;
            for id in [2, 3] {
                let clocks = trio.clocks();
                trio.servers.get_mut(&id).expect("a server").tick(clocks);
                trio.collect(id);
            }
            while trio.leader().is_none() && trio.deliver_one() {}
        }
        let new = trio.leader().expect("elected");
        assert!(trio.server(new).sm.applied_index() < reset_index, "elected before applying the reset");
        assert_eq!(trio.server(new).tracker.leader_term, None, "not promoted before applying an entry of its term");
        // The Noop commits 5 ms later, and with it the reset.
        trio.now_ns += 5 * NS_PER_MS;
        let promoted_ns = trio.now_ns;
        trio.deliver_all();
        let extension_ns = trio.server(new).config.promote_extension_ns;
        let deadline = trio.server(new).lease_deadlines().deadline(lease);
        assert_eq!(deadline, Some(promoted_ns + extension_ns + TTL_NS), "not {}", promoted_ns + extension_ns + remaining);
        assert!(deadline >= Some(answered_ns + TTL_NS), "the renewed lease lives its TTL");
    }

    /// A checkpoint falls due while a keep-alive's reset is in the log but
    /// not yet applied on the leader: it must leave that lease out, or,
    /// logged after the reset, it would restore the pre-reset remaining TTL
    /// on every server and a next leader would promote from it.
    #[test]
    fn a_checkpoint_leaves_out_a_lease_whose_reset_is_in_flight() {
        let (mut trio, lease, _) = checkpointed_lease();
        // Ask 10 ms before the checkpoint of 3 s (every second from 1 s);
        // a longer silence would let the followers' election timers run out.
        trio.run_until(2990 * NS_PER_MS);
        trio.ask(1, 2, Op::LeaseKeepAlive { lease });
        let in_log = |trio: &Trio| trio.server(1).tracker.awaiting_reset.values().flatten().any(|r| r.client == 9 && r.seq == 2);
        while !in_log(&trio) {
            assert!(trio.deliver_one(), "the read-index round ends with the reset proposed");
        }
        trio.now_ns = 3 * NS_PER_SEC;
        let clocks = trio.clocks();
        trio.servers.get_mut(&1).expect("server 1").tick(clocks);
        trio.collect(1);
        trio.run_until(3500 * NS_PER_MS);
        assert_eq!(trio.replies, vec![Response::KeepAlive { lease, ttl_ns: TTL_NS }]);
        for id in 1..=3 {
            let remaining = trio.server(id).sm.leases().get(lease).map(|l| l.checkpoint_remaining_ns);
            assert_eq!(remaining, Some(None), "server {id}: the reset is the lease's last word");
        }
    }
}
