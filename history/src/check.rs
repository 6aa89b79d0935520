//! The checker's entry points: validate, partition, search each partition,
//! and shrink the first failing one to a window.
//!
//! This is the pipeline of porcupine's `CheckOperations` (partition per key,
//! Lowe 2017's P-compositionality; then Wing & Gong 1993's search on each)
//! with two additions: one step budget shared by the whole check, so that a
//! hard history answers `Unknown` rather than running forever or guessing,
//! and the minimal failing window of `super::window`. Like porcupine, which
//! checks partitions in parallel and stops at the first failure, a failing
//! partition decides even when another is too hard for the budget: each
//! partition first gets an equal share of half the budget.

use super::history::{History, HistoryError, Operation, RegisterHistory};
use super::model::keyed::{KeyedHistory, KeyedModel};
use super::model::kv::{self, KvModel};
use super::model::register::RegisterModel;
use super::model::Model;
use super::partition::connected_components;
use super::search::{search, Outcome, SearchOp};
use super::window::minimal_window;

/// The answer about a whole history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    /// `window`: indices into the history's `ops`, ordered by call time, of
    /// a 1-minimal set of operations that cannot all have happened as
    /// recorded, whichever of the others took effect (see `super::window`).
    NotLinearizable {
        window: Vec<usize>,
    },
    /// The step budget ran out before an answer.
    Unknown,
}

impl Verdict {
    /// The name used in `--json` output.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Linearizable => "linearizable",
            Verdict::NotLinearizable { .. } => "not-linearizable",
            Verdict::Unknown => "unknown",
        }
    }
}

/// Limits on the work the checker does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Model steps the check may take in all partitions together; when spent
    /// the verdict is `Unknown`.
    pub budget_steps: u64,
    /// Model steps the window shrinking may take, over all its re-checks.
    pub shrink_budget_steps: u64,
}

/// The default budget: a hundred times what the hardest Jepsen etcd history
/// needs (about 0.2 million steps), and seconds of work in release (a model
/// step costs from under 0.1 µs for the register to about 0.5 µs for the KV
/// store on long histories).
pub const DEFAULT_BUDGET_STEPS: u64 = 20_000_000;

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { budget_steps: DEFAULT_BUDGET_STEPS, shrink_budget_steps: DEFAULT_BUDGET_STEPS }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub verdict: Verdict,
    /// Model steps the check took (shrinking not included).
    pub steps: u64,
    /// Operations in the history.
    pub operations: usize,
    /// Independent sub-histories the history was split into.
    pub partitions: usize,
    /// Whether the window is known to be 1-minimal (see `super::window`);
    /// true when there is no window.
    pub window_minimal: bool,
    /// Model steps the window shrinking took.
    pub shrink_steps: u64,
}

/// Checks a history of Jepsen's single register (one object: no partitions).
pub fn check_register(history: &RegisterHistory, options: &CheckOptions) -> Result<CheckReport, HistoryError> {
    history.validate()?;
    let ops: Vec<_> = history.ops.iter().map(|op| search_op(op, &op.input, op.output.as_ref())).collect();
    Ok(check_partitions(&RegisterModel, &ops, vec![(0..ops.len()).collect()], options))
}

/// Checks a history of leasesim's KV with leases, partitioned into
/// lease-connected components of keys.
pub fn check_kv(history: &History, options: &CheckOptions) -> Result<CheckReport, HistoryError> {
    history.validate()?;
    let compiled = kv::compile(&history.ops);
    let ops: Vec<_> = history.ops.iter().zip(&compiled).map(|(op, (cmd, answer))| search_op(op, cmd, answer.as_ref())).collect();
    let resources: Vec<_> = history.ops.iter().map(kv::resources).collect();
    Ok(check_partitions(&KvModel, &ops, connected_components(&resources), options))
}

/// Checks a history of registers by key (Jepsen's EDN histories), one key
/// at a time; `model` says what a key holds before any write.
pub fn check_keyed(history: &KeyedHistory, model: &KeyedModel, options: &CheckOptions) -> Result<CheckReport, HistoryError> {
    history.validate()?;
    let ops: Vec<_> = history.ops.iter().map(|op| search_op(op, &op.input, op.output.as_ref())).collect();
    let keys: Vec<Vec<&str>> = history.ops.iter().map(|op| vec![op.input.key()]).collect();
    Ok(check_partitions(model, &ops, connected_components(&keys), options))
}

