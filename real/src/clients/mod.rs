//! The scenario's workloads as real clients: tasks of the runner speaking
//! the etcd v3 gRPC API to the members (leases, the Lock service, KV) and
//! HTTP to the data store, shaped as the simulator's clients are (the same
//! think, hold, keep-alive and belief rules), and recording what they see
//! in the judge's vocabulary with the load tool's [`Recorder`] (true time:
//! CLOCK_MONOTONIC, shared by every process on this machine).
//!
//! `lock` and `registry` hold leases kept alive by `keeper`; `kv` sends
//! reads, writes and compare-and-sets on a few keys; `txn` sends multi-key
//! txns and `watch` follows a prefix (`wire` converts their requests and
//! answers between etcd's messages and the judge's words); `singleton`
//! instances take a role on their lease and run its job; `task_generator`
//! and `task_worker` are the task workload's generator and workers (a work
//! queue on leases, fenced at the data store's task rows). `aimed`: the
//! `messages` faults on client kinds, played on the clients' side;
//! `tasks`: the client tasks, crashed and restarted; `clock`: each
//! client's own skewable clock, which every timer and belief of a client
//! reads (true time is for the judge's stamps only).

pub mod aimed;
pub mod clock;
mod keeper;
pub mod kv;
pub mod lock;
pub mod registry;
pub mod singleton;
pub mod task_generator;
pub mod task_worker;
pub mod tasks;
pub mod txn;
pub mod watch;
pub mod wire;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasesim_node::tools::load::observed::Recorder;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tonic::transport::Channel;

/// What every client of a run shares.
pub struct Ctx {
    pub seen: Recorder,
    /// The initial voters' APIs, as the runner itself dials them.
    pub endpoints: Vec<String>,
    /// Where client `c` dials the members and the store, at `c - 1`: its
    /// own routes in a run that cuts clients' links (`routes.rs`), else
    /// the members' and the store's own addresses.
    pub dials: Vec<Dial>,
    /// When the clients stop (the end of the settle phase).
    pub until: Instant,
    /// How long a client waits for an answer before it tries the next
    /// member: the scenario's `client_timeout` ([`timeout_of`]).
    pub timeout: Duration,
    /// Lock key → the client that believes it holds it (`holder:KEY`).
    pub holders: Mutex<BTreeMap<String, u64>>,
    pub seed: u64,
    /// `messages` faults on the kinds clients send and read (`aimed.rs`).
    pub aims: aimed::ClientAims,
    /// Client `c`'s own clock at `c - 1` (`clock.rs`).
    pub clocks: Vec<Arc<clock::ClientClock>>,
    /// Against leasesim-node (`--unsafe-test-client-ids`): the last
    /// sequence number of client `c`'s lock calls at `c - 1`, which outlives
    /// its incarnations so that none is reused. `None` against etcd.
    pub lock_seqs: Option<Vec<AtomicU64>>,
}

/// Where one client dials.
#[derive(Clone, Debug)]
pub struct Dial {
    /// Each initial voter, in member order.
    pub endpoints: Vec<String>,
    pub store: String,
}

/// How long a client waits for an answer before it tries the next member:
/// the scenario's `client_timeout` as written, or as the seed's knobs drew
/// it (50, 150 or 500 ms in a chaos file with `knobs = true`), which is
/// what the simulator's clients wait. The runner held every client to at
/// least 500 ms before, so in chaos-watch-txn its clients sat up to ten
/// times longer than the simulated ones on a dead or cut-off member before
/// moving on (reports/sim-vs-real.md). An answer slower than a short
/// timeout is given up on, as in the simulator, whose draw keeps the
/// timeout at least four of the drawn one-way trips.
pub fn timeout_of(s: &leasesim_scenario::Scenario) -> Duration {
    Duration::from_nanos(s.cluster.client_timeout_ns)
}

