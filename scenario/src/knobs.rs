//! Swarm testing over the engine's own knobs (`[chaos] knobs = true`): each
//! seed draws the settings a deployment might choose — entries per append
//! down to one, heartbeat and election timeouts, how often to snapshot,
//! message latency up to half an election timeout, the clients' keep-alive
//! interval, the expiry strategy, whether keep-alives wait for a read-index
//! round (or are answered at once, as etcd's lessor does), how soon clients
//! give up on a server, the pipelining depth, how many requests each KV
//! client keeps open — because a testbed that always runs one
//! configuration never meets the bugs that need another (a follower more
//! than one batch behind needs small batches; a deposed leader is only
//! asked by clients that switch servers slowly).
//!
//! Like the rest of chaos, the draw comes out as plain scenario values
//! (`[cluster]`, `[network]`, each workload's `keepalive`), so the explicit
//! scenario `shrink` writes replays the seed exactly, and the run's JSON
//! lists what was drawn.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::ExpiryStrategy;

use crate::{Scenario, WorkloadKind};

const MS: u64 = 1_000_000;

/// What one seed drew (also its JSON, in the run's `knobs` field).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knobs {
    pub max_append_entries: u64,
    pub snapshot_every: u64,
    pub election_timeout_ms: (u64, u64),
    pub heartbeat_ms: u64,
    pub latency_us: (u64, u64),
    /// Every lease-holding workload keeps alive at TTL / this.
    pub keepalives_per_ttl: u64,
    pub lease_expiry: &'static str,
    pub keepalive_read_index: bool,
    /// How long clients wait before asking the next server.
    pub client_timeout_ms: u64,
    /// Pipelining depth: unacknowledged AppendEntries per follower.
    pub max_in_flight_appends: u64,
    /// Operations each KV client keeps open at once.
    pub kv_in_flight: u64,
}

/// The knobs `seed` draws, if the scenario asks for them.
pub fn draw(scenario: &Scenario, seed: u64) -> Option<Knobs> {
    if !scenario.chaos.as_ref().is_some_and(|c| c.knobs) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, Stream::Knobs, 0));
    let max_append_entries = *[1, 2, 4, 16, 64].choose(&mut rng).expect("choices");
    let snapshot_every = *[8, 32, 128, 1000].choose(&mut rng).expect("choices");
    // A grant's TTL must stay at least 1.5 election timeouts (the service's
    // minimum, as etcd's): the draw stays under what the workloads allow.
    let ttl_min_ns = scenario.workloads.iter().filter_map(|w| w.kind.lease_ttl_ns()).min().unwrap_or(u64::MAX);
    let election_cap_ns = (ttl_min_ns / 3 * 2).max(20 * MS);
    let election_min_ns =
        [50, 100, 150, 300, 600].map(|ms| ms * MS).into_iter().filter(|ns| ns * 3 / 2 <= election_cap_ns).collect::<Vec<_>>();
    let election_min_ns = election_min_ns.choose(&mut rng).copied().unwrap_or(election_cap_ns * 2 / 3);
    let spread = *[1.2, 1.5, 2.0].choose(&mut rng).expect("choices");
    let election_max_ns = ((election_min_ns as f64 * spread) as u64).min(election_cap_ns).max(election_min_ns);
    let heartbeat_ns = (election_min_ns / rng.gen_range(2..=10)).max(2 * MS);
    let (latency_low_ns, latency_high_ns) = scenario.network.latency_ns;
    // Latency stays under half an election timeout: beyond it no leader
    // lasts, which is Raft's stated limit (broadcast time ≪ election
    // timeout), not a bug. Messages later than an election timeout come from
    // faults, which end: slow links (`delay`) and pauses at fault points (a
    // step's replies held while its process is stopped).
    let latency_high_ns = *[latency_high_ns, 5 * MS, 30 * MS, election_min_ns / 2].choose(&mut rng).expect("choices");
    let latency_ns = (latency_low_ns.min(latency_high_ns), latency_high_ns.max(latency_low_ns));
    let keepalives_per_ttl = *[2, 3, 5, 10].choose(&mut rng).expect("choices");
    // Stamped wall clocks make replicas diverge by design (each judges the
    // stamps by its own clock): a scenario that runs them chose to, and a
    // draw never brings them into a scenario that expects safety.
    let lease_expiry = match scenario.cluster.lease_expiry {
        ExpiryStrategy::LeaderStampedWall => ExpiryStrategy::LeaderStampedWall,
        _ => *[ExpiryStrategy::LeaderMonotonic, ExpiryStrategy::WriterClock].choose(&mut rng).expect("choices"),
    };
    let keepalive_read_index = rng.gen_bool(0.5);
    // Short timeouts make clients switch servers quickly: a deposed
    // leader is then read from while a new one writes.
    // At least four of the slowest one-way trips, or no answer could
    // ever arrive before the client gives up on it.
    let client_timeout_ms =
        [50, 150, 500].into_iter().filter(|ms| ms * MS >= 4 * latency_ns.1).collect::<Vec<_>>().choose(&mut rng).copied().unwrap_or(500);
    // Drawn last, so the knobs above draw what they drew before these two
    // existed. A deep pipeline lets a deposed leader send far ahead of what
    // a follower acknowledged; clients with several requests open pile up
    // uncommitted entries behind a leader that is about to fall.
    let max_in_flight_appends = *[1, 2, 4, 16].choose(&mut rng).expect("choices");
    let kv_in_flight = *[1, 2, 4, 8].choose(&mut rng).expect("choices");
    Some(Knobs {
        max_append_entries,
        snapshot_every,
        election_timeout_ms: (election_min_ns / MS, election_max_ns / MS),
        heartbeat_ms: heartbeat_ns / MS,
        latency_us: (latency_ns.0 / 1_000, latency_ns.1 / 1_000),
        keepalives_per_ttl,
        lease_expiry: crate::expiry_name(lease_expiry),
        keepalive_read_index,
        client_timeout_ms,
        max_in_flight_appends,
        kv_in_flight,
    })
}

/// Writes the drawn knobs into the scenario.
pub fn apply(scenario: &mut Scenario, k: &Knobs) {
    let c = &mut scenario.cluster;
    c.max_append_entries = k.max_append_entries;
    c.snapshot_every = k.snapshot_every;
    c.election_timeout_ns = (k.election_timeout_ms.0 * MS, k.election_timeout_ms.1 * MS);
    c.heartbeat_ns = k.heartbeat_ms * MS;
    c.keepalive_read_index = k.keepalive_read_index;
    c.client_timeout_ns = k.client_timeout_ms * MS;
    c.max_in_flight_appends = k.max_in_flight_appends;
    c.lease_expiry = crate::expiry_from_name(k.lease_expiry).expect("a drawn strategy has a name");
    scenario.network.latency_ns = (k.latency_us.0 * 1_000, k.latency_us.1 * 1_000);
    for w in &mut scenario.workloads {
        let (ttl, keepalive) = match &mut w.kind {
            WorkloadKind::Lock(w) => (w.ttl_ns, &mut w.keepalive_ns),
            WorkloadKind::Registry(w) => (w.ttl_ns, &mut w.keepalive_ns),
            WorkloadKind::Task(w) => (w.ttl_ns, &mut w.keepalive_ns),
            WorkloadKind::Singleton(w) => (w.ttl_ns, &mut w.keepalive_ns),
            WorkloadKind::Kv(kv) => {
                kv.in_flight = k.kv_in_flight;
                continue;
            }
            WorkloadKind::Watch(_) | WorkloadKind::Txn(_) => continue,
        };
        *keepalive = ttl / k.keepalives_per_ttl;
    }
}
