//! Singleton instances (`kind = "singleton"`), the multi-instance lease
//! design's task generator that "acquires a lease, which acts as a lock,
//! allowing only one instance to actively generate tasks. Other instances
//! remain idle".
//!
//! Each instance keeps a lease alive and, while idle, tries every `poll` to
//! create `/singleton/<role>` attached to its lease (a compare-and-set with
//! `expected: None`: one winner; the key's revision is its fencing token).
//! The winner believes it runs the role while its belief in the lease holds,
//! and runs the job every `interval`: a heartbeat write to the data store
//! under `singleton/<role>` with its token, so a stale holder's late write
//! is fenced out. When the holder fails, its lease ends, the key goes with
//! it, and an idle instance takes over. `singleton-overlap` judges that no
//! two instances believe at once.
//!
//! A holder whose belief lapses by its own clock steps down, revokes that
//! lease (freeing the role at once) and takes a new one.

use leasesim_core::client::{Completion, Session};
use leasesim_core::service::{ClientResponse, Op, Response, ServiceError};
use rand_chacha::ChaCha8Rng;

use super::keeper::{LeaseKeeper, LeaseNews};
use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::{StoreWrite, Wire};
use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_judge::vocab::Proc;
use leasesim_scenario::SingletonWorkload;

/// The role's key in the KV, attached to the holder's lease.
pub fn role_key(role: &str) -> String {
    format!("/singleton/{role}")
}

