//! The histories the checker judges: what each client asked, when, and what
//! it heard back.
//!
//! A linearizability checker (Wing & Gong 1993) needs, for every operation,
//! its invocation and response instants in one true time base and the
//! observed result. The simulator records them against madsim's global
//! (true) time; Jepsen's logs are converted to the same shape by
//! [`super::jepsen`]. An operation whose outcome the client never learned
//! (a timeout, a crashed client; Jepsen's `:info`) has `output: None`: it may
//! have taken effect at any instant after its call, or never (porcupine's
//! treatment of a return at +infinity).
//!
//! The types are serde-serializable: the `leasesim` history format is this
//! [`History`] as JSON, or one [`Operation`] per line (JSON lines).

use std::fmt;

use leasesim_core::types::LeaseId;
use serde::{Deserialize, Serialize};

/// One operation of one client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation<I = KvInput, O = KvOutput> {
    /// The client (process) that issued it; the cluster itself (lease expiry)
    /// uses any id its recorder likes, by convention 0.
    pub client: u64,
    /// True time of the invocation.
    pub call_ns: u64,
    /// True time of the response; `None` when the client never heard back.
    /// (A missing `Option` field reads as `None`.)
    pub return_ns: Option<u64>,
    pub input: I,
    /// `None`: the outcome is unknown. The operation may then take effect at
    /// any point after `call_ns` (even after `return_ns`, which only says when
    /// the client gave up), or never.
    pub output: Option<O>,
}

/// A whole history: every operation of every client, in any order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History<I = KvInput, O = KvOutput> {
    pub ops: Vec<Operation<I, O>>,
}

/// A history of Jepsen's single register (read / write / compare-and-set).
pub type RegisterHistory = History<RegisterInput, RegisterOutput>;
/// One operation on Jepsen's single register.
pub type RegisterOperation = Operation<RegisterInput, RegisterOutput>;

/// A request to leasesim's KV-with-leases service, as the checker models it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KvInput {
    /// Write `value`, attached to `lease` if given (the lease must be alive).
    Put {
        key: String,
        value: String,
        #[serde(default)]
        lease: Option<LeaseId>,
    },
    Get {
        key: String,
    },
    Delete {
        key: String,
    },
    /// Set `key` to `value` if its current value is `expected` (`None`: the
    /// key is absent).
    Cas {
        key: String,
        expected: Option<String>,
        value: String,
        #[serde(default)]
        lease: Option<LeaseId>,
    },
    /// Grant a lease; `None` lets the cluster choose the id (its answer says
    /// which).
    LeaseGrant {
        #[serde(default)]
        lease: Option<LeaseId>,
    },
    /// Revoke a lease and delete the keys attached to it.
    LeaseRevoke {
        lease: LeaseId,
    },
    /// The cluster expired the lease (an operation the cluster performs; its
    /// keys are deleted). A no-op when the lease is already gone.
    LeaseExpire {
        lease: LeaseId,
    },
}

/// The service's answer, as far as the checker judges it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KvOutput {
    /// A put or delete took effect.
    Ok,
    /// A get's answer (`None`: the key is absent).
    Value(Option<String>),
    Cas {
        succeeded: bool,
    },
    LeaseGranted {
        lease: LeaseId,
    },
    LeaseRevoked,
    LeaseExpired,
    /// A put / cas with a lease, or a revoke, named a lease that is not alive.
    LeaseNotFound,
    /// A grant named an id that is alive.
    DuplicateLease,
}

/// Jepsen's register operations (etcd test). Values are integers or nil.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RegisterInput {
    Read,
    Write {
        value: i64,
    },
    /// Set to `new` if the value is `expected` (`None`: nil).
    Cas {
        expected: Option<i64>,
        new: i64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RegisterOutput {
    /// `None`: the register is nil.
    Read {
        value: Option<i64>,
    },
    Write,
    /// `false`: the value was not `expected` (Jepsen's `:fail :cas`).
    Cas {
        succeeded: bool,
    },
}

/// Why a history cannot be checked: which operation, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    /// Index into [`History::ops`].
    pub op_index: usize,
    pub message: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operation #{}: {}", self.op_index, self.message)
    }
}

