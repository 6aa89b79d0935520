//! The lock workload (SCENARIO-FORMAT.md `kind = "lock"`): each client keeps
//! a lease alive and loops: think, acquire a key, check its belief when the
//! grant arrives, work for `hold`, write to the data store with its fencing
//! token, release. A pause during the work makes the write late — the hazard
//! fencing exists for (Kleppmann, "How to do distributed locking").

use leasesim_core::client::Session;
use leasesim_core::service::{ClientResponse, Op, Response, ServiceError};
use leasesim_core::LeaseId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::keeper::{LeaseKeeper, LeaseNews};
use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::{StoreWrite, Wire};
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_judge::vocab::Proc;
use leasesim_scenario::LockWorkload;

/// How long a holder waits for the data store before resending its write.
const STORE_RETRY_NS: u64 = 500 * leasesim_core::NS_PER_MS;

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Waiting for a lease.
    NoLease,
    Thinking {
        until_mono_ns: u64,
    },
    Acquiring {
        key: String,
        seq: u64,
    },
    Working {
        key: String,
        token: u64,
        until_mono_ns: u64,
    },
    /// The store write is in flight; resent at `resend_mono_ns` if neither
    /// it nor its reply got through (the store takes a repeat: same token).
    Writing {
        key: String,
        token: u64,
        request_id: u64,
        resend_mono_ns: u64,
    },
    Releasing {
        seq: u64,
    },
}

pub struct LockClient {
    start: ClientStart,
    spec: LockWorkload,
    rng: ChaCha8Rng,
    session: Session,
    keeper: Option<LeaseKeeper>,
    phase: Phase,
    /// The key this client currently believes it holds.
    believed: Option<String>,
    next_request_id: u64,
}

impl LockClient {
    pub fn new(start: ClientStart, spec: LockWorkload) -> Self {
        let (rng, session) = (start.rng(), start.session());
        LockClient { start, spec, rng, session, keeper: None, phase: Phase::NoLease, believed: None, next_request_id: 1 }
    }

    fn end_belief(&mut self, step: &Step<'_>, why: BeliefEnd) {
        if let Some(key) = self.believed.take() {
            step.world.set_holder(&key, None);
            step.record(Event::BeliefEnded { key, why });
        }
    }

    /// The belief lapses by the client's own clock; checked before any input
    /// so a late-delivered renewal cannot revive a lapsed belief.
    fn check_lapse(&mut self, step: &Step<'_>) {
        let holds = self.keeper.as_ref().is_some_and(|k| k.belief.holds(step.mono_ns));
        if self.believed.is_some() && !holds {
            self.end_belief(step, BeliefEnd::TimerLapsed);
        }
    }

    fn think(&mut self, now_mono_ns: u64) {
        let think_ns = draw_ns(&mut self.rng, self.spec.think_ns);
        self.phase = Phase::Thinking { until_mono_ns: now_mono_ns + think_ns };
    }

    fn lease(&self) -> Option<LeaseId> {
        self.keeper.as_ref().and_then(|k| k.lease())
    }

    fn on_response(&mut self, step: &mut Step<'_>, response: ClientResponse) {
        let Some(done) = self.session.on_response(step.mono_ns, response) else { return };
        let session = &mut self.session;
        let keeper = self.keeper.as_mut().expect("started");
        if let Some(news) = keeper.on_completion(step, session, &done) {
            match news {
                LeaseNews::Granted { .. } => {
                    if self.phase == Phase::NoLease {
                        self.think(step.mono_ns);
                    }
                }
                LeaseNews::Renewed { until_mono_ns } => {
                    if let Some(key) = self.believed.clone() {
                        step.record(Event::BeliefExtended { key, until_mono_ns });
                    }
                }
                LeaseNews::Lost { .. } => {
                    self.end_belief(step, BeliefEnd::KeepAliveRefused);
                    // Whatever was in progress belonged to the dead lease.
                    if let Phase::Acquiring { seq, .. } | Phase::Releasing { seq } = self.phase {
                        self.session.cancel(seq);
                    }
                    self.phase = Phase::NoLease;
                }
            }
            return;
        }
        match (&self.phase, done.response) {
            (Phase::Acquiring { seq, key }, Response::LockGranted { token, .. }) if *seq == done.seq => {
                let key = key.clone();
                // The holder checks its belief when it starts its work.
                let keeper = self.keeper.as_ref().expect("started");
                if keeper.belief.holds(step.mono_ns) {
                    let until_mono_ns = keeper.belief.until_ns().expect("holds");
                    let lease = self.lease().expect("a belief needs a lease");
                    step.world.set_holder(&key, Some(self.start.id));
                    step.record(Event::BeliefStarted { key: key.clone(), lease, token, until_mono_ns });
                    step.record(Event::WorkStarted { key: key.clone(), token });
                    self.believed = Some(key.clone());
                    let hold_ns = draw_ns(&mut self.rng, self.spec.hold_ns);
                    self.phase = Phase::Working { key, token, until_mono_ns: step.mono_ns + hold_ns };
                } else {
                    // Granted too late to trust: give it back without working.
                    let seq = self.session.submit(step.mono_ns, Op::LockRelease { key, token });
                    self.phase = Phase::Releasing { seq };
                }
            }
            (Phase::Releasing { seq }, Response::Released { .. } | Response::Error(ServiceError::NotLockHolder { .. }))
                if *seq == done.seq =>
            {
                self.think(step.mono_ns);
            }
            (Phase::Acquiring { seq, .. }, Response::Error(ServiceError::LeaseNotFound { .. })) if *seq == done.seq => {
                // The acquire named a lease the cluster has already ended
                // (or dropped this waiter with it); the keeper learns it on
                // its next keep-alive and asks for a new lease.
                self.phase = Phase::NoLease;
            }
            (Phase::Acquiring { seq, .. }, Response::Error(_)) if *seq == done.seq => {
                // Any other refusal: think, then try again.
                self.think(step.mono_ns);
            }
            _ => {}
        }
    }

