//! The search for a linearization: Wing & Gong's algorithm with Lowe's and
//! porcupine's improvements.
//!
//! Wing & Gong (1993) try every order of the operations consistent with real
//! time, backtracking when the sequential model refuses an answer. Lowe
//! (2017) made it practical: the calls and returns sit in one time-ordered
//! doubly linked list; an operation may be linearized next exactly when its
//! call comes before the first remaining return; linearizing "lifts" its
//! call and return out of the list, and backtracking puts them back. A memo
//! of visited configurations (`super::cache`) prunes every configuration
//! already explored, which bounds the work by the number of distinct
//! configurations instead of orders. Porcupine (Athalye) is the same search;
//! we follow its treatment of unknown outcomes (a return at +infinity) and
//! its tie rule (at equal times calls sort before returns, so touching
//! operations count as concurrent).
//!
//! Operations are required or optional. An optional one may be dropped (it
//! never took effect): an unknown outcome is optional with its return at
//! +infinity and any answer; the window shrinker (`super::window`) also
//! makes recorded operations optional. When the scan reaches the return of
//! an optional operation not yet linearized, the operation is dropped (a
//! forced move, undone on backtracking). Success is declared once every
//! required operation is linearized.
//!
//! Refinements that never change a verdict:
//! - an optional operation is never linearized where it would leave the
//!   state unchanged (dropping it explores a superset), and an optional
//!   read is left out from the start;
//! - of several unknown-outcome operations with identical inputs, the
//!   later-called one is only linearized after the earlier-called one
//!   (swapping two identical operations that are both open to +infinity
//!   gives the same schedules);
//! - the memo compares optional operations by inclusion (`super::cache`).
//!
//! The search is deterministic: the memo is used for lookups only, and the
//! visiting order comes from the sorted event list.

use super::cache::{Marks, PrefixSet, Visited};
use super::model::Model;

/// One operation as the search sees it; borrowed so that the window shrinker
/// can re-check variants of a history without copying it.
pub struct SearchOp<'a, I, O> {
    pub call_ns: u64,
    /// `None`: +infinity (allowed for optional operations only).
    pub return_ns: Option<u64>,
    pub input: &'a I,
    /// `None`: any answer.
    pub output: Option<&'a O>,
    /// May be dropped: it never took effect.
    pub optional: bool,
}

impl<'a, I, O> SearchOp<'a, I, O> {
    /// An operation whose outcome the client learned: it took effect between
    /// its call and its return, with this output.
    pub fn known(call_ns: u64, return_ns: u64, input: &'a I, output: &'a O) -> Self {
        SearchOp { call_ns, return_ns: Some(return_ns), input, output: Some(output), optional: false }
    }

    /// An operation whose outcome is unknown: it took effect at some point
    /// after its call, with any answer, or never.
    pub fn unknown(call_ns: u64, input: &'a I) -> Self {
        SearchOp { call_ns, return_ns: None, input, output: None, optional: true }
    }

    /// Whether this is an unknown outcome open to +infinity.
    fn open_ended(&self) -> bool {
        self.return_ns.is_none() && self.output.is_none()
    }
}

