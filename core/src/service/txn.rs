//! etcd's Txn: compares over keys, then one of two lists of puts, deletes
//! and ranges, applied by ONE log entry at ONE revision (the entry's index),
//! so no other write can land between the compares and the writes, nor
//! between two writes of the same txn.
//!
//! Also the request checks etcd's gRPC layer makes before proposing
//! (`checkTxnRequest`, `checkIntervals`): the node calls
//! [`TxnRequest::validate`] before it proposes, and the state machine calls
//! it again when the entry applies, so a bad txn never changes the store
//! whoever proposed it.

use serde::{Deserialize, Serialize};

use crate::service::kv::{KeyRange, Kv, KvValue, RevisionError};
use crate::service::range::{RangeRequest, RangeResponse};
use crate::types::{LeaseId, LogIndex};

/// etcd's default `--max-txn-ops`.
pub const MAX_TXN_OPS: usize = 128;

/// One of etcd's Txn compares (`etcdserverpb.Compare`), over one key or a
/// range of keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Compare {
    pub range: KeyRange,
    pub target: CompareTarget,
    pub result: CompareResult,
}

/// What a compare looks at, and the operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompareTarget {
    Value(Vec<u8>),
    CreateRevision(LogIndex),
    ModRevision(LogIndex),
    /// 0: no lease.
    Lease(LeaseId),
    Version(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompareResult {
    Equal,
    NotEqual,
    Greater,
    Less,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PutRequest {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub lease: Option<LeaseId>,
    /// Answer with the key's value before the put.
    pub prev_kv: bool,
    /// Keep the current value (the key must exist).
    pub ignore_value: bool,
    /// Keep the current lease (the key must exist).
    pub ignore_lease: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeleteRequest {
    pub range: KeyRange,
    pub prev_kv: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnOp {
    Range(RangeRequest),
    Put(PutRequest),
    Delete(DeleteRequest),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnRequest {
    pub compares: Vec<Compare>,
    pub success: Vec<TxnOp>,
    pub failure: Vec<TxnOp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnOpResponse {
    Range(RangeResponse),
    /// `prev_kv`: the key before the put, when asked for and present.
    Put {
        prev_kv: Option<KvValue>,
    },
    /// `prev_kvs` only when asked for.
    Delete {
        deleted: u64,
        prev_kvs: Vec<(Vec<u8>, KvValue)>,
    },
}

/// A txn's answer: which branch ran, the store's revision after it, and
/// one response per operation of that branch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TxnResponse {
    pub succeeded: bool,
    pub revision: LogIndex,
    pub responses: Vec<TxnOpResponse>,
}

/// etcd's KV request errors (the gRPC message each maps to is in the
/// variant's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KvError {
    /// "etcdserver: key is not provided"
    EmptyKey,
    /// "etcdserver: duplicate key given in txn request"
    DuplicateKey,
    /// "etcdserver: too many operations in txn request"
    TooManyOps,
    /// "etcdserver: key not found" (a put with ignore_value/ignore_lease
    /// on an absent key)
    KeyNotFound,
    /// "mvcc: required revision has been compacted" / "... is a future
    /// revision"
    Revision(RevisionError),
}

impl Compare {
    /// Whether the compare holds on the store now. As etcd's
    /// `applyCompare`: every key of the range must satisfy it; on an empty
    /// range a value compare fails and the other targets compare zeros.
    pub fn holds(&self, kv: &Kv) -> bool {
        let Ok(found) = kv.range(&self.range, 0) else { return false };
        if found.is_empty() {
            return !matches!(self.target, CompareTarget::Value(_)) && self.holds_on(None);
        }
        found.iter().all(|(_, v)| self.holds_on(Some(v)))
    }

    fn holds_on(&self, current: Option<&KvValue>) -> bool {
        let ordering = match &self.target {
            CompareTarget::Value(operand) => current.map_or(&[][..], |kv| kv.value.as_slice()).cmp(operand.as_slice()),
            CompareTarget::CreateRevision(operand) => current.map_or(0, |kv| kv.create_revision).cmp(operand),
            CompareTarget::ModRevision(operand) => current.map_or(0, |kv| kv.mod_revision).cmp(operand),
            CompareTarget::Lease(operand) => current.and_then(|kv| kv.lease).unwrap_or(0).cmp(operand),
            CompareTarget::Version(operand) => current.map_or(0, |kv| kv.version).cmp(operand),
        };
        match self.result {
            CompareResult::Equal => ordering.is_eq(),
            CompareResult::NotEqual => ordering.is_ne(),
            CompareResult::Greater => ordering.is_gt(),
            CompareResult::Less => ordering.is_lt(),
        }
    }
}

impl TxnOp {
    fn key(&self) -> &[u8] {
        match self {
            TxnOp::Range(r) => &r.range.key,
            TxnOp::Put(p) => &p.key,
            TxnOp::Delete(d) => &d.range.key,
        }
    }
}

impl TxnRequest {
    /// etcd's `checkTxnRequest` and `checkIntervals`: at most
    /// [`MAX_TXN_OPS`] compares and operations per branch, no empty key,
    /// and within a branch no key put twice or put and deleted.
    pub fn validate(&self) -> Result<(), KvError> {
        let ops = self.compares.len().max(self.success.len()).max(self.failure.len());
        if ops > MAX_TXN_OPS {
            return Err(KvError::TooManyOps);
        }
        if self.compares.iter().any(|c| c.range.key.is_empty()) {
            return Err(KvError::EmptyKey);
        }
        if self.success.iter().chain(&self.failure).any(|op| op.key().is_empty()) {
            return Err(KvError::EmptyKey);
        }
        check_intervals(&self.success)?;
        check_intervals(&self.failure)
    }
}

/// A put overlapping another put or a delete of the same branch. A delete's
/// range is taken literally as `[key, range_end)`, as etcd's interval tree
/// does (so a delete "from key on", range_end `\0`, overlaps nothing).
fn check_intervals(ops: &[TxnOp]) -> Result<(), KvError> {
    let mut puts: Vec<&[u8]> = Vec::new();
    for op in ops {
        let TxnOp::Put(put) = op else { continue };
        let deleted = ops.iter().any(|op| match op {
            TxnOp::Delete(d) if d.range.range_end.is_empty() => d.range.key == put.key,
            TxnOp::Delete(d) => d.range.key <= put.key && put.key < d.range.range_end,
            _ => false,
        });
        if deleted || puts.contains(&put.key.as_slice()) {
            return Err(KvError::DuplicateKey);
        }
        puts.push(&put.key);
    }
    Ok(())
}
