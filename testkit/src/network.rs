//! The simulated network between harness nodes: messages in flight ordered
//! by delivery time, and the faults applied when a message is sent — loss,
//! duplication, random delay (hence reordering) and partitions. Every choice
//! comes from the harness's seeded PRNG.

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use leasesim_core::raft::Message;
use leasesim_core::types::NodeId;

use crate::toy::ToyState;

pub type TestMessage = Message<u64, ToyState>;

#[derive(Clone, Debug)]
pub struct Envelope {
    pub from: NodeId,
    pub to: NodeId,
    pub msg: TestMessage,
}

/// ScheduledFault knobs, changeable at any time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetFaults {
    /// Chance a message is lost, in thousandths.
    pub drop_permille: u32,
    /// Chance a message is delivered twice, in thousandths.
    pub dup_permille: u32,
    pub min_delay_ns: u64,
    pub max_delay_ns: u64,
}

/// The default network is reliable and in order: every message takes 1 ms,
/// so story tests see messages in the order they were sent.
impl Default for NetFaults {
    fn default() -> Self {
        NetFaults { drop_permille: 0, dup_permille: 0, min_delay_ns: 1_000_000, max_delay_ns: 1_000_000 }
    }
}

#[derive(Clone, Debug, Default)]
pub struct TestNetwork {
    pub faults: NetFaults,
    /// Directed links that lose everything (`(from, to)`).
    pub blocked: BTreeSet<(NodeId, NodeId)>,
    /// In flight, keyed by (delivery time, sequence number).
    pub(crate) in_flight: BTreeMap<(u64, u64), Envelope>,
    pub(crate) seq: u64,
    pub sent: u64,
    pub dropped: u64,
    pub duplicated: u64,
}

impl TestNetwork {
    /// Sends at `now_ns`, applying the fault knobs.
    pub fn send(&mut self, rng: &mut ChaCha8Rng, now_ns: u64, envelope: Envelope) {
        self.sent += 1;
        if self.blocked.contains(&(envelope.from, envelope.to)) || roll(rng, self.faults.drop_permille) {
            self.dropped += 1;
            return;
        }
        if roll(rng, self.faults.dup_permille) {
            self.duplicated += 1;
            let at = now_ns + self.delay(rng);
            self.push(at, envelope.clone());
        }
        let at = now_ns + self.delay(rng);
        self.push(at, envelope);
    }

    fn delay(&self, rng: &mut ChaCha8Rng) -> u64 {
        let max = self.faults.max_delay_ns.max(self.faults.min_delay_ns);
        rng.gen_range(self.faults.min_delay_ns..=max)
    }

    fn push(&mut self, at_ns: u64, envelope: Envelope) {
        self.seq += 1;
        self.in_flight.insert((at_ns, self.seq), envelope);
    }

    pub fn next_delivery_ns(&self) -> Option<u64> {
        self.in_flight.keys().next().map(|&(at, _)| at)
    }

    pub fn pop_next(&mut self) -> Option<Envelope> {
        self.in_flight.pop_first().map(|(_, e)| e)
    }

    /// Removes and returns the first message (in delivery order) matching.
    pub fn take_first(&mut self, mut pred: impl FnMut(&Envelope) -> bool) -> Option<Envelope> {
        let key = *self.in_flight.iter().find(|(_, e)| pred(e))?.0;
        self.in_flight.remove(&key)
    }

    /// Drops every message in flight matching; returns how many.
    pub fn drop_where(&mut self, mut pred: impl FnMut(&Envelope) -> bool) -> usize {
        let before = self.in_flight.len();
        self.in_flight.retain(|_, e| !pred(e));
        let n = before - self.in_flight.len();
        self.dropped += n as u64;
        n
    }

    pub fn in_flight(&self) -> impl Iterator<Item = &Envelope> {
        self.in_flight.values()
    }

    /// Cuts every link between `a` and `b` (both directions).
    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.blocked.insert((a, b));
        self.blocked.insert((b, a));
    }

    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.blocked.contains(&(from, to))
    }
}

fn roll(rng: &mut ChaCha8Rng, permille: u32) -> bool {
    permille > 0 && rng.gen_range(0..1000) < permille
}
