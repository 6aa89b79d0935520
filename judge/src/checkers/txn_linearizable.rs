//! `linearizable`, for the `txn` workload: its multi-key txns — compares
//! over several keys, then a branch of puts, deletes and gets — judged
//! together against a store where each txn takes effect at one instant,
//! all of it or none (`leasesim_history::model::txn`). A txn applied in
//! two steps shows as a read that saw half of it, or as an answer no
//! single step could give. An operation without a certain answer (its
//! client crashed, or the run ended first) may have taken effect or not;
//! a spent search budget fires nothing.

use std::collections::BTreeMap;

use leasesim_core::service::{CompareResult, CompareTarget, Op, Response, TxnOp, TxnOpResponse, TxnRequest};

use super::linearizable::Undecided;
use super::{Judgement, RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;
use leasesim_history::model::txn::{TxnInput, TxnOutput, TxnStep};
use leasesim_history::{check_txn, CheckOptions, Operation, Verdict};

/// As for the KV workload's segments; the txn histories are one segment
/// (a few hundred to a few thousand txns per run).
const BUDGET_STEPS: u64 = 4_000_000;

/// The violations alone (the unit tests' view).
#[cfg(test)]
fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    judge_run(run).violations
}

/// Judges the run's txn history: a violation, or what the search could not
/// decide.
pub fn judge_run(run: &RunRecord<'_>) -> Judgement {
    let mut ops: Vec<Operation<TxnInput, TxnOutput>> = Vec::new();
    let mut open: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for o in run.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::KvCall { seq, op: Op::Txn(txn) } => {
                let Some(input) = input(txn) else { continue };
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
            Event::Crashed => open.retain(|(c, _), _| *c != client),
            _ => {}
        }
    }
    if ops.is_empty() {
        return Judgement::default();
    }
    let mut undecided = Undecided::default();
    let violations = judge(run, &ops, &mut undecided).into_iter().collect();
    Judgement { violations, not_judged: undecided.not_judged("txns").into_iter().collect() }
}

fn judge(run: &RunRecord<'_>, ops: &[Operation<TxnInput, TxnOutput>], undecided: &mut Undecided) -> Option<Violation> {
    let options = CheckOptions { budget_steps: BUDGET_STEPS, shrink_budget_steps: BUDGET_STEPS };
    let report = match check_txn(ops, &options) {
        Ok(report) => report,
        Err(e) => return Some(run.violation("linearizable", run.end_ns, format!("the recorded txn history is malformed: {e}"))),
    };
    let window = match report.verdict {
        Verdict::Linearizable => return None,
        Verdict::Unknown => {
            let from_ns = ops.first().map_or(0, |op| op.call_ns);
            let to_ns = ops.iter().map(|op| op.return_ns.unwrap_or(op.call_ns)).max().unwrap_or(from_ns);
            undecided.note("the txn history", ops.len(), from_ns, to_ns);
            return None;
        }
        Verdict::NotLinearizable { window } => window,
    };
    let shown: Vec<&Operation<TxnInput, TxnOutput>> = window.iter().map(|&i| &ops[i]).collect();
    let at_ns = shown.iter().map(|op| op.return_ns.unwrap_or(op.call_ns)).max().unwrap_or(run.end_ns);
    let described: Vec<String> = shown.iter().map(|op| describe(op)).collect();
    let detail = format!(
        "no order of these {} txns, each taking effect whole at one instant, explains their results: {}",
        shown.len(),
        described.join("; ")
    );
    Some(run.violation("linearizable", at_ns, detail))
}

