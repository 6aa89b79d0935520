//! etcd's KV service onto core: `Range` is a linearizable `Get` plus a read
//! of the leader's state (for ranges and revisions), `Put` and `DeleteRange`
//! are core's `Put`/`Delete`, and `Txn` covers compare-and-set: one compare
//! (value, create or mod revision, version, lease; any of etcd's four
//! results) fused with a put of the same key into core's `CompareAndPut`,
//! judged atomically as its entry applies.
//!
//! What core cannot do atomically is done as a sequence and said so: a
//! prefix delete deletes key by key, `deleted` counts what a read just
//! before saw, a txn's other ops run one after another after its
//! compare-and-put, and its range ops are read after its write. Keys have
//! no version counter in core: `version` is 1 for any existing key.

use leasesim_core::service::kv::KvValue;
use leasesim_core::service::{self as core, KeyCompare, Op, Response};
use tonic::{Request, Status};

use super::guard::{txn_needs, Need};
use super::{status, text, unimplemented, Api, MAX_REQUEST_BYTES};
use crate::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use crate::pb::etcdserverpb::kv_server::Kv;
use crate::pb::etcdserverpb::range_request::{SortOrder, SortTarget};
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::response_op::Response as TxnResp;
use crate::pb::etcdserverpb::*;
use crate::pb::mvccpb::KeyValue;
use crate::view::{RangeSpec, RangeView};

type Reply<T> = Result<tonic::Response<T>, Status>;

pub(super) fn key_value(key: &str, v: &KvValue, keys_only: bool) -> KeyValue {
    KeyValue {
        key: key.as_bytes().to_vec(),
        create_revision: v.create_revision as i64,
        mod_revision: v.mod_revision as i64,
        version: 1,
        value: if keys_only { Vec::new() } else { v.value.as_bytes().to_vec() },
        lease: v.lease.unwrap_or(0) as i64,
    }
}

impl Api {
    /// A linearizable read of `spec` on the leader.
    pub(super) async fn read_range(&self, spec: RangeSpec) -> Result<RangeView, Status> {
        // The `Get` goes through the read index; its key does not matter.
        let key = String::from_utf8_lossy(&spec.key).into_owned();
        let answer = self.node.front.call_view(Op::Get { key }, Some(spec)).await.map_err(status)?;
        let mut view = answer.view.unwrap_or_default();
        // Alarms live in the store but are no client's keys.
        view.kvs.retain(|(k, _)| !super::alarm::is_reserved(k.as_bytes()));
        Ok(view)
    }

    pub async fn range_op(&self, req: RangeRequest) -> Result<RangeResponse, Status> {
        if req.key.is_empty() {
            return Err(Status::invalid_argument("etcdserver: key is not provided"));
        }
        if req.revision > 0 {
            return Err(unimplemented("reading at a past revision"));
        }
        let view = self.read_range(RangeSpec { key: req.key.clone(), range_end: req.range_end.clone() }).await?;
        let mut kvs: Vec<(String, KvValue)> = view
            .kvs
            .into_iter()
            .filter(|(_, v)| {
                let (c, m) = (v.create_revision as i64, v.mod_revision as i64);
                (req.min_create_revision == 0 || c >= req.min_create_revision)
                    && (req.max_create_revision == 0 || c <= req.max_create_revision)
                    && (req.min_mod_revision == 0 || m >= req.min_mod_revision)
                    && (req.max_mod_revision == 0 || m <= req.max_mod_revision)
            })
            .collect();
        let order = SortOrder::try_from(req.sort_order).unwrap_or(SortOrder::None);
        let target = SortTarget::try_from(req.sort_target).unwrap_or(SortTarget::Key);
        if order != SortOrder::None {
            kvs.sort_by(|(ka, a), (kb, b)| match target {
                SortTarget::Key => ka.cmp(kb),
                SortTarget::Version => ka.cmp(kb),
                SortTarget::Create => a.create_revision.cmp(&b.create_revision),
                SortTarget::Mod => a.mod_revision.cmp(&b.mod_revision),
                SortTarget::Value => a.value.cmp(&b.value),
            });
            if order == SortOrder::Descend {
                kvs.reverse();
            }
        }
        let count = kvs.len() as i64;
        let limit = if req.limit > 0 { req.limit as usize } else { usize::MAX };
        let more = kvs.len() > limit;
        let kvs = if req.count_only { Vec::new() } else { kvs.iter().take(limit).map(|(k, v)| key_value(k, v, req.keys_only)).collect() };
        Ok(RangeResponse { header: self.header(view.revision), kvs, more, count })
    }

