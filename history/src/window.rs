//! The smallest failing window: which operations, together, cannot be
//! linearized.
//!
//! A bare "not linearizable" over a few thousand operations is useless to a
//! reader; porcupine draws the longest partial linearizations for the same
//! reason. We shrink instead, delta-debugging style, but with a step that
//! keeps the answer sound: an operation is never deleted (deleting a write
//! can make a correct read look wrong), it is *relaxed* to optional: it
//! happened as recorded, or not at all. Relaxing only adds linearizations,
//! so if the relaxed history still fails, so did the original. The window is
//! the set of operations still required at the end; it fails on its own too,
//! since dropping every optional operation is one of the choices the relaxed
//! history already allowed.
//!
//! Two phases, each under the step budget (the search of Wing & Gong 1993 /
//! Lowe 2017 can be exponential, so shrinking must be able to stop early;
//! what it returns is then still a failing window, only perhaps not
//! minimal; a probe that runs out of steps counts as "linearizable", which
//! only keeps operations in the window):
//! 1. a cut in time: the earliest instant `r` such that the operations that
//!    returned by `r` still fail, with those in flight at `r` made optional
//!    with any answer (what they saw may depend on later operations) and
//!    those called after `r` dropped (nothing called after `r` can be
//!    ordered before an operation that returned by `r`); failure is monotone
//!    in `r`, so a binary search finds it;
//! 2. relax the remaining required operations, in halving groups and last
//!    one at a time, keeping each relaxation under which the history still
//!    fails (a 1-minimal window: relaxing any single operation of it makes
//!    the rest linearizable). Single-operation probes that ran out are tried
//!    once more with the rest of the budget shared among them.

use super::model::Model;
use super::search::{search, Outcome, SearchOp};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Indices into the shrunk operations, ordered by call time.
    pub ops: Vec<usize>,
    /// False when some operation of the window was not shown necessary (its
    /// probe ran out of steps, even when tried again, or the budget ran out
    /// before it was tried): the window still fails, but may not be the
    /// smallest. Probes of the earlier, coarser steps that ran out only
    /// cost steps.
    pub minimal: bool,
    pub steps: u64,
}

