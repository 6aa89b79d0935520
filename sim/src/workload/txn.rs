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
use leasesim_core::service::{Op, TxnRequest};
use leasesim_core::ClientId;
use rand_chacha::ChaCha8Rng;

use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::txn_draw;
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
    last_read: txn_draw::LastRead,
}

impl TxnClient {
    pub fn new(start: ClientStart, spec: TxnWorkload) -> Self {
        let (id, incarnation, rng, session) = (start.id, start.incarnation, start.rng(), start.session());
        let (open, next_op_mono_ns, writes, last_read) = (None, 0, 0, BTreeMap::new());
        TxnClient { id, spec, incarnation, rng, session, open, next_op_mono_ns, writes, last_read }
    }

    fn draw_txn(&mut self) -> TxnRequest {
        let writer = format!("c{}.{}", self.id, self.incarnation);
        txn_draw::draw_txn(&mut self.rng, self.spec.keys, &writer, &mut self.writes, &self.last_read)
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
                if let Op::Txn(txn) = &done.op {
                    txn_draw::note_reads(&mut self.last_read, txn, &done.response);
                }
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