/// The data-store key the holder's job writes, fenced by its token.
pub fn job_key(role: &str) -> String {
    format!("singleton/{role}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    NoLease,
    Idle {
        until_mono_ns: u64,
    },
    Taking {
        seq: u64,
    },
    /// Runs the role with `token`; the job runs next at `job_mono_ns`.
    Running {
        token: u64,
        job_mono_ns: u64,
    },
}

pub struct SingletonInstance {
    start: ClientStart,
    spec: SingletonWorkload,
    rng: ChaCha8Rng,
    session: Session,
    keeper: Option<LeaseKeeper>,
    phase: Phase,
    takes: u64,
    next_request_id: u64,
}

impl SingletonInstance {
    pub fn new(start: ClientStart, spec: SingletonWorkload) -> Self {
        let (rng, session) = (start.rng(), start.session());
        SingletonInstance { start, spec, rng, session, keeper: None, phase: Phase::NoLease, takes: 0, next_request_id: 1 }
    }

    fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    fn keeper(&self) -> &LeaseKeeper {
        self.keeper.as_ref().expect("started")
    }

    fn new_keeper(&mut self, now_mono_ns: u64) {
        let belief = LeaseKeeper::new_belief(self.spec.margin, self.spec.belief_from, self.start.trust_full_ttl);
        let (ttl_ns, keepalive_ns) = (self.spec.ttl_ns, self.spec.keepalive_ns);
        let keeper = LeaseKeeper::start(self.session(), now_mono_ns, ttl_ns, keepalive_ns, belief);
        self.keeper = Some(keeper);
    }

    fn idle(&mut self, now_mono_ns: u64) {
        let poll_ns = draw_ns(&mut self.rng, self.spec.poll_ns);
        self.phase = Phase::Idle { until_mono_ns: now_mono_ns + poll_ns };
    }

    /// Stops running the role (if it did), then drops the lease: revoked
    /// unless the cluster already refused it, and a new one requested.
    fn step_down(&mut self, step: &Step<'_>, why: BeliefEnd) {
        if let Phase::Running { .. } = self.phase {
            // A stale holder waking up must not unname the current one.
            if step.world.holder(&self.spec.role) == Some(self.start.id) {
                step.world.set_holder(&self.spec.role, None);
            }
            step.record(Event::SingletonEnded { role: self.spec.role.clone(), why });
        }
        self.phase = Phase::NoLease;
        if why == BeliefEnd::KeepAliveRefused {
            return;
        }
        if let Some(lease) = self.keeper().lease() {
            self.session().submit(step.mono_ns, Op::LeaseRevoke { lease });
        }
        self.new_keeper(step.mono_ns);
    }

    /// The belief lapses by the instance's own clock; checked before any
    /// input so that a late message cannot act on a lapsed belief.
    fn check_lapse(&mut self, step: &Step<'_>) {
        if matches!(self.phase, Phase::Running { .. }) && !self.keeper().belief.holds(step.mono_ns) {
            self.step_down(step, BeliefEnd::TimerLapsed);
        }
    }

    fn try_take(&mut self, now_mono_ns: u64) {
        let Some(lease) = self.keeper().lease() else {
            self.phase = Phase::NoLease;
            return;
        };
        self.takes += 1;
        let value = format!("c{}.{}.{}", self.start.id, self.start.incarnation, self.takes);
        let op = Op::Cas { key: role_key(&self.spec.role), expected: None, value, lease: Some(lease) };
        let seq = self.session().submit(now_mono_ns, op);
        self.phase = Phase::Taking { seq };
    }

    fn on_lease_news(&mut self, step: &mut Step<'_>, news: LeaseNews) {
        match news {
            LeaseNews::Granted { .. } => {
                if self.phase == Phase::NoLease {
                    self.try_take(step.mono_ns);
                }
            }
            LeaseNews::Renewed { until_mono_ns } => {
                if let Phase::Running { .. } = self.phase {
                    step.record(Event::SingletonExtended { role: self.spec.role.clone(), until_mono_ns });
                }
            }
            LeaseNews::Lost { .. } => {
                if let Phase::Taking { seq } = self.phase {
                    self.session().cancel(seq);
                }
                self.step_down(step, BeliefEnd::KeepAliveRefused);
            }
        }
    }

    fn on_completion(&mut self, step: &mut Step<'_>, done: Completion) {
        let Phase::Taking { seq } = self.phase else { return };
        if seq != done.seq {
            return;
        }
        let now_ns = step.mono_ns;
        match done.response {
            Response::Cas { succeeded: true, revision: token, .. } => {
                let belief = &self.keeper().belief;
                let (Some(until_mono_ns), Some(lease)) = (belief.until_ns().filter(|_| belief.holds(now_ns)), self.keeper().lease()) else {
                    // Won too late to trust: give the role back at once.
                    return self.step_down(step, BeliefEnd::TimerLapsed);
                };
                step.world.set_holder(&self.spec.role, Some(self.start.id));
                step.record(Event::SingletonStarted { role: self.spec.role.clone(), lease, token, until_mono_ns });
                self.phase = Phase::Running { token, job_mono_ns: now_ns };
            }
            // The lease is gone; the keeper learns it on its next keep-alive.
            Response::Error(ServiceError::LeaseNotFound { .. }) => self.phase = Phase::NoLease,
            // Someone else runs the role (or the request failed): wait.
            _ => self.idle(now_ns),
        }
    }

    fn on_response(&mut self, step: &mut Step<'_>, response: ClientResponse) {
        let now_ns = step.mono_ns;
        let Some(done) = self.session().on_response(now_ns, response) else { return };
        let session = &mut self.session;
        if let Some(news) = self.keeper.as_mut().expect("started").on_completion(step, session, &done) {
            return self.on_lease_news(step, news);
        }
        self.on_completion(step, done);
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session().take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for SingletonInstance {
    fn start(&mut self, step: &mut Step<'_>) {
        // An earlier incarnation that crashed while running the role is
        // still named its holder; this one holds nothing.
        if step.world.holder(&self.spec.role) == Some(self.start.id) {
            step.world.set_holder(&self.spec.role, None);
        }
        self.new_keeper(step.mono_ns);
        self.flush(step);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        self.check_lapse(step);
        match wire {
            Wire::Response(response) => self.on_response(step, response),
            // The job's writes need no answer: the store's fencing is what
            // protects it, and `fencing-order` judges what it accepted.
            Wire::StoreReply(_) => {}
            other => panic!("c{} got an unexpected message from {from}: {other:?}", self.start.id),
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        self.check_lapse(step);
        let now_ns = step.mono_ns;
        self.session().tick(now_ns);
        let session = &mut self.session;
        self.keeper.as_mut().expect("started").on_timer(session, now_ns);
        match self.phase {
            Phase::Idle { until_mono_ns } if until_mono_ns <= now_ns => self.try_take(now_ns),
            Phase::Running { token, job_mono_ns } if job_mono_ns <= now_ns => {
                let request_id = self.next_request_id;
                self.next_request_id += 1;
                let write = StoreWrite { client: self.start.id, key: job_key(&self.spec.role), token, request_id };
                step.send(Proc::Store, Wire::StoreWrite(write));
                let job_mono_ns = now_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
                self.phase = Phase::Running { token, job_mono_ns };
            }
            _ => {}
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let keeper = self.keeper.as_ref();
        let (phase_ns, lapse_ns) = match self.phase {
            Phase::Idle { until_mono_ns } => (Some(until_mono_ns), None),
            Phase::Running { job_mono_ns, .. } => (Some(job_mono_ns), keeper.and_then(|k| k.belief.until_ns())),
            _ => (None, None),
        };
        [phase_ns, lapse_ns, self.session.next_deadline_ns(), keeper.and_then(|k| k.next_deadline_mono_ns())].into_iter().flatten().min()
    }
}
