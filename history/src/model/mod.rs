//! Sequential specifications the search linearizes against.
//!
//! Wing & Gong (1993) check a history against a sequential object: a
//! deterministic step function from (state, input, output) to the next state
//! or "that output is impossible here". Porcupine's `Model` has the same
//! shape; the search (`super::search`) also needs states to be hashable and
//! comparable so that it can memoize (linearized set, state) pairs (Lowe
//! 2017), and needs to know which inputs never change the state, because an
//! operation that changes nothing and whose answer is unknown constrains
//! nothing and can be dropped.

pub mod keyed;
pub mod kv;
pub mod register;
pub mod txn;

use std::hash::Hash;

/// A sequential specification.
pub trait Model {
    type Input: Eq;
    type Output;
    type State: Clone + Eq + Hash;

    fn init(&self) -> Self::State;

    /// Applies `input` in `state`. With a known `output`, returns `None` when
    /// that output is not what the object would answer; with `None` (unknown
    /// outcome), applies the input whatever it answered, and never fails.
    fn step(&self, state: &Self::State, input: &Self::Input, output: Option<&Self::Output>) -> Option<Self::State>;

    /// Whether `input` never changes the state (a read).
    fn is_read_only(&self, input: &Self::Input) -> bool;
}
