//! leasesim's key-value store with leases, as a sequential specification.
//!
//! The object the `kv` and `registry` workloads exercise (DESIGN.md, "State
//! machine"): put (optionally attached to a lease), get, delete,
//! compare-and-set, lease grant and revoke, and lease expiry, which the
//! cluster performs on its own (a revoke proposed through the log). Revoking
//! or expiring a lease deletes every key attached to it in the same step, so
//! one operation can touch several keys: [`resources`] names what each
//! operation touches so that `super::super::partition` can split a history
//! only along lease-connected components (Lowe 2017's P-compositionality,
//! which porcupine applies per key).
//!
//! Keys and values are interned to integers before the search ([`compile`])
//! because the search clones the state at every step; small integer vectors
//! keep that cheap.
//!
//! Choices made where the service leaves room:
//! - a put or cas naming a lease that is not alive answers `lease_not_found`
//!   and changes nothing; a cas checks the lease before it compares (as
//!   etcd validates a transaction's leases before applying it);
//! - a grant of an alive id answers `duplicate_lease`; a grant whose id the
//!   cluster chose and whose answer is unknown has no effect any other
//!   operation can name, so it is modelled as changing nothing;
//! - expiry of a lease that is gone is a no-op that still answers `expired`.

use std::collections::HashMap;

use leasesim_core::types::LeaseId;

use super::Model;
use crate::history::{KvInput, KvOutput, Operation};

/// Interned key or value.
type Sym = u32;

/// A [`KvInput`] with keys and values interned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvCmd {
    Put {
        key: Sym,
        value: Sym,
        lease: Option<LeaseId>,
    },
    Get {
        key: Sym,
    },
    Delete {
        key: Sym,
    },
    Cas {
        key: Sym,
        expected: Option<Sym>,
        value: Sym,
        lease: Option<LeaseId>,
    },
    /// `None`: the cluster chose an id nobody recorded.
    Grant {
        lease: Option<LeaseId>,
    },
    Revoke {
        lease: LeaseId,
    },
    Expire {
        lease: LeaseId,
    },
}

/// A [`KvOutput`] with values interned (a grant's id moved into its command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvAnswer {
    Ok,
    Value(Option<Sym>),
    Cas { succeeded: bool },
    Granted,
    Revoked,
    Expired,
    LeaseNotFound,
    DuplicateLease,
}

/// The store: live keys with their value and lease, and the live leases.
/// Both vectors are sorted, so equal stores are equal values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KvState {
    entries: Vec<(Sym, Sym, Option<LeaseId>)>,
    leases: Vec<LeaseId>,
}

impl KvState {
    fn value(&self, key: Sym) -> Option<Sym> {
        self.entry(key).ok().map(|i| self.entries[i].1)
    }

    fn entry(&self, key: Sym) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&key, |e| e.0)
    }

    fn lease_alive(&self, lease: LeaseId) -> bool {
        self.leases.binary_search(&lease).is_ok()
    }

    fn set(&mut self, key: Sym, value: Sym, lease: Option<LeaseId>) {
        match self.entry(key) {
            Ok(i) => self.entries[i] = (key, value, lease),
            Err(i) => self.entries.insert(i, (key, value, lease)),
        }
    }

    fn remove(&mut self, key: Sym) {
        if let Ok(i) = self.entry(key) {
            self.entries.remove(i);
        }
    }

    /// Ends a lease and deletes its keys; whether it was alive.
    fn end_lease(&mut self, lease: LeaseId) -> bool {
        match self.leases.binary_search(&lease) {
            Ok(i) => {
                self.leases.remove(i);
                self.entries.retain(|e| e.2 != Some(lease));
                true
            }
            Err(_) => false,
        }
    }
}

/// The KV-with-leases specification over interned commands.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvModel;

