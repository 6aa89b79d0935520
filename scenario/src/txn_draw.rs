//! What a `txn` workload client sends, drawn once for both worlds: the
//! simulator's txn clients and `leasesim-real`'s draw their txns here, so a
//! seed asks the same questions of a simulated cluster and of a real one,
//! and a change to the workload's semantics cannot reach only one of them.
//!
//! A txn works on two or more distinct keys `t0…` in a drawn order: half
//! the time it reads them all; otherwise it writes one fresh value to all
//! of them if the first still holds what this client last read there (or
//! does not exist yet), and deletes that key if not. What a read saw is
//! remembered ([`note_reads`]) for the compares of later writes.

use std::collections::BTreeMap;

use leasesim_core::service::kv::KeyRange;
use leasesim_core::service::{
    Compare, CompareResult, CompareTarget, DeleteRequest, PutRequest, RangeRequest, Response, TxnOp, TxnOpResponse, TxnRequest,
};
use rand::seq::SliceRandom;
use rand::Rng;

/// What a txn client last read in each key (`None`: the key was absent).
pub type LastRead = BTreeMap<String, Option<String>>;

/// Draws the next txn over `key_count` keys. A write counts in `writes`
/// and writes `"{writer}.{writes}"`, unique per writer.
pub fn draw_txn<R: Rng>(rng: &mut R, key_count: u64, writer: &str, writes: &mut u64, last_read: &LastRead) -> TxnRequest {
    let mut keys: Vec<String> = (0..key_count).map(|k| format!("t{k}")).collect();
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

fn put(key: &str, value: &str) -> TxnOp {
    let (key, value) = (key.as_bytes().to_vec(), value.as_bytes().to_vec());
    TxnOp::Put(PutRequest { key, value, lease: None, prev_kv: false, ignore_value: false, ignore_lease: false })
}

/// Remembers what a read txn saw, for the compares of later writes (a
/// read txn has no compares, so it always takes its success branch).
pub fn note_reads(last_read: &mut LastRead, txn: &TxnRequest, response: &Response) {
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
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn txns_are_reads_or_conditional_writes_over_two_or_more_keys() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let last_read = BTreeMap::from([("t2".to_string(), Some("x".to_string()))]);
        let (mut writes, mut kinds) = (0, [0, 0]);
        for _ in 0..200 {
            let txn = draw_txn(&mut rng, 4, "c7", &mut writes, &last_read);
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