/// How long a client waits after a request found no member (an error or
/// a timeout) before it tries the next one with a new connection.
pub const RETRY_PAUSE: Duration = Duration::from_millis(50);

impl Ctx {
    pub fn running(&self) -> bool {
        Instant::now() < self.until
    }

    /// A channel of client `client` to a member, trying them in turn
    /// from `attempt`.
    pub async fn channel(&self, client: u64, attempt: usize) -> Channel {
        leasesim_node::tools::load::channel(self.endpoints_of(client), attempt).await
    }

    /// Where client `client` dials each member.
    pub fn endpoints_of(&self, client: u64) -> &[String] {
        &self.dials[client as usize - 1].endpoints
    }

    /// Where client `client` reaches the data store.
    pub fn store_of(&self, client: u64) -> &str {
        &self.dials[client as usize - 1].store
    }

    /// `request` within the client timeout (`None`: no answer in time, or
    /// an error; either way the client tries another member).
    pub async fn ask<T, E>(&self, request: impl Future<Output = Result<T, E>>) -> Option<T> {
        tokio::time::timeout(self.timeout, request).await.ok()?.ok()
    }

    /// A client's own random stream: the run's seed and its id.
    pub fn rng(&self, client: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ client)
    }

    pub fn set_holder(&self, key: &str, client: Option<u64>) {
        let mut holders = self.holders.lock().expect("holders");
        match client {
            Some(c) => holders.insert(key.to_string(), c),
            None => holders.remove(key),
        };
    }

    /// Client `client`'s own clock: what its timers and beliefs read.
    pub fn clock(&self, client: u64) -> &Arc<clock::ClientClock> {
        &self.clocks[client as usize - 1]
    }

    /// A Lock or Unlock call of client `client`: against leasesim-node it
    /// names the client's own id and a new sequence number
    /// (`faults/client_ids.rs`), so the lock table records the acquire and
    /// the release under the scenario's client id.
    pub fn lock_call<T>(&self, client: u64, message: T) -> tonic::Request<T> {
        use leasesim_node::faults::client_ids;
        let mut request = tonic::Request::new(message);
        if let Some(seqs) = &self.lock_seqs {
            let seq = seqs[client as usize - 1].fetch_add(1, Ordering::Relaxed) + 1;
            let value = client_ids::value(client, seq).parse().expect("digits and a slash are ASCII");
            request.metadata_mut().insert(client_ids::HEADER, value);
        }
        request
    }

    pub fn holder(&self, key: &str) -> Option<u64> {
        self.holders.lock().expect("holders").get(key).copied()
    }
}

/// A duration drawn from `[lo_ns, hi_ns]`.
pub fn draw(rng: &mut ChaCha8Rng, (lo_ns, hi_ns): (u64, u64)) -> Duration {
    Duration::from_nanos(if hi_ns > lo_ns { rng.gen_range(lo_ns..=hi_ns) } else { lo_ns })
}

/// Whole seconds of a TTL (the etcd API's unit; `refuse.rs` refuses others).
pub fn ttl_secs(ttl_ns: u64) -> i64 {
    (ttl_ns / 1_000_000_000).max(1) as i64
}

pub type Shared = Arc<Ctx>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_wait_the_timeout_the_seed_drew_not_a_floor() {
        let text = include_str!("../../../scenarios/chaos-watch-txn.toml");
        let s = leasesim_scenario::parse(text, "chaos-watch-txn.toml").expect("a bundled scenario");
        // Seed 0 draws 50 ms, seed 2 150 ms, seed 1 500 ms (`knobs.rs`; the
        // sweep's JSON lists each seed's `client_timeout_ms`).
        for (seed, ms) in [(0, 50), (2, 150), (1, 500)] {
            let drawn = leasesim_scenario::chaos_draw::explicit(&s, seed);
            assert_eq!(timeout_of(&drawn), Duration::from_millis(ms), "seed {seed}");
        }
    }
}