impl KvModel {
    /// What the store answers to `cmd` in `state`, and the state after.
    /// `None` when no answer is possible (a grant whose id nobody recorded).
    fn apply(state: &KvState, cmd: &KvCmd) -> (KvState, Option<KvAnswer>) {
        let mut next = state.clone();
        let lease_missing = |lease: &Option<LeaseId>| lease.is_some_and(|l| !state.lease_alive(l));
        let answer = match cmd {
            KvCmd::Put { lease, .. } | KvCmd::Cas { lease, .. } if lease_missing(lease) => KvAnswer::LeaseNotFound,
            KvCmd::Put { key, value, lease } => {
                next.set(*key, *value, *lease);
                KvAnswer::Ok
            }
            KvCmd::Get { key } => KvAnswer::Value(state.value(*key)),
            KvCmd::Delete { key } => {
                next.remove(*key);
                KvAnswer::Ok
            }
            KvCmd::Cas { key, expected, value, lease } => {
                let succeeded = state.value(*key) == *expected;
                if succeeded {
                    next.set(*key, *value, *lease);
                }
                KvAnswer::Cas { succeeded }
            }
            KvCmd::Grant { lease: None } => return (next, None),
            KvCmd::Grant { lease: Some(lease) } => match state.leases.binary_search(lease) {
                Ok(_) => KvAnswer::DuplicateLease,
                Err(i) => {
                    next.leases.insert(i, *lease);
                    KvAnswer::Granted
                }
            },
            KvCmd::Revoke { lease } => {
                if next.end_lease(*lease) {
                    KvAnswer::Revoked
                } else {
                    KvAnswer::LeaseNotFound
                }
            }
            KvCmd::Expire { lease } => {
                next.end_lease(*lease);
                KvAnswer::Expired
            }
        };
        (next, Some(answer))
    }
}

impl Model for KvModel {
    type Input = KvCmd;
    type Output = KvAnswer;
    type State = KvState;

    fn init(&self) -> KvState {
        KvState::default()
    }

    fn step(&self, state: &KvState, cmd: &KvCmd, output: Option<&KvAnswer>) -> Option<KvState> {
        let (next, answer) = Self::apply(state, cmd);
        match output {
            None => Some(next),
            Some(seen) => (answer.as_ref() == Some(seen)).then_some(next),
        }
    }

    fn is_read_only(&self, cmd: &KvCmd) -> bool {
        matches!(cmd, KvCmd::Get { .. })
    }
}

/// What an operation touches, for partitioning: keys and leases.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvResource {
    Key(String),
    Lease(LeaseId),
}

/// The keys and leases `op` reads or changes. A revoke or expiry touches its
/// lease only, and every key it may delete touched that lease when it was
/// attached, so connecting resources per operation keeps a lease and its keys
/// in one partition.
pub fn resources(op: &Operation) -> Vec<KvResource> {
    let key = |k: &String| KvResource::Key(k.clone());
    match &op.input {
        KvInput::Put { key: k, lease, .. } | KvInput::Cas { key: k, lease, .. } => {
            let mut r = vec![key(k)];
            r.extend(lease.map(KvResource::Lease));
            r
        }
        KvInput::Get { key: k } | KvInput::Delete { key: k } => vec![key(k)],
        KvInput::LeaseGrant { lease } => {
            let granted = match &op.output {
                Some(KvOutput::LeaseGranted { lease }) => Some(*lease),
                _ => *lease,
            };
            granted.map(KvResource::Lease).into_iter().collect()
        }
        KvInput::LeaseRevoke { lease } | KvInput::LeaseExpire { lease } => vec![KvResource::Lease(*lease)],
    }
}

/// Interns keys and values (ids in order of first appearance, so the result
/// does not depend on hash order).
#[derive(Default)]
struct Interner {
    ids: HashMap<String, Sym>,
}

