//! Model states interned to small integers.
//!
//! The search of Wing & Gong (1993) / Lowe (2017) keeps the state before
//! each choice on its stack, and its memo of configurations compares
//! states. Here each distinct state is stored once and named by its number:
//! the stack and the memo hold numbers (porcupine hashes its states for the
//! same reason), nothing clones a state, and a read, which never changes
//! the state, is not even looked up. (Remembering whole transitions,
//! (state, operation) to state, was tried and dropped: on porcupine's
//! `c50-ok` nine steps in ten are new pairs, so the table cost more time and
//! memory than it saved.)
//!
//! Lookups only: no iteration order reaches a result.

use std::hash::{Hash, Hasher};

use super::cache::{FxHasher, FxMap};
use super::model::Model;

/// End of a hash chain.
const NONE: u32 = u32::MAX;

/// The distinct states met so far.
pub(crate) struct States<S> {
    /// State number to state; each stored once.
    all: Vec<S>,
    /// Per state: the next state with the same hash.
    next_same_hash: Vec<u32>,
    /// Hash of a state to the first state with that hash.
    by_hash: FxMap<u64, u32>,
}

impl<S: Eq + Hash> States<S> {
    /// A table holding `initial` as state 0.
    pub(crate) fn new(initial: S) -> Self {
        let mut states = States { all: Vec::new(), next_same_hash: Vec::new(), by_hash: FxMap::default() };
        states.intern(initial);
        states
    }

    /// The number of `state`, adding it if new.
    fn intern(&mut self, state: S) -> u32 {
        let mut hasher = FxHasher::default();
        state.hash(&mut hasher);
        let hash = hasher.finish();
        let first = self.by_hash.get(&hash).copied().unwrap_or(NONE);
        let mut at = first;
        while at != NONE {
            if self.all[at as usize] == state {
                return at;
            }
            at = self.next_same_hash[at as usize];
        }
        let id = self.all.len() as u32;
        self.all.push(state);
        self.next_same_hash.push(first);
        self.by_hash.insert(hash, id);
        id
    }

    /// The state after `input` with `output` in state `from`, or `None`
    /// when the model refuses that answer there. `read_only`: the model says
    /// the input never changes the state.
    pub(crate) fn step<M: Model<State = S>>(
        &mut self,
        model: &M,
        from: u32,
        input: &M::Input,
        output: Option<&M::Output>,
        read_only: bool,
    ) -> Option<u32> {
        let next = model.step(&self.all[from as usize], input, output)?;
        Some(if read_only { from } else { self.intern(next) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{RegisterInput as I, RegisterOutput as O};
    use crate::model::register::RegisterModel;

    #[test]
    fn equal_states_share_a_number() {
        let mut states = States::new(RegisterModel.init());
        let (w1, w2, read, saw_1) = (I::Write { value: 1 }, I::Write { value: 2 }, I::Read, O::Read { value: Some(1) });
        let one = states.step(&RegisterModel, 0, &w1, Some(&O::Write), false).unwrap();
        assert_ne!(one, 0);
        assert_eq!(states.step(&RegisterModel, one, &w1, None, false), Some(one), "writing 1 over 1 is the same state");
        assert_eq!(states.step(&RegisterModel, one, &read, Some(&saw_1), true), Some(one));
        assert_eq!(states.step(&RegisterModel, 0, &read, Some(&saw_1), true), None, "nil is not 1");
        let two = states.step(&RegisterModel, one, &w2, None, false).unwrap();
        assert_eq!(states.step(&RegisterModel, two, &w1, None, false), Some(one), "back to 1: the same number");
        assert_eq!(states.all.len(), 3);
    }
}
