//! The harness's network and fault schedule: seeded drops, delays (which
//! reorder), duplicates, partitions, and a timeline of crashes and
//! isolations that keeps a majority of servers working at all times.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::server::PeerMessage;
use leasesim_core::service::{ClientRequest, ClientResponse};
use leasesim_core::{ClientId, NodeId, NS_PER_MS};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A process of the harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proc {
    Server(NodeId),
    Client(ClientId),
}

#[derive(Clone, Debug)]
pub enum Payload {
    Peer(PeerMessage),
    Request(ClientRequest),
    Response(ClientResponse),
}

#[derive(Clone, Debug)]
pub struct Delivery {
    pub from: Proc,
    pub to: Proc,
    pub payload: Payload,
}

/// Message-level faults, drawn per message from the seed.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryFaults {
    pub drop: f64,
    pub duplicate: f64,
    /// One-way delay range; random delays reorder messages.
    pub delay_ns: (u64, u64),
}

impl DeliveryFaults {
    pub fn calm() -> Self {
        DeliveryFaults { drop: 0.0, duplicate: 0.0, delay_ns: (NS_PER_MS, 5 * NS_PER_MS) }
    }
}

/// Process-level faults of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineFault {
    Crash(Target),
    Restart(NodeId),
    /// Cut a server off from the other servers (and from clients if `clients`).
    Isolate {
        target: Target,
        clients: bool,
    },
    Heal,
}

/// Whom a fault hits: resolved when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Server(NodeId),
    Leader,
}

/// Draws a fault timeline: one fault at a time, each undone before the next,
/// so a majority always works and the cluster can make progress.
pub fn draw_timeline(rng: &mut ChaCha8Rng, servers: u64, start_ns: u64, end_ns: u64) -> Vec<(u64, TimelineFault)> {
    let mut timeline = Vec::new();
    let mut t = start_ns + rng.gen_range(300..1500) * NS_PER_MS;
    while t < end_ns {
        let target = if rng.gen_bool(0.5) { Target::Leader } else { Target::Server(rng.gen_range(1..=servers)) };
        let length_ns = rng.gen_range(200..1500) * NS_PER_MS;
        if rng.gen_bool(0.5) {
            timeline.push((t, TimelineFault::Crash(target)));
            // Restart is resolved against whoever the crash hit.
            timeline.push((t + length_ns, TimelineFault::Restart(0)));
        } else {
            timeline.push((t, TimelineFault::Isolate { target, clients: rng.gen_bool(0.5) }));
            timeline.push((t + length_ns, TimelineFault::Heal));
        }
        t += length_ns + rng.gen_range(300..1500) * NS_PER_MS;
    }
    timeline
}

/// Links cut by isolation: server → whether clients are cut too.
#[derive(Clone, Debug, Default)]
pub struct Partitions {
    pub isolated: BTreeMap<NodeId, bool>,
    /// Servers cut off from clients only.
    pub clients_cut: BTreeSet<NodeId>,
}

impl Partitions {
    pub fn blocks(&self, from: Proc, to: Proc) -> bool {
        let cut = |a: Proc, b: Proc| match (a, b) {
            (Proc::Server(s), Proc::Server(_)) => self.isolated.contains_key(&s),
            (Proc::Server(s), Proc::Client(_)) => self.isolated.get(&s).copied().unwrap_or(false) || self.clients_cut.contains(&s),
            _ => false,
        };
        from != to && (cut(from, to) || cut(to, from))
    }
}
