//! `linearizable`: the KV workload's history — each operation with the true
//! times of its call and return — must be linearizable (Herlihy & Wing 1990),
//! judged as Jepsen and etcd's robustness tests judge it, by the checker in
//! `crate::linearizability` (Wing & Gong's search with porcupine's
//! improvements). An operation still pending when the run ended, or whose
//! client crashed, has an unknown outcome: it may have taken effect at any
//! point after its call, or never. A spent step budget answers "unknown",
//! which fires nothing.

use std::collections::BTreeMap;

use leasesim_core::service::{Op, Response, ServiceError};

use super::{RunRecord, Violation};
use crate::linearizability::{check_kv, CheckOptions, History, KvInput, KvOutput, Operation, Verdict};
use crate::observe::Event;
use crate::world::wire::Proc;

/// Enough for the simulator's histories (a few thousand operations over a
/// handful of keys) in well under a second; beyond it the answer is
/// "unknown", never a guess.
const BUDGET_STEPS: u64 = 2_000_000;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let history = history(run);
    if history.ops.is_empty() {
        return Vec::new();
    }
    let options = CheckOptions { budget_steps: BUDGET_STEPS, shrink_budget_steps: BUDGET_STEPS };
    let report = match check_kv(&history, &options) {
        Ok(report) => report,
        Err(e) => {
            return vec![run.violation("linearizable", run.end_ns, format!("the recorded KV history is malformed: {e}"))];
        }
    };
    let Verdict::NotLinearizable { window } = report.verdict else { return Vec::new() };
    let ops: Vec<&Operation> = window.iter().map(|&i| &history.ops[i]).collect();
    let at_ns = ops.iter().map(|op| op.return_ns.unwrap_or(op.call_ns)).max().unwrap_or(run.end_ns);
    let shown: Vec<String> = ops.iter().map(|op| describe(op)).collect();
    vec![run.violation(
        "linearizable",
        at_ns,
        format!("no order of these {} operations explains their results: {}", ops.len(), shown.join("; ")),
    )]
}

fn describe(op: &Operation) -> String {
    let returned = op.return_ns.map_or("never returned".to_string(), leasesim_core::fmt_secs);
    let output = op.output.as_ref().map_or("unknown".to_string(), |o| format!("{o:?}"));
    format!("c{} {:?} → {output} [{} .. {returned}]", op.client, op.input, leasesim_core::fmt_secs(op.call_ns))
}

/// The KV workload's operations, from its calls and returns.
pub fn history(run: &RunRecord<'_>) -> History {
    let mut open: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    let mut ops: Vec<Operation> = Vec::new();
    for o in run.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::KvCall { seq, op } => {
                let Some(input) = input(op) else { continue };
                open.insert((client, *seq), ops.len());
                ops.push(Operation { client, call_ns: o.at_ns, return_ns: None, input, output: None });
            }
            Event::KvReturn { seq, response } => {
                let Some(i) = open.remove(&(client, *seq)) else { continue };
                if let Some(output) = output(response) {
                    ops[i].return_ns = Some(o.at_ns);
                    ops[i].output = Some(output);
                }
            }
            // A crashed client's pending operation stays unknown.
            Event::Crashed => open.retain(|(c, _), _| *c != client),
            _ => {}
        }
    }
    History { ops }
}

fn input(op: &Op) -> Option<KvInput> {
    Some(match op {
        Op::Get { key } => KvInput::Get { key: key.clone() },
        Op::Put { key, value, lease } => KvInput::Put { key: key.clone(), value: value.clone(), lease: *lease },
        Op::Delete { key } => KvInput::Delete { key: key.clone() },
        Op::Cas { key, expected, value, lease } => {
            KvInput::Cas { key: key.clone(), expected: expected.clone(), value: value.clone(), lease: *lease }
        }
        _ => return None,
    })
}

/// What the answer says happened; `None` when it says nothing certain.
fn output(response: &Response) -> Option<KvOutput> {
    Some(match response {
        Response::Done { .. } => KvOutput::Ok,
        Response::Value { value, .. } => KvOutput::Value(value.clone()),
        Response::Cas { succeeded, .. } => KvOutput::Cas { succeeded: *succeeded },
        Response::Error(ServiceError::LeaseNotFound { .. }) => KvOutput::LeaseNotFound,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::{Op, Response};

    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::world::wire::Proc;

    fn call(run: &mut Fixture, at_ns: u64, client: u64, seq: u64, op: Op) {
        run.push(at_ns, Proc::Client(client), Event::KvCall { seq, op });
    }

    fn ret(run: &mut Fixture, at_ns: u64, client: u64, seq: u64, response: Response) {
        run.push(at_ns, Proc::Client(client), Event::KvReturn { seq, response });
    }

    fn write_then_read(read_value: &str) -> Fixture {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 5 });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 2 * S + 10 * MS, 2, 1, Response::Value { value: Some(read_value.into()), revision: 5 });
        run
    }

    #[test]
    fn a_read_of_the_last_write_is_fine() {
        assert!(super::check(&write_then_read("a").record()).is_empty());
    }

    #[test]
    fn a_read_of_a_value_never_written_fires() {
        let violations = super::check(&write_then_read("zzz").record());
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("zzz"), "{}", violations[0].detail);
    }

    #[test]
    fn a_stale_read_after_a_completed_write_fires() {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 5 });
        call(&mut run, 2 * S, 1, 2, Op::Put { key: "k0".into(), value: "b".into(), lease: None });
        ret(&mut run, 2 * S + 10 * MS, 1, 2, Response::Done { revision: 6 });
        call(&mut run, 3 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 3 * S + 10 * MS, 2, 1, Response::Value { value: Some("a".into()), revision: 5 });
        assert_eq!(super::check(&run.record()).len(), 1);
    }

    #[test]
    fn an_unanswered_write_may_or_may_not_have_happened() {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 2 * S + 10 * MS, 2, 1, Response::Value { value: Some("a".into()), revision: 5 });
        call(&mut run, 3 * S, 2, 2, Op::Get { key: "k0".into() });
        ret(&mut run, 3 * S + 10 * MS, 2, 2, Response::Value { value: Some("a".into()), revision: 5 });
        assert!(super::check(&run.record()).is_empty());
    }
}
