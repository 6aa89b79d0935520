//! The runner's client tasks, one per scenario client, and their crashes.
//!
//! A client crash in the simulator kills the client's process: its
//! connections drop, what it held in memory (its lease, its belief, its
//! place in the workload) is gone, and after the fault's `for` a fresh
//! process of the same workload and id starts (`sim/src/run/faults.rs`).
//! Here a client is a task of the runner, so a crash aborts the task and
//! every task it spawned (the lock client's keeper, through
//! [`AbortOnDrop`]): its gRPC channels are dropped with it, which closes
//! their connections, and its state dies with the task. The restart spawns
//! the workload's client anew with the same id. As in the simulator, a
//! crashed client that believed it held a lock stops believing it
//! (`BeliefEnded { why: Crashed }`), and the run's log says `crashed` and
//! `restarted` for it.

use std::sync::Arc;

use leasesim_judge::observe::{BeliefEnd, Event};
use leasesim_scenario::{Scenario, WorkloadKind};
use tokio::task::JoinHandle;

use super::Ctx;
use crate::gate::Pass;

/// Aborts a task when dropped: a client's helper task dies with it.
pub struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every client task of a run, by client id (client `c` at `c - 1`).
pub struct Clients {
    /// A copy: the player borrows the scenario too, for as long as this.
    scenario: Scenario,
    ctx: Arc<Ctx>,
    passes: Vec<Pass>,
    /// The kv clients' key prefix, fresh per run (a restarted client keeps it).
    prefix: String,
    tasks: Vec<Option<JoinHandle<()>>>,
}

impl Clients {
    /// Starts every client of the scenario's workloads.
    pub fn start(scenario: &Scenario, ctx: &Arc<Ctx>, passes: Vec<Pass>) -> Clients {
        let prefix = format!("kv/{:016x}/", rand::random::<u64>());
        let mut clients = Clients { scenario: scenario.clone(), ctx: ctx.clone(), passes, prefix, tasks: Vec::new() };
        clients.tasks = (1..=scenario.client_count()).map(|c| Some(clients.spawn(c))).collect();
        clients
    }

    fn spawn(&self, client: u64) -> JoinHandle<()> {
        let (ctx, pass) = (self.ctx.clone(), self.passes[client as usize - 1].clone());
        let workload = self.scenario.workload_of(client).expect("every client has a workload");
        match &workload.kind {
            WorkloadKind::Lock(spec) => tokio::spawn(super::lock::run(ctx, client, spec.clone(), pass)),
            WorkloadKind::Registry(spec) => tokio::spawn(super::registry::run(ctx, client, spec.clone(), pass)),
            WorkloadKind::Kv(spec) => tokio::spawn(super::kv::run(ctx, client, spec.clone(), self.prefix.clone(), pass)),
            WorkloadKind::Txn(spec) => tokio::spawn(super::txn::run(ctx, client, spec.clone(), pass)),
            WorkloadKind::Watch(spec) => tokio::spawn(super::watch::run(ctx, client, spec.clone(), pass)),
            WorkloadKind::Singleton(spec) => tokio::spawn(super::singleton::run(ctx, client, spec.clone(), pass)),
            // The workload's first client generates the tasks, the others work.
            WorkloadKind::Task(spec) if client == workload.first_client => {
                tokio::spawn(super::task_generator::run(ctx, client, spec.clone(), pass))
            }
            WorkloadKind::Task(spec) => tokio::spawn(super::task_worker::run(ctx, client, spec.clone(), pass)),
        }
    }

    /// Kills client `client` (false: it was already down).
    pub fn crash(&mut self, client: u64) -> bool {
        let Some(task) = self.tasks[client as usize - 1].take() else { return false };
        task.abort();
        self.ctx.seen.record(client, Event::Crashed);
        for key in self.scenario.lock_keys() {
            if self.ctx.holder(key) == Some(client) {
                self.ctx.set_holder(key, None);
                self.ctx.seen.record(client, Event::BeliefEnded { key: key.to_string(), why: BeliefEnd::Crashed });
            }
        }
        true
    }

    /// Whether client `client` runs (is not crashed).
    pub fn is_up(&self, client: u64) -> bool {
        self.tasks[client as usize - 1].is_some()
    }

    /// Starts a fresh client `client` if it is down.
    pub fn restart(&mut self, client: u64) {
        if self.tasks[client as usize - 1].is_none() {
            self.tasks[client as usize - 1] = Some(self.spawn(client));
            self.ctx.seen.record(client, Event::Restarted);
        }
    }

    /// The tasks still running, for the run to wait for.
    pub fn into_tasks(self) -> Vec<JoinHandle<()>> {
        self.tasks.into_iter().flatten().collect()
    }
}
