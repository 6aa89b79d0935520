//! Jepsen's single register (the etcd test): read, write, compare-and-set,
//! starting at nil.
//!
//! This is the object of the Jepsen etcd histories that porcupine and the
//! linearizability-checker project ship with known answers; the checker is
//! proven against those. A failed cas (`:fail :cas`) is an observation, as
//! in porcupine's etcd model: the value was not the expected one at the
//! instant the cas took effect.

use super::Model;
use crate::history::{RegisterInput, RegisterOutput};

/// The register; its state is its value (`None` = nil).
#[derive(Clone, Copy, Debug, Default)]
pub struct RegisterModel;

impl Model for RegisterModel {
    type Input = RegisterInput;
    type Output = RegisterOutput;
    type State = Option<i64>;

    fn init(&self) -> Option<i64> {
        None
    }

    fn step(&self, state: &Option<i64>, input: &RegisterInput, output: Option<&RegisterOutput>) -> Option<Option<i64>> {
        match (input, output) {
            (RegisterInput::Read, None) => Some(*state),
            (RegisterInput::Read, Some(RegisterOutput::Read { value })) => (value == state).then_some(*state),
            (RegisterInput::Write { value }, None | Some(RegisterOutput::Write)) => Some(Some(*value)),
            (RegisterInput::Cas { expected, new }, out) => {
                let matched = expected == state;
                let next = if matched { Some(*new) } else { *state };
                match out {
                    None => Some(next),
                    Some(RegisterOutput::Cas { succeeded }) => (*succeeded == matched).then_some(next),
                    Some(_) => None,
                }
            }
            // An output of the wrong kind never answers (validation rejects it
            // first; this keeps the function total).
            _ => None,
        }
    }

    fn is_read_only(&self, input: &RegisterInput) -> bool {
        matches!(input, RegisterInput::Read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: RegisterModel = RegisterModel;

    #[test]
    fn starts_nil_and_reads_see_the_value() {
        let s = M.init();
        assert_eq!(s, None);
        assert_eq!(M.step(&s, &RegisterInput::Read, Some(&RegisterOutput::Read { value: None })), Some(None));
        assert_eq!(M.step(&s, &RegisterInput::Read, Some(&RegisterOutput::Read { value: Some(1) })), None);
        assert_eq!(M.step(&Some(3), &RegisterInput::Read, Some(&RegisterOutput::Read { value: Some(3) })), Some(Some(3)));
    }

    #[test]
    fn write_sets_whatever_the_outcome() {
        let w = RegisterInput::Write { value: 4 };
        assert_eq!(M.step(&None, &w, Some(&RegisterOutput::Write)), Some(Some(4)));
        assert_eq!(M.step(&Some(1), &w, None), Some(Some(4)));
    }

    #[test]
    fn cas_success_and_failure_are_both_observations() {
        let cas = RegisterInput::Cas { expected: Some(1), new: 2 };
        let ok = RegisterOutput::Cas { succeeded: true };
        let fail = RegisterOutput::Cas { succeeded: false };
        assert_eq!(M.step(&Some(1), &cas, Some(&ok)), Some(Some(2)));
        assert_eq!(M.step(&Some(1), &cas, Some(&fail)), None);
        assert_eq!(M.step(&Some(0), &cas, Some(&fail)), Some(Some(0)));
        assert_eq!(M.step(&Some(0), &cas, Some(&ok)), None);
        // Unknown outcome: it applies exactly when the value matches.
        assert_eq!(M.step(&Some(1), &cas, None), Some(Some(2)));
        assert_eq!(M.step(&None, &cas, None), Some(None));
        let from_nil = RegisterInput::Cas { expected: None, new: 7 };
        assert_eq!(M.step(&None, &from_nil, Some(&ok)), Some(Some(7)));
    }

    #[test]
    fn wrong_output_kind_never_answers() {
        assert_eq!(M.step(&None, &RegisterInput::Read, Some(&RegisterOutput::Write)), None);
        assert_eq!(M.step(&None, &RegisterInput::Write { value: 1 }, Some(&RegisterOutput::Cas { succeeded: true })), None);
        assert!(M.is_read_only(&RegisterInput::Read));
        assert!(!M.is_read_only(&RegisterInput::Write { value: 1 }));
    }
}
