//! Turning a scenario into a world: clocks drawn from the seed, the servers'
//! configuration, and one madsim node per process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::RaftConfig;
use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::server::ServerConfig;
use leasesim_core::{ExpiryStrategy, NodeId};
use madsim::runtime::Handle;
use madsim::task::NodeId as SimNodeId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::host::run_actor;
use crate::host::server::{ServerActor, ServerSlot};
use crate::host::store::StoreActor;
use crate::host::task_table::{TaskRows, TaskTable};
use crate::vocab::ProcAddr;
use crate::workload::kv::KvClient;
use crate::workload::lock::LockClient;
use crate::workload::registry::RegistryClient;
use crate::workload::singleton::SingletonInstance;
use crate::workload::task::TaskWorker;
use crate::workload::task_generator::TaskGenerator;
use crate::workload::txn::TxnClient;
use crate::workload::watch::WatchClient;
use crate::workload::ClientStart;
use crate::world::World;
use leasesim_judge::vocab::Proc;
use leasesim_judge::vocab::SimClock;
use leasesim_scenario::{Process, Scenario, WorkloadKind};

/// Wall clocks read about 2026-01-01 at true time 0 (plus their offset), so
/// no offset in a scenario can make one negative.
pub const WALL_EPOCH_NS: u64 = 1_767_225_600 * 1_000_000_000;

pub fn proc_of(p: Process) -> Proc {
    match p {
        Process::Server(n) => Proc::Server(n),
        Process::Client(n) => Proc::Client(n),
        Process::Store => Proc::Store,
    }
}

/// Every process's clock: the scenario's `[clocks.NAME]`, else a drift drawn
/// from `[chaos] drift`, else exact; monotonic clocks start at arbitrary
/// values so nothing can compare them across processes.
pub fn clocks(scenario: &Scenario, chaos_drift: f64, rng: &mut ChaCha8Rng) -> BTreeMap<Proc, SimClock> {
    let mut clocks = BTreeMap::new();
    for p in scenario.processes() {
        let mono_start_ns = rng.gen_range(1_000_000_000..1_000_000_000_000_000u64);
        let drawn_drift = if chaos_drift > 0.0 { rng.gen_range(-chaos_drift..=chaos_drift) } else { 0.0 };
        let (drift, offset_ns) = match scenario.clocks.get(&p) {
            Some(spec) => (spec.drift, spec.offset_ns),
            None => (drawn_drift, 0),
        };
        let wall_start_ns = (WALL_EPOCH_NS as i64 + offset_ns) as u64;
        clocks.insert(proc_of(p), SimClock::new(mono_start_ns, wall_start_ns, drift));
    }
    clocks.insert(Proc::Admin, SimClock::new(0, WALL_EPOCH_NS, 0.0));
    clocks
}

pub fn server_config(scenario: &Scenario, id: NodeId, bugs: Bugs) -> ServerConfig {
    let cluster = &scenario.cluster;
    let voters: BTreeSet<NodeId> = (1..=cluster.servers).collect();
    let raft = RaftConfig {
        id,
        voters,
        election_timeout_min_ns: cluster.election_timeout_ns.0,
        election_timeout_max_ns: cluster.election_timeout_ns.1,
        heartbeat_ns: cluster.heartbeat_ns,
        max_entries_per_append: cluster.max_append_entries as usize,
        max_in_flight_appends: cluster.max_in_flight_appends as usize,
        pre_vote: true,
        check_quorum: true,
        // The lease assumes the drift bound the judge holds the run to.
        lease_read_drift_ppm: cluster.lease_reads.then(|| (cluster.drift_bound * 1e6).ceil() as u64),
        // Keep-alives answered from the leader's own deadlines wait for its
        // lease, under the same assumption (core/src/server/requests.rs).
        keepalive_lease_drift_ppm: (!cluster.keepalive_read_index && cluster.lease_expiry == ExpiryStrategy::LeaderMonotonic)
            .then(|| (cluster.drift_bound * 1e6).ceil() as u64),
        bugs,
    };
    let mut config = ServerConfig::new(raft, cluster.lease_expiry).with_bugs(bugs);
    config.snapshot_every_entries = cluster.snapshot_every;
    config.keepalive_read_index = cluster.keepalive_read_index;
    config.checkpoint_interval_ns = cluster.checkpoint_interval_ns;
    config
}

/// Creates one madsim node per process (servers, then clients, then the
/// data store); returns their madsim ids.
pub fn spawn_processes(
    handle: &Handle,
    world: &Arc<World>,
    slots: &BTreeMap<NodeId, ServerSlot>,
    scenario: &Arc<Scenario>,
    seed: u64,
    bugs: Bugs,
) -> BTreeMap<Proc, SimNodeId> {
    let mut ids = BTreeMap::new();
    spawn_servers(handle, world, slots, scenario, seed, bugs, &mut ids);
    spawn_clients(handle, world, scenario, seed, bugs, &mut ids);
    spawn_store(handle, world, scenario, bugs, &mut ids);
    ids
}