    pub async fn put_op(&self, req: PutRequest) -> Result<PutResponse, Status> {
        if req.key.is_empty() {
            return Err(Status::invalid_argument("etcdserver: key is not provided"));
        }
        if req.key.len() + req.value.len() > MAX_REQUEST_BYTES {
            return Err(Status::invalid_argument("etcdserver: request is too large"));
        }
        if req.ignore_value || req.ignore_lease {
            return Err(unimplemented("put with ignore_value or ignore_lease"));
        }
        reserved(&req.key)?;
        self.check_space(req.key.len() + req.value.len())?;
        let key = text(req.key, "key")?;
        let value = text(req.value, "value")?;
        let lease = (req.lease != 0).then_some(req.lease as u64);
        let prev_kv = if req.prev_kv { self.get_one(&key).await?.map(|v| key_value(&key, &v, false)) } else { None };
        match self.node.front.call(Op::Put { key, value, lease }).await.map_err(status)? {
            Response::Done { revision } => Ok(PutResponse { header: self.header(revision), prev_kv }),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    async fn get_one(&self, key: &str) -> Result<Option<KvValue>, Status> {
        let view = self.read_range(RangeSpec { key: key.as_bytes().to_vec(), range_end: Vec::new() }).await?;
        Ok(view.kvs.into_iter().next().map(|(_, v)| v))
    }

    pub async fn delete_op(&self, req: DeleteRangeRequest) -> Result<DeleteRangeResponse, Status> {
        if req.key.is_empty() {
            return Err(Status::invalid_argument("etcdserver: key is not provided"));
        }
        reserved(&req.key)?;
        let view = self.read_range(RangeSpec { key: req.key, range_end: req.range_end }).await?;
        let mut revision = view.revision;
        let mut prev_kvs = Vec::new();
        for (key, value) in &view.kvs {
            if let Response::Done { revision: r } = self.node.front.call(Op::Delete { key: key.clone() }).await.map_err(status)? {
                revision = revision.max(r);
            }
            if req.prev_kv {
                prev_kvs.push(key_value(key, value, false));
            }
        }
        Ok(DeleteRangeResponse { header: self.header(revision), deleted: view.kvs.len() as i64, prev_kvs })
    }

    pub async fn txn_op(&self, req: TxnRequest) -> Result<TxnResponse, Status> {
        // etcd's capped applier: a txn that may put is refused under NOSPACE.
        let put_bytes: usize = req
            .success
            .iter()
            .chain(&req.failure)
            .filter_map(|op| match &op.request {
                Some(TxnOp::RequestPut(put)) => Some(put.key.len() + put.value.len()),
                _ => None,
            })
            .sum();
        if put_bytes > 0 {
            self.check_space(put_bytes)?;
        }
        let (succeeded, revision) = match req.compare.as_slice() {
            [] => (true, 0),
            [compare] => self.compare_and_put(compare, &req.success).await?,
            _ => return Err(unimplemented("a txn with more than one compare")),
        };
        let ops = if succeeded { req.success } else { req.failure };
        let mut responses = Vec::new();
        let mut wrote = revision;
        for (i, op) in ops.into_iter().enumerate() {
            let response = match op.request {
                // The first put of a compared txn was done by the compare-and-set.
                Some(TxnOp::RequestPut(_)) if i == 0 && revision > 0 => {
                    TxnResp::ResponsePut(PutResponse { header: self.header(revision), prev_kv: None })
                }
                Some(TxnOp::RequestPut(put)) => {
                    let resp = self.put_op(put).await?;
                    wrote = wrote.max(resp.header.as_ref().map_or(0, |h| h.revision as u64));
                    TxnResp::ResponsePut(resp)
                }
                Some(TxnOp::RequestRange(range)) => TxnResp::ResponseRange(self.range_op(range).await?),
                Some(TxnOp::RequestDeleteRange(del)) => TxnResp::ResponseDeleteRange(self.delete_op(del).await?),
                Some(TxnOp::RequestTxn(_)) => return Err(unimplemented("nested txn")),
                None => continue,
            };
            responses.push(ResponseOp { response: Some(response) });
        }
        Ok(TxnResponse { header: self.header(wrote), succeeded, responses })
    }

    /// Evaluates one compare; when the success branch starts with a put of
    /// the same key, the compare and that put are one core
    /// `CompareAndPut`, judged as the entry applies. Returns whether the
    /// compare held and the put's revision (0: no put).
    async fn compare_and_put(&self, compare: &Compare, success: &[RequestOp]) -> Result<(bool, u64), Status> {
        if !compare.range_end.is_empty() {
            return Err(unimplemented("a txn compare over a range"));
        }
        let key = text(compare.key.clone(), "key")?;
        let compare = key_compare(compare)?;
        let put = match success.first().and_then(|op| op.request.as_ref()) {
            Some(TxnOp::RequestPut(put)) if put.key == key.as_bytes() => put.clone(),
            // No put to fuse with: the compare on a linearizable read.
            _ => return Ok((compare.holds(self.get_one(&key).await?.as_ref()), 0)),
        };
        let value = text(put.value, "value")?;
        let lease = (put.lease != 0).then_some(put.lease as u64);
        match self.node.front.call(Op::CompareAndPut { key, compare, value, lease }).await.map_err(status)? {
            Response::Cas { succeeded: true, revision, .. } => Ok((true, revision)),
            Response::Cas { succeeded: false, .. } => Ok((false, 0)),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }
}

/// Refuses a write into the alarms' reserved prefix.
fn reserved(key: &[u8]) -> Result<(), Status> {
    if super::alarm::is_reserved(key) {
        return Err(Status::invalid_argument("leasesim: keys under \\0leasesim/alarm/ are reserved for alarms"));
    }
    Ok(())
}

/// etcd's compare in core's terms.
fn key_compare(compare: &Compare) -> Result<KeyCompare, Status> {
    let bad = || Status::invalid_argument("etcdserver: bad compare");
    let result = match CompareResult::try_from(compare.result).map_err(|_| bad())? {
        CompareResult::Equal => core::CompareResult::Equal,
        CompareResult::NotEqual => core::CompareResult::NotEqual,
        CompareResult::Greater => core::CompareResult::Greater,
        CompareResult::Less => core::CompareResult::Less,
    };
    let revision = |r: i64| u64::try_from(r).map_err(|_| bad());
    let target = match (CompareTarget::try_from(compare.target).map_err(|_| bad())?, &compare.target_union) {
        (CompareTarget::Value, Some(TargetUnion::Value(v))) => core::CompareTarget::Value(text(v.clone(), "value")?),
        (CompareTarget::Create, Some(TargetUnion::CreateRevision(r))) => core::CompareTarget::CreateRevision(revision(*r)?),
        (CompareTarget::Mod, Some(TargetUnion::ModRevision(r))) => core::CompareTarget::ModRevision(revision(*r)?),
        (CompareTarget::Version, Some(TargetUnion::Version(v))) => core::CompareTarget::Version(revision(*v)?),
        (CompareTarget::Lease, Some(TargetUnion::Lease(l))) => core::CompareTarget::Lease(revision(*l)?),
        _ => return Err(bad()),
    };
    Ok(KeyCompare { target, result })
}

#[tonic::async_trait]
impl Kv for Api {
    async fn range(&self, request: Request<RangeRequest>) -> Reply<RangeResponse> {
        let r = request.get_ref();
        self.permit(&request, &[Need::read(&r.key, &r.range_end)]).await?;
        self.range_op(request.into_inner()).await.map(tonic::Response::new)
    }

    type RangeStreamStream = tokio_stream::Empty<Result<RangeStreamResponse, Status>>;

    async fn range_stream(&self, _: Request<RangeRequest>) -> Reply<Self::RangeStreamStream> {
        Err(unimplemented("RangeStream"))
    }

    async fn put(&self, request: Request<PutRequest>) -> Reply<PutResponse> {
        let p = request.get_ref();
        let read = p.prev_kv.then(|| Need::read(&p.key, &[]));
        self.permit(&request, &[Some(Need::write(&p.key, &[])), read].into_iter().flatten().collect::<Vec<_>>()).await?;
        self.writable()?;
        self.put_op(request.into_inner()).await.map(tonic::Response::new)
    }

    async fn delete_range(&self, request: Request<DeleteRangeRequest>) -> Reply<DeleteRangeResponse> {
        let d = request.get_ref();
        let read = d.prev_kv.then(|| Need::read(&d.key, &d.range_end));
        self.permit(&request, &[Some(Need::write(&d.key, &d.range_end)), read].into_iter().flatten().collect::<Vec<_>>()).await?;
        self.writable()?;
        self.delete_op(request.into_inner()).await.map(tonic::Response::new)
    }

    async fn txn(&self, request: Request<TxnRequest>) -> Reply<TxnResponse> {
        self.permit(&request, &txn_needs(request.get_ref())).await?;
        self.writable()?;
        self.txn_op(request.into_inner()).await.map(tonic::Response::new)
    }

    async fn compact(&self, _: Request<CompactionRequest>) -> Reply<CompactionResponse> {
        Ok(tonic::Response::new(CompactionResponse { header: self.header(0) }))
    }
}
