//! Keeping a lease: grant it, keep it alive every `keepalive_ns`, and track
//! the client's belief that it still holds it. Shared by every workload that
//! holds a lease (lock holders, registry clients).
//!
//! Keep-alives and re-grants carry the client's own wall-clock reading
//! (`LeaseExtend` / `LeaseClaim`), which only the `writer-clock` strategy uses
//! (the Juju lease design: the holder writes its expiry in its own clock); the
//! other strategies' servers read them as plain keep-alives and grants. The
//! timer that sends a keep-alive sees only the monotonic clock, so the reading
//! is the monotonic one plus the wall − monotonic difference seen at the last
//! reply: both run at the same rate, and only a wall-clock step since that
//! reply is missed (until the next reply). The very first grant, sent before
//! any reply, carries no reading; the servers then count its expiry from the
//! client's last acknowledged time, by their own measured duration.

use leasesim_core::client::{Belief, BeliefFrom, Completion, Session};
use leasesim_core::service::{Op, Response, ServiceError};
use leasesim_core::LeaseId;

use crate::host::Step;
use leasesim_judge::observe::Event;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A grant request is in flight.
    Granting {
        seq: u64,
    },
    Live {
        lease: LeaseId,
    },
}

/// What a completion meant for the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseNews {
    Granted {
        lease: LeaseId,
    },
    /// A keep-alive renewed the belief up to `until_mono_ns` (own clock).
    Renewed {
        until_mono_ns: u64,
    },
    /// The cluster refused a keep-alive: the lease is gone. A new grant is
    /// already on its way.
    Lost {
        lease: LeaseId,
    },
}

pub struct LeaseKeeper {
    ttl_ns: u64,
    keepalive_ns: u64,
    state: State,
    keepalive_seq: Option<u64>,
    next_keepalive_mono_ns: Option<u64>,
    /// Own wall clock minus own monotonic clock at the last reply (`None`
    /// before the first): how a keep-alive timer reads the wall clock.
    wall_minus_mono_ns: Option<i128>,
    pub belief: Belief,
}

impl LeaseKeeper {
    /// Starts by asking for a lease.
    pub fn start(session: &mut Session, now_mono_ns: u64, ttl_ns: u64, keepalive_ns: u64, belief: Belief) -> Self {
        assert!(keepalive_ns > 0 && keepalive_ns < ttl_ns, "keep-alive must come before the TTL runs out");
        let seq = session.submit(now_mono_ns, Op::LeaseGrant { ttl_ns, id: None });
        LeaseKeeper {
            ttl_ns,
            keepalive_ns,
            state: State::Granting { seq },
            keepalive_seq: None,
            next_keepalive_mono_ns: None,
            wall_minus_mono_ns: None,
            belief,
        }
    }

    pub fn new_belief(margin: f64, from: BeliefFrom, trust_full_ttl: bool) -> Belief {
        Belief::new(margin, from, trust_full_ttl)
    }

    pub fn lease(&self) -> Option<LeaseId> {
        match self.state {
            State::Live { lease } => Some(lease),
            State::Granting { .. } => None,
        }
    }

    pub fn next_deadline_mono_ns(&self) -> Option<u64> {
        self.next_keepalive_mono_ns
    }

    /// Sends a keep-alive if one is due and none is in flight.
    pub fn on_timer(&mut self, session: &mut Session, now_mono_ns: u64) {
        let (State::Live { lease }, Some(due_ns)) = (self.state, self.next_keepalive_mono_ns) else { return };
        if now_mono_ns < due_ns {
            return;
        }
        self.next_keepalive_mono_ns = None;
        if self.keepalive_seq.is_none() {
            let op = match self.wall_minus_mono_ns {
                Some(delta) => {
                    let writer_wall_ns = (i128::from(now_mono_ns) + delta).clamp(0, i128::from(u64::MAX)) as u64;
                    Op::LeaseExtend { lease, writer_wall_ns }
                }
                None => Op::LeaseKeepAlive { lease },
            };
            self.keepalive_seq = Some(session.submit(now_mono_ns, op));
        }
    }

    /// Takes the completion if it answers one of the keeper's requests.
    pub fn on_completion(&mut self, step: &Step<'_>, session: &mut Session, done: &Completion) -> Option<LeaseNews> {
        // The belief counts from the *first* send: a retried request may have
        // been answered for an earlier copy, and the server's TTL cannot
        // have started before the first copy left.
        let sent_at_ns = step.world.true_time_of_mono(step.proc, done.first_sent_ns);
        self.wall_minus_mono_ns = Some(i128::from(step.wall_ns) - i128::from(step.mono_ns));
        if self.state == (State::Granting { seq: done.seq }) {
            return match &done.response {
                Response::LeaseGranted { lease, ttl_ns } => {
                    self.state = State::Live { lease: *lease };
                    self.belief.acknowledge(done.first_sent_ns, done.received_ns, *ttl_ns);
                    step.record(Event::LeaseAcked { lease: *lease, ttl_ns: *ttl_ns, sent_at_ns, keepalive: false });
                    self.next_keepalive_mono_ns = Some(done.first_sent_ns + self.keepalive_ns);
                    Some(LeaseNews::Granted { lease: *lease })
                }
                // A retried grant answered after the lease it granted had
                // already ended (the first answer was lost or late): the
                // server will not replay it as alive. Ask for a new one.
                Response::Error(ServiceError::LeaseNotFound { .. }) => {
                    let seq = session.submit(done.received_ns, Op::LeaseGrant { ttl_ns: self.ttl_ns, id: None });
                    self.state = State::Granting { seq };
                    None
                }
                other => panic!("lease grant of {}ns refused: {other:?} (scenario validation should prevent this)", self.ttl_ns),
            };
        }
        if self.keepalive_seq != Some(done.seq) {
            return None;
        }
        self.keepalive_seq = None;
        let State::Live { lease } = self.state else { unreachable!("keep-alives are only sent for a live lease") };
        match &done.response {
            Response::KeepAlive { ttl_ns, .. } => {
                let until_mono_ns = self.belief.acknowledge(done.first_sent_ns, done.received_ns, *ttl_ns);
                step.record(Event::LeaseAcked { lease, ttl_ns: *ttl_ns, sent_at_ns, keepalive: true });
                // Renew `keepalive_ns` after the first send; at once if the
                // answer itself came later than that.
                self.next_keepalive_mono_ns = Some((done.first_sent_ns + self.keepalive_ns).max(done.received_ns));
                Some(LeaseNews::Renewed { until_mono_ns })
            }
            Response::Error(ServiceError::LeaseNotFound { .. }) => {
                step.record(Event::KeepAliveRefused { lease });
                self.belief.end();
                let claim = Op::LeaseClaim { ttl_ns: self.ttl_ns, writer_wall_ns: step.wall_ns };
                let seq = session.submit(done.received_ns, claim);
                self.state = State::Granting { seq };
                Some(LeaseNews::Lost { lease })
            }
            other => panic!("unexpected keep-alive answer {other:?}"),
        }
    }
}