/// Voters and spares, each with its core in its slot; each incarnation
/// draws its own PRNG seed.
fn spawn_servers(
    handle: &Handle,
    world: &Arc<World>,
    slots: &BTreeMap<NodeId, ServerSlot>,
    scenario: &Scenario,
    seed: u64,
    bugs: Bugs,
    ids: &mut BTreeMap<Proc, SimNodeId>,
) {
    for id in 1..=scenario.cluster.servers + scenario.cluster.spares {
        let proc = Proc::Server(id);
        let config = server_config(scenario, id, bugs);
        let world = world.clone();
        let slot = slots[&id].clone();
        let restarts = Arc::new(AtomicU64::new(0));
        let node = handle
            .create_node()
            .name(proc.to_string())
            .ip(proc.addr().ip())
            .init(move || {
                let incarnation = restarts.fetch_add(1, Ordering::Relaxed);
                let rng_seed = derive_seed(seed, Stream::Server(id), incarnation);
                let actor = ServerActor::new(id, config.clone(), rng_seed, slot.clone());
                run_actor(world.clone(), proc, actor)
            })
            .build();
        ids.insert(proc, node.id());
    }
}

/// What a client needs to start (again, after a crash).
#[derive(Clone)]
struct ClientPlan {
    start: ClientStart,
    kind: WorkloadKind,
    /// A task workload's first client generates; the others work.
    generates: bool,
}

impl ClientPlan {
    /// Runs incarnation `incarnation` of the client until it is killed.
    async fn run(self, world: Arc<World>, incarnation: u64) {
        let start = ClientStart { incarnation, ..self.start };
        let proc = Proc::Client(start.id);
        match self.kind {
            WorkloadKind::Lock(w) => run_actor(world, proc, LockClient::new(start, w)).await,
            WorkloadKind::Registry(w) => run_actor(world, proc, RegistryClient::new(start, w)).await,
            WorkloadKind::Kv(w) => run_actor(world, proc, KvClient::new(start, w)).await,
            WorkloadKind::Task(w) if self.generates => run_actor(world, proc, TaskGenerator::new(start, w)).await,
            WorkloadKind::Task(w) => run_actor(world, proc, TaskWorker::new(start, w)).await,
            WorkloadKind::Singleton(w) => run_actor(world, proc, SingletonInstance::new(start, w)).await,
            WorkloadKind::Watch(w) => run_actor(world, proc, WatchClient::new(start, w)).await,
            WorkloadKind::Txn(w) => run_actor(world, proc, TxnClient::new(start, w)).await,
        }
    }
}

/// Every workload's clients, in client order.
fn spawn_clients(handle: &Handle, world: &Arc<World>, scenario: &Scenario, seed: u64, bugs: Bugs, ids: &mut BTreeMap<Proc, SimNodeId>) {
    let servers: Vec<NodeId> = (1..=scenario.cluster.servers).collect();
    for workload in &scenario.workloads {
        for client in workload.client_ids() {
            let proc = Proc::Client(client);
            let world = world.clone();
            let start = ClientStart {
                id: client,
                servers: servers.clone(),
                run_seed: seed,
                incarnation: 0,
                request_timeout_ns: scenario.cluster.client_timeout_ns,
                trust_full_ttl: bugs.client_trusts_full_ttl,
            };
            let plan = ClientPlan { start, kind: workload.kind.clone(), generates: client == workload.first_client };
            let restarts = Arc::new(AtomicU64::new(0));
            let node = handle
                .create_node()
                .name(proc.to_string())
                .ip(proc.addr().ip())
                .init(move || {
                    let incarnation = restarts.fetch_add(1, Ordering::Relaxed);
                    plan.clone().run(world.clone(), incarnation)
                })
                .build();
            ids.insert(proc, node.id());
        }
    }
}

/// The data store; its state survives its own crash (a real store is
/// durable). A key is fenced if any lock workload on it says so.
fn spawn_store(handle: &Handle, world: &Arc<World>, scenario: &Scenario, bugs: Bugs, ids: &mut BTreeMap<Proc, SimNodeId>) {
    let mut fenced = BTreeMap::new();
    for workload in &scenario.workloads {
        if let WorkloadKind::Lock(lock) = &workload.kind {
            for key in &lock.keys {
                *fenced.entry(key.clone()).or_insert(false) |= lock.fenced;
            }
        }
    }
    let store_state = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
    let task_rows = TaskRows::default();
    let skip_completion_token_check = bugs.completion_without_token_check;
    let world = world.clone();
    let node = handle
        .create_node()
        .name("store")
        .ip(Proc::Store.addr().ip())
        .init(move || {
            let tasks = TaskTable::new(task_rows.clone(), skip_completion_token_check);
            let actor = StoreActor::new(fenced.clone(), store_state.clone(), tasks);
            run_actor(world.clone(), Proc::Store, actor)
        })
        .build();
    ids.insert(Proc::Store, node.id());
}
