//! etcd's Txn: compares over keys, then one of two lists of puts, deletes
//! and ranges, applied by ONE log entry at ONE revision (the entry's index),
//! so no other write can land between the compares and the writes, nor
//! between two writes of the same txn.
//!
//! A branch may hold txns of its own (etcd 3.3+'s `RequestOp_RequestTxn`):
//! as etcd's applier does, every compare of the whole tree is evaluated on
//! the store before any operation runs (`compareToPath`), and the nested
//! branches' writes share the entry's one revision.
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

impl PutRequest {
    /// etcd's `checkPutRequest`, in its order: the key, then a value given
    /// with `ignore_value`, then a lease given with `ignore_lease`.
    fn check_request(&self) -> Result<(), KvError> {
        if self.key.is_empty() {
            return Err(KvError::EmptyKey);
        }
        if self.ignore_value && !self.value.is_empty() {
            return Err(KvError::ValueProvided);
        }
        if self.ignore_lease && self.lease.is_some() {
            return Err(KvError::LeaseProvided);
        }
        Ok(())
    }
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
    /// A nested txn (added last so that the other variants keep their
    /// encodings and digests).
    Txn(TxnRequest),
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
    /// A nested txn's answer; its `revision` is the outer txn's.
    Txn(TxnResponse),
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
    /// "etcdserver: value is provided" (a put with ignore_value and a value)
    ValueProvided,
    /// "etcdserver: lease is provided" (a put with ignore_lease and a lease)
    LeaseProvided,
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

impl TxnRequest {
    /// etcd's `checkTxnRequest` and `checkIntervals`: at most
    /// [`MAX_TXN_OPS`] compares and operations per branch (a nested txn
    /// gets what its parent left), no empty key, and no key put twice or
    /// put and deleted where both could run.
    pub fn validate(&self) -> Result<(), KvError> {
        self.check_request(MAX_TXN_OPS)?;
        check_intervals(&self.success)?;
        check_intervals(&self.failure)?;
        Ok(())
    }

    /// etcd's `checkTxnRequest(r, maxTxnOps)`.
    fn check_request(&self, max_ops: usize) -> Result<(), KvError> {
        let ops = self.compares.len().max(self.success.len()).max(self.failure.len());
        if ops > max_ops {
            return Err(KvError::TooManyOps);
        }
        if self.compares.iter().any(|c| c.range.key.is_empty()) {
            return Err(KvError::EmptyKey);
        }
        for op in self.success.iter().chain(&self.failure) {
            let key = match op {
                TxnOp::Range(r) => &r.range.key,
                TxnOp::Put(p) => {
                    p.check_request()?;
                    continue;
                }
                TxnOp::Delete(d) => &d.range.key,
                TxnOp::Txn(nested) => {
                    nested.check_request(max_ops - ops)?;
                    continue;
                }
            };
            if key.is_empty() {
                return Err(KvError::EmptyKey);
            }
        }
        Ok(())
    }

    /// etcd's `compareToPath`: which branch this txn and every txn nested
    /// in a branch that runs will take, in pre-order, all judged on `kv`
    /// as it is before any operation.
    pub fn path(&self, kv: &Kv) -> Vec<bool> {
        let mut path = Vec::new();
        self.push_path(kv, &mut path);
        path
    }

    fn push_path(&self, kv: &Kv, path: &mut Vec<bool>) {
        let succeeded = self.compares.iter().all(|c| c.holds(kv));
        path.push(succeeded);
        for op in if succeeded { &self.success } else { &self.failure } {
            if let TxnOp::Txn(nested) = op {
                nested.push_path(kv, path);
            }
        }
    }
}

/// The keys a list of operations may put and the ranges it may delete.
struct Writes<'a> {
    puts: Vec<&'a [u8]>,
    deletes: Vec<&'a KeyRange>,
}

impl Writes<'_> {
    /// Whether `key` falls in a delete. A delete's range is taken
    /// literally as `[key, range_end)`, as etcd's interval tree does (so a
    /// delete "from key on", range_end `\0`, overlaps nothing).
    fn deletes_key(&self, key: &[u8]) -> bool {
        self.deletes
            .iter()
            .any(|d| if d.range_end.is_empty() { d.key == key } else { d.key.as_slice() <= key && key < d.range_end.as_slice() })
    }
}

/// etcd's `checkIntervals`: a put overlapping another put or a delete of
/// the same list, or of a txn nested in it (a nested txn's two branches
/// may put the same key: only one of them runs).
fn check_intervals(ops: &[TxnOp]) -> Result<Writes<'_>, KvError> {
    let mut writes = Writes { puts: Vec::new(), deletes: Vec::new() };
    writes.deletes.extend(ops.iter().filter_map(|op| if let TxnOp::Delete(d) = op { Some(&d.range) } else { None }));
    for op in ops {
        let TxnOp::Txn(nested) = op else { continue };
        let then = check_intervals(&nested.success)?;
        let otherwise = check_intervals(&nested.failure)?;
        for key in &then.puts {
            if writes.puts.contains(key) || writes.deletes_key(key) {
                return Err(KvError::DuplicateKey);
            }
            writes.puts.push(key);
        }
        for key in &otherwise.puts {
            if (writes.puts.contains(key) && !then.puts.contains(key)) || writes.deletes_key(key) {
                return Err(KvError::DuplicateKey);
            }
            writes.puts.push(key);
        }
        // Later nested txns and this level's puts are checked against
        // these deletes too, as etcd's `dels.Union` does.
        writes.deletes.extend(then.deletes.into_iter().chain(otherwise.deletes));
    }
    for op in ops {
        let TxnOp::Put(put) = op else { continue };
        if writes.puts.contains(&put.key.as_slice()) || writes.deletes_key(&put.key) {
            return Err(KvError::DuplicateKey);
        }
        writes.puts.push(&put.key);
    }
    Ok(writes)
}
