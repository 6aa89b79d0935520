//! Task workers (`kind = "task"`), the multi-instance lease design's work queue
//! on leases: each worker keeps a lease alive and loops: read how many tasks
//! exist, claim the first free one by creating `/claims/<task>` attached to its
//! lease (a compare-and-set with `expected: None`, so two workers never claim
//! one task; the claim's revision is its fencing token), tell the data store it
//! starts (a fenced write), work while the lease is kept alive (the heartbeat),
//! complete with a fenced write, and mark the claim `done`.
//!
//! The multi-instance lease design: "If the lease expires, the worker stops
//! processing and abandons the task." A worker abandons the moment a keep-alive
//! is refused or its belief in the lease ends by its own clock; then it revokes
//! that lease (its claims go with it) and takes a new one. A crashed or paused
//! worker's claim ends with its lease, and the task is free again.
//!
//! The data store, not the KV, says whether a task is done (the multi-instance
//! lease design's "processed check"); the `done` marker in the KV only spares
//! other workers a claim. The generator is in `task_generator`.

use std::collections::{BTreeSet, VecDeque};

use leasesim_core::client::{Completion, Session};
use leasesim_core::service::{ClientResponse, Op, Response, ServiceError};
use rand_chacha::ChaCha8Rng;

use super::keeper::{LeaseKeeper, LeaseNews};
use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use crate::world::wire::{TaskReply, TaskWrite};
use leasesim_judge::observe::{Event, TaskAbandon};
use leasesim_judge::vocab::Proc;
use leasesim_judge::vocab::{TaskStep, TaskVerdict};
use leasesim_scenario::TaskWorkload;

/// How many tasks the generator has made visible (a decimal number).
pub const COUNT_KEY: &str = "/tasks/count";
/// The value of a claim key once its task is done.
pub const DONE: &str = "done";
/// How long a worker waits for the data store before it resends a write
/// (own clock); it resends only while its belief holds.
const STORE_RESEND_NS: u64 = 300_000_000;

/// Task `n`'s payload, put by the generator.
pub fn task_key(task: u64) -> String {
    format!("/tasks/{task}")
}