impl Interner {
    fn id(&mut self, s: &str) -> Sym {
        if let Some(id) = self.ids.get(s) {
            return *id;
        }
        let id = self.ids.len() as Sym;
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// Interns `ops` into commands and answers for [`KvModel`], in order.
pub fn compile<'a>(ops: impl IntoIterator<Item = &'a Operation>) -> Vec<(KvCmd, Option<KvAnswer>)> {
    // Keys and values live in separate id spaces: a key never equals a value.
    let mut keys = Interner::default();
    let mut values = Interner::default();
    ops.into_iter()
        .map(|op| {
            let cmd = match &op.input {
                KvInput::Put { key, value, lease } => KvCmd::Put { key: keys.id(key), value: values.id(value), lease: *lease },
                KvInput::Get { key } => KvCmd::Get { key: keys.id(key) },
                KvInput::Delete { key } => KvCmd::Delete { key: keys.id(key) },
                KvInput::Cas { key, expected, value, lease } => KvCmd::Cas {
                    key: keys.id(key),
                    expected: expected.as_deref().map(|e| values.id(e)),
                    value: values.id(value),
                    lease: *lease,
                },
                KvInput::LeaseGrant { lease } => match (&op.output, lease) {
                    (Some(KvOutput::LeaseGranted { lease }), _) => KvCmd::Grant { lease: Some(*lease) },
                    (_, asked) => KvCmd::Grant { lease: *asked },
                },
                KvInput::LeaseRevoke { lease } => KvCmd::Revoke { lease: *lease },
                KvInput::LeaseExpire { lease } => KvCmd::Expire { lease: *lease },
            };
            let answer = op.output.as_ref().map(|out| match out {
                KvOutput::Ok => KvAnswer::Ok,
                KvOutput::Value(v) => KvAnswer::Value(v.as_deref().map(|v| values.id(v))),
                KvOutput::Cas { succeeded } => KvAnswer::Cas { succeeded: *succeeded },
                KvOutput::LeaseGranted { .. } => KvAnswer::Granted,
                KvOutput::LeaseRevoked => KvAnswer::Revoked,
                KvOutput::LeaseExpired => KvAnswer::Expired,
                KvOutput::LeaseNotFound => KvAnswer::LeaseNotFound,
                KvOutput::DuplicateLease => KvAnswer::DuplicateLease,
            });
            (cmd, answer)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: KvModel = KvModel;

    /// Runs commands from the initial state, each with its expected answer
    /// known; `None` as soon as one is refused.
    fn run(steps: &[(KvCmd, KvAnswer)]) -> Option<KvState> {
        steps.iter().try_fold(M.init(), |s, (c, a)| M.step(&s, c, Some(a)))
    }

    #[test]
    fn put_get_delete() {
        let s = run(&[
            (KvCmd::Get { key: 0 }, KvAnswer::Value(None)),
            (KvCmd::Put { key: 0, value: 5, lease: None }, KvAnswer::Ok),
            (KvCmd::Get { key: 0 }, KvAnswer::Value(Some(5))),
            (KvCmd::Delete { key: 0 }, KvAnswer::Ok),
        ])
        .expect("legal sequence");
        assert_eq!(M.step(&s, &KvCmd::Get { key: 0 }, Some(&KvAnswer::Value(None))), Some(s.clone()));
        assert_eq!(M.step(&s, &KvCmd::Get { key: 0 }, Some(&KvAnswer::Value(Some(5)))), None);
        assert!(M.is_read_only(&KvCmd::Get { key: 0 }));
        assert!(!M.is_read_only(&KvCmd::Delete { key: 0 }));
    }

    #[test]
    fn cas_compares_against_absent_and_present() {
        let s = run(&[(KvCmd::Cas { key: 1, expected: None, value: 2, lease: None }, KvAnswer::Cas { succeeded: true })]).unwrap();
        assert_eq!(s.value(1), Some(2));
        let again = KvCmd::Cas { key: 1, expected: None, value: 3, lease: None };
        assert_eq!(M.step(&s, &again, Some(&KvAnswer::Cas { succeeded: true })), None);
        assert_eq!(M.step(&s, &again, Some(&KvAnswer::Cas { succeeded: false })), Some(s.clone()));
        // Unknown outcome: applies only when it matches.
        assert_eq!(M.step(&s, &again, None), Some(s.clone()));
        let matching = KvCmd::Cas { key: 1, expected: Some(2), value: 3, lease: None };
        assert_eq!(M.step(&s, &matching, None).unwrap().value(1), Some(3));
    }

    #[test]
    fn leased_put_needs_a_live_lease_and_revoke_deletes_attached_keys() {
        let leased = KvCmd::Put { key: 0, value: 1, lease: Some(7) };
        assert!(run(&[(leased.clone(), KvAnswer::Ok)]).is_none());
        assert!(run(&[(leased.clone(), KvAnswer::LeaseNotFound)]).is_some());
        let s = run(&[
            (KvCmd::Grant { lease: Some(7) }, KvAnswer::Granted),
            (KvCmd::Grant { lease: Some(7) }, KvAnswer::DuplicateLease),
            (leased, KvAnswer::Ok),
            (KvCmd::Put { key: 1, value: 1, lease: None }, KvAnswer::Ok),
            (KvCmd::Revoke { lease: 7 }, KvAnswer::Revoked),
        ])
        .unwrap();
        assert_eq!(s.value(0), None, "attached key deleted with its lease");
        assert_eq!(s.value(1), Some(1), "unattached key kept");
        assert_eq!(M.step(&s, &KvCmd::Revoke { lease: 7 }, Some(&KvAnswer::Revoked)), None);
        assert!(M.step(&s, &KvCmd::Revoke { lease: 7 }, Some(&KvAnswer::LeaseNotFound)).is_some());
    }

    #[test]
    fn expiry_deletes_keys_and_is_a_no_op_when_gone() {
        let s = run(&[
            (KvCmd::Grant { lease: Some(3) }, KvAnswer::Granted),
            (KvCmd::Cas { key: 4, expected: None, value: 9, lease: Some(3) }, KvAnswer::Cas { succeeded: true }),
            (KvCmd::Expire { lease: 3 }, KvAnswer::Expired),
        ])
        .unwrap();
        assert_eq!(s, KvState::default());
        assert_eq!(M.step(&s, &KvCmd::Expire { lease: 3 }, Some(&KvAnswer::Expired)), Some(s.clone()));
    }

    #[test]
    fn reattaching_a_key_detaches_it_from_the_old_lease() {
        let s = run(&[
            (KvCmd::Grant { lease: Some(1) }, KvAnswer::Granted),
            (KvCmd::Put { key: 0, value: 1, lease: Some(1) }, KvAnswer::Ok),
            (KvCmd::Put { key: 0, value: 2, lease: None }, KvAnswer::Ok),
            (KvCmd::Revoke { lease: 1 }, KvAnswer::Revoked),
        ])
        .unwrap();
        assert_eq!(s.value(0), Some(2));
    }

    #[test]
    fn unrecorded_grant_changes_nothing_and_cannot_be_answered() {
        let s = M.init();
        assert_eq!(M.step(&s, &KvCmd::Grant { lease: None }, None), Some(s.clone()));
        assert_eq!(M.step(&s, &KvCmd::Grant { lease: None }, Some(&KvAnswer::DuplicateLease)), None);
    }

    #[test]
    fn compile_interns_and_moves_granted_ids() {
        let op = |input, output| Operation { client: 1, call_ns: 0, return_ns: Some(1), input, output: Some(output) };
        let ops = [
            op(KvInput::Put { key: "a".into(), value: "x".into(), lease: None }, KvOutput::Ok),
            op(KvInput::Get { key: "a".into() }, KvOutput::Value(Some("x".into()))),
            op(KvInput::LeaseGrant { lease: None }, KvOutput::LeaseGranted { lease: 42 }),
        ];
        let compiled = compile(&ops);
        assert_eq!(compiled[0].0, KvCmd::Put { key: 0, value: 0, lease: None });
        assert_eq!(compiled[1].1, Some(KvAnswer::Value(Some(0))));
        assert_eq!(compiled[2].0, KvCmd::Grant { lease: Some(42) });
        assert_eq!(resources(&ops[2]), vec![KvResource::Lease(42)]);
    }
}
