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
//! - a required read whose answer matches the state is linearized at once,
//!   with no alternative explored (moving a read earlier, within its
//!   interval, never breaks a linearization), which removes most branching
//!   in read-heavy histories;
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
use super::states::States;

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
enum Frame {
    /// The call node of the operation linearized, the state (number) before
    /// it, and (for a required one) what undoes its entry in the required
    /// set.
    Linearized(u32, u32, Option<Marks>),
    /// The call node of a read linearized without alternatives (see
    /// [`Search::forced_read`]), and what undoes its entry.
    Forced(u32, Marks),
    /// The call node of an optional operation dropped at its return.
    Dropped(u32),
}

/// Searches for a linearization of `ops` against `model`, calling the step
/// function at most `budget_steps` times.
pub fn search<M: Model>(model: &M, ops: &[SearchOp<'_, M::Input, M::Output>], budget_steps: u64) -> SearchResult {
    let mut search = Search::new(model, ops);
    let outcome = search.resume(budget_steps);
    SearchResult { outcome, steps: search.steps() }
}

/// A search that can stop when its budget runs out and later go on from
/// where it stopped, so that the checker can share its budget among
/// partitions in turns (`super::check`) without redoing work. Stopping and
/// going on never changes what it explores, only when.
pub struct Search<'m, 'o, 'a, M: Model> {
    model: &'m M,
    ops: Vec<&'o SearchOp<'a, M::Input, M::Output>>,
    list: EventList,
    twin_before: Vec<Option<usize>>,
    read_only: Vec<bool>,
    /// Per operation: its number among the required or the optional ones.
    slot: Vec<usize>,
    required: PrefixSet,
    required_total: usize,
    required_done: usize,
    optional: Vec<u64>,
    visited: Visited,
    states: States<M::State>,
    /// The current state's number in `states`.
    state: u32,
    stack: Vec<Frame>,
    steps: u64,
    budget_steps: u64,
    /// Where the scan stood when the budget ran out: the entry, and where to
    /// look for a forced read (see [`Search::explore`]).
    at: (u32, Option<u32>),
    /// The answer, once there is one.
    decided: Option<bool>,
}

/// The budget ran out.
struct Spent;

