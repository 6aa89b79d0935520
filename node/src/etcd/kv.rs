//! etcd's KV service onto core's data model: `Range` is a linearizable
//! `Get` plus core's range on the leader's store (at any revision since the
//! last compaction, with etcd's limit, sort and count), or with
//! `serializable` that range on this member's own store; `Put`,
//! `DeleteRange` and `Txn` are each one core `Txn` (compares, then puts,
//! deletes and ranges applied by one log entry at one revision); `Compact`
//! is core's `Compact`. Keys and values are bytes end to end.
//!
//! The alarms' reserved keys (see `crate::nospace`) are hidden here: a client
//! cannot write them, a delete over a range that holds them is split
//! around them (within the same txn), and a range leaves them out.

use leasesim_core::service::kv::{KeyRange, KvValue, RevisionError};
use leasesim_core::service::{self as core, KvError, Op, Response, TxnOpResponse};
use tonic::{Request, Status};

use super::guard::{txn_needs, Need};
use super::{status, unimplemented, Api, MAX_REQUEST_BYTES};
use crate::nospace::{is_reserved, ALARM_PREFIX};
use crate::pb::etcdserverpb::compare::{CompareResult, CompareTarget, TargetUnion};
use crate::pb::etcdserverpb::kv_server::Kv;
use crate::pb::etcdserverpb::range_request::{SortOrder, SortTarget};
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::response_op::Response as TxnResp;
use crate::pb::etcdserverpb::*;
use crate::pb::mvccpb::KeyValue;
use crate::view::{RangeSpec, RangeView};

type Reply<T> = Result<tonic::Response<T>, Status>;

pub(super) fn key_value(key: &[u8], v: &KvValue, keys_only: bool) -> KeyValue {
    KeyValue {
        key: key.to_vec(),
        create_revision: v.create_revision as i64,
        mod_revision: v.mod_revision as i64,
        version: v.version as i64,
        value: if keys_only { Vec::new() } else { v.value.clone() },
        lease: v.lease.unwrap_or(0) as i64,
    }
}

/// etcd's gRPC error for a KV request error.
pub(super) fn kv_status(error: KvError) -> Status {
    match error {
        KvError::EmptyKey => Status::invalid_argument("etcdserver: key is not provided"),
        KvError::DuplicateKey => Status::invalid_argument("etcdserver: duplicate key given in txn request"),
        KvError::TooManyOps => Status::invalid_argument("etcdserver: too many operations in txn request"),
        KvError::KeyNotFound => Status::invalid_argument("etcdserver: key not found"),
        KvError::ValueProvided => Status::invalid_argument("etcdserver: value is provided"),
        KvError::LeaseProvided => Status::invalid_argument("etcdserver: lease is provided"),
        KvError::Revision(RevisionError::Compacted { .. }) => {
            Status::out_of_range("etcdserver: mvcc: required revision has been compacted")
        }
        KvError::Revision(RevisionError::Future { .. }) => Status::out_of_range("etcdserver: mvcc: required revision is a future revision"),
    }
}

impl Api {
    /// A linearizable read of `spec` on the leader.
    pub(super) async fn read_range(&self, spec: RangeSpec) -> Result<RangeView, Status> {
        // The `Get` goes through the read index; its key does not matter.
        let key = String::from_utf8_lossy(&spec.request.range.key).into_owned();
        let answer = self.node.front.call_view(Op::Get { key }, Some(spec)).await.map_err(status)?;
        let view = answer.view.unwrap_or_default();
        match view.error {
            Some(e) => Err(kv_status(KvError::Revision(e))),
            None => Ok(view),
        }
    }

    /// etcd's two consistencies: linearizable (the default) on the leader
    /// through core's `Get` (the read index, or the leader's lease under
    /// --lease-reads); serializable from this member's own state, which
    /// may be stale but needs no leader (and so never uses the lease).
    /// A serializable read of `spec` on this member.
    async fn read_local(&self, spec: RangeSpec) -> Result<RangeView, Status> {
        let view = self.node.front.local_view(spec).await.map_err(status)?;
        match view.error {
            Some(e) => Err(kv_status(KvError::Revision(e))),
            None => Ok(view),
        }
    }

