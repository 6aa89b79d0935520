//! The checker's entry points: validate, partition, search each partition,
//! and shrink the first failing one to a window.
//!
//! This is the pipeline of porcupine's `CheckOperations` (partition per key,
//! Lowe 2017's P-compositionality; then Wing & Gong 1993's search on each)
//! with two additions: one step budget shared by the whole check, so that a
//! hard history answers `Unknown` rather than running forever or guessing,
//! and the minimal failing window of `super::window`, under a budget of its
//! own.
//!
//! Porcupine checks partitions in parallel and stops at the first failure,
//! so a failing key decides as soon as its own search does, however hard
//! the others are (in porcupine's `c50-bad`, nine keys of ten fail, some
//! after a few thousand steps, others after millions). We get the same on
//! one thread, deterministically: the partitions take turns, each turn
//! going on from where the partition's last one stopped (see
//! [`Search::resume`]: no step is taken twice), and the turns double in
//! length each round. A
//! failing partition that needs `F` steps is found within about
//! `2 × F × partitions` steps.

use super::history::{History, HistoryError, Operation, RegisterHistory};
use super::model::keyed::{KeyedHistory, KeyedModel};
use super::model::kv::{self, KvModel};
use super::model::register::RegisterModel;
use super::model::Model;
use super::partition::connected_components;
use super::search::{Outcome, Search, SearchOp};
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
    /// Model steps the window shrinking may take, over all its re-checks;
    /// separate from `budget_steps`, and spent only once the verdict is
    /// known. Each re-check's memo is freed before the next, so this also
    /// bounds the shrinking's memory.
    pub shrink_budget_steps: u64,
}

/// The default budget: a hundred times what the hardest Jepsen etcd history
/// needs (about 0.2 million steps), and seconds of work in release (a model
/// step costs from under 0.1 µs for the register to about 0.5 µs for the KV
/// store on long histories).
pub const DEFAULT_BUDGET_STEPS: u64 = 20_000_000;

/// The default budget of the window shrinking: a fraction of a second in
/// release. Small histories shrink to a 1-minimal window well within it
/// (porcupine's `c10-bad` takes under a thousand steps); a larger one that
/// runs out gets a failing window flagged as partial.
pub const DEFAULT_SHRINK_BUDGET_STEPS: u64 = 2_000_000;

/// Steps of each partition's first turn; each round doubles it.
const FIRST_TURN_STEPS: u64 = 1_000;

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { budget_steps: DEFAULT_BUDGET_STEPS, shrink_budget_steps: DEFAULT_SHRINK_BUDGET_STEPS }
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
    /// true when there is no window. False means the shrinking was cut short
    /// (its budget, or one re-check's, ran out): the window is partial.
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

/// Checks a history of multi-key txns (the simulator's `txn` workload),
/// partitioned into components of keys that some txn touches together.
pub fn check_txn(
    ops: &[Operation<crate::model::txn::TxnInput, crate::model::txn::TxnOutput>],
    options: &CheckOptions,
) -> Result<CheckReport, HistoryError> {
    for (op_index, op) in ops.iter().enumerate() {
        if op.return_ns.is_some_and(|r| r < op.call_ns) || (op.output.is_some() && op.return_ns.is_none()) {
            return Err(HistoryError { op_index, message: "a return before its call, or an output without a return".into() });
        }
    }
    let search: Vec<_> = ops.iter().map(|op| search_op(op, &op.input, op.output.as_ref())).collect();
    let keys: Vec<Vec<&str>> = ops.iter().map(|op| op.input.keys()).collect();
    Ok(check_partitions(&crate::model::txn::TxnModel, &search, connected_components(&keys), options))
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
    let subs: Vec<Vec<_>> = partitions.iter().map(|part| part.iter().map(|&i| ops[i].clone()).collect()).collect();
    let (failing, steps) = match take_turns(model, &subs, options.budget_steps) {
        Turns::Linearizable(steps) => {
            report.steps = steps;
            return report;
        }
        Turns::Spent(steps) => {
            report.steps = steps;
            report.verdict = Verdict::Unknown;
            return report;
        }
        Turns::Failed { partition, steps } => (partition, steps),
    };
    report.steps = steps.total;
    // A probe may cost many times the original search (it has more optional
    // operations); the floor keeps small histories shrinkable. A probe that
    // runs out only leaves the window larger (and flagged not minimal).
    let probe_budget_steps = steps.own.saturating_mul(8).max(60_000);
    let window = minimal_window(model, &subs[failing], probe_budget_steps, options.shrink_budget_steps);
    let part = &partitions[failing];
    let mut in_history: Vec<usize> = window.ops.iter().map(|&i| part[i]).collect();
    in_history.sort_by_key(|&i| (ops[i].call_ns, i));
    report.verdict = Verdict::NotLinearizable { window: in_history };
    report.window_minimal = window.minimal;
    report.shrink_steps = window.steps;
    report
}

