//! A multi-key store under etcd's Txn, as a sequential specification: each
//! operation is one txn — compares over several keys, then one of two
//! branches of puts, deletes and gets — that takes effect at one instant,
//! all of it or none of it. The `txn` workload's histories are judged
//! against it, so a txn whose writes land at two instants (a reader seeing
//! half of it) is not linearizable.
//!
//! A compare is "the key holds this value" or "the key is absent" (the
//! workload's two kinds; etcd's `value = v` and `version = 0`). The answer
//! names the branch taken and what each get of it read.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Model;

/// One operation of a branch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnStep {
    Put { key: String, value: String },
    Delete { key: String },
    Get { key: String },
}

/// A txn: every compare must hold for `success` to run, else `failure` runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnInput {
    /// `(key, Some(v))`: the key holds `v`; `(key, None)`: the key is absent.
    pub compares: Vec<(String, Option<String>)>,
    pub success: Vec<TxnStep>,
    pub failure: Vec<TxnStep>,
}

/// The branch taken and the value each of its gets read, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnOutput {
    pub succeeded: bool,
    pub reads: Vec<Option<String>>,
}

impl TxnInput {
    /// Every key the txn compares, writes or reads (for partitioning).
    pub fn keys(&self) -> Vec<&str> {
        let steps = self.success.iter().chain(&self.failure).map(|s| match s {
            TxnStep::Put { key, .. } | TxnStep::Delete { key } | TxnStep::Get { key } => key.as_str(),
        });
        let mut keys: Vec<&str> = self.compares.iter().map(|(k, _)| k.as_str()).chain(steps).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

impl fmt::Display for TxnInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let compares: Vec<String> = self.compares.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("absent"))).collect();
        let steps = |b: &[TxnStep]| b.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
        write!(f, "txn if [{}] then [{}] else [{}]", compares.join(" && "), steps(&self.success), steps(&self.failure))
    }
}

/// The store: key → value.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxnModel;

impl TxnModel {
    /// Runs `input` on `state`: the new state and the answer.
    pub fn run(state: &BTreeMap<String, String>, input: &TxnInput) -> (BTreeMap<String, String>, TxnOutput) {
        let succeeded = input.compares.iter().all(|(key, expected)| state.get(key) == expected.as_ref());
        let branch = if succeeded { &input.success } else { &input.failure };
        let mut next = state.clone();
        let mut reads = Vec::new();
        for step in branch {
            match step {
                TxnStep::Put { key, value } => {
                    next.insert(key.clone(), value.clone());
                }
                TxnStep::Delete { key } => {
                    next.remove(key);
                }
                TxnStep::Get { key } => reads.push(next.get(key).cloned()),
            }
        }
        (next, TxnOutput { succeeded, reads })
    }
}

impl Model for TxnModel {
    type Input = TxnInput;
    type Output = TxnOutput;
    type State = BTreeMap<String, String>;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(&self, state: &Self::State, input: &TxnInput, output: Option<&TxnOutput>) -> Option<Self::State> {
        let (next, answer) = Self::run(state, input);
        match output {
            Some(seen) if *seen != answer => None,
            _ => Some(next),
        }
    }

    fn is_read_only(&self, input: &TxnInput) -> bool {
        input.success.iter().chain(&input.failure).all(|s| matches!(s, TxnStep::Get { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str) -> TxnStep {
        TxnStep::Put { key: key.into(), value: value.into() }
    }

    fn get(key: &str) -> TxnStep {
        TxnStep::Get { key: key.into() }
    }

    #[test]
    fn a_txn_takes_one_branch_whole() {
        let write = TxnInput { compares: vec![("a".into(), None)], success: vec![put("a", "1"), put("b", "1")], failure: vec![] };
        let (state, answer) = TxnModel::run(&BTreeMap::new(), &write);
        assert!(answer.succeeded);
        assert_eq!(state.len(), 2);
        let (again, answer) = TxnModel::run(&state, &write);
        assert!(!answer.succeeded, "a is no longer absent");
        assert_eq!(again, state);
    }

    #[test]
    fn a_read_of_half_a_write_is_impossible() {
        let write = TxnInput { compares: vec![], success: vec![put("a", "1"), put("b", "1")], failure: vec![] };
        let read = TxnInput { compares: vec![], success: vec![get("a"), get("b")], failure: vec![] };
        let half = TxnOutput { succeeded: true, reads: vec![Some("1".into()), None] };
        let empty = TxnModel.init();
        assert_eq!(TxnModel.step(&empty, &read, Some(&half)), None, "before the write");
        let after = TxnModel.step(&empty, &write, None).unwrap();
        assert_eq!(TxnModel.step(&after, &read, Some(&half)), None, "after it");
        let whole = TxnOutput { succeeded: true, reads: vec![Some("1".into()), Some("1".into())] };
        assert_eq!(TxnModel.step(&after, &read, Some(&whole)), Some(after.clone()));
        assert!(TxnModel.is_read_only(&read) && !TxnModel.is_read_only(&write));
        assert_eq!(write.keys(), vec!["a", "b"]);
    }
}