impl<'m, 'o, 'a, M: Model> Search<'m, 'o, 'a, M> {
    /// A search of `ops` that has taken no step yet.
    pub fn new(model: &'m M, ops: &'o [SearchOp<'a, M::Input, M::Output>]) -> Self {
        debug_assert!(ops.iter().all(|op| op.optional || op.return_ns.is_some()), "a required operation needs a return");
        // An optional read changes nothing, so it can only ever be dropped.
        let ops: Vec<&SearchOp<'_, M::Input, M::Output>> = ops.iter().filter(|op| !(op.optional && model.is_read_only(op.input))).collect();
        let list = EventList::new(&ops);
        let twin_before = earlier_twins(&ops);
        let read_only = ops.iter().map(|op| model.is_read_only(op.input)).collect();
        // Required and optional operations get separate numbers, each in
        // call order: the memo compares the first exactly (as a prefix plus
        // a few) and the second by inclusion.
        let mut by_call: Vec<usize> = (0..ops.len()).collect();
        by_call.sort_by_key(|&i| (ops[i].call_ns, i));
        let mut slot = vec![0usize; ops.len()];
        let (mut required_total, mut optional_total) = (0usize, 0usize);
        for &i in &by_call {
            let counter = if ops[i].optional { &mut optional_total } else { &mut required_total };
            slot[i] = *counter;
            *counter += 1;
        }
        let states = States::new(model.init());
        let required = PrefixSet::new(required_total);
        let optional = vec![0u64; optional_total.div_ceil(64)];
        let mut visited = Visited::default();
        visited.insert(&required, &optional, 0);
        let first = list.next[list.head()];
        Search {
            model,
            ops,
            list,
            twin_before,
            read_only,
            slot,
            required,
            required_total,
            required_done: 0,
            optional,
            visited,
            states,
            state: 0,
            stack: Vec::new(),
            steps: 0,
            budget_steps: 0,
            at: (first, Some(first)),
            decided: None,
        }
    }

    /// Model steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Goes on for at most `more_steps` model steps; `BudgetSpent` when they
    /// ran out first (call again to go on). Once decided, the answer stays.
    pub fn resume(&mut self, more_steps: u64) -> Outcome {
        if self.decided.is_none() {
            self.budget_steps = self.steps.saturating_add(more_steps);
            match self.explore() {
                Ok(linearizable) => self.decided = Some(linearizable),
                Err(Spent) => return Outcome::BudgetSpent,
            }
        }
        if self.decided == Some(true) {
            Outcome::Linearizable
        } else {
            Outcome::NotLinearizable
        }
    }

    fn step(&mut self, op: usize) -> Result<Option<u32>, Spent> {
        if self.steps >= self.budget_steps {
            return Err(Spent);
        }
        self.steps += 1;
        let o = self.ops[op];
        Ok(self.states.step(self.model, self.state, o.input, o.output, self.read_only[op]))
    }

    /// The scan of Lowe's list; see the module documentation. Every change
    /// to the configuration happens after the step that justifies it, so
    /// when a step finds the budget spent, the configuration is as it was at
    /// the top of the loop, where `at` says the scan stood (and how far
    /// `forced_read` got): going on from there takes exactly the steps an
    /// uninterrupted search would have taken.
    fn explore(&mut self) -> Result<bool, Spent> {
        let head = self.list.head();
        let (mut entry, mut fresh_from) = self.at;
        loop {
            // `fresh_from`: where to look for a forced read in a
            // configuration not seen yet.
            self.at = (entry, fresh_from);
            if self.required_done == self.required_total {
                return Ok(true);
            }
            if let Some(from) = fresh_from.take() {
                if let Some(call) = self.forced_read(from)? {
                    let op = self.list.op_of(call);
                    let marks = self.required.insert(self.slot[op]);
                    if self.visited.insert(&self.required, &self.optional, self.state) {
                        self.stack.push(Frame::Forced(call, marks));
                        self.list.lift(call);
                        self.required_done += 1;
                        entry = self.list.next[head];
                        fresh_from = Some(entry);
                    } else {
                        // Every way on from here starts with this read, and
                        // that was explored: this configuration fails.
                        self.required.remove(self.slot[op], marks);
                        match self.backtrack() {
                            Some(next) => entry = next,
                            None => return Ok(false),
                        }
                    }
                    continue;
                }
            }
            let op = if entry == NIL { None } else { Some(self.list.op_of(entry)) };
            match op {
                Some(op) if self.list.is_call(entry) => {
                    // Reads were all judged by `forced_read`.
                    let blocked = self.read_only[op] || self.twin_before[op].is_some_and(|twin| !bit(&self.optional, self.slot[twin]));
                    if !blocked && self.try_linearize(op, entry)? {
                        entry = self.list.next[head];
                        fresh_from = Some(entry);
                        continue;
                    }
                    entry = self.list.next[entry as usize];
                }
                Some(op) if self.ops[op].optional => {
                    // The return of an optional operation nothing linearized:
                    // it never took effect. Calls before this return were all
                    // tried in this configuration; the scan goes on after it,
                    // where new calls may be reads that are now forced.
                    set_bit(&mut self.optional, self.slot[op], true);
                    let call = self.list.call_node[op];
                    self.stack.push(Frame::Dropped(call));
                    self.list.lift(call);
                    entry = self.list.next[entry as usize];
                    fresh_from = Some(entry);
                }
                _ => {
                    // The first remaining return of a required operation: it
                    // had to be linearized before anything after it, and
                    // nothing fit.
                    match self.backtrack() {
                        Some(next) => entry = next,
                        None => return Ok(false),
                    }
                }
            }
        }
    }

    /// A required read among the calls from `from` up to the first return
    /// whose answer matches the state. Linearizing it at once loses nothing:
    /// it changes no state, everything that had to precede it already has,
    /// so any linearization that places it later still works with it moved
    /// here. The configuration then needs no other choice.
    fn forced_read(&mut self, from: u32) -> Result<Option<u32>, Spent> {
        let mut e = from;
        while e != NIL && self.list.is_call(e) {
            let op = self.list.op_of(e);
            if self.read_only[op] && self.step(op)?.is_some() {
                return Ok(Some(e));
            }
            e = self.list.next[e as usize];
            // The state does not change during the scan, so a read refused
            // here stays refused: a search resumed after the budget ran out
            // goes on from the next call, not from the first.
            self.at.1 = Some(e);
        }
        Ok(None)
    }

    /// Linearizes the operation of call node `call` if the model accepts it
    /// and the configuration it leads to is new.
    fn try_linearize(&mut self, op: usize, call: u32) -> Result<bool, Spent> {
        let Some(next_state) = self.step(op)? else {
            return Ok(false);
        };
        let optional = self.ops[op].optional;
        if optional && next_state == self.state {
            return Ok(false);
        }
        let marks = if optional {
            set_bit(&mut self.optional, self.slot[op], true);
            None
        } else {
            Some(self.required.insert(self.slot[op]))
        };
        if !self.visited.insert(&self.required, &self.optional, next_state) {
            match marks {
                Some(marks) => self.required.remove(self.slot[op], marks),
                None => set_bit(&mut self.optional, self.slot[op], false),
            }
            return Ok(false);
        }
        self.stack.push(Frame::Linearized(call, std::mem::replace(&mut self.state, next_state), marks));
        self.list.lift(call);
        self.required_done += usize::from(!optional);
        Ok(true)
    }

    /// Undoes choices back to the last one that has alternatives (forced
    /// reads and drops have none); returns where its scan resumes, or `None`
    /// when the stack is empty: not linearizable.
    fn backtrack(&mut self) -> Option<u32> {
        loop {
            match self.stack.pop()? {
                Frame::Dropped(call) => {
                    set_bit(&mut self.optional, self.slot[self.list.op_of(call)], false);
                    self.list.unlift(call);
                }
                Frame::Forced(call, marks) => {
                    self.required.remove(self.slot[self.list.op_of(call)], marks);
                    self.required_done -= 1;
                    self.list.unlift(call);
                }
                Frame::Linearized(call, previous, marks) => {
                    let op = self.list.op_of(call);
                    match marks {
                        Some(marks) => {
                            self.required.remove(self.slot[op], marks);
                            self.required_done -= 1;
                        }
                        None => set_bit(&mut self.optional, self.slot[op], false),
                    }
                    self.state = previous;
                    self.list.unlift(call);
                    return Some(self.list.next[call as usize]);
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
    use crate::history::{RegisterInput as I, RegisterOutput as O};
    use crate::model::register::RegisterModel;

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
        let late = [SearchOp::unknown(0, &WRITE_1), SearchOp::known(10, 11, &READ, &SAW_NIL), SearchOp::known(12, 13, &READ, &SAW_1)];
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
        let three_ones = [&ops[..], &[SearchOp::known(10, 11, &READ, &saw_2), SearchOp::known(12, 13, &READ, &SAW_1)]].concat();
        assert_eq!(run(&three_ones), Outcome::NotLinearizable, "only two writes of 1 to go around");
    }

    /// A search resumed one step at a time explores what it explores in
    /// one go: the same answer after the same steps.
    #[test]
    fn resuming_changes_when_not_what() {
        let write_2 = I::Write { value: 2 };
        let saw_2 = O::Read { value: Some(2) };
        let mut ops = vec![SearchOp::unknown(0, &WRITE_1), SearchOp::unknown(1, &WRITE_1), SearchOp::unknown(1, &write_2)];
        for t in 0..6 {
            ops.push(SearchOp::known(10 + 4 * t, 12 + 4 * t, &READ, if t % 2 == 0 { &SAW_1 } else { &saw_2 }));
        }
        for (history, want) in [(&ops[..6], Outcome::Linearizable), (&ops[..], Outcome::NotLinearizable)] {
            let whole = search(&RegisterModel, history, 1_000_000);
            assert_eq!(whole.outcome, want);
            let mut stepwise = Search::new(&RegisterModel, history);
            let mut turns = 0;
            let outcome = loop {
                turns += 1;
                match stepwise.resume(1) {
                    Outcome::BudgetSpent => assert!(turns < 10_000, "no progress"),
                    decided => break decided,
                }
            };
            assert_eq!(outcome, want);
            assert!(turns > 5, "{turns} turns: the test must stop the search often");
            assert_eq!(stepwise.steps(), whole.steps);
            assert!(turns >= whole.steps, "one step a turn: {turns} turns");
            assert_eq!(stepwise.resume(0), want, "a decided search keeps its answer");
        }
    }

    #[test]
    fn the_budget_bounds_model_steps() {
        let ops = [SearchOp::known(0, 4, &WRITE_1, &OK), SearchOp::known(6, 7, &READ, &SAW_1)];
        assert_eq!(search(&RegisterModel, &ops, 1), SearchResult { outcome: Outcome::BudgetSpent, steps: 1 });
        assert_eq!(search(&RegisterModel, &ops, 2), SearchResult { outcome: Outcome::Linearizable, steps: 2 });
        assert_eq!(search(&RegisterModel, &[], 0), SearchResult { outcome: Outcome::Linearizable, steps: 0 });
    }
}
