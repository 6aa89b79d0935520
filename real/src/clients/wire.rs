//! The txn and watch workloads' requests and answers between the judge's
//! words (core's service types, which the simulator's clients record) and
//! the etcd v3 gRPC messages the real clients send and receive. Only what
//! those workloads use is converted: equality compares on a value or on a
//! version, single-key puts, deletes and gets; anything else is a bug of
//! this crate's clients and panics with what it was.

use leasesim_core::service::kv::{Change, KvValue};
use leasesim_core::service::{
    Compare, CompareResult, CompareTarget, RangeResponse, Response, TxnOp, TxnOpResponse, TxnRequest, TxnResponse,
};
use leasesim_node::pb::etcdserverpb as pb;
use leasesim_node::pb::etcdserverpb::compare::{CompareResult as PbResult, CompareTarget as PbTarget, TargetUnion};
use leasesim_node::pb::etcdserverpb::request_op::Request as PbOp;
use leasesim_node::pb::etcdserverpb::response_op::Response as PbAnswer;
use leasesim_node::pb::mvccpb;

/// The compare of a create-if-absent (the singleton's take, a task
/// worker's claim): `key` has never been created, or was deleted since.
pub fn never_created(key: &[u8]) -> pb::Compare {
    pb::Compare {
        key: key.to_vec(),
        result: PbResult::Equal as i32,
        target: PbTarget::Create as i32,
        target_union: Some(TargetUnion::CreateRevision(0)),
        ..Default::default()
    }
}

/// The etcd request for one of the txn workload's txns.
pub fn txn_request(txn: &TxnRequest) -> pb::TxnRequest {
    pb::TxnRequest {
        compare: txn.compares.iter().map(compare).collect(),
        success: txn.success.iter().map(op).collect(),
        failure: txn.failure.iter().map(op).collect(),
    }
}

fn compare(c: &Compare) -> pb::Compare {
    assert_eq!(c.result, CompareResult::Equal, "the txn workload compares for equality only");
    let (target, union) = match &c.target {
        CompareTarget::Value(v) => (PbTarget::Value, TargetUnion::Value(v.clone())),
        CompareTarget::Version(v) => (PbTarget::Version, TargetUnion::Version(*v as i64)),
        other => panic!("the txn workload makes no {other:?} compare"),
    };
    pb::Compare {
        key: c.range.key.clone(),
        range_end: c.range.range_end.clone(),
        result: PbResult::Equal as i32,
        target: target as i32,
        target_union: Some(union),
    }
}

fn op(op: &TxnOp) -> pb::RequestOp {
    let request = match op {
        TxnOp::Range(r) => {
            PbOp::RequestRange(pb::RangeRequest { key: r.range.key.clone(), range_end: r.range.range_end.clone(), ..Default::default() })
        }
        TxnOp::Put(p) => PbOp::RequestPut(pb::PutRequest { key: p.key.clone(), value: p.value.clone(), ..Default::default() }),
        TxnOp::Delete(d) => PbOp::RequestDeleteRange(pb::DeleteRangeRequest {
            key: d.range.key.clone(),
            range_end: d.range.range_end.clone(),
            ..Default::default()
        }),
        other => panic!("the txn workload makes no {other:?}"),
    };
    pb::RequestOp { request: Some(request) }
}

/// A value as etcd shows it, in the judge's words.
pub fn value(kv: &mvccpb::KeyValue) -> KvValue {
    KvValue {
        value: kv.value.clone(),
        create_revision: kv.create_revision.max(0) as u64,
        mod_revision: kv.mod_revision.max(0) as u64,
        version: kv.version.max(0) as u64,
        lease: (kv.lease > 0).then_some(kv.lease as u64),
    }
}

/// An etcd txn answer in the judge's words (what the txn checker reads:
/// whether it succeeded, and what each get found).
pub fn txn_response(answer: &pb::TxnResponse) -> Response {
    let revision = answer.header.as_ref().map_or(0, |h| h.revision.max(0) as u64);
    let responses = answer.responses.iter().filter_map(|r| r.response.as_ref()).map(op_response).collect();
    Response::Txn(TxnResponse { succeeded: answer.succeeded, revision, responses })
}

