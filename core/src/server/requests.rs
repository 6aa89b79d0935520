//! Client requests at a server: who answers, and by which path.
//!
//! A follower answers `NotLeader` with its best guess of the leader (the
//! client follows the hint). The leader proposes logged operations and
//! answers them when it applies them; reads and `leader-monotonic`
//! keep-alives go through the read index (thesis §6.4) instead of the log;
//! `leader-stamped-wall` keep-alives are logged as `Refresh` with a new
//! stamp (the Raft lock-service design); `writer-clock` grants and keep-alives
//! are logged as they come, carrying the client's own clock reading (the Juju
//! lease design), and the other strategies read `LeaseClaim` / `LeaseExtend` as
//! plain grants and keep-alives. Checks made here before proposing are repeated
//! when applying, because several proposals can be in flight (the
//! consistent-core lease design).

use crate::server::Server;
use crate::service::session::Lookup;
use crate::service::{ClientRequest, Command, Op, Response, ServiceError};
use crate::types::{ExpiryStrategy, LeaseId, NodeId};

impl Server {
    pub(super) fn on_request(&mut self, req: ClientRequest) {
        let req = self.without_writer_clock(req);
        if !self.is_leader() {
            if let (true, Op::Get { key }) = (self.config.bugs.stale_follower_reads, &req.op) {
                // Planted bug: a follower answers from whatever it applied.
                let body = self.sm.read_value(key);
                self.reply_to(&req, body);
                return;
            }
            self.reply_to(&req, Response::Error(ServiceError::NotLeader { leader_hint: self.leader_hint() }));
            return;
        }
        match (&req.op, self.config.expiry) {
            (Op::Get { .. } | Op::LeaseTimeToLive { .. } | Op::LeaseList, _) => self.start_read(req),
            // etcd's lessor answers from the leader's own state; this design
            // first confirms leadership with a read-index round, unless
            // configured as etcd (then only the Promote extension keeps a
            // deposed leader's answers safe). Even then a new leader answers
            // only once it has applied everything committed (etcd's
            // `waitAppliedIndex` in LeaseRenew): its state machine may not
            // yet hold the revoke of the lease being renewed. The simulator
            // found this: chaos-nemesis seed 26, a restarted server elected
            // leader answered a keep-alive 34 ms before re-applying the
            // lease's revoke (keepalive-after-revoke, lease-early-expiry).
            // And with a leader lease tracked for keep-alives, only while it
            // holds: a leader paused through its successor's election takes
            // its followers' backlog for fresh contact and would otherwise
            // answer for longer than the Promote extension covers
            // (chaos-failover seed 1378; core/src/raft/lease_read.rs).
            (Op::LeaseKeepAlive { .. }, ExpiryStrategy::LeaderMonotonic) if !self.config.keepalive_read_index => {
                let applied_all = self.sm.applied_index() >= self.raft.commit_index();
                if self.raft.has_committed_in_term() && applied_all && self.keepalive_lease_holds() {
                    self.answer_keepalive(req)
                } else {
                    self.reply_to(&req, Response::Error(ServiceError::Retry));
                }
            }
            (Op::LeaseKeepAlive { .. }, ExpiryStrategy::LeaderMonotonic) => self.start_read(req),
            (Op::LeaseKeepAlive { .. }, ExpiryStrategy::WriterClock) => self.propose_request(req),
            (Op::LeaseKeepAlive { lease }, ExpiryStrategy::LeaderStampedWall) => {
                let lease = *lease;
                self.propose_refresh(req, lease);
            }
            _ => self.propose_request(req),
        }
    }

    /// Whether a keep-alive answered from this leader's own deadlines is
    /// covered by its leader lease: always, when no lease is tracked for
    /// keep-alives (`keepalive_lease_drift_ppm` unset: etcd 3.4's lessor
    /// exactly, unsafe across a leader pause).
    fn keepalive_lease_holds(&self) -> bool {
        self.config.raft.keepalive_lease_drift_ppm.is_none() || self.raft.holds_leader_lease(self.clocks.mono_ns)
    }

    /// Who a follower names as leader: the leader it last heard from, but
    /// nobody once it is outside its configuration in force. A voter's
    /// hint corrects itself (a leader's heartbeats update it, and a silent
    /// leader makes it campaign, which clears it); a removed server is no
    /// longer sent heartbeats and never campaigns, so the leader it knew when
    /// removed stays its hint after that leader has crashed, and every
    /// client that asks it is sent back to the dead server
    /// (reports/sim-vs-real.md, "failover-stall traced", a: membership-change
    /// seed 4). The fault is the server's, not the client's, which cannot
    /// tell a stale hint from a fresh one: etcd 3.4 stops a member 1 s
    /// after it applies its own removal (`etcdserver/server.go`
    /// `applyEntries`: `stopWithDelay`, "the member has been permanently
    /// removed from the cluster"), so its clients' connections are refused
    /// and they try the next endpoint at once; an answer without a hint
    /// sends a client here on to the next server the same way.
    fn leader_hint(&self) -> Option<NodeId> {
        self.raft.leader_id().filter(|_| self.raft.voters().contains(&self.id()))
    }