/// Shrinks `ops`, which the search found not linearizable, to a 1-minimal
/// failing window. `probe_budget_steps` bounds each re-check,
/// `budget_steps` all of them together.
pub fn minimal_window<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M::Input, M::Output>],
    probe_budget_steps: u64,
    budget_steps: u64,
) -> Window {
    let mut shrinker = Shrinker { model, ops, probe_budget_steps, budget_steps, steps: 0 };

    // Phase 1: the earliest failing cut among the known operations' returns.
    let mut cuts: Vec<u64> = ops.iter().filter(|o| !o.optional).filter_map(|o| o.return_ns).collect();
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.is_empty() {
        return Window { ops: Vec::new(), minimal: true, steps: 0 };
    }
    // The last cut keeps every required operation, and drops only optional
    // ones called after every required return, which could only go last: it
    // fails because the whole history did.
    let (mut lo, mut hi) = (0usize, cuts.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // An undecided probe counts as "linearizable": the cut only lands later.
        if shrinker.probe(&cut_at(ops, cuts[mid]), probe_budget_steps) == Outcome::NotLinearizable {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut current = cut_at(ops, cuts[hi]);

    // Phase 2: relax required operations in groups, halving the group size
    // (delta debugging: a window is usually a handful of operations, so big
    // groups go at once); the last pass, one at a time over what is left,
    // makes the window 1-minimal.
    let mut group_len = required(&current).len().div_ceil(2);
    while group_len > 1 && !shrinker.spent() {
        for group in required(&current).chunks(group_len) {
            if shrinker.spent() {
                break;
            }
            let relaxed = relax(&current, group);
            if shrinker.probe(&relaxed, shrinker.probe_budget_steps) == Outcome::NotLinearizable {
                current = relaxed;
            }
        }
        group_len = group_len.div_ceil(2);
    }
    let minimal = one_at_a_time(&mut shrinker, &mut current);

    let mut window = required(&current);
    window.sort_by_key(|&i| (ops[i].call_ns, i));
    Window { ops: window, minimal, steps: shrinker.steps }
}

/// The last pass: relaxes each operation still required on its own, keeping
/// the relaxations under which the history still fails. The window is
/// 1-minimal exactly when every operation left was shown necessary here (a
/// relaxation made linearizable stays so when more operations are relaxed
/// later), whatever happened to the coarser probes before. Probes that ran
/// out are tried once more, sharing what is left of the budget. Returns
/// whether the window is 1-minimal.
fn one_at_a_time<M: Model>(shrinker: &mut Shrinker<'_, '_, '_, M>, current: &mut Vec<Option<SearchOp<'_, M::Input, M::Output>>>) -> bool {
    let mut undecided = Vec::new();
    for i in required(current) {
        if shrinker.spent() {
            return false;
        }
        let relaxed = relax(current, &[i]);
        match shrinker.probe(&relaxed, shrinker.probe_budget_steps) {
            Outcome::NotLinearizable => *current = relaxed,
            Outcome::Linearizable => {}
            Outcome::BudgetSpent => undecided.push(i),
        }
    }
    if undecided.is_empty() {
        return true;
    }
    // At most four times a first probe: one probe's memo is the shrinking's
    // peak memory, and a probe that did not decide in its first budget
    // rarely does in a few more (porcupine's `c50-bad` needs a million steps
    // and 150 MB to prove its last two operations necessary).
    let share = (shrinker.left() / undecided.len() as u64).min(shrinker.probe_budget_steps.saturating_mul(RETRY_FACTOR));
    if share <= shrinker.probe_budget_steps {
        return false;
    }
    let mut decided_all = true;
    for i in undecided {
        let relaxed = relax(current, &[i]);
        match shrinker.probe(&relaxed, share) {
            Outcome::NotLinearizable => *current = relaxed,
            Outcome::Linearizable => {}
            Outcome::BudgetSpent => decided_all = false,
        }
    }
    decided_all
}

/// How many times a first probe's budget a retried one gets (at most).
const RETRY_FACTOR: u64 = 4;

/// `variant` with the operations `which` made optional.
fn relax<'a, I, O>(variant: &[Option<SearchOp<'a, I, O>>], which: &[usize]) -> Vec<Option<SearchOp<'a, I, O>>> {
    let mut relaxed = variant.to_vec();
    for &i in which {
        if let Some(op) = relaxed[i].as_mut() {
            op.optional = true;
        }
    }
    relaxed
}

/// Indices of the operations still required in a variant.
fn required<I, O>(variant: &[Option<SearchOp<'_, I, O>>]) -> Vec<usize> {
    (0..variant.len()).filter(|&i| variant[i].as_ref().is_some_and(|o| !o.optional)).collect()
}

/// The history cut at instant `cut`: `None` for dropped operations.
fn cut_at<'a, I, O>(ops: &[SearchOp<'a, I, O>], cut: u64) -> Vec<Option<SearchOp<'a, I, O>>> {
    ops.iter()
        .map(|o| {
            if o.call_ns > cut {
                return None;
            }
            let mut o = o.clone();
            if !o.optional && o.return_ns.is_some_and(|r| r > cut) {
                o.optional = true;
                o.output = None;
            }
            Some(o)
        })
        .collect()
}

struct Shrinker<'m, 'o, 'a, M: Model> {
    model: &'m M,
    ops: &'o [SearchOp<'a, M::Input, M::Output>],
    probe_budget_steps: u64,
    budget_steps: u64,
    steps: u64,
}