fn search_op<'a, I, O, MI, MO>(op: &Operation<I, O>, input: &'a MI, output: Option<&'a MO>) -> SearchOp<'a, MI, MO> {
    // Validation guarantees a return time wherever the output is known; an
    // unknown output makes the return time irrelevant (see `Operation`).
    match (op.return_ns, output) {
        (Some(return_ns), Some(output)) => SearchOp::known(op.call_ns, return_ns, input, output),
        _ => SearchOp::unknown(op.call_ns, input),
    }
}

fn check_partitions<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M::Input, M::Output>],
    partitions: Vec<Vec<usize>>,
    options: &CheckOptions,
) -> CheckReport {
    let mut report = CheckReport {
        verdict: Verdict::Linearizable,
        steps: 0,
        operations: ops.len(),
        partitions: partitions.len(),
        window_minimal: true,
        shrink_steps: 0,
    };
    // One failing partition decides the whole history, so a hard partition
    // must not spend the budget of those after it (porcupine checks them in
    // parallel and stops at the first failure). First each partition gets
    // an equal share of half the budget; those that run out of their share
    // are searched again with all that is left.
    let shares = if partitions.len() > 1 { 2 * partitions.len() as u64 } else { 1 };
    let share = (options.budget_steps / shares).max(1);
    let mut hard = Vec::new();
    for (round, budget_share) in [(0, Some(share)), (1, None)] {
        let todo: Vec<usize> = if round == 0 { (0..partitions.len()).collect() } else { std::mem::take(&mut hard) };
        for index in todo {
            let part = &partitions[index];
            let left = options.budget_steps.saturating_sub(report.steps);
            let budget = budget_share.map_or(left, |s| s.min(left));
            let sub: Vec<_> = part.iter().map(|&i| ops[i].clone()).collect();
            let result = search(model, &sub, budget);
            report.steps += result.steps;
            match result.outcome {
                Outcome::Linearizable => {}
                Outcome::BudgetSpent => hard.push(index),
                Outcome::NotLinearizable => {
                    // A probe may cost many times the original search (it
                    // has more optional operations); the floor keeps small
                    // histories shrinkable. A probe that runs out only leaves
                    // the window larger (and flagged not minimal).
                    let probe_budget_steps = result.steps.saturating_mul(8).max(250_000);
                    let window = minimal_window(model, &sub, probe_budget_steps, options.shrink_budget_steps);
                    let mut in_history: Vec<usize> = window.ops.iter().map(|&i| part[i]).collect();
                    in_history.sort_by_key(|&i| (ops[i].call_ns, i));
                    report.verdict = Verdict::NotLinearizable { window: in_history };
                    report.window_minimal = window.minimal;
                    report.shrink_steps = window.steps;
                    return report;
                }
            }
        }
    }
    if !hard.is_empty() {
        report.verdict = Verdict::Unknown;
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::keyed::{KeyedInput, KeyedOutput};

    fn op(client: u64, call: u64, ret: u64, input: KeyedInput, output: KeyedOutput) -> Operation<KeyedInput, KeyedOutput> {
        Operation { client, call_ns: call, return_ns: Some(ret), input, output: Some(output) }
    }

    /// Key "a": many concurrent unknown-outcome appends and no answer to
    /// tell them apart make a search far beyond a small budget; key "b": a
    /// stale read after it. The failure of "b" decides, whatever "a" costs.
    #[test]
    fn a_hard_partition_does_not_hide_a_failing_one() {
        let mut ops = Vec::new();
        for i in 0..14u64 {
            let input = KeyedInput::Append { key: "a".into(), value: format!("{i},") };
            ops.push(Operation { client: i, call_ns: i, return_ns: None, input, output: None });
        }
        ops.push(op(20, 20, 21, KeyedInput::Read { key: "a".into() }, KeyedOutput::Read { value: Some("13,12,".into()) }));
        ops.push(op(30, 30, 31, KeyedInput::Write { key: "b".into(), value: "1".into() }, KeyedOutput::Ok));
        ops.push(op(31, 40, 41, KeyedInput::Read { key: "b".into() }, KeyedOutput::Read { value: None }));
        let history = KeyedHistory { ops };
        let options = CheckOptions { budget_steps: 2_000, shrink_budget_steps: 100_000 };
        let model = KeyedModel::default();
        // Key "a" alone cannot be decided within the budget…
        let only_a = KeyedHistory { ops: history.ops[..15].to_vec() };
        assert_eq!(check_keyed(&only_a, &model, &options).unwrap().verdict, Verdict::Unknown);
        // …yet with "b" the history is not linearizable.
        let report = check_keyed(&history, &model, &options).unwrap();
        assert_eq!(report.verdict, Verdict::NotLinearizable { window: vec![15, 16] });
        assert!(report.steps <= options.budget_steps, "{} steps", report.steps);
    }
}
