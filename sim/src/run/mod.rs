//! One seed of one scenario, start to finish: build the world, run the fault
//! phase and the settle phase under madsim, then judge the run.
//!
//! Each run gets its own OS thread and its own madsim runtime (madsim's
//! HashMap order is only deterministic for the first runtime on a fresh
//! thread), and an engine panic becomes a reported failure, not a crash of
//! the sweep.

pub mod faults;
pub mod outcome;
pub mod phases;
pub mod setup;

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use leasesim_core::bugs::Bugs;
use leasesim_core::seed::{derive_seed, Stream};
use leasesim_core::NodeId;
use madsim::task::NodeId as SimNodeId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::host::server::ServerSlot;
use crate::world::network::Network;
use crate::world::{Recorder, World};
use faults::{timeline, Injector, Step};
use leasesim_judge::checkers::{check_all, liveness_margin, RunRecord, TaskPace};
use leasesim_judge::vocab::{FinalServer, Proc, ServerProbe, SimClock};
pub use leasesim_scenario::{chaos_draw as chaos, knobs};
use leasesim_scenario::{Scenario, WorkloadKind};
pub use outcome::RunOutcome;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Echo every observation through tracing as it happens (replay).
    pub trace: bool,
    /// Planted bugs turned on in addition to the scenario's.
    pub extra_bugs: Bugs,
    /// Keep the observation log in the outcome (for `--trace` and reports).
    pub keep_observations: bool,
    /// Observations a run holds in memory before it spills the older ones
    /// to a temporary file (None: `observe::IN_MEMORY_DEFAULT`). Only long
    /// runs reach it; a run's verdict and digest do not depend on it.
    pub observations_in_memory: Option<usize>,
    /// Time the engine's, the clients' and the checkers' shares of the run
    /// (`leasesim bench`; `RunOutcome::phases`). Never changes the run.
    pub time_phases: bool,
}

/// What the simulation hands back to the judge.
struct Simulated {
    recorder: Recorder,
    phases: phases::PhaseTicks,
    clocks: BTreeMap<Proc, SimClock>,
    finals: BTreeMap<NodeId, FinalServer>,
    settle_at_ns: u64,
    end_ns: u64,
    /// The scenario as this seed ran it (chaos drawn: faults, drifts, knobs).
    explicit: Arc<Scenario>,
}

/// Runs `seed` of `scenario` on a fresh thread and judges it.
pub fn run_seed(scenario: &Scenario, seed: u64, options: &RunOptions) -> RunOutcome {
    let scenario = Arc::new(scenario.clone());
    let options = options.clone();
    let started = Instant::now();
    let thread_scenario = scenario.clone();
    let thread_options = options.clone();
    let joined = std::thread::Builder::new()
        .name(format!("{}#{seed}", scenario.name))
        .stack_size(64 << 20)
        .spawn(move || simulate_on_this_thread(thread_scenario, seed, &thread_options))
        .expect("spawn a simulation thread")
        .join();
    let wall_seconds = started.elapsed().as_secs_f64();
    match joined {
        Ok(simulated) => judge(&scenario, seed, &options, simulated, wall_seconds),
        Err(panic) => RunOutcome::panicked(&scenario, seed, &options, panic_message(&*panic), wall_seconds),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn simulate_on_this_thread(scenario: Arc<Scenario>, seed: u64, options: &RunOptions) -> Simulated {
    // The network is the world's own (world::network), so madsim's network
    // settings stay at their defaults and carry nothing.
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let options = options.clone();
    let nodes: Arc<Mutex<Vec<SimNodeId>>> = Arc::default();
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(simulate(scenario, seed, options, nodes.clone()))));
    match run {
        Ok(simulated) => simulated,
        Err(panic) => {
            // An engine panic unwound out of the runtime with every other
            // task still alive: kill the nodes and give the executor one turn
            // to drop their tasks, or the world leaks with them (see
            // `Injector::kill_everything`), run after panicking run.
            for id in nodes.lock().expect("node list").drain(..) {
                runtime.handle().kill(id);
            }
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(madsim::task::yield_now())));
            std::panic::resume_unwind(panic)
        }
    }
}

