//! The txn workload: each client issues etcd Txns over several keys
//! (`t0`, `t1`, …), one at a time, and records each call and return (true
//! time) for the multi-key linearizability check. Two kinds:
//!
//! - a conditional write: compare one of the chosen keys with the value
//!   this client last read there (or its absence), then put one new value
//!   into every chosen key; else delete the compared key;
//! - a read of several keys as one txn (one revision: an atomic snapshot).
//!
//! A txn applied in two steps is seen by a read that finds the keys of one
//! write holding different values, or by a watcher seeing its changes at
//! two revisions.

use std::collections::BTreeMap;

use leasesim_core::client::Session;
use leasesim_core::service::kv::KeyRange;
use leasesim_core::service::{
    Compare, CompareResult, CompareTarget, DeleteRequest, Op, PutRequest, RangeRequest, Response, TxnOp, TxnOpResponse, TxnRequest,
};
use leasesim_core::ClientId;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::TxnWorkload;

pub struct TxnClient {
    id: ClientId,
    spec: TxnWorkload,
    incarnation: u64,
    rng: ChaCha8Rng,
    session: Session,
    /// The txn called and not yet answered.
    open: Option<u64>,
    next_op_mono_ns: u64,
    /// Values written are unique per client and incarnation.
    writes: u64,
    /// What this client's last read saw in each key (compares use it).
    last_read: BTreeMap<String, Option<String>>,
}

fn put(key: &str, value: &str) -> TxnOp {
    let (key, value) = (key.as_bytes().to_vec(), value.as_bytes().to_vec());
    TxnOp::Put(PutRequest { key, value, lease: None, prev_kv: false, ignore_value: false, ignore_lease: false })
}

impl TxnClient {
    pub fn new(start: ClientStart, spec: TxnWorkload) -> Self {
        let (id, incarnation, rng, session) = (start.id, start.incarnation, start.rng(), start.session());
        let (open, next_op_mono_ns, writes, last_read) = (None, 0, 0, BTreeMap::new());
        TxnClient { id, spec, incarnation, rng, session, open, next_op_mono_ns, writes, last_read }
    }

    /// Two or more distinct keys, in a drawn order.
    fn draw_keys(&mut self) -> Vec<String> {
        let mut keys: Vec<String> = (0..self.spec.keys).map(|k| format!("t{k}")).collect();
        keys.shuffle(&mut self.rng);
        let count = self.rng.gen_range(2..=keys.len());
        keys.truncate(count);
        keys
    }

    fn draw_txn(&mut self) -> TxnRequest {
        let keys = self.draw_keys();
        if self.rng.gen_bool(0.5) {
            let success = keys.iter().map(|k| TxnOp::Range(RangeRequest::of(KeyRange::single(k.as_bytes())))).collect();
            return TxnRequest { compares: Vec::new(), success, failure: Vec::new() };
        }
        self.writes += 1;
        let value = format!("c{}.{}.{}", self.id, self.incarnation, self.writes);
        let compared = &keys[0];
        let target = match self.last_read.get(compared).cloned().flatten() {
            Some(seen) => CompareTarget::Value(seen.into_bytes()),
            None => CompareTarget::Version(0),
        };
        let compare = Compare { range: KeyRange::single(compared.as_bytes()), target, result: CompareResult::Equal };
        let success = keys.iter().map(|k| put(k, &value)).collect();
        let failure = vec![TxnOp::Delete(DeleteRequest { range: KeyRange::single(compared.as_bytes()), prev_kv: false })];
        TxnRequest { compares: vec![compare], success, failure }
    }

    /// Remembers what a read txn saw, for the compares of later writes.
    fn note_reads(&mut self, op: &Op, response: &Response) {
        let (Op::Txn(txn), Response::Txn(answer)) = (op, response) else { return };
        for (asked, got) in txn.success.iter().zip(&answer.responses) {
            if let (TxnOp::Range(range), TxnOpResponse::Range(found)) = (asked, got) {
                let value = found.kvs.first().map(|(_, v)| String::from_utf8_lossy(&v.value).into_owned());
                self.last_read.insert(String::from_utf8_lossy(&range.range.key).into_owned(), value);
            }
        }
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session.take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for TxnClient {
    fn start(&mut self, step: &mut Step<'_>) {
        self.next_op_mono_ns = step.mono_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        let Wire::Response(response) = wire else {
            panic!("c{} got an unexpected message from {from}: {wire:?}", self.id);
        };
        if let Some(done) = self.session.on_response(step.mono_ns, response) {
            if self.open == Some(done.seq) {
                self.open = None;
                self.note_reads(&done.op, &done.response);
                step.record(Event::KvReturn { seq: done.seq, response: done.response });
                self.next_op_mono_ns = step.mono_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
            }
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        self.session.tick(step.mono_ns);
        if self.open.is_none() && self.next_op_mono_ns <= step.mono_ns {
            let op = Op::Txn(self.draw_txn());
            let seq = self.session.submit(step.mono_ns, op.clone());
            step.record(Event::KvCall { seq, op });
            self.open = Some(seq);
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let session_ns = self.session.next_deadline_ns();
        let op_ns = if self.open.is_some() { None } else { Some(self.next_op_mono_ns) };
        session_ns.into_iter().chain(op_ns).min()
    }
}
