//! Workloads: the client processes a scenario runs. Each is a sans-IO actor
//! (see `host`) built on the core's client [`Session`], so a client's pause,
//! crash and clock drift act on it exactly as on a real process.
//!
//! - [`lock`]: acquire, check the belief, work, write with the token, release.
//! - [`registry`]: a key attached to a kept-alive lease.
//! - [`kv`]: random reads, writes and compare-and-sets, for linearizability.
//! - [`task`] and [`task_generator`]: the multi-instance lease design's workers claiming tasks on
//!   their lease, and the generator feeding them.
//! - [`singleton`]: the multi-instance lease design's instances competing for one lease-backed role.
//! - [`watch`] and [`txn`]: etcd's Watch, resumed across failures, and multi-key Txns.

pub mod keeper;
pub mod kv;
pub mod lock;
pub mod registry;
pub mod singleton;
pub mod task;
pub mod task_generator;
pub mod txn;
pub mod watch;

use leasesim_core::client::{ClientConfig, Session};
use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::{ClientId, NodeId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Sequence numbers of one incarnation of a client start here, so that a
/// restarted client never reuses a sequence number its session record holds.
const SEQS_PER_INCARNATION: u64 = 1 << 32;

/// What every client starts from, whatever its workload (and again after
/// each crash, with the next incarnation).
#[derive(Clone, Debug)]
pub struct ClientStart {
    pub id: ClientId,
    /// The voters, in the order the client first tries them.
    pub servers: Vec<NodeId>,
    pub run_seed: u64,
    /// How many times this client started before.
    pub incarnation: u64,
    /// How long the client waits for an answer before it sends the request
    /// again to the next server (`[cluster] client_timeout`).
    pub request_timeout_ns: u64,
    /// Planted bug `client-trusts-full-ttl` (for the clients that keep a
    /// belief in a lease).
    pub trust_full_ttl: bool,
}

impl ClientStart {
    /// The client's session: a request unanswered for `request_timeout_ns`
    /// is sent again to the next server.
    pub fn session(&self) -> Session {
        Session::new(ClientConfig {
            id: self.id,
            servers: self.servers.clone(),
            request_timeout_ns: self.request_timeout_ns,
            max_redirects: 3,
            first_seq: 1 + self.incarnation * SEQS_PER_INCARNATION,
        })
    }

    /// The client's private PRNG: its choices depend on the seed and on
    /// which client (and incarnation) it is, never on scheduling.
    pub fn rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(derive_seed(self.run_seed, Stream::Client(self.id), self.incarnation))
    }
}

/// Draws uniformly from an inclusive range of nanoseconds.
pub fn draw_ns(rng: &mut ChaCha8Rng, (lo_ns, hi_ns): (u64, u64)) -> u64 {
    use rand::Rng;
    if lo_ns >= hi_ns {
        lo_ns
    } else {
        rng.gen_range(lo_ns..=hi_ns)
    }
}