/// Steps of a failed check: all partitions', and the failing one's own.
struct FailSteps {
    total: u64,
    own: u64,
}

enum Turns {
    Linearizable(u64),
    Spent(u64),
    Failed { partition: usize, steps: FailSteps },
}

/// Searches the partitions in turns (see the module documentation) until
/// one fails, all pass, or `budget_steps` are spent. Each search's memo is
/// freed once it passes, and all of them before this returns.
fn take_turns<M: Model>(model: &M, subs: &[Vec<SearchOp<'_, M::Input, M::Output>>], budget_steps: u64) -> Turns {
    let mut searches: Vec<Option<Search<'_, '_, '_, M>>> = subs.iter().map(|sub| Some(Search::new(model, sub))).collect();
    let mut total = 0u64;
    let mut turn_steps = FIRST_TURN_STEPS;
    loop {
        let mut undecided = false;
        for (partition, slot) in searches.iter_mut().enumerate() {
            let Some(search) = slot else { continue };
            let before = search.steps();
            let outcome = search.resume(turn_steps.min(budget_steps - total));
            total += search.steps() - before;
            match outcome {
                Outcome::Linearizable => *slot = None,
                Outcome::BudgetSpent => undecided = true,
                Outcome::NotLinearizable => return Turns::Failed { partition, steps: FailSteps { total, own: search.steps() } },
            }
        }
        if !undecided {
            return Turns::Linearizable(total);
        }
        if total >= budget_steps {
            return Turns::Spent(total);
        }
        turn_steps = turn_steps.saturating_mul(2);
    }
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

    /// The same history with a large budget: key "a" gets turns of 1,000,
    /// 2,000, … steps, so the failure of "b" (a few steps) is found within
    /// the first round, not after "a" has spent a share of the budget.
    #[test]
    fn partitions_take_turns_so_a_quick_failure_is_found_quickly() {
        let mut ops = Vec::new();
        for i in 0..14u64 {
            let input = KeyedInput::Append { key: "a".into(), value: format!("{i},") };
            ops.push(Operation { client: i, call_ns: i, return_ns: None, input, output: None });
        }
        ops.push(op(20, 20, 21, KeyedInput::Read { key: "a".into() }, KeyedOutput::Read { value: Some("13,12,".into()) }));
        ops.push(op(30, 30, 31, KeyedInput::Write { key: "b".into(), value: "1".into() }, KeyedOutput::Ok));
        ops.push(op(31, 40, 41, KeyedInput::Read { key: "b".into() }, KeyedOutput::Read { value: None }));
        let options = CheckOptions { budget_steps: 20_000_000, shrink_budget_steps: 100_000 };
        let report = check_keyed(&KeyedHistory { ops }, &KeyedModel::default(), &options).unwrap();
        assert_eq!(report.verdict, Verdict::NotLinearizable { window: vec![15, 16] });
        assert!(report.steps <= FIRST_TURN_STEPS + 10, "{} steps", report.steps);
    }

    /// Linearizable partitions are each searched to the end, however many
    /// turns that takes; the steps add up to those of separate searches.
    #[test]
    fn every_partition_is_decided_when_all_pass() {
        let mut ops = Vec::new();
        for (k, key) in ["a", "b", "c"].iter().enumerate() {
            for i in 0..7u64 {
                let input = KeyedInput::Append { key: key.to_string(), value: format!("{i},") };
                ops.push(Operation { client: i, call_ns: 100 * k as u64 + i, return_ns: None, input, output: None });
            }
            let read = KeyedInput::Read { key: key.to_string() };
            ops.push(op(99, 100 * k as u64 + 50, 100 * k as u64 + 51, read, KeyedOutput::Read { value: Some("6,".into()) }));
        }
        let history = KeyedHistory { ops };
        let model = KeyedModel::default();
        let report = check_keyed(&history, &model, &CheckOptions::default()).unwrap();
        assert_eq!((report.verdict.clone(), report.partitions), (Verdict::Linearizable, 3));
        let alone: u64 = (0..3)
            .map(|k| {
                let part = KeyedHistory { ops: history.ops[8 * k..8 * (k + 1)].to_vec() };
                check_keyed(&part, &model, &CheckOptions::default()).unwrap().steps
            })
            .sum();
        assert!(alone > 3 * FIRST_TURN_STEPS, "each key needs more than one turn ({alone} steps)");
        assert_eq!(report.steps, alone, "steps in turns and alone");
    }
}
