//! The KV workload: each client issues gets, puts and compare-and-sets on a
//! small key space — one at a time, or up to `in_flight` open at once — and
//! records each call and return (true time) for the linearizability checker.
//! An operation still pending at the end of the run has an unknown outcome.
//!
//! With several open, a client calls the next operation `interval` after its
//! last call while fewer than `in_flight` are unanswered, and `interval`
//! after an answer frees a slot of a full client; with `in_flight = 1` that
//! is exactly one operation at a time, `interval` after each answer.

use std::collections::BTreeSet;

use leasesim_core::client::Session;
use leasesim_core::service::{ClientResponse, Op};
use leasesim_core::ClientId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{draw_ns, ClientStart};
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::KvWorkload;

pub struct KvClient {
    id: ClientId,
    spec: KvWorkload,
    incarnation: u64,
    rng: ChaCha8Rng,
    session: Session,
    /// Sequence numbers of the operations called and not yet answered.
    open: BTreeSet<u64>,
    next_op_mono_ns: u64,
    /// Values written are unique per client and incarnation, so a read
    /// names the write it saw.
    writes: u64,
}

impl KvClient {
    pub fn new(start: ClientStart, spec: KvWorkload) -> Self {
        let (id, incarnation, rng, session) = (start.id, start.incarnation, start.rng(), start.session());
        KvClient { id, spec, incarnation, rng, session, open: BTreeSet::new(), next_op_mono_ns: 0, writes: 0 }
    }

    fn draw_op(&mut self) -> Op {
        let key = format!("k{}", self.rng.gen_range(0..(self.spec.keys as usize).max(1)));
        self.writes += 1;
        let value = format!("c{}.{}.{}", self.id, self.incarnation, self.writes);
        match self.rng.gen_range(0..3) {
            0 => Op::Get { key },
            1 => Op::Put { key, value, lease: None },
            _ => {
                let expected = if self.rng.gen_bool(0.2) {
                    None
                } else {
                    let earlier = self.rng.gen_range(1..=self.writes);
                    Some(format!("c{}.{}.{}", self.id, self.incarnation, earlier))
                };
                Op::Cas { key, expected, value, lease: None }
            }
        }
    }

    fn is_full(&self) -> bool {
        self.open.len() as u64 >= self.spec.in_flight.max(1)
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session.take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }
}

impl Actor for KvClient {
    fn start(&mut self, step: &mut Step<'_>) {
        self.next_op_mono_ns = step.mono_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        let Wire::Response(response) = wire else {
            panic!("c{} got an unexpected message from {from}: {wire:?}", self.id);
        };
        let response: ClientResponse = response;
        if let Some(done) = self.session.on_response(step.mono_ns, response) {
            let was_full = self.is_full();
            if self.open.remove(&done.seq) {
                step.record(Event::KvReturn { seq: done.seq, response: done.response });
                if was_full {
                    self.next_op_mono_ns = step.mono_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
                }
            }
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        self.session.tick(step.mono_ns);
        if !self.is_full() && self.next_op_mono_ns <= step.mono_ns {
            let op = self.draw_op();
            let seq = self.session.submit(step.mono_ns, op.clone());
            step.record(Event::KvCall { seq, op });
            self.open.insert(seq);
            if !self.is_full() {
                self.next_op_mono_ns = step.mono_ns + draw_ns(&mut self.rng, self.spec.interval_ns);
            }
        }
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let session_ns = self.session.next_deadline_ns();
        let op_ns = if self.is_full() { None } else { Some(self.next_op_mono_ns) };
        session_ns.into_iter().chain(op_ns).min()
    }
}
