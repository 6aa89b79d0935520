//! A reference KV store with leases, written apart from the checker's
//! model (`leasesim_history::model::kv`) so that each checks the other: the
//! property tests (`props.rs`) and the scale example
//! (`examples/kv_scale.rs`, which includes this file by path) both make
//! their histories by running operations against it. One copy, so that
//! the histories the example times are the ones the tests prove
//! linearizable.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_history::history::{KvInput, KvOutput};

/// A KV store with leases, applying one operation at a time.
#[derive(Default)]
pub struct ReferenceKv {
    keys: BTreeMap<String, (String, Option<u64>)>,
    leases: BTreeSet<u64>,
    next_granted_id: u64,
}

impl ReferenceKv {
    pub fn apply(&mut self, input: &KvInput) -> KvOutput {
        let lease_dead = |lease: &Option<u64>, leases: &BTreeSet<u64>| lease.is_some_and(|l| !leases.contains(&l));
        match input {
            KvInput::Put { lease, .. } | KvInput::Cas { lease, .. } if lease_dead(lease, &self.leases) => KvOutput::LeaseNotFound,
            KvInput::Put { key, value, lease } => {
                self.keys.insert(key.clone(), (value.clone(), *lease));
                KvOutput::Ok
            }
            KvInput::Get { key } => KvOutput::Value(self.keys.get(key).map(|(v, _)| v.clone())),
            KvInput::Delete { key } => {
                self.keys.remove(key);
                KvOutput::Ok
            }
            KvInput::Cas { key, expected, value, lease } => {
                let succeeded = self.keys.get(key).map(|(v, _)| v) == expected.as_ref();
                if succeeded {
                    self.keys.insert(key.clone(), (value.clone(), *lease));
                }
                KvOutput::Cas { succeeded }
            }
            KvInput::LeaseGrant { lease } => {
                // The cluster picks ids nobody asked for from a range of its own.
                let id = lease.unwrap_or_else(|| {
                    self.next_granted_id += 1;
                    1_000 + self.next_granted_id
                });
                if self.leases.insert(id) {
                    KvOutput::LeaseGranted { lease: id }
                } else {
                    KvOutput::DuplicateLease
                }
            }
            KvInput::LeaseRevoke { lease } => {
                if self.end(*lease) {
                    KvOutput::LeaseRevoked
                } else {
                    KvOutput::LeaseNotFound
                }
            }
            KvInput::LeaseExpire { lease } => {
                self.end(*lease);
                KvOutput::LeaseExpired
            }
        }
    }

    fn end(&mut self, lease: u64) -> bool {
        let alive = self.leases.remove(&lease);
        if alive {
            self.keys.retain(|_, (_, l)| *l != Some(lease));
        }
        alive
    }
}