impl<I, O> Clone for SearchOp<'_, I, O> {
    fn clone(&self) -> Self {
        SearchOp { ..*self }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Linearizable,
    NotLinearizable,
    /// The step budget ran out before the search decided.
    BudgetSpent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchResult {
    pub outcome: Outcome,
    /// Calls of the model's step function.
    pub steps: u64,
}

const NIL: u32 = u32::MAX;

/// A choice on the search stack.
enum Frame<S> {
    /// The call node of the operation linearized, the state before it, and
    /// (for a required one) what undoes its entry in the required set.
    Linearized(u32, S, Option<Marks>),
    /// The call node of an optional operation dropped at its return.
    Dropped(u32),
}

/// Searches for a linearization of `ops` against `model`, calling the step
/// function at most `budget_steps` times.
pub fn search<M: Model>(model: &M, ops: &[SearchOp<'_, M::Input, M::Output>], budget_steps: u64) -> SearchResult {
    debug_assert!(ops.iter().all(|op| op.optional || op.return_ns.is_some()), "a required operation needs a return");
    // An optional read changes nothing, so it can only ever be dropped.
    let ops: Vec<&SearchOp<'_, M::Input, M::Output>> =
        ops.iter().filter(|op| !(op.optional && model.is_read_only(op.input))).collect();
    let mut list = EventList::new(&ops);
    let twin_before = earlier_twins(&ops);
    // Required and optional operations get separate numbers, each in call
    // order: the memo compares the first exactly (as a prefix plus a few)
    // and the second by inclusion.
    let mut by_call: Vec<usize> = (0..ops.len()).collect();
    by_call.sort_by_key(|&i| (ops[i].call_ns, i));
    let mut slot = vec![0usize; ops.len()];
    let (mut required_total, mut optional_total) = (0usize, 0usize);
    for &i in &by_call {
        let counter = if ops[i].optional { &mut optional_total } else { &mut required_total };
        slot[i] = *counter;
        *counter += 1;
    }

    let mut required = PrefixSet::new(required_total);
    let mut optional = vec![0u64; optional_total.div_ceil(64)];
    let mut visited: Visited<M::State> = Visited::default();
    let mut state = model.init();
    visited.insert(&required, &optional, &state);
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let mut required_done = 0usize;
    let mut steps = 0u64;
    let mut entry = list.next[list.head()];
    loop {
        if required_done == required_total {
            return SearchResult { outcome: Outcome::Linearizable, steps };
        }
        let op = if entry == NIL { None } else { Some(list.op_of(entry)) };
        match op {
            Some(op) if list.is_call(entry) => {
                let o = ops[op];
                let blocked = twin_before[op].is_some_and(|twin| !bit(&optional, slot[twin]));
                if !blocked {
                    if steps >= budget_steps {
                        return SearchResult { outcome: Outcome::BudgetSpent, steps };
                    }
                    steps += 1;
                    if let Some(next_state) = model.step(&state, o.input, o.output) {
                        if !(o.optional && next_state == state) {
                            let marks = if o.optional {
                                set_bit(&mut optional, slot[op], true);
                                None
                            } else {
                                Some(required.insert(slot[op]))
                            };
                            if visited.insert(&required, &optional, &next_state) {
                                stack.push(Frame::Linearized(entry, std::mem::replace(&mut state, next_state), marks));
                                list.lift(entry);
                                required_done += usize::from(!o.optional);
                                entry = list.next[list.head()];
                                continue;
                            }
                            match marks {
                                Some(marks) => required.remove(slot[op], marks),
                                None => set_bit(&mut optional, slot[op], false),
                            }
                        }
                    }
                }
                entry = list.next[entry as usize];
            }
            Some(op) if ops[op].optional => {
                // The return of an optional operation nothing linearized:
                // it never took effect. Calls before this return were all
                // tried in this configuration; the scan goes on after it.
                set_bit(&mut optional, slot[op], true);
                let call = list.call_node[op];
                stack.push(Frame::Dropped(call));
                list.lift(call);
                entry = list.next[entry as usize];
            }
            _ => {
                // The first remaining return of a required operation: it had
                // to be linearized before anything after it, and nothing fit.
                // Undo the last choice (a drop was forced, so undo past it).
                loop {
                    match stack.pop() {
                        None => return SearchResult { outcome: Outcome::NotLinearizable, steps },
                        Some(Frame::Dropped(call)) => {
                            set_bit(&mut optional, slot[list.op_of(call)], false);
                            list.unlift(call);
                        }
                        Some(Frame::Linearized(call, previous, marks)) => {
                            let op = list.op_of(call);
                            match marks {
                                Some(marks) => {
                                    required.remove(slot[op], marks);
                                    required_done -= 1;
                                }
                                None => set_bit(&mut optional, slot[op], false),
                            }
                            state = previous;
                            list.unlift(call);
                            entry = list.next[call as usize];
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// Lowe's list of call and return events in time order, with dancing-links
/// removal and reinsertion. Node `2n` is the head sentinel.
struct EventList {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Per node: operation index, with the top bit set for calls.
    tag: Vec<u32>,
    /// Per operation: the node of its return.
    return_node: Vec<u32>,
    /// Per operation: the node of its call.
    call_node: Vec<u32>,
}

const CALL_FLAG: u32 = 1 << 31;

impl EventList {
    fn new<I, O>(ops: &[&SearchOp<'_, I, O>]) -> Self {
        // (at +infinity, time, returns after calls, op)
        let mut events: Vec<(bool, u64, u8, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            events.push((false, op.call_ns, 0, i));
            match op.return_ns {
                Some(ret) => events.push((false, ret, 1, i)),
                None => events.push((true, 0, 1, i)),
            }
        }
        events.sort_unstable();
        let n = events.len();
        let head = n as u32;
        let mut list = EventList {
            next: vec![NIL; n + 1],
            prev: vec![NIL; n + 1],
            tag: Vec::with_capacity(n),
            return_node: vec![NIL; ops.len()],
            call_node: vec![NIL; ops.len()],
        };
        let mut last = head;
        for (node, &(_, _, kind, op)) in events.iter().enumerate() {
            let node = node as u32;
            list.tag.push(if kind == 0 { op as u32 | CALL_FLAG } else { op as u32 });
            if kind == 1 {
                list.return_node[op] = node;
            } else {
                list.call_node[op] = node;
            }
            list.next[last as usize] = node;
            list.prev[node as usize] = last;
            last = node;
        }
        list
    }

    fn head(&self) -> usize {
        self.next.len() - 1
    }

    fn is_call(&self, node: u32) -> bool {
        self.tag[node as usize] & CALL_FLAG != 0
    }

    fn op_of(&self, node: u32) -> usize {
        (self.tag[node as usize] & !CALL_FLAG) as usize
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
        self.next[p as usize] = n;
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    fn relink(&mut self, x: u32) {
        let (p, n) = (self.prev[x as usize], self.next[x as usize]);
        self.next[p as usize] = x;
        if n != NIL {
            self.prev[n as usize] = x;
        }
    }

    /// Removes a call and its return; [`Self::unlift`] must undo lifts in
    /// reverse order (the search's stack guarantees it).
    fn lift(&mut self, call: u32) {
        let ret = self.return_node[self.op_of(call)];
        self.unlink(call);
        self.unlink(ret);
    }

    fn unlift(&mut self, call: u32) {
        let ret = self.return_node[self.op_of(call)];
        self.relink(ret);
        self.relink(call);
    }
}

/// For each unknown outcome open to +infinity, the latest earlier-called
/// such operation with an identical input, if any.
fn earlier_twins<I: Eq, O>(ops: &[&SearchOp<'_, I, O>]) -> Vec<Option<usize>> {
    let mut unknown: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].open_ended()).collect();
    unknown.sort_by_key(|&i| (ops[i].call_ns, i));
    let mut twin = vec![None; ops.len()];
    for (pos, &i) in unknown.iter().enumerate() {
        twin[i] = unknown[..pos].iter().rev().copied().find(|&j| ops[j].input == ops[i].input);
    }
    twin
}

fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

fn set_bit(bits: &mut [u64], i: usize, on: bool) {
    if on {
        bits[i / 64] |= 1 << (i % 64);
    } else {
        bits[i / 64] &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linearizability::history::{RegisterInput as I, RegisterOutput as O};
    use crate::linearizability::model::register::RegisterModel;

    const WRITE_1: I = I::Write { value: 1 };
    const READ: I = I::Read;
    const OK: O = O::Write;
    const SAW_NIL: O = O::Read { value: None };
    const SAW_1: O = O::Read { value: Some(1) };

    fn run(ops: &[SearchOp<'_, I, O>]) -> Outcome {
        search(&RegisterModel, ops, 1_000_000).outcome
    }

    #[test]
    fn real_time_order_is_respected() {
        // The read starts after the write returned: it must see 1.
        let ops = [SearchOp::known(0, 4, &WRITE_1, &OK), SearchOp::known(6, 7, &READ, &SAW_NIL)];
        assert_eq!(run(&ops), Outcome::NotLinearizable);
        let ops = [SearchOp::known(0, 4, &WRITE_1, &OK), SearchOp::known(3, 7, &READ, &SAW_NIL)];
        assert_eq!(run(&ops), Outcome::Linearizable, "overlapping: the read may go first");
    }

    #[test]
    fn touching_operations_count_as_concurrent() {
        let ops = [SearchOp::known(0, 5, &WRITE_1, &OK), SearchOp::known(5, 6, &READ, &SAW_NIL)];
        assert_eq!(run(&ops), Outcome::Linearizable);
    }

    #[test]
    fn an_unknown_outcome_may_apply_late_or_never() {
        let late = [
            SearchOp::unknown(0, &WRITE_1),
            SearchOp::known(10, 11, &READ, &SAW_NIL),
            SearchOp::known(12, 13, &READ, &SAW_1),
        ];
        assert_eq!(run(&late), Outcome::Linearizable);
        let never = [SearchOp::unknown(0, &WRITE_1), SearchOp::known(12, 13, &READ, &SAW_NIL)];
        assert_eq!(run(&never), Outcome::Linearizable);
        let before_call = [SearchOp::unknown(5, &WRITE_1), SearchOp::known(0, 2, &READ, &SAW_1)];
        assert_eq!(run(&before_call), Outcome::NotLinearizable);
    }

    #[test]
    fn an_optional_operation_is_dropped_at_its_return_or_happens_within_its_interval() {
        let mut write = SearchOp::known(0, 2, &WRITE_1, &OK);
        write.optional = true;
        let dropped = [write.clone(), SearchOp::known(3, 4, &READ, &SAW_NIL)];
        assert_eq!(run(&dropped), Outcome::Linearizable);
        let happened = [write.clone(), SearchOp::known(3, 4, &READ, &SAW_1)];
        assert_eq!(run(&happened), Outcome::Linearizable);
        // Optional but as recorded: it cannot take effect after its return.
        let late = [write, SearchOp::known(3, 4, &READ, &SAW_NIL), SearchOp::known(5, 6, &READ, &SAW_1)];
        assert_eq!(run(&late), Outcome::NotLinearizable);
    }

    #[test]
    fn identical_unknown_operations_are_interchangeable() {
        // Two identical unknown writes and reads that need one of them early
        // and the other late.
        let write_2 = I::Write { value: 2 };
        let saw_2 = O::Read { value: Some(2) };
        let ops = [
            SearchOp::unknown(0, &WRITE_1),
            SearchOp::unknown(1, &WRITE_1),
            SearchOp::known(2, 3, &READ, &SAW_1),
            SearchOp::known(4, 5, &write_2, &OK),
            SearchOp::known(6, 7, &READ, &saw_2),
            SearchOp::known(8, 9, &READ, &SAW_1),
        ];
        assert_eq!(run(&ops), Outcome::Linearizable);
        let three_ones =
            [&ops[..], &[SearchOp::known(10, 11, &READ, &saw_2), SearchOp::known(12, 13, &READ, &SAW_1)]].concat();
        assert_eq!(run(&three_ones), Outcome::NotLinearizable, "only two writes of 1 to go around");
    }

    #[test]
    fn the_budget_bounds_model_steps() {
        let ops = [SearchOp::known(0, 4, &WRITE_1, &OK), SearchOp::known(6, 7, &READ, &SAW_1)];
        assert_eq!(search(&RegisterModel, &ops, 1), SearchResult { outcome: Outcome::BudgetSpent, steps: 1 });
        assert_eq!(search(&RegisterModel, &ops, 2), SearchResult { outcome: Outcome::Linearizable, steps: 2 });
        assert_eq!(search(&RegisterModel, &[], 0), SearchResult { outcome: Outcome::Linearizable, steps: 0 });
    }
}
