//! Registers by key, the object of Jepsen's EDN histories: one register
//! (the etcd test), many (Jepsen's `independent` tests, whose values are
//! `[key value]` tuples) and porcupine's key-value store (`:key` maps with
//! get, put and append).
//!
//! The history types live here with their specification because only the
//! EDN reader (`super::super::jepsen_edn`) produces them. Values are compared
//! by their text (Jepsen's integers and strings alike), so the one model
//! serves all three shapes. A history is checked per key (Lowe 2017's
//! P-compositionality, as porcupine does): the search only ever sees one
//! key's operations, so the model's state is that one key's value.
//!
//! A key's initial value is nil for registers; for porcupine's KV store it
//! is the empty string (a get of a key never written answers `""`), which
//! [`KeyedModel::initial`] sets.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Model;
use crate::history::{Answers, History, Operation};

pub type KeyedHistory = History<KeyedInput, KeyedOutput>;
pub type KeyedOperation = Operation<KeyedInput, KeyedOutput>;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyedInput {
    Read {
        key: String,
    },
    Write {
        key: String,
        value: String,
    },
    /// Set to `new` if the value is `expected` (`None`: nil).
    Cas {
        key: String,
        expected: Option<String>,
        new: String,
    },
    /// Append `value` to the key's text (porcupine's KV `append`).
    Append {
        key: String,
        value: String,
    },
}

impl KeyedInput {
    pub fn key(&self) -> &str {
        match self {
            KeyedInput::Read { key } | KeyedInput::Write { key, .. } | KeyedInput::Cas { key, .. } | KeyedInput::Append { key, .. } => key,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyedOutput {
    /// `None`: nil.
    Read {
        value: Option<String>,
    },
    /// A write or append took effect.
    Ok,
    Cas {
        succeeded: bool,
    },
}

impl Answers<KeyedInput> for KeyedOutput {
    fn answers(&self, input: &KeyedInput) -> bool {
        matches!(
            (input, self),
            (KeyedInput::Read { .. }, KeyedOutput::Read { .. })
                | (KeyedInput::Write { .. } | KeyedInput::Append { .. }, KeyedOutput::Ok)
                | (KeyedInput::Cas { .. }, KeyedOutput::Cas { .. })
        )
    }
}

/// One key's register. `initial` is every key's value before any write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyedModel {
    pub initial: Option<String>,
}

impl Model for KeyedModel {
    type Input = KeyedInput;
    type Output = KeyedOutput;
    type State = Option<String>;

    fn init(&self) -> Option<String> {
        self.initial.clone()
    }

    fn step(&self, state: &Option<String>, input: &KeyedInput, output: Option<&KeyedOutput>) -> Option<Option<String>> {
        match (input, output) {
            (KeyedInput::Read { .. }, None) => Some(state.clone()),
            (KeyedInput::Read { .. }, Some(KeyedOutput::Read { value })) => (value == state).then(|| state.clone()),
            (KeyedInput::Write { value, .. }, None | Some(KeyedOutput::Ok)) => Some(Some(value.clone())),
            (KeyedInput::Append { value, .. }, None | Some(KeyedOutput::Ok)) => {
                Some(Some(format!("{}{value}", state.as_deref().unwrap_or(""))))
            }
            (KeyedInput::Cas { expected, new, .. }, out) => {
                let matched = expected == state;
                let next = if matched { Some(new.clone()) } else { state.clone() };
                match out {
                    None => Some(next),
                    Some(KeyedOutput::Cas { succeeded }) => (*succeeded == matched).then_some(next),
                    Some(_) => None,
                }
            }
            // An output of the wrong kind never answers (validation rejects
            // it first; this keeps the function total).
            _ => None,
        }
    }

    fn is_read_only(&self, input: &KeyedInput) -> bool {
        matches!(input, KeyedInput::Read { .. })
    }
}

/// A value as Jepsen wrote it: an integer bare, a string quoted.
fn shown(v: &str) -> String {
    if v.parse::<i64>().is_ok() {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

fn nil_or(v: &Option<String>) -> String {
    v.as_deref().map_or("nil".to_string(), shown)
}

/// `key ` before the arguments, or nothing for a single register.
fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{} ", shown(key))
    }
}

impl fmt::Display for KeyedInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedInput::Read { key } if key.is_empty() => write!(f, "read"),
            KeyedInput::Read { key } => write!(f, "read {}", shown(key)),
            KeyedInput::Write { key, value } => {
                write!(f, "write {}{}", key_prefix(key), shown(value))
            }
            KeyedInput::Cas { key, expected, new } => {
                write!(f, "cas {}[{} {}]", key_prefix(key), nil_or(expected), shown(new))
            }
            KeyedInput::Append { key, value } => {
                write!(f, "append {}{}", key_prefix(key), shown(value))
            }
        }
    }
}