async fn simulate(scenario: Arc<Scenario>, seed: u64, options: RunOptions, nodes: Arc<Mutex<Vec<SimNodeId>>>) -> Simulated {
    let handle = madsim::runtime::Handle::current();
    // Chaos becomes explicit faults and pinned drifts first, so this run is
    // exactly the run of the scenario `shrink` writes for this seed.
    let scenario = Arc::new(chaos::explicit(&scenario, seed));
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, Stream::Setup, 0));
    let bugs = merge_bugs(scenario.bugs, options.extra_bugs);
    let world = build_world(&scenario, seed, &options, &mut rng);
    // Each server's core, shared by its process and, when the run ends, the
    // judge (`final_state`).
    let servers = 1..=scenario.cluster.servers + scenario.cluster.spares;
    let slots: BTreeMap<NodeId, ServerSlot> = servers.map(|id| (id, ServerSlot::default())).collect();
    let ids = setup::spawn_processes(&handle, &world, &slots, &scenario, seed, bugs);
    nodes.lock().expect("node list").extend(ids.values().copied());
    let mut injector = Injector::new(handle.clone(), world.clone(), scenario.clone(), ids, rng);
    let settle_at_ns = scenario.duration_ns;
    run_timeline(&world, &scenario, &mut injector).await;
    madsim::time::sleep_until(world.instant_of(settle_at_ns)).await;
    injector.heal_all();
    // Steps due past the nominal start (the end of a fault that outlasts
    // `duration`) ran first, and armed fault points could still fire until
    // now: the faults stopped only here, so the checkers count their
    // recovery deadlines from here (chaos-nemesis seed 471: a slow link
    // ended and a crashed leader came back at 32.321 s, yet a lease was
    // judged due by 30 s + TTL + slack). The run still ends on time.
    let healed_at_ns = world.now_ns().max(settle_at_ns);
    let end_ns = settle_at_ns + scenario.settle_ns;
    madsim::time::sleep_until(world.instant_of(end_ns)).await;
    // Only `watch-delivery` reads the servers' histories.
    let watched = scenario.workloads.iter().any(|w| matches!(w.kind, WorkloadKind::Watch(_)));
    let simulated = Simulated {
        recorder: world.take_recorder(),
        phases: world.phases.totals(),
        clocks: world.clocks_snapshot(),
        finals: slots.iter().map(|(id, slot)| (*id, final_state(slot, *id, world.is_up(Proc::Server(*id)), watched))).collect(),
        settle_at_ns: healed_at_ns,
        end_ns,
        explicit: scenario.clone(),
    };
    // Tear down: without it every run's world outlives its runtime.
    injector.kill_everything();
    madsim::task::yield_now().await;
    simulated
}

/// The world of one run: every process's clock (drawn from `rng`, the
/// setup stream), the network, and the recorder the options ask for.
fn build_world(scenario: &Scenario, seed: u64, options: &RunOptions, rng: &mut ChaCha8Rng) -> Arc<World> {
    let clocks = setup::clocks(scenario, 0.0, rng);
    let servers = 1..=scenario.cluster.servers + scenario.cluster.spares;
    let procs: Vec<Proc> = clocks.keys().copied().collect();
    let network = Network::new(
        scenario.network.latency_ns,
        scenario.network.loss,
        scenario.network.duplicate,
        procs,
        ChaCha8Rng::seed_from_u64(derive_seed(seed, Stream::Network, 0)),
    );
    Arc::new(
        World::new(
            clocks,
            servers,
            network,
            options.trace,
            options.trace || options.keep_observations,
            options.observations_in_memory.unwrap_or(leasesim_judge::observe::IN_MEMORY_DEFAULT),
        )
        .with_phase_clock(phases::PhaseClock::new(options.time_phases)),
    )
}

/// The fault phase: the scenario's timeline, step by step, until the
/// settle phase starts. A crash at a fault point adds its restart while the
/// run goes on. Steps past the settle phase's start still run, before it
/// heals everything.
async fn run_timeline(world: &World, scenario: &Scenario, injector: &mut Injector) {
    // A fault aimed at a point is armed at its `at`; its `for` counts from
    // when it fires, so the timeline holds no undo for it.
    let faults: Vec<_> = scenario.faults.iter().map(|f| (f.at_ns, f.action.clone(), f.for_ns.filter(|_| f.when.is_none()))).collect();
    let points: Vec<_> = scenario.faults.iter().map(|f| f.when.map(|point| (point, f.for_ns))).collect();
    let settle_at_ns = scenario.duration_ns;
    // In (time, order) order.
    let mut pending: BTreeMap<(u64, usize), Step> = timeline(&faults).into_iter().enumerate().map(|(n, (at, s))| ((at, n), s)).collect();
    let mut added = pending.len();
    loop {
        let wake_ns = match pending.first_key_value() {
            Some((&(at_ns, _), _)) => at_ns,
            None if world.now_ns() < settle_at_ns => settle_at_ns,
            None => break,
        };
        tokio::select! {
            biased;
            _ = world.points.wake.notified() => {}
            _ = madsim::time::sleep_until(world.instant_of(wake_ns)) => {}
        }
        for request in world.points.take_crash_requests() {
            // A restart due after the settle phase starts comes with its
            // healing instead.
            if let Some(restart_ns) = injector.crash_at_point(request).filter(|ns| *ns < settle_at_ns) {
                pending.insert((restart_ns, added), Step::Undo { id: request.fault });
                added += 1;
            }
        }
        let now_ns = world.now_ns();
        while let Some(entry) = pending.first_entry() {
            if entry.key().0 > now_ns {
                break;
            }
            match entry.remove() {
                Step::Fire { id, action, .. } => match points[id] {
                    Some((point, for_ns)) => injector.arm(id, &action, for_ns, point),
                    None => injector.fire(id, &action),
                },
                Step::Undo { id } => injector.undo(id),
            }
        }
    }
}