/// Task `n`'s claim: absent while free, a worker's claim value attached to
/// its lease while claimed, `done` (no lease) once done.
pub fn claim_key(task: u64) -> String {
    format!("/claims/{task}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a lease.
    NoLease,
    /// Nothing free was found; look again at `until_mono_ns`.
    Idle {
        until_mono_ns: u64,
    },
    ReadingCount {
        seq: u64,
    },
    Claiming {
        task: u64,
        seq: u64,
    },
    /// The fenced start is on its way to the data store.
    Starting {
        task: u64,
        token: u64,
        request_id: u64,
        resend_mono_ns: u64,
    },
    Working {
        task: u64,
        token: u64,
        until_mono_ns: u64,
    },
    Completing {
        task: u64,
        token: u64,
        request_id: u64,
        resend_mono_ns: u64,
    },
    MarkingDone {
        seq: u64,
    },
}

impl Phase {
    /// The task the worker holds in this phase, with its token.
    fn held(&self) -> Option<(u64, u64)> {
        match *self {
            Phase::Starting { task, token, .. } | Phase::Working { task, token, .. } | Phase::Completing { task, token, .. } => {
                Some((task, token))
            }
            _ => None,
        }
    }
}

pub struct TaskWorker {
    start: ClientStart,
    spec: TaskWorkload,
    rng: ChaCha8Rng,
    session: Session,
    keeper: Option<LeaseKeeper>,
    phase: Phase,
    /// Tasks this worker knows are done (a task never becomes undone).
    done: BTreeSet<u64>,
    /// Tasks still to try in this pass, lowest first.
    candidates: VecDeque<u64>,
    claims: u64,
    next_request_id: u64,
}

impl TaskWorker {
    pub fn new(start: ClientStart, spec: TaskWorkload) -> Self {
        let (rng, session) = (start.rng(), start.session());
        TaskWorker {
            start,
            spec,
            rng,
            session,
            keeper: None,
            phase: Phase::NoLease,
            done: BTreeSet::new(),
            candidates: VecDeque::new(),
            claims: 0,
            next_request_id: 1,
        }
    }

    fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    fn keeper(&self) -> &LeaseKeeper {
        self.keeper.as_ref().expect("started")
    }

    fn submit(&mut self, now_mono_ns: u64, op: Op) -> u64 {
        self.session().submit(now_mono_ns, op)
    }

    fn new_keeper(&mut self, now_mono_ns: u64) {
        let belief = LeaseKeeper::new_belief(self.spec.margin, self.spec.belief_from, self.start.trust_full_ttl);
        let (ttl_ns, keepalive_ns) = (self.spec.ttl_ns, self.spec.keepalive_ns);
        let keeper = LeaseKeeper::start(self.session(), now_mono_ns, ttl_ns, keepalive_ns, belief);
        self.keeper = Some(keeper);
    }

    /// Gives up the held task. Unless the cluster already refused the lease,
    /// the lease is revoked (taking the claim with it, so the task is free at
    /// once) and a new one requested: nothing of the old lease is trusted.
    fn abandon(&mut self, step: &Step<'_>, task: u64, token: u64, why: TaskAbandon) {
        step.record(Event::TaskAbandoned { task, token, why });
        self.phase = Phase::NoLease;
        if why == TaskAbandon::KeepAliveRefused {
            return;
        }
        if let Some(lease) = self.keeper().lease() {
            self.submit(step.mono_ns, Op::LeaseRevoke { lease });
        }
        self.new_keeper(step.mono_ns);
    }

    /// The belief lapses by the worker's own clock; checked before any input
    /// so that a late message cannot act on a lapsed belief.
    fn check_lapse(&mut self, step: &Step<'_>) {
        let Some((task, token)) = self.phase.held() else { return };
        if !self.keeper().belief.holds(step.mono_ns) {
            self.abandon(step, task, token, TaskAbandon::TimerLapsed);
        }
    }

    fn scan(&mut self, now_mono_ns: u64) {
        let seq = self.submit(now_mono_ns, Op::Get { key: COUNT_KEY.to_string() });
        self.phase = Phase::ReadingCount { seq };
    }

    fn idle(&mut self, now_mono_ns: u64) {
        let poll_ns = draw_ns(&mut self.rng, self.spec.poll_ns);
        self.phase = Phase::Idle { until_mono_ns: now_mono_ns + poll_ns };
    }

    /// Tries the next candidate, or idles when none is left.
    fn claim_next(&mut self, now_mono_ns: u64) {
        let (Some(task), Some(lease)) = (self.candidates.pop_front(), self.keeper().lease()) else {
            return self.idle(now_mono_ns);
        };
        self.claims += 1;
        let value = format!("c{}.{}.{}", self.start.id, self.start.incarnation, self.claims);
        let seq = self.submit(now_mono_ns, Op::Cas { key: claim_key(task), expected: None, value, lease: Some(lease) });
        self.phase = Phase::Claiming { task, seq };
    }

    fn store_write(&mut self, step: &mut Step<'_>, task: u64, token: u64, write_step: TaskStep) -> u64 {
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        let write = TaskWrite { client: self.start.id, task, token, step: write_step, request_id };
        step.send(Proc::Store, Wire::TaskWrite(write));
        request_id
    }

    /// Records the task done in the KV (the data store has it done already).
    fn mark_done(&mut self, now_mono_ns: u64, task: u64) {
        self.done.insert(task);
        let seq = self.submit(now_mono_ns, Op::Put { key: claim_key(task), value: DONE.to_string(), lease: None });
        self.phase = Phase::MarkingDone { seq };
    }

    fn on_lease_news(&mut self, step: &mut Step<'_>, news: LeaseNews) {
        match news {
            LeaseNews::Granted { .. } => {
                if self.phase == Phase::NoLease {
                    self.scan(step.mono_ns);
                }
            }
            LeaseNews::Renewed { .. } => {}
            LeaseNews::Lost { .. } => {
                if let Some((task, token)) = self.phase.held() {
                    self.abandon(step, task, token, TaskAbandon::KeepAliveRefused);
                }
                // Whatever was asked under the dead lease is moot.
                if let Phase::ReadingCount { seq } | Phase::Claiming { seq, .. } | Phase::MarkingDone { seq } = self.phase {
                    self.session().cancel(seq);
                }
                self.phase = Phase::NoLease;
            }
        }
    }

    fn on_completion(&mut self, step: &mut Step<'_>, done: Completion) {
        let now_ns = step.mono_ns;
        match (self.phase.clone(), done.response) {
            (Phase::ReadingCount { seq }, Response::Value { value, .. }) if seq == done.seq => {
                let count = value.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                self.candidates = (1..=count).filter(|t| !self.done.contains(t)).collect();
                self.claim_next(now_ns);
            }
            (Phase::ReadingCount { seq }, _) if seq == done.seq => self.idle(now_ns),
            (Phase::Claiming { task, seq }, Response::Cas { succeeded: true, revision: token, .. }) if seq == done.seq => {
                let belief = &self.keeper().belief;
                let (Some(until_mono_ns), Some(lease)) = (belief.until_ns().filter(|_| belief.holds(now_ns)), self.keeper().lease()) else {
                    return self.abandon(step, task, token, TaskAbandon::ClaimedTooLate);
                };
                step.record(Event::TaskClaimed { task, lease, token, until_mono_ns });
                let request_id = self.store_write(step, task, token, TaskStep::Start);
                self.phase = Phase::Starting { task, token, request_id, resend_mono_ns: now_ns + STORE_RESEND_NS };
            }
            (Phase::Claiming { task, seq }, Response::Cas { current, .. }) if seq == done.seq => {
                if current.as_deref() == Some(DONE) {
                    self.done.insert(task);
                }
                self.claim_next(now_ns);
            }
            (Phase::Claiming { seq, .. }, Response::Error(ServiceError::LeaseNotFound { .. })) if seq == done.seq => {
                // The lease is gone; the keeper learns it on its next
                // keep-alive and asks for a new one.
                self.phase = Phase::NoLease;
            }
            (Phase::Claiming { seq, .. }, _) if seq == done.seq => self.claim_next(now_ns),
            (Phase::MarkingDone { seq }, _) if seq == done.seq => self.scan(now_ns),
            _ => {}
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

    fn on_task_reply(&mut self, step: &mut Step<'_>, reply: TaskReply) {
        let now_ns = step.mono_ns;
        match (self.phase.clone(), reply.verdict) {
            (Phase::Starting { task, token, request_id, .. }, verdict) if request_id == reply.request_id => match verdict {
                TaskVerdict::Accepted => {
                    let work_ns = draw_ns(&mut self.rng, self.spec.work_ns);
                    self.phase = Phase::Working { task, token, until_mono_ns: now_ns + work_ns };
                }
                TaskVerdict::StaleToken { .. } => self.abandon(step, task, token, TaskAbandon::Superseded),
                TaskVerdict::AlreadyDone => {
                    step.record(Event::TaskAbandoned { task, token, why: TaskAbandon::AlreadyDone });
                    self.mark_done(now_ns, task);
                }
            },
            (Phase::Completing { task, token, request_id, .. }, verdict) if request_id == reply.request_id => match verdict {
                // An earlier copy of this completion may be what made it done.
                TaskVerdict::Accepted | TaskVerdict::AlreadyDone => self.mark_done(now_ns, task),
                TaskVerdict::StaleToken { .. } => self.abandon(step, task, token, TaskAbandon::Superseded),
            },
            _ => {}
        }
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session().take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for TaskWorker {
    fn start(&mut self, step: &mut Step<'_>) {
        self.new_keeper(step.mono_ns);
        self.flush(step);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        self.check_lapse(step);
        match wire {
            Wire::Response(response) => self.on_response(step, response),
            Wire::TaskReply(reply) => self.on_task_reply(step, reply),
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
        match self.phase.clone() {
            Phase::Idle { until_mono_ns } if until_mono_ns <= now_ns => self.scan(now_ns),
            Phase::Working { task, token, until_mono_ns } if until_mono_ns <= now_ns => {
                // The belief was checked just above: the work is done in time.
                let request_id = self.store_write(step, task, token, TaskStep::Complete);
                self.phase = Phase::Completing { task, token, request_id, resend_mono_ns: now_ns + STORE_RESEND_NS };
            }
            Phase::Starting { task, token, request_id, resend_mono_ns } | Phase::Completing { task, token, request_id, resend_mono_ns }
                if resend_mono_ns <= now_ns =>
            {
                let write_step = if matches!(self.phase, Phase::Starting { .. }) { TaskStep::Start } else { TaskStep::Complete };
                let write = TaskWrite { client: self.start.id, task, token, step: write_step, request_id };
                step.send(Proc::Store, Wire::TaskWrite(write));
                let resend_mono_ns = now_ns + STORE_RESEND_NS;
                match &mut self.phase {
                    Phase::Starting { resend_mono_ns: r, .. } | Phase::Completing { resend_mono_ns: r, .. } => *r = resend_mono_ns,
                    _ => unreachable!("matched above"),
                }
            }
            _ => {}
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let phase_ns = match self.phase {
            Phase::Idle { until_mono_ns } | Phase::Working { until_mono_ns, .. } => Some(until_mono_ns),
            Phase::Starting { resend_mono_ns, .. } | Phase::Completing { resend_mono_ns, .. } => Some(resend_mono_ns),
            _ => None,
        };
        let keeper = self.keeper.as_ref();
        let lapse_ns = self.phase.held().and_then(|_| keeper?.belief.until_ns());
        [phase_ns, lapse_ns, self.session.next_deadline_ns(), keeper.and_then(|k| k.next_deadline_mono_ns())].into_iter().flatten().min()
    }
}