    /// Outside `writer-clock` a client's clock reading means nothing to the
    /// servers: a claim is a grant and an extension a keep-alive. (The
    /// session record is keyed by `(client, seq)`, not by the op, so a retry
    /// of the rewritten request is still recognised.)
    fn without_writer_clock(&self, mut req: ClientRequest) -> ClientRequest {
        if self.config.expiry != ExpiryStrategy::WriterClock {
            req.op = match req.op {
                Op::LeaseClaim { ttl_ns, .. } => Op::LeaseGrant { ttl_ns, id: None },
                Op::LeaseExtend { lease, .. } => Op::LeaseKeepAlive { lease },
                op => op,
            };
        }
        req
    }

    fn start_read(&mut self, req: ClientRequest) {
        let ctx = self.reads.start(req);
        if let Err(error) = self.raft.read_index(self.clocks.mono_ns, ctx) {
            if let Some(req) = self.reads.abandon(ctx) {
                let body = self.refused(error);
                self.reply_to(&req, body);
            }
        }
    }

    /// Answers a read whose index this server has applied.
    pub(super) fn serve_read(&mut self, req: ClientRequest) {
        let body = match &req.op {
            Op::Get { key } => self.sm.read_value(key),
            Op::LeaseList => self.sm.lease_list(),
            Op::LeaseTimeToLive { lease } => self.time_to_live(*lease),
            Op::LeaseKeepAlive { .. } => return self.answer_keepalive(req),
            // Only reads are ever registered.
            _ => Response::Error(ServiceError::Retry),
        };
        self.reply_to(&req, body);
    }

    fn propose_request(&mut self, req: ClientRequest) {
        let grant = match &req.op {
            Op::LeaseGrant { ttl_ns, id } => Some((ttl_ns, *id)),
            Op::LeaseClaim { ttl_ns, .. } => Some((ttl_ns, None)),
            _ => None,
        };
        if let Some((ttl_ns, id)) = grant {
            // Refuse what is certain to fail, but only for a request not
            // seen before: a retried grant must get its recorded answer.
            if self.sm.sessions().lookup(req.client, req.seq) == Lookup::New {
                let min_ns = self.sm.settings().min_ttl_ns;
                if *ttl_ns < min_ns {
                    return self.reply_to(&req, Response::Error(ServiceError::TtlTooShort { min_ns }));
                }
                if let Some(lease) = id.filter(|id| *id != 0 && self.sm.leases().contains(*id)) {
                    return self.reply_to(&req, Response::Error(ServiceError::DuplicateLease { lease }));
                }
            }
        }
        // A resend of a request this leader already has in its log, not yet
        // applied, is not logged again: that copy answers it when applied
        // (replies go by `(client, seq)`), and a leader never loses an entry
        // of its own term while it leads. Logging every resend made the log's
        // load the clients' resend rate, whatever its throughput: with small
        // appends and slow links the duplicates outran the commits, the
        // backlog and commit latency grew without bound even with no fault
        // left, and expiries and lock releases waited seconds behind it
        // (chaos-nemesis seeds 328 and 734 under writer-clock, where every
        // keep-alive is logged: 80–97% of committed entries were duplicates).
        let key = (req.client, req.seq);
        let term = self.raft.term();
        if self.proposed.get(&key).is_some_and(|&(t, index)| t == term && index > self.sm.applied_index()) {
            return;
        }
        if self.propose_split_txn(&req) {
            return;
        }
        let command = Command::Request { req: req.clone(), stamp_wall_ns: self.clocks.wall_ns };
        match self.raft.propose(self.clocks.mono_ns, command) {
            Ok(index) => {
                self.proposed.insert(key, (term, index));
            }
            Err(error) => {
                let body = self.refused(error);
                self.reply_to(&req, body);
            }
        }
    }

    /// `leader-stamped-wall` keep-alive: stamp the leader's wall clock + TTL
    /// and log it; answered when applied.
    fn propose_refresh(&mut self, req: ClientRequest, lease: LeaseId) {
        let wall = self.clocks.wall_ns;
        let known = self.sm.leases().get(lease).map(|l| (l.ttl_ns, l.expiry_wall_ns.is_some_and(|e| e <= wall)));
        let ttl_ns = match known {
            // Past its stamp on the leader's own clock: expired here, and
            // refreshing it would only extend it on servers whose clocks lag.
            Some((_, true)) if !self.config.bugs.keepalive_after_revoke => {
                return self.reply_to(&req, Response::Error(ServiceError::LeaseNotFound { lease }));
            }
            Some((ttl_ns, _)) => ttl_ns,
            None if self.config.bugs.keepalive_after_revoke => self.sm.settings().min_ttl_ns,
            // The leader's state may lag until it commits an entry of its
            // term; only then is "unknown" an answer.
            None if self.raft.has_committed_in_term() => {
                return self.reply_to(&req, Response::Error(ServiceError::LeaseNotFound { lease }));
            }
            None => return self.reply_to(&req, Response::Error(ServiceError::Retry)),
        };
        let command = Command::Refresh { req: req.clone(), lease, expiry_wall_ns: wall.saturating_add(ttl_ns) };
        if let Err(error) = self.raft.propose(self.clocks.mono_ns, command) {
            let body = self.refused(error);
            self.reply_to(&req, body);
        }
    }
}