fn op_response(answer: &PbAnswer) -> TxnOpResponse {
    match answer {
        PbAnswer::ResponseRange(r) => TxnOpResponse::Range(RangeResponse {
            kvs: r.kvs.iter().map(|kv| (kv.key.clone(), value(kv))).collect(),
            count: r.count.max(0) as u64,
            more: r.more,
            revision: r.header.as_ref().map_or(0, |h| h.revision.max(0) as u64),
        }),
        PbAnswer::ResponsePut(p) => TxnOpResponse::Put { prev_kv: p.prev_kv.as_ref().map(value) },
        PbAnswer::ResponseDeleteRange(d) => TxnOpResponse::Delete {
            deleted: d.deleted.max(0) as u64,
            prev_kvs: d.prev_kvs.iter().map(|kv| (kv.key.clone(), value(kv))).collect(),
        },
        PbAnswer::ResponseTxn(t) => match txn_response(t) {
            Response::Txn(inner) => TxnOpResponse::Txn(inner),
            _ => unreachable!("txn_response answers a txn"),
        },
    }
}

/// One watch event as a change of the store (`current: None`: a delete).
pub fn change(event: &mvccpb::Event) -> Option<Change> {
    let kv = event.kv.as_ref()?;
    let deleted = event.r#type == mvccpb::event::EventType::Delete as i32;
    Some(Change {
        revision: kv.mod_revision.max(0) as u64,
        key: kv.key.clone(),
        prev: event.prev_kv.as_ref().map(value),
        current: (!deleted).then(|| value(kv)),
    })
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::{DeleteRequest, PutRequest, RangeRequest};

    use leasesim_core::service::kv::KeyRange;

    use super::*;

    #[test]
    fn a_workload_txn_goes_out_as_etcd_reads_it() {
        let range = KeyRange::single(b"t0");
        let txn = TxnRequest {
            compares: vec![Compare { range: range.clone(), target: CompareTarget::Version(0), result: CompareResult::Equal }],
            success: vec![TxnOp::Put(PutRequest {
                key: b"t1".to_vec(),
                value: b"v".to_vec(),
                lease: None,
                prev_kv: false,
                ignore_value: false,
                ignore_lease: false,
            })],
            failure: vec![TxnOp::Delete(DeleteRequest { range: range.clone(), prev_kv: false }), TxnOp::Range(RangeRequest::of(range))],
        };
        let sent = txn_request(&txn);
        assert_eq!(sent.compare[0].target, PbTarget::Version as i32);
        assert_eq!(sent.compare[0].target_union, Some(TargetUnion::Version(0)));
        assert!(matches!(&sent.success[0].request, Some(PbOp::RequestPut(p)) if p.key == b"t1" && p.value == b"v"));
        assert!(matches!(&sent.failure[0].request, Some(PbOp::RequestDeleteRange(d)) if d.key == b"t0" && d.range_end.is_empty()));
        assert!(matches!(&sent.failure[1].request, Some(PbOp::RequestRange(r)) if r.key == b"t0"));
    }

    #[test]
    fn an_answer_and_a_delete_event_come_back_in_the_judges_words() {
        let kv = mvccpb::KeyValue { key: b"t0".to_vec(), value: b"a".to_vec(), mod_revision: 7, version: 2, ..Default::default() };
        let range = pb::RangeResponse { kvs: vec![kv.clone()], count: 1, ..Default::default() };
        let answer = pb::TxnResponse {
            succeeded: true,
            responses: vec![pb::ResponseOp { response: Some(PbAnswer::ResponseRange(range)) }],
            ..Default::default()
        };
        let Response::Txn(got) = txn_response(&answer) else { panic!("a txn answer") };
        assert!(got.succeeded);
        assert!(matches!(&got.responses[0], TxnOpResponse::Range(r) if r.kvs[0].1.value == b"a" && r.kvs[0].1.mod_revision == 7));
        let gone = mvccpb::KeyValue { key: b"t0".to_vec(), mod_revision: 9, ..Default::default() };
        let event = mvccpb::Event { r#type: mvccpb::event::EventType::Delete as i32, kv: Some(gone), prev_kv: Some(kv) };
        let change = change(&event).expect("a change");
        assert_eq!((change.revision, change.current.is_none()), (9, true));
        assert_eq!(change.prev.map(|p| p.value), Some(b"a".to_vec()));
    }

    #[test]
    fn a_prefix_covers_exactly_its_keys() {
        let r = KeyRange::prefix(b"t");
        assert!(r.contains(b"t0") && r.contains(b"t") && !r.contains(b"u") && !r.contains(b"s9"));
        assert_eq!(KeyRange::prefix(b""), KeyRange { key: vec![0], range_end: vec![0] });
    }
}
