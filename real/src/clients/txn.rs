//! The txn workload for real (the simulator's `workload/txn.rs`): each
//! client sends etcd Txns over several of the keys `t0`, `t1`, …, one at a
//! time, `interval` apart, and records each call and answer for the
//! judge's multi-key linearizability check. Two kinds, drawn half and half
//! as the simulator draws them:
//!
//! - a conditional write: compare one of the chosen keys with the value
//!   this client last read there (or its absence), then put one new value
//!   into every chosen key; else delete the compared key;
//! - a read of several keys as one txn (one revision: an atomic snapshot).
//!
//! A txn without an answer in time has an unknown outcome and no return
//! (the checker lets it have happened or not); the client then goes on at
//! the next member. The keys are the simulator's own names: every real run
//! starts a fresh cluster, so they start absent as the checker assumes.

use std::collections::BTreeMap;

use leasesim_core::service::kv::KeyRange;
use leasesim_core::service::{
    Compare, CompareResult, CompareTarget, DeleteRequest, Op, PutRequest, RangeRequest, Response, TxnOp, TxnOpResponse, TxnRequest,
};
use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_scenario::TxnWorkload;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{draw, wire, Shared};
use crate::gate::Pass;

pub async fn run(ctx: Shared, client: u64, spec: TxnWorkload, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(attempt).await);
    let mut last_read: BTreeMap<String, Option<String>> = BTreeMap::new();
    let (mut seq, mut writes) = (0u64, 0u64);
    // Values stay unique if this client is started again (a crash).
    let writer = format!("c{client}.{}", ctx.seen.now_ns());
    while ctx.running() {
        pass.sleep(draw(&mut rng, spec.interval_ns)).await;
        seq += 1;
        let txn = draw_txn(&mut rng, &spec, &writer, &mut writes, &last_read);
        let request = wire::txn_request(&txn);
        let call_ns = ctx.seen.record(client, Event::KvCall { seq, op: Op::Txn(txn.clone()) });
        match ctx.ask(kv.txn(request)).await {
            Some(answer) => {
                let response = wire::txn_response(answer.get_ref());
                note_reads(&mut last_read, &txn, &response);
                ctx.seen.answered(client, call_ns, Event::KvReturn { seq, response });
            }
            None => {
                attempt += 1;
                kv = KvClient::new(ctx.channel(attempt).await);
            }
        }
    }
}

fn put(key: &str, value: &str) -> TxnOp {
    let (key, value) = (key.as_bytes().to_vec(), value.as_bytes().to_vec());
    TxnOp::Put(PutRequest { key, value, lease: None, prev_kv: false, ignore_value: false, ignore_lease: false })
}

/// Two or more distinct keys in a drawn order, then the txn over them.
/// Written values are unique: the writer's name and `writes`, its count.
fn draw_txn(
    rng: &mut ChaCha8Rng,
    spec: &TxnWorkload,
    writer: &str,
    writes: &mut u64,
    last_read: &BTreeMap<String, Option<String>>,
) -> TxnRequest {
    let mut keys: Vec<String> = (0..spec.keys).map(|k| format!("t{k}")).collect();
    keys.shuffle(rng);
    let count = rng.gen_range(2..=keys.len());
    keys.truncate(count);
    if rng.gen_bool(0.5) {
        let success = keys.iter().map(|k| TxnOp::Range(RangeRequest::of(KeyRange::single(k.as_bytes())))).collect();
        return TxnRequest { compares: Vec::new(), success, failure: Vec::new() };
    }
    *writes += 1;
    let value = format!("{writer}.{writes}");
    let compared = &keys[0];
    let target = match last_read.get(compared).cloned().flatten() {
        Some(seen) => CompareTarget::Value(seen.into_bytes()),
        None => CompareTarget::Version(0),
    };
    let compare = Compare { range: KeyRange::single(compared.as_bytes()), target, result: CompareResult::Equal };
    let success = keys.iter().map(|k| put(k, &value)).collect();
    let failure = vec![TxnOp::Delete(DeleteRequest { range: KeyRange::single(compared.as_bytes()), prev_kv: false })];
    TxnRequest { compares: vec![compare], success, failure }
}

/// Remembers what a read txn saw, for the compares of later writes.
fn note_reads(last_read: &mut BTreeMap<String, Option<String>>, txn: &TxnRequest, response: &Response) {
    let Response::Txn(answer) = response else { return };
    if !answer.succeeded {
        return;
    }
    for (asked, got) in txn.success.iter().zip(&answer.responses) {
        if let (TxnOp::Range(range), TxnOpResponse::Range(found)) = (asked, got) {
            let value = found.kvs.first().map(|(_, v)| String::from_utf8_lossy(&v.value).into_owned());
            last_read.insert(String::from_utf8_lossy(&range.range.key).into_owned(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::kv::KvValue;
    use leasesim_core::service::{RangeResponse, TxnResponse};
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn txns_are_reads_or_conditional_writes_over_two_or_more_keys() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let spec = TxnWorkload { keys: 4, interval_ns: (1, 1) };
        let last_read = BTreeMap::from([("t2".to_string(), Some("x".to_string()))]);
        let (mut writes, mut kinds) = (0, [0, 0]);
        for _ in 0..200 {
            let txn = draw_txn(&mut rng, &spec, "c7", &mut writes, &last_read);
            assert!(txn.success.len() >= 2, "{txn:?}");
            if txn.compares.is_empty() {
                kinds[0] += 1;
                assert!(txn.success.iter().all(|op| matches!(op, TxnOp::Range(_))));
            } else {
                kinds[1] += 1;
                let c = &txn.compares[0];
                let expected = if c.range.key == b"t2" { CompareTarget::Value(b"x".to_vec()) } else { CompareTarget::Version(0) };
                assert_eq!(c.target, expected);
                assert!(matches!(&txn.failure[..], [TxnOp::Delete(d)] if d.range == c.range));
                let value = format!("c7.{writes}").into_bytes();
                assert!(txn.success.iter().all(|op| matches!(op, TxnOp::Put(p) if p.value == value)));
            }
        }
        assert!(kinds[0] > 50 && kinds[1] > 50, "both kinds drawn: {kinds:?}");
        assert_eq!(writes, kinds[1]);
    }

    #[test]
    fn a_read_txn_is_remembered_for_later_compares() {
        let get = |k: &str| TxnOp::Range(RangeRequest::of(KeyRange::single(k.as_bytes())));
        let read = TxnRequest { compares: Vec::new(), success: vec![get("t0"), get("t1")], failure: Vec::new() };
        let value = KvValue { value: b"a".to_vec(), create_revision: 1, mod_revision: 1, version: 1, lease: None };
        let found = TxnOpResponse::Range(RangeResponse { kvs: vec![(b"t0".to_vec(), value)], ..Default::default() });
        let missing = TxnOpResponse::Range(RangeResponse::default());
        let answer = TxnResponse { succeeded: true, revision: 1, responses: vec![found, missing] };
        let mut last_read = BTreeMap::new();
        note_reads(&mut last_read, &read, &Response::Txn(answer));
        let expected = BTreeMap::from([("t0".to_string(), Some("a".to_string())), ("t1".to_string(), None)]);
        assert_eq!(last_read, expected);
    }
}