    pub async fn range_op(&self, req: RangeRequest) -> Result<RangeResponse, Status> {
        let request = core_range(&req)?;
        let view = if req.serializable {
            self.read_local(RangeSpec::client(request)).await?
        } else {
            self.read_range(RangeSpec::client(request)).await?
        };
        let kvs = view.kvs.iter().map(|(k, v)| key_value(k, v, req.keys_only)).collect();
        Ok(RangeResponse { header: self.header(view.revision), kvs, more: view.more, count: view.count as i64 })
    }

    pub async fn put_op(&self, req: PutRequest) -> Result<PutResponse, Status> {
        let op = RequestOp { request: Some(TxnOp::RequestPut(req)) };
        let resp = self.txn_op(TxnRequest { compare: vec![], success: vec![op], failure: vec![] }).await?;
        match resp.responses.into_iter().next().and_then(|r| r.response) {
            Some(TxnResp::ResponsePut(put)) => Ok(put),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    pub async fn delete_op(&self, req: DeleteRangeRequest) -> Result<DeleteRangeResponse, Status> {
        let op = RequestOp { request: Some(TxnOp::RequestDeleteRange(req)) };
        let resp = self.txn_op(TxnRequest { compare: vec![], success: vec![op], failure: vec![] }).await?;
        match resp.responses.into_iter().next().and_then(|r| r.response) {
            Some(TxnResp::ResponseDeleteRange(del)) => Ok(del),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    /// One core `Txn`: checked here as etcd's gRPC layer does (so a bad
    /// request is refused before it is proposed), applied as one entry.
    pub async fn txn_op(&self, req: TxnRequest) -> Result<TxnResponse, Status> {
        // etcd's capped applier: a txn that may put is refused under NOSPACE.
        let put_bytes = put_bytes(&req)?;
        if put_bytes > 0 {
            self.check_space(put_bytes)?;
        }
        let compares = req.compare.iter().map(core_compare).collect::<Result<Vec<_>, _>>()?;
        let success = Branch::new(req.success)?;
        let failure = Branch::new(req.failure)?;
        let txn = core::TxnRequest { compares, success: success.ops.clone(), failure: failure.ops.clone() };
        // Validated on the pieces a split delete became: those are what
        // etcd would have seen as one range.
        txn.validate().map_err(kv_status)?;
        match self.node.front.call(Op::Txn(txn)).await.map_err(status)? {
            Response::Txn(done) => {
                let branch = if done.succeeded { success } else { failure };
                let header = self.header(done.revision);
                let responses = branch.responses(done.responses, &header);
                Ok(TxnResponse { header, succeeded: done.succeeded, responses })
            }
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }
}

/// The bytes `txn`'s puts (nested ones too) may write; etcd's "request is
/// too large" for a put over [`MAX_REQUEST_BYTES`].
fn put_bytes(txn: &TxnRequest) -> Result<usize, Status> {
    let mut total = 0;
    for op in txn.success.iter().chain(&txn.failure) {
        match &op.request {
            Some(TxnOp::RequestPut(put)) => {
                if put.key.len() + put.value.len() > MAX_REQUEST_BYTES {
                    return Err(Status::invalid_argument("etcdserver: request is too large"));
                }
                total += put.key.len() + put.value.len();
            }
            Some(TxnOp::RequestTxn(nested)) => total += put_bytes(nested)?,
            _ => {}
        }
    }
    Ok(total)
}

/// One branch of a client's txn in core's terms: `ops` for core, and for
/// each client operation the shape of its answer.
struct Branch {
    ops: Vec<core::TxnOp>,
    shapes: Vec<Shape>,
}

/// What one client operation became in core.
enum Shape {
    /// This many core operations (a delete split around the reserved keys
    /// becomes two), and the put's key.
    Ops(usize, Vec<u8>),
    /// A nested txn, with its two branches.
    Txn(Box<Branch>, Box<Branch>),
}

impl Branch {
    fn new(ops: Vec<RequestOp>) -> Result<Self, Status> {
        let mut branch = Branch { ops: Vec::new(), shapes: Vec::new() };
        for op in ops {
            let before = branch.ops.len();
            let key = match op.request {
                Some(TxnOp::RequestPut(put)) => {
                    reserved(&put.key)?;
                    let lease = (put.lease != 0).then_some(put.lease as u64);
                    let (prev_kv, ignore_value, ignore_lease) = (put.prev_kv, put.ignore_value, put.ignore_lease);
                    let key = put.key.clone();
                    branch.ops.push(core::TxnOp::Put(core::PutRequest {
                        key: put.key,
                        value: put.value,
                        lease,
                        prev_kv,
                        ignore_value,
                        ignore_lease,
                    }));
                    key
                }
                Some(TxnOp::RequestDeleteRange(del)) => {
                    reserved(&del.key)?;
                    for range in around_reserved(KeyRange { key: del.key, range_end: del.range_end }) {
                        branch.ops.push(core::TxnOp::Delete(core::DeleteRequest { range, prev_kv: del.prev_kv }));
                    }
                    Vec::new()
                }
                Some(TxnOp::RequestRange(range)) => {
                    branch.ops.push(core::TxnOp::Range(core_range(&range)?));
                    Vec::new()
                }
                Some(TxnOp::RequestTxn(nested)) => {
                    let compares = nested.compare.iter().map(core_compare).collect::<Result<Vec<_>, _>>()?;
                    let (success, failure) = (Branch::new(nested.success)?, Branch::new(nested.failure)?);
                    let txn = core::TxnRequest { compares, success: success.ops.clone(), failure: failure.ops.clone() };
                    branch.ops.push(core::TxnOp::Txn(txn));
                    branch.shapes.push(Shape::Txn(Box::new(success), Box::new(failure)));
                    continue;
                }
                // etcd's checkRequestOp answers an empty operation so.
                None => return Err(kv_status(KvError::KeyNotFound)),
            };
            branch.shapes.push(Shape::Ops(branch.ops.len() - before, key));
        }
        Ok(branch)
    }

    /// The client's responses from core's, one per client operation.
    fn responses(self, core: Vec<TxnOpResponse>, header: &Option<ResponseHeader>) -> Vec<ResponseOp> {
        let mut core = core.into_iter();
        let shaped = self.shapes.into_iter().map(|shape| match shape {
            Shape::Ops(n, key) => {
                let parts: Vec<TxnOpResponse> = core.by_ref().take(n).collect();
                ResponseOp { response: Some(client_response(parts, &key, header)) }
            }
            Shape::Txn(success, failure) => {
                let Some(TxnOpResponse::Txn(done)) = core.next() else {
                    return ResponseOp { response: None };
                };
                let branch = if done.succeeded { success } else { failure };
                let responses = branch.responses(done.responses, header);
                // etcd's applier leaves a nested txn's header empty.
                let nested = TxnResponse { header: Some(ResponseHeader::default()), succeeded: done.succeeded, responses };
                ResponseOp { response: Some(TxnResp::ResponseTxn(nested)) }
            }
        });
        shaped.collect()
    }
}

fn client_response(parts: Vec<TxnOpResponse>, key: &[u8], header: &Option<ResponseHeader>) -> TxnResp {
    let header = *header;
    match parts.first() {
        Some(TxnOpResponse::Put { prev_kv }) => {
            TxnResp::ResponsePut(PutResponse { header, prev_kv: prev_kv.as_ref().map(|v| key_value(key, v, false)) })
        }
        Some(TxnOpResponse::Range(found)) => {
            let kvs: Vec<KeyValue> = found.kvs.iter().filter(|(k, _)| !is_reserved(k)).map(|(k, v)| key_value(k, v, false)).collect();
            let hidden = (found.kvs.len() - kvs.len()) as u64;
            TxnResp::ResponseRange(RangeResponse { header, more: found.more, count: (found.count - hidden) as i64, kvs })
        }
        _ => {
            let (mut deleted, mut prev_kvs) = (0, Vec::new());
            for part in parts {
                if let TxnOpResponse::Delete { deleted: d, prev_kvs: p } = part {
                    deleted += d as i64;
                    prev_kvs.extend(p.iter().map(|(k, v)| key_value(k, v, false)));
                }
            }
            TxnResp::ResponseDeleteRange(DeleteRangeResponse { header, deleted, prev_kvs })
        }
    }
}

/// `range` without the alarms' reserved prefix: itself, or the one or two
/// pieces on either side of the prefix.
fn around_reserved(range: KeyRange) -> Vec<KeyRange> {
    if range.range_end.is_empty() {
        return vec![range];
    }
    let start = ALARM_PREFIX.as_bytes().to_vec();
    let mut end = start.clone();
    *end.last_mut().expect("non-empty prefix") += 1;
    let unbounded = range.range_end == [0];
    let overlaps = range.key < end && (unbounded || range.range_end > start);
    if !overlaps {
        return vec![range];
    }
    let mut pieces = Vec::new();
    if range.key < start {
        pieces.push(KeyRange { key: range.key.clone(), range_end: start });
    }
    if unbounded || range.range_end > end {
        pieces.push(KeyRange { key: end.max(range.key), range_end: range.range_end });
    }
    pieces
}

/// Refuses a write into the alarms' reserved prefix.
fn reserved(key: &[u8]) -> Result<(), Status> {
    if is_reserved(key) {
        return Err(Status::invalid_argument("leasesim: keys under \\0leasesim/alarm/ are reserved for alarms"));
    }
    Ok(())
}

/// A revision or count field of a request: etcd's are int64, never negative.
fn unsigned(value: i64, field: &str) -> Result<u64, Status> {
    u64::try_from(value).map_err(|_| Status::invalid_argument(format!("leasesim: {field} must not be negative")))
}

/// etcd's range request in core's terms.
fn core_range(req: &RangeRequest) -> Result<core::RangeRequest, Status> {
    let sort_order = match SortOrder::try_from(req.sort_order).map_err(|_| Status::invalid_argument("leasesim: unknown sort_order"))? {
        SortOrder::None => core::SortOrder::None,
        SortOrder::Ascend => core::SortOrder::Ascend,
        SortOrder::Descend => core::SortOrder::Descend,
    };
    let sort_target = match SortTarget::try_from(req.sort_target).map_err(|_| Status::invalid_argument("leasesim: unknown sort_target"))? {
        SortTarget::Key => core::SortTarget::Key,
        SortTarget::Version => core::SortTarget::Version,
        SortTarget::Create => core::SortTarget::Create,
        SortTarget::Mod => core::SortTarget::Mod,
        SortTarget::Value => core::SortTarget::Value,
    };
    if req.key.is_empty() {
        return Err(kv_status(KvError::EmptyKey));
    }
    Ok(core::RangeRequest {
        range: KeyRange { key: req.key.clone(), range_end: req.range_end.clone() },
        revision: unsigned(req.revision, "revision")?,
        limit: unsigned(req.limit, "limit")?,
        keys_only: req.keys_only,
        count_only: req.count_only,
        sort_order,
        sort_target,
        min_mod_revision: unsigned(req.min_mod_revision, "min_mod_revision")?,
        max_mod_revision: unsigned(req.max_mod_revision, "max_mod_revision")?,
        min_create_revision: unsigned(req.min_create_revision, "min_create_revision")?,
        max_create_revision: unsigned(req.max_create_revision, "max_create_revision")?,
    })
}

/// etcd's compare in core's terms.
fn core_compare(compare: &Compare) -> Result<core::Compare, Status> {
    let bad = || Status::invalid_argument("etcdserver: bad compare");
    let result = match CompareResult::try_from(compare.result).map_err(|_| bad())? {
        CompareResult::Equal => core::CompareResult::Equal,
        CompareResult::NotEqual => core::CompareResult::NotEqual,
        CompareResult::Greater => core::CompareResult::Greater,
        CompareResult::Less => core::CompareResult::Less,
    };
    let number = |r: i64| u64::try_from(r).map_err(|_| bad());
    let target = match (CompareTarget::try_from(compare.target).map_err(|_| bad())?, &compare.target_union) {
        (CompareTarget::Value, Some(TargetUnion::Value(v))) => core::CompareTarget::Value(v.clone()),
        (CompareTarget::Create, Some(TargetUnion::CreateRevision(r))) => core::CompareTarget::CreateRevision(number(*r)?),
        (CompareTarget::Mod, Some(TargetUnion::ModRevision(r))) => core::CompareTarget::ModRevision(number(*r)?),
        (CompareTarget::Version, Some(TargetUnion::Version(v))) => core::CompareTarget::Version(number(*v)?),
        (CompareTarget::Lease, Some(TargetUnion::Lease(l))) => core::CompareTarget::Lease(number(*l)?),
        _ => return Err(bad()),
    };
    Ok(core::Compare { range: KeyRange { key: compare.key.clone(), range_end: compare.range_end.clone() }, target, result })
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

    async fn compact(&self, request: Request<CompactionRequest>) -> Reply<CompactionResponse> {
        // A valid token when auth is on; no key permission is involved.
        self.permit(&request, &[]).await?;
        let revision = unsigned(request.get_ref().revision, "revision")?;
        match self.node.front.call(Op::Compact { revision }).await.map_err(status)? {
            Response::Compacted { revision } => Ok(tonic::Response::new(CompactionResponse { header: self.header(revision) })),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }
}