impl fmt::Display for KeyedOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedOutput::Read { value } => write!(f, "{}", nil_or(value)),
            KeyedOutput::Ok => write!(f, "ok"),
            KeyedOutput::Cas { succeeded } => {
                write!(f, "{}", if *succeeded { "ok" } else { "fail" })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn register_starts_nil_and_kv_starts_empty() {
        let register = KeyedModel::default();
        let read = KeyedInput::Read { key: "k".into() };
        assert_eq!(register.step(&register.init(), &read, Some(&KeyedOutput::Read { value: None })), Some(None));
        let kv = KeyedModel { initial: s("") };
        assert_eq!(kv.step(&kv.init(), &read, Some(&KeyedOutput::Read { value: None })), None);
        assert_eq!(kv.step(&kv.init(), &read, Some(&KeyedOutput::Read { value: s("") })), Some(s("")));
    }

    #[test]
    fn append_concatenates_and_write_replaces() {
        let m = KeyedModel { initial: s("") };
        let append = KeyedInput::Append { key: "k".into(), value: "x".into() };
        let after = m.step(&s("a"), &append, Some(&KeyedOutput::Ok)).unwrap();
        assert_eq!(after, s("ax"));
        assert_eq!(m.step(&None, &append, None), Some(s("x")));
        let write = KeyedInput::Write { key: "k".into(), value: "y".into() };
        assert_eq!(m.step(&s("ax"), &write, Some(&KeyedOutput::Ok)), Some(s("y")));
    }

    #[test]
    fn cas_outcomes_are_observations() {
        let m = KeyedModel::default();
        let cas = KeyedInput::Cas { key: "k".into(), expected: s("1"), new: "2".into() };
        let ok = KeyedOutput::Cas { succeeded: true };
        let fail = KeyedOutput::Cas { succeeded: false };
        assert_eq!(m.step(&s("1"), &cas, Some(&ok)), Some(s("2")));
        assert_eq!(m.step(&s("1"), &cas, Some(&fail)), None);
        assert_eq!(m.step(&s("3"), &cas, Some(&fail)), Some(s("3")));
        assert_eq!(m.step(&None, &cas, None), Some(None));
        assert_eq!(m.step(&s("1"), &cas, Some(&KeyedOutput::Ok)), None);
        assert!(m.is_read_only(&KeyedInput::Read { key: "k".into() }));
        assert!(!m.is_read_only(&cas));
    }

    #[test]
    fn display_shows_keys_only_when_there_are_several() {
        let write = KeyedInput::Write { key: String::new(), value: "1".into() };
        assert_eq!(write.to_string(), "write 1");
        assert_eq!(KeyedInput::Read { key: String::new() }.to_string(), "read");
        let cas = KeyedInput::Cas { key: "7".into(), expected: None, new: "x y".into() };
        assert_eq!(cas.to_string(), "cas 7 [nil \"x y\"]");
        assert_eq!(KeyedOutput::Read { value: s("") }.to_string(), "\"\"");
    }
}
