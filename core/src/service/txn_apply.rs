//! Applying etcd's Txn and Compact to the state machine: every check first
//! (etcd's request checks, then the chosen branch's leases, `ignore_*`
//! keys and read revisions), so that a refused txn changes nothing; then
//! every operation of the branch at the entry's index, keeping lease
//! attachments in step.

use crate::service::kv::RevisionError;
use crate::service::txn::{DeleteRequest, KvError, PutRequest, TxnOp, TxnOpResponse, TxnRequest, TxnResponse};
use crate::service::{Response, ServiceError, StateMachine};
use crate::types::LogIndex;

impl StateMachine {
    /// Applies `txn` at revision `index` (all or nothing).
    pub(crate) fn txn(&mut self, txn: &TxnRequest, index: LogIndex) -> Response {
        if let Err(e) = txn.validate() {
            return Response::Error(ServiceError::Kv(e));
        }
        // Every compare of the tree first, on the store before any write.
        let path = txn.path(&self.kv);
        if let Err(e) = self.check_ops(txn, &mut path.iter().copied()) {
            return Response::Error(e);
        }
        let mut answer = self.run_branch(txn, &mut path.iter().copied(), index);
        answer.revision = self.kv.revision();
        stamp_nested(&mut answer.responses, answer.revision);
        Response::Txn(answer)
    }

    /// Runs the branch `path` chose for `txn` (and, within it, the
    /// branches chosen for its nested txns).
    fn run_branch(&mut self, txn: &TxnRequest, path: &mut impl Iterator<Item = bool>, index: LogIndex) -> TxnResponse {
        let succeeded = path.next().expect("the path has a step for every txn that runs");
        let ops = if succeeded { &txn.success } else { &txn.failure };
        let mut responses = Vec::with_capacity(ops.len());
        for op in ops {
            responses.push(match op {
                TxnOp::Range(range) => TxnOpResponse::Range(range.run(&self.kv).expect("revision checked before any write")),
                TxnOp::Put(put) => self.txn_put(put, index),
                TxnOp::Delete(delete) => self.txn_delete(delete, index),
                TxnOp::Txn(nested) => TxnOpResponse::Txn(self.run_branch(nested, path, index)),
            });
        }
        TxnResponse { succeeded, revision: 0, responses }
    }

    /// etcd's `checkRequests` for the branches that will run.
    fn check_ops(&self, txn: &TxnRequest, path: &mut impl Iterator<Item = bool>) -> Result<(), ServiceError> {
        let succeeded = path.next().expect("the path has a step for every txn that runs");
        for op in if succeeded { &txn.success } else { &txn.failure } {
            match op {
                TxnOp::Put(put) => {
                    let exists = self.kv.get(&put.key).is_some();
                    if (put.ignore_value || put.ignore_lease) && !exists {
                        return Err(ServiceError::Kv(KvError::KeyNotFound));
                    }
                    if let Some(lease) = put.lease.filter(|l| !put.ignore_lease && !self.leases.contains(*l)) {
                        return Err(ServiceError::LeaseNotFound { lease });
                    }
                }
                TxnOp::Range(range) => self.kv.check_readable(range.revision).map_err(|e| ServiceError::Kv(KvError::Revision(e)))?,
                TxnOp::Delete(_) => {}
                TxnOp::Txn(nested) => self.check_ops(nested, path)?,
            }
        }
        Ok(())
    }

    fn txn_put(&mut self, put: &PutRequest, index: LogIndex) -> TxnOpResponse {
        let existing = self.kv.get(&put.key).cloned();
        let value = match (&existing, put.ignore_value) {
            (Some(e), true) => e.value.clone(),
            _ => put.value.clone(),
        };
        let lease = match (&existing, put.ignore_lease) {
            (Some(e), true) => e.lease,
            _ => put.lease,
        };
        let prev = self.kv.put(&put.key, &value, lease, index);
        self.reattach(&put.key, prev.as_ref().and_then(|p| p.lease), lease);
        TxnOpResponse::Put { prev_kv: prev.filter(|_| put.prev_kv) }
    }

    fn txn_delete(&mut self, delete: &DeleteRequest, index: LogIndex) -> TxnOpResponse {
        let found = self.kv.range(&delete.range, 0).expect("the current revision is always readable");
        let mut prev_kvs = Vec::new();
        for (key, _) in &found {
            if let Some(removed) = self.kv.delete(key, index) {
                self.reattach(key, removed.lease, None);
                if delete.prev_kv {
                    prev_kvs.push((key.clone(), removed));
                }
            }
        }
        TxnOpResponse::Delete { deleted: found.len() as u64, prev_kvs }
    }

    /// etcd's Compact at `revision`.
    pub(crate) fn compact(&mut self, revision: LogIndex) -> Response {
        match self.kv.compact(revision) {
            Ok(()) => Response::Compacted { revision },
            Err(e) => Response::Error(ServiceError::Kv(KvError::Revision(e))),
        }
    }

    /// etcd's Range, answered from this server's applied state.
    pub fn range(&self, range: &crate::service::RangeRequest) -> Result<crate::service::RangeResponse, RevisionError> {
        range.run(&self.kv)
    }
}

/// Gives every nested txn's answer the revision of the whole txn.
fn stamp_nested(responses: &mut [TxnOpResponse], revision: LogIndex) {
    for response in responses {
        if let TxnOpResponse::Txn(nested) = response {
            nested.revision = revision;
            stamp_nested(&mut nested.responses, revision);
        }
    }
}
