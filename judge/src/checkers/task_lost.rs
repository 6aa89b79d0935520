//! `task-lost`: every task the generator made visible is eventually
//! completed. The multi-instance lease design: workers crash and miss
//! heartbeats, and "automatic failure recovery via lease expiration" must still
//! get every task done — a claim held by a dead lease may only delay a task,
//! never lose it.
//!
//! Judged once the settle phase has healed every fault: a task still
//! undone at the end fires only if its deadline passed. The deadline counts
//! from the later of the task's creation and the settle phase's start: the
//! cluster's recovery slack (as in `liveness`), the TTL of a claim left by
//! a dead lease, and one task's time per round of workers for each undone
//! task ahead of it (the backlog drains in task order).

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;

use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::TaskStep;

/// Time a worker needs per task beyond its work and its idle poll: reading
/// the count, the claim, the fenced start and completion and the `done`
/// marker, with a resend each after a lost leader.
const TASK_OVERHEAD_NS: u64 = 1_000_000_000;

/// What `task-lost` needs to know of the task workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPace {
    pub workers: u64,
    /// A claim of a dead worker lasts until its lease ends.
    pub ttl_ns: u64,
    /// Longest one task may take a worker, start to finish.
    pub per_task_ns: u64,
}

impl TaskPace {
    /// The pace of `workers` workers on leases of `ttl_ns`, each task
    /// taking at most `work_max_ns` of work after a poll of at most
    /// `poll_max_ns` (the task workload's bounds).
    pub fn new(workers: u64, ttl_ns: u64, work_max_ns: u64, poll_max_ns: u64) -> Self {
        let per_task_ns = work_max_ns + poll_max_ns + TASK_OVERHEAD_NS;
        TaskPace { workers: workers.max(1), ttl_ns, per_task_ns }
    }
}

/// Slack for the cluster to recover after settle: `liveness_bounds`'
/// recovery without its commit backlog (the per-task pace stands in).
fn recovery_slack_ns(run: &RunRecord<'_>) -> u64 {
    super::liveness_bounds::Recovery::of(run).without_backlog_ns()
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let Some(pace) = run.task_pace else { return Vec::new() };
    let mut created: BTreeMap<u64, u64> = BTreeMap::new();
    let mut completed: BTreeMap<u64, u64> = BTreeMap::new();
    for o in run.obs {
        match &o.event {
            Event::TaskCreated { task } => {
                created.entry(*task).or_insert(o.at_ns);
            }
            Event::TaskWriteAccepted { task, step: TaskStep::Complete, .. } => {
                completed.entry(*task).or_insert(o.at_ns);
            }
            _ => {}
        }
    }
    let undone_at =
        |task: u64, at_ns: u64| created.get(&task).is_some_and(|c| *c <= at_ns) && completed.get(&task).is_none_or(|d| *d > at_ns);
    let mut violations = Vec::new();
    for (&task, &created_ns) in &created {
        if completed.contains_key(&task) {
            continue;
        }
        let from_ns = created_ns.max(run.settle_at_ns);
        let ahead = created.keys().filter(|&&other| other < task && undone_at(other, from_ns)).count() as u64;
        let due_ns = from_ns + recovery_slack_ns(run) + pace.ttl_ns + (ahead / pace.workers + 1) * pace.per_task_ns;
        if due_ns <= run.end_ns {
            violations.push(run.violation(
                "task-lost",
                run.end_ns,
                format!(
                    "task {task}, created at {}, was never completed (due by {}, with {ahead} undone tasks ahead of it for {} workers)",
                    fmt_secs(created_ns),
                    fmt_secs(due_ns),
                    pace.workers
                ),
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::TaskPace;
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;
    use crate::vocab::TaskStep;

    /// Two workers, 2 s claims, 1 s per task; the fixture's run ends at
    /// 60 s and settles from 50 s, its recovery slack is 4 s.
    fn run() -> Fixture {
        let mut run = Fixture::new();
        run.task_pace = Some(TaskPace { workers: 2, ttl_ns: 2 * S, per_task_ns: S });
        run
    }

    fn created(run: &mut Fixture, at_ns: u64, task: u64) {
        run.push(at_ns, Proc::Client(1), Event::TaskCreated { task });
    }

    fn completed(run: &mut Fixture, at_ns: u64, task: u64) {
        run.push(at_ns, Proc::Store, Event::TaskWriteAccepted { client: 2, task, token: 10 * task, step: TaskStep::Complete });
    }

    #[test]
    fn completed_tasks_are_fine() {
        let mut run = run();
        for task in 1..=3 {
            created(&mut run, task * S, task);
            completed(&mut run, task * S + 500 * MS, task);
        }
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_task_never_completed_fires() {
        let mut run = run();
        created(&mut run, S, 1);
        created(&mut run, 2 * S, 2);
        completed(&mut run, 3 * S, 2);
        assert_eq!(run.fired(), vec!["task-lost"]);
    }

    #[test]
    fn a_started_but_unfinished_task_still_counts_as_lost() {
        let mut run = run();
        created(&mut run, S, 1);
        run.push(2 * S, Proc::Store, Event::TaskWriteAccepted { client: 2, task: 1, token: 5, step: TaskStep::Start });
        assert_eq!(run.fired(), vec!["task-lost"]);
    }

    #[test]
    fn a_task_created_too_late_to_finish_is_not_judged() {
        let mut run = run();
        // Due by 58 s + 4 s slack + 2 s TTL + 1 s: after the end at 60 s.
        created(&mut run, 58 * S, 1);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_backlog_at_settle_gets_time_in_task_order() {
        let mut run = run();
        // Twenty undone tasks at settle (50 s): the last of them is due by
        // 50 + 4 + 2 + (19 / 2 + 1) = 66 s, after the end; the first by 57 s.
        for task in 1..=20 {
            created(&mut run, task * S, task);
        }
        for task in 2..=19 {
            completed(&mut run, 55 * S, task);
        }
        let violations = crate::checkers::check_all(&run.record()).violations;
        assert_eq!(violations.len(), 1, "only task 1 is overdue, not task 20: {violations:?}");
        assert!(violations[0].detail.starts_with("task 1,"), "{}", violations[0].detail);
        completed(&mut run, 59 * S, 1);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn without_a_task_workload_nothing_is_judged() {
        let mut run = Fixture::new();
        created(&mut run, S, 1);
        assert!(run.fired().is_empty());
    }
}