    fn on_store_reply(&mut self, step: &mut Step<'_>, request_id: u64) {
        let Phase::Writing { key, token, request_id: expected, .. } = &self.phase else { return };
        if *expected != request_id {
            return;
        }
        let (key, token) = (key.clone(), *token);
        self.end_belief(step, BeliefEnd::Released);
        let seq = self.session.submit(step.mono_ns, Op::LockRelease { key, token });
        self.phase = Phase::Releasing { seq };
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session.take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for LockClient {
    fn start(&mut self, step: &mut Step<'_>) {
        let belief = LeaseKeeper::new_belief(self.spec.margin, self.spec.belief_from, self.start.trust_full_ttl);
        self.keeper = Some(LeaseKeeper::start(&mut self.session, step.mono_ns, self.spec.ttl_ns, self.spec.keepalive_ns, belief));
        self.flush(step);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        self.check_lapse(step);
        match wire {
            Wire::Response(response) => self.on_response(step, response),
            Wire::StoreReply(reply) => self.on_store_reply(step, reply.request_id),
            other => panic!("c{} got an unexpected message from {from}: {other:?}", self.start.id),
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        self.check_lapse(step);
        let now_ns = step.mono_ns;
        self.session.tick(now_ns);
        let session = &mut self.session;
        self.keeper.as_mut().expect("started").on_timer(session, now_ns);
        match self.phase.clone() {
            Phase::Thinking { until_mono_ns } if until_mono_ns <= now_ns => {
                if let Some(lease) = self.lease() {
                    let key = self.spec.keys[self.rng.gen_range(0..self.spec.keys.len())].clone();
                    let seq = self.session.submit(now_ns, Op::LockAcquire { key: key.clone(), lease });
                    step.record(Event::AcquireSent { key: key.clone(), lease, seq });
                    self.phase = Phase::Acquiring { key, seq };
                }
            }
            Phase::Working { key, token, until_mono_ns } if until_mono_ns <= now_ns => {
                let request_id = self.next_request_id;
                self.next_request_id += 1;
                let write = StoreWrite { client: self.start.id, key: key.clone(), token, request_id };
                step.send(Proc::Store, Wire::StoreWrite(write));
                self.phase = Phase::Writing { key, token, request_id, resend_mono_ns: now_ns + STORE_RETRY_NS };
            }
            Phase::Writing { key, token, request_id, resend_mono_ns } if resend_mono_ns <= now_ns => {
                let write = StoreWrite { client: self.start.id, key: key.clone(), token, request_id };
                step.send(Proc::Store, Wire::StoreWrite(write));
                self.phase = Phase::Writing { key, token, request_id, resend_mono_ns: now_ns + STORE_RETRY_NS };
            }
            _ => {}
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let phase_ns = match &self.phase {
            Phase::Thinking { until_mono_ns } | Phase::Working { until_mono_ns, .. } => Some(*until_mono_ns),
            Phase::Writing { resend_mono_ns, .. } => Some(*resend_mono_ns),
            _ => None,
        };
        let lapse_ns = self.believed.as_ref().and_then(|_| self.keeper.as_ref()?.belief.until_ns());
        [phase_ns, lapse_ns, self.session.next_deadline_ns(), self.keeper.as_ref().and_then(|k| k.next_deadline_mono_ns())]
            .into_iter()
            .flatten()
            .min()
    }
}