/// Whether an output can answer an input at all (kinds match); the models
/// then judge whether it is the right answer.
pub trait Answers<I> {
    fn answers(&self, input: &I) -> bool;
}

impl Answers<KvInput> for KvOutput {
    fn answers(&self, input: &KvInput) -> bool {
        use KvInput as I;
        use KvOutput as O;
        match (input, self) {
            (I::Put { .. }, O::Ok) => true,
            (I::Put { lease: Some(_), .. } | I::Cas { lease: Some(_), .. }, O::LeaseNotFound) => true,
            (I::Get { .. }, O::Value(_)) => true,
            (I::Delete { .. }, O::Ok) => true,
            (I::Cas { .. }, O::Cas { .. }) => true,
            (I::LeaseGrant { lease: Some(asked) }, O::LeaseGranted { lease }) => asked == lease,
            (I::LeaseGrant { lease: None }, O::LeaseGranted { .. }) => true,
            (I::LeaseGrant { .. }, O::DuplicateLease) => true,
            (I::LeaseRevoke { .. }, O::LeaseRevoked | O::LeaseNotFound) => true,
            (I::LeaseExpire { .. }, O::LeaseExpired) => true,
            _ => false,
        }
    }
}

impl Answers<RegisterInput> for RegisterOutput {
    fn answers(&self, input: &RegisterInput) -> bool {
        matches!(
            (input, self),
            (RegisterInput::Read, RegisterOutput::Read { .. })
                | (RegisterInput::Write { .. }, RegisterOutput::Write)
                | (RegisterInput::Cas { .. }, RegisterOutput::Cas { .. })
        )
    }
}

impl<I: fmt::Display, O: Answers<I> + fmt::Display> History<I, O> {
    /// Checks what the search relies on: a response never precedes its call,
    /// a known output comes with a response time, and the output's kind
    /// answers the input's.
    pub fn validate(&self) -> Result<(), HistoryError> {
        for (op_index, op) in self.ops.iter().enumerate() {
            let fail = |message: String| Err(HistoryError { op_index, message });
            match (op.return_ns, &op.output) {
                (Some(ret), _) if ret < op.call_ns => {
                    return fail(format!("return_ns {ret} is before call_ns {}", op.call_ns));
                }
                (None, Some(out)) => {
                    return fail(format!("output `{out}` is known but return_ns is missing"));
                }
                (_, Some(out)) if !out.answers(&op.input) => {
                    return fail(format!("output `{out}` cannot answer `{}`", op.input));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl<I, O> Operation<I, O> {
    /// Whether the client learned the outcome (see [`Operation::output`]).
    pub fn outcome_known(&self) -> bool {
        self.output.is_some()
    }
}

fn fmt_opt<T: fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "nil".to_string(),
    }
}

impl fmt::Display for KvInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lease_suffix = |lease: &Option<LeaseId>| lease.map(|l| format!(" lease={l}")).unwrap_or_default();
        match self {
            KvInput::Put { key, value, lease } => write!(f, "put {key}={value}{}", lease_suffix(lease)),
            KvInput::Get { key } => write!(f, "get {key}"),
            KvInput::Delete { key } => write!(f, "delete {key}"),
            KvInput::Cas { key, expected, value, lease } => {
                write!(f, "cas {key} {}->{value}{}", fmt_opt(expected), lease_suffix(lease))
            }
            KvInput::LeaseGrant { lease } => {
                write!(f, "lease-grant {}", lease.map(|l| l.to_string()).unwrap_or("?".into()))
            }
            KvInput::LeaseRevoke { lease } => write!(f, "lease-revoke {lease}"),
            KvInput::LeaseExpire { lease } => write!(f, "lease-expire {lease}"),
        }
    }
}

impl fmt::Display for KvOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvOutput::Ok => write!(f, "ok"),
            KvOutput::Value(v) => write!(f, "value {}", fmt_opt(v)),
            KvOutput::Cas { succeeded } => write!(f, "{}", if *succeeded { "cas ok" } else { "cas failed" }),
            KvOutput::LeaseGranted { lease } => write!(f, "granted {lease}"),
            KvOutput::LeaseRevoked => write!(f, "revoked"),
            KvOutput::LeaseExpired => write!(f, "expired"),
            KvOutput::LeaseNotFound => write!(f, "lease not found"),
            KvOutput::DuplicateLease => write!(f, "duplicate lease"),
        }
    }
}