/// What the judge reads of a server when the run ends, directly from its
/// core.
fn final_state(slot: &ServerSlot, id: NodeId, up: bool, with_changes: bool) -> FinalServer {
    let guard = slot.lock().expect("single-threaded simulation");
    let Some(server) = guard.as_ref() else {
        return FinalServer { up, voter: false, probe: None, first_index: 1, log_terms: Vec::new(), keys: Vec::new(), changes: Vec::new() };
    };
    let raft = server.raft();
    FinalServer {
        up,
        voter: raft.voters().contains(&id),
        probe: Some(ServerProbe::of(raft)),
        first_index: raft.first_index(),
        log_terms: raft.entries(raft.first_index(), raft.last_index()).iter().map(|e| (e.index, e.term)).collect(),
        keys: server.state_machine().kv().iter().map(|(key, _)| String::from_utf8_lossy(key).into_owned()).collect(),
        changes: if with_changes { server.state_machine().kv().history().iter().map(|c| (**c).clone()).collect() } else { Vec::new() },
    }
}

fn merge_bugs(a: Bugs, b: Bugs) -> Bugs {
    let mut merged = a;
    for name in b.enabled() {
        merged.enable(name).expect("a name from Bugs::NAMES");
    }
    merged
}

/// The time to commit every request the clients can have outstanding
/// (each KV client its `in_flight`, every other client one): a round trip
/// at the latency's maximum per batch the leader can have in flight.
fn commit_backlog_ns(s: &Scenario) -> u64 {
    let outstanding: u64 = s
        .workloads
        .iter()
        .map(|w| match &w.kind {
            WorkloadKind::Kv(kv) => w.clients * kv.in_flight,
            _ => w.clients,
        })
        .sum();
    let per_round = (s.cluster.max_append_entries * s.cluster.max_in_flight_appends).max(1);
    outstanding.div_ceil(per_round) * 2 * s.network.latency_ns.1
}

fn judge(scenario: &Scenario, seed: u64, options: &RunOptions, simulated: Simulated, wall_seconds: f64) -> RunOutcome {
    // Judged by the settings the run had: chaos may have drawn the engine's
    // knobs (timeouts, strategy) for this seed.
    let explicit = simulated.explicit.clone();
    let registry_ttl_ns = explicit.registry_ttls_ns();
    let lock_wait_bound_ns = explicit.lock_wait_bound_ns();
    // Validation allows one task workload: its first client generates, the
    // others work.
    let task_pace = explicit.workloads.iter().find_map(|w| match &w.kind {
        WorkloadKind::Task(t) => Some(TaskPace::new(w.clients - 1, t.ttl_ns, t.work_ns.1, t.poll_ns.1)),
        _ => None,
    });
    let commit_backlog_ns = commit_backlog_ns(&explicit);
    let record = RunRecord {
        obs: &simulated.recorder.obs,
        clocks: &simulated.clocks,
        drift_bound: explicit.cluster.drift_bound,
        expiry: explicit.cluster.lease_expiry,
        election_timeout_max_ns: explicit.cluster.election_timeout_ns.1,
        settle_at_ns: simulated.settle_at_ns,
        end_ns: simulated.end_ns,
        servers: &simulated.finals,
        registry_ttl_ns: &registry_ttl_ns,
        lock_wait_bound_ns,
        commit_backlog_ns,
        task_pace,
    };
    let started = options.time_phases.then(phases::ticks);
    let judgement = check_all(&record);
    let liveness_margin = liveness_margin::closest(&record).map(|m| crate::cli::summary::MarginLine {
        margin: leasesim_core::fmt_secs(m.margin_ns()),
        margin_ns: m.margin_ns(),
        below_slack: m.below_slack(),
        slack_ns: m.slack_ns,
        deadline: m.deadline,
    });
    let mut ticks = simulated.phases;
    ticks.checking = started.map_or(0, |t0| phases::ticks().saturating_sub(t0));
    let committed_index = simulated.finals.values().filter_map(|f| f.probe.map(|p| p.commit_index)).max().unwrap_or(0);
    let mut outcome = RunOutcome::judged(
        scenario,
        seed,
        options,
        simulated.recorder,
        simulated.clocks,
        simulated.end_ns,
        committed_index,
        judgement.violations,
        wall_seconds,
    );
    outcome.phases = ticks;
    outcome.liveness_margin = liveness_margin;
    outcome.not_judged = judgement.not_judged;
    outcome
}