impl<M: Model> Shrinker<'_, '_, '_, M> {
    fn spent(&self) -> bool {
        self.steps >= self.budget_steps
    }

    fn left(&self) -> u64 {
        self.budget_steps.saturating_sub(self.steps)
    }

    /// Searches the variant with at most `probe_budget_steps` (and what is
    /// left of the whole budget).
    fn probe(&mut self, variant: &[Option<SearchOp<'_, M::Input, M::Output>>], probe_budget_steps: u64) -> Outcome {
        debug_assert_eq!(variant.len(), self.ops.len());
        let budget = probe_budget_steps.min(self.left());
        let kept: Vec<SearchOp<'_, M::Input, M::Output>> = variant.iter().flatten().cloned().collect();
        let result = search(self.model, &kept, budget);
        self.steps += result.steps;
        result.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{RegisterInput as I, RegisterOutput as O};
    use crate::model::register::RegisterModel;

    #[test]
    fn a_stale_read_shrinks_to_two_reads() {
        let (w1, w2, read) = (I::Write { value: 1 }, I::Write { value: 2 }, I::Read);
        let (ok, saw_1, saw_2) = (O::Write, O::Read { value: Some(1) }, O::Read { value: Some(2) });
        let ops = [
            SearchOp::known(0, 1, &w1, &ok),
            SearchOp::known(0, 1, &read, &O::Read { value: None }),
            SearchOp::known(2, 3, &w2, &ok),
            SearchOp::known(2, 3, &read, &saw_2),
            SearchOp::known(4, 5, &read, &saw_1),
            // After the violation: cut away by phase 1.
            SearchOp::known(6, 7, &read, &saw_2),
            SearchOp::unknown(6, &w1),
        ];
        assert_eq!(search(&RegisterModel, &ops, 1_000).outcome, Outcome::NotLinearizable);
        let window = minimal_window(&RegisterModel, &ops, 1_000, 100_000);
        // Operations are relaxed in index order: the write of 2 goes first,
        // since the read of 2 (by time 3) still proves it happened; what is
        // left is that read and the later read of 1, which nothing explains.
        assert_eq!(window.ops, vec![3, 4]);
        assert!(window.minimal);
    }

    /// Probes of 3 steps decide almost nothing, so every coarse probe runs
    /// out; the single-operation probes are tried again with the rest of
    /// the budget, and the window is still proven 1-minimal.
    #[test]
    fn probes_that_ran_out_are_retried_and_the_window_is_still_minimal() {
        let (w1, w2, read) = (I::Write { value: 1 }, I::Write { value: 2 }, I::Read);
        let (ok, saw_1, saw_2) = (O::Write, O::Read { value: Some(1) }, O::Read { value: Some(2) });
        let ops = [
            SearchOp::known(0, 1, &w1, &ok),
            SearchOp::known(0, 1, &read, &O::Read { value: None }),
            SearchOp::known(2, 3, &w2, &ok),
            SearchOp::known(2, 3, &read, &saw_2),
            SearchOp::known(4, 5, &read, &saw_1),
        ];
        let window = minimal_window(&RegisterModel, &ops, 3, 100_000);
        assert!(window.minimal, "{window:?}");
        // The others as recorded or not at all, the window's required but
        // for at most one.
        let only = |relaxed: Option<usize>| -> Vec<SearchOp<'_, I, O>> {
            let required = |i: usize| window.ops.contains(&i) && Some(i) != relaxed;
            (0..ops.len()).map(|i| SearchOp { optional: !required(i), ..ops[i].clone() }).collect()
        };
        assert_eq!(search(&RegisterModel, &only(None), 1_000).outcome, Outcome::NotLinearizable);
        for &i in &window.ops {
            assert_eq!(search(&RegisterModel, &only(Some(i)), 1_000).outcome, Outcome::Linearizable, "#{i} is needed");
        }
    }

    #[test]
    fn a_spent_budget_still_gives_a_failing_window() {
        let (w1, read, ok, saw_1) = (I::Write { value: 1 }, I::Read, O::Write, O::Read { value: Some(1) });
        let ops = [SearchOp::known(0, 1, &read, &saw_1), SearchOp::known(2, 3, &w1, &ok)];
        let window = minimal_window(&RegisterModel, &ops, 1_000, 0);
        assert_eq!(window.ops, vec![0, 1], "nothing shrunk, but still the whole failing history");
        assert!(!window.minimal);
    }
}