impl fmt::Display for RegisterInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterInput::Read => write!(f, "read"),
            RegisterInput::Write { value } => write!(f, "write {value}"),
            RegisterInput::Cas { expected, new } => write!(f, "cas [{} {new}]", fmt_opt(expected)),
        }
    }
}

impl fmt::Display for RegisterOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterOutput::Read { value } => write!(f, "{}", fmt_opt(value)),
            RegisterOutput::Write => write!(f, "ok"),
            RegisterOutput::Cas { succeeded } => write!(f, "{}", if *succeeded { "ok" } else { "fail" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(call_ns: u64, return_ns: Option<u64>, input: KvInput, output: Option<KvOutput>) -> Operation {
        Operation { client: 1, call_ns, return_ns, input, output }
    }

    #[test]
    fn validate_rejects_return_before_call() {
        let h = History { ops: vec![op(10, Some(5), KvInput::Get { key: "a".into() }, Some(KvOutput::Value(None)))] };
        let err = h.validate().unwrap_err();
        assert_eq!(err.op_index, 0);
        assert!(err.message.contains("before call_ns"), "{err}");
    }

    #[test]
    fn validate_rejects_known_output_without_return() {
        let h = History { ops: vec![op(1, None, KvInput::Delete { key: "a".into() }, Some(KvOutput::Ok))] };
        assert!(h.validate().unwrap_err().message.contains("return_ns is missing"));
    }

    #[test]
    fn validate_rejects_mismatched_output_kind() {
        let h = History {
            ops: vec![
                op(1, Some(2), KvInput::Get { key: "a".into() }, Some(KvOutput::Value(None))),
                op(1, Some(2), KvInput::Get { key: "a".into() }, Some(KvOutput::Cas { succeeded: true })),
            ],
        };
        let err = h.validate().unwrap_err();
        assert_eq!(err.op_index, 1);
        assert!(err.message.contains("cannot answer"), "{err}");
    }

    #[test]
    fn validate_accepts_unknown_outcome_with_or_without_return() {
        let h = History {
            ops: vec![
                op(1, None, KvInput::Put { key: "a".into(), value: "1".into(), lease: None }, None),
                op(1, Some(9), KvInput::LeaseRevoke { lease: 3 }, None),
            ],
        };
        assert_eq!(h.validate(), Ok(()));
    }

    #[test]
    fn json_round_trip_and_defaults() {
        let line = r#"{"client":2,"call_ns":5,"input":{"put":{"key":"k","value":"v"}}}"#;
        let parsed: Operation = serde_json::from_str(line).unwrap();
        assert_eq!(parsed, op(5, None, KvInput::Put { key: "k".into(), value: "v".into(), lease: None }, None).with_client(2));
        let full = op(1, Some(2), KvInput::Get { key: "k".into() }, Some(KvOutput::Value(Some("v".into()))));
        let text = serde_json::to_string(&full).unwrap();
        assert_eq!(serde_json::from_str::<Operation>(&text).unwrap(), full);
    }

    impl Operation {
        fn with_client(mut self, client: u64) -> Self {
            self.client = client;
            self
        }
    }
}