fn describe(op: &Operation<TxnInput, TxnOutput>) -> String {
    let returned = op.return_ns.map_or("never returned".to_string(), leasesim_core::fmt_secs);
    let output = op.output.as_ref().map_or("unknown".to_string(), |o| format!("{o:?}"));
    format!("c{} {} → {output} [{} .. {returned}]", op.client, op.input, leasesim_core::fmt_secs(op.call_ns))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The workload's txns in the model's terms: compares on one key's value
/// (or its absence, `version = 0`), single-key puts, deletes and gets.
/// Anything else is not the workload's and is left out.
fn input(txn: &TxnRequest) -> Option<TxnInput> {
    let mut compares = Vec::new();
    for c in &txn.compares {
        if !c.range.range_end.is_empty() || c.result != CompareResult::Equal {
            return None;
        }
        compares.push(match &c.target {
            CompareTarget::Value(v) => (text(&c.range.key), Some(text(v))),
            CompareTarget::Version(0) => (text(&c.range.key), None),
            _ => return None,
        });
    }
    Some(TxnInput { compares, success: steps(&txn.success)?, failure: steps(&txn.failure)? })
}

fn steps(ops: &[TxnOp]) -> Option<Vec<TxnStep>> {
    ops.iter()
        .map(|op| match op {
            TxnOp::Put(p) => Some(TxnStep::Put { key: text(&p.key), value: text(&p.value) }),
            TxnOp::Delete(d) if d.range.range_end.is_empty() => Some(TxnStep::Delete { key: text(&d.range.key) }),
            TxnOp::Range(r) if r.range.range_end.is_empty() => Some(TxnStep::Get { key: text(&r.range.key) }),
            _ => None,
        })
        .collect()
}

/// What the answer says happened; `None` when it says nothing certain.
fn output(response: &Response) -> Option<TxnOutput> {
    let Response::Txn(answer) = response else { return None };
    let reads = answer
        .responses
        .iter()
        .filter_map(|r| match r {
            TxnOpResponse::Range(range) => Some(range.kvs.first().map(|(_, v)| text(&v.value))),
            _ => None,
        })
        .collect();
    Some(TxnOutput { succeeded: answer.succeeded, reads })
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::kv::{KeyRange, KvValue};
    use leasesim_core::service::{Op, RangeRequest, RangeResponse, Response, TxnOp, TxnOpResponse, TxnRequest, TxnResponse};

    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    fn write(value: &str) -> Op {
        let put = |k: &str| {
            super::TxnOp::Put(leasesim_core::service::PutRequest {
                key: k.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
                lease: None,
                prev_kv: false,
                ignore_value: false,
                ignore_lease: false,
            })
        };
        Op::Txn(TxnRequest { compares: Vec::new(), success: vec![put("t0"), put("t1")], failure: Vec::new() })
    }

    fn read() -> Op {
        let get = |k: &str| TxnOp::Range(RangeRequest::of(KeyRange::single(k.as_bytes())));
        Op::Txn(TxnRequest { compares: Vec::new(), success: vec![get("t0"), get("t1")], failure: Vec::new() })
    }

    fn found(values: [Option<&str>; 2]) -> Response {
        let responses = values
            .iter()
            .map(|v| {
                let kvs = v
                    .iter()
                    .map(|v| {
                        (
                            b"k".to_vec(),
                            KvValue { value: v.as_bytes().to_vec(), create_revision: 2, mod_revision: 2, version: 1, lease: None },
                        )
                    })
                    .collect();
                TxnOpResponse::Range(RangeResponse { kvs, ..RangeResponse::default() })
            })
            .collect();
        Response::Txn(TxnResponse { succeeded: true, revision: 2, responses })
    }

    /// c1 writes "a" to both keys; c2 then reads both.
    fn run(seen: [Option<&str>; 2]) -> Fixture {
        let mut run = Fixture::new();
        run.push(S, Proc::Client(1), Event::KvCall { seq: 1, op: write("a") });
        let done = Response::Txn(TxnResponse { succeeded: true, revision: 2, responses: Vec::new() });
        run.push(S + 10 * MS, Proc::Client(1), Event::KvReturn { seq: 1, response: done });
        run.push(2 * S, Proc::Client(2), Event::KvCall { seq: 1, op: read() });
        run.push(2 * S + 10 * MS, Proc::Client(2), Event::KvReturn { seq: 1, response: found(seen) });
        run
    }

    #[test]
    fn a_read_of_the_whole_txn_is_fine() {
        assert!(super::check(&run([Some("a"), Some("a")]).record()).is_empty());
    }

    #[test]
    fn a_read_of_half_a_txn_fires() {
        let violations = super::check(&run([Some("a"), None]).record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].invariant, "linearizable");
        assert!(violations[0].detail.contains("each taking effect whole"), "{}", violations[0].detail);
    }
}
