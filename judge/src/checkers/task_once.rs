//! `task-once`: no task is completed twice, and the data store never takes
//! the completion of a claim it knows was superseded. The multi-instance lease
//! design's task service exists so that "only one worker processes a task at a
//! time" and answers a second completion with a conflict; fencing (the Raft
//! lock-service design, Kleppmann) is what makes that hold when a worker acts
//! on a stale belief: once a newer claim's token reached the task's row, an
//! older claim's completion must be rejected by its token.
//!
//! Judged from what the store accepted, in the order it accepted it: a
//! second accepted completion with another token, or an accepted completion
//! whose token is below one the row had already accepted.

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;

use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::TaskStep;

/// One accepted write: by whom, with which token, when.
#[derive(Clone, Copy, Debug)]
struct Accepted {
    client: u64,
    token: u64,
    at_ns: u64,
}

#[derive(Default)]
struct Row {
    highest: Option<Accepted>,
    completion: Option<Accepted>,
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut rows: BTreeMap<u64, Row> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs {
        let Event::TaskWriteAccepted { client, task, token, step } = &o.event else { continue };
        let this = Accepted { client: *client, token: *token, at_ns: o.at_ns };
        let row = rows.entry(*task).or_default();
        if *step == TaskStep::Complete {
            let mut problems = Vec::new();
            if let Some(first) = row.completion.filter(|first| first.token != this.token) {
                problems.push(format!(
                    "it was already completed by c{} with token {} at {}",
                    first.client,
                    first.token,
                    fmt_secs(first.at_ns)
                ));
            }
            if let Some(newer) = row.highest.filter(|h| h.token > this.token) {
                problems.push(format!(
                    "c{}'s newer claim (token {}) had reached the store at {}",
                    newer.client,
                    newer.token,
                    fmt_secs(newer.at_ns)
                ));
            }
            if !problems.is_empty() {
                let detail = format!(
                    "the store accepted c{}'s completion of task {task} with token {}, but {}",
                    this.client,
                    this.token,
                    problems.join(", and ")
                );
                violations.push(run.violation("task-once", o.at_ns, detail));
            }
            row.completion.get_or_insert(this);
        }
        if row.highest.is_none_or(|h| this.token > h.token) {
            row.highest = Some(this);
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, S};
    use crate::observe::Event;
    use crate::vocab::Proc;
    use crate::vocab::TaskStep;

    fn accepted(run: &mut Fixture, at_ns: u64, client: u64, token: u64, step: TaskStep) {
        run.push(at_ns, Proc::Store, Event::TaskWriteAccepted { client, task: 7, token, step });
    }

    #[test]
    fn a_claim_taken_over_and_completed_once_is_fine() {
        let mut run = Fixture::new();
        // c2 starts under token 10 and stalls; c3 claims anew (token 20),
        // starts and completes; c2's late completion was rejected (absent).
        accepted(&mut run, S, 2, 10, TaskStep::Start);
        accepted(&mut run, 4 * S, 3, 20, TaskStep::Start);
        accepted(&mut run, 5 * S, 3, 20, TaskStep::Complete);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_repeated_copy_of_one_completion_is_not_a_second_one() {
        let mut run = Fixture::new();
        accepted(&mut run, S, 2, 10, TaskStep::Start);
        accepted(&mut run, 2 * S, 2, 10, TaskStep::Complete);
        accepted(&mut run, 2 * S + 1, 2, 10, TaskStep::Complete);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_superseded_claims_completion_fires() {
        let mut run = Fixture::new();
        accepted(&mut run, S, 2, 10, TaskStep::Start);
        accepted(&mut run, 4 * S, 3, 20, TaskStep::Start);
        accepted(&mut run, 4 * S + 1, 2, 10, TaskStep::Complete);
        let violations = crate::checkers::check_all(&run.record()).violations;
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].invariant, "task-once");
        assert!(violations[0].detail.contains("c3's newer claim (token 20)"), "{}", violations[0].detail);
    }

    #[test]
    fn a_second_completion_fires() {
        let mut run = Fixture::new();
        accepted(&mut run, S, 2, 10, TaskStep::Complete);
        accepted(&mut run, 3 * S, 3, 20, TaskStep::Complete);
        let violations = crate::checkers::check_all(&run.record()).violations;
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("already completed by c2 with token 10"), "{}", violations[0].detail);
    }

    #[test]
    fn tasks_are_judged_apart() {
        let mut run = Fixture::new();
        accepted(&mut run, S, 2, 30, TaskStep::Start);
        run.push(2 * S, Proc::Store, Event::TaskWriteAccepted { client: 3, task: 8, token: 10, step: TaskStep::Complete });
        assert!(run.fired().is_empty(), "task 8's token is not compared with task 7's");
    }
}
