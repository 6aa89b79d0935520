//! The task generator of a `kind = "task"` workload (its first client): the
//! multi-instance lease design's tool that "generates fake work" for the
//! workers. Every
//! `task_every` it puts `/tasks/<n>` and then moves `/tasks/count` to `n`,
//! which is what makes task `n` visible to the workers; it stops after
//! `tasks` tasks.
//!
//! One generator writes the count, so plain puts suffice; a restarted
//! generator reads the count back and goes on from there (re-putting a task
//! whose count it had not moved yet is harmless: nobody could see it).

use leasesim_core::client::Session;
use leasesim_core::service::{ClientResponse, Op, Response};
use leasesim_core::ClientId;
use rand_chacha::ChaCha8Rng;

use super::task::{task_key, COUNT_KEY};
use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::TaskWorkload;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    ReadingCount { seq: u64 },
    Waiting { until_mono_ns: u64 },
    PuttingTask { task: u64, seq: u64 },
    PuttingCount { task: u64, seq: u64 },
    Finished,
}

pub struct TaskGenerator {
    id: ClientId,
    spec: TaskWorkload,
    rng: ChaCha8Rng,
    session: Session,
    phase: Phase,
    /// Tasks visible to the workers, as far as this generator knows.
    count: u64,
}

impl TaskGenerator {
    pub fn new(start: ClientStart, spec: TaskWorkload) -> Self {
        TaskGenerator { id: start.id, spec, rng: start.rng(), session: start.session(), phase: Phase::Finished, count: 0 }
    }

    fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    fn wait(&mut self, now_mono_ns: u64) {
        self.phase = if self.count >= self.spec.tasks {
            Phase::Finished
        } else {
            Phase::Waiting { until_mono_ns: now_mono_ns + draw_ns(&mut self.rng, self.spec.task_every_ns) }
        };
    }

    fn on_response(&mut self, step: &mut Step<'_>, response: ClientResponse) {
        let now_ns = step.mono_ns;
        let Some(done) = self.session().on_response(now_ns, response) else { return };
        match (self.phase.clone(), done.response) {
            (Phase::ReadingCount { seq }, Response::Value { value, .. }) if seq == done.seq => {
                self.count = value.and_then(|v| v.parse().ok()).unwrap_or(0);
                if self.count > 0 {
                    // The one task an earlier incarnation may have made
                    // visible without living to say so.
                    step.record(Event::TaskCreated { task: self.count });
                }
                self.wait(now_ns);
            }
            (Phase::ReadingCount { seq }, _) if seq == done.seq => {
                let seq = self.session().submit(now_ns, Op::Get { key: COUNT_KEY.to_string() });
                self.phase = Phase::ReadingCount { seq };
            }
            (Phase::PuttingTask { task, seq }, Response::Done { .. }) if seq == done.seq => {
                let seq = self.session().submit(now_ns, Op::Put { key: COUNT_KEY.to_string(), value: task.to_string(), lease: None });
                self.phase = Phase::PuttingCount { task, seq };
            }
            (Phase::PuttingCount { task, seq }, Response::Done { .. }) if seq == done.seq => {
                self.count = task;
                step.record(Event::TaskCreated { task });
                self.wait(now_ns);
            }
            // A refused put (the session gave up on it): try the task again
            // after the usual pause.
            (Phase::PuttingTask { seq, .. } | Phase::PuttingCount { seq, .. }, _) if seq == done.seq => self.wait(now_ns),
            _ => {}
        }
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session().take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for TaskGenerator {
    fn start(&mut self, step: &mut Step<'_>) {
        let seq = self.session().submit(step.mono_ns, Op::Get { key: COUNT_KEY.to_string() });
        self.phase = Phase::ReadingCount { seq };
        self.flush(step);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        match wire {
            Wire::Response(response) => self.on_response(step, response),
            other => panic!("c{} got an unexpected message from {from}: {other:?}", self.id),
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        let now_ns = step.mono_ns;
        self.session().tick(now_ns);
        if let Phase::Waiting { until_mono_ns } = self.phase {
            if until_mono_ns <= now_ns {
                let task = self.count + 1;
                let value = format!("task {task} from c{}", self.id);
                let seq = self.session().submit(now_ns, Op::Put { key: task_key(task), value, lease: None });
                self.phase = Phase::PuttingTask { task, seq };
            }
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let wait_ns = match self.phase {
            Phase::Waiting { until_mono_ns } => Some(until_mono_ns),
            _ => None,
        };
        wait_ns.into_iter().chain(self.session.next_deadline_ns()).min()
    }
}
