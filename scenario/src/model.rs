//! The typed, validated scenario: what the simulator runs.
//!
//! Every value here has passed validation (ranges ordered, probabilities in
//! [0, 1], selectors naming processes that exist…), and every default of
//! SCENARIO-FORMAT.md is filled in, so the simulator never re-checks or
//! guesses. Times are `u64` nanoseconds (`_ns`), signed where a sign makes
//! sense; ranges are `(lo_ns, hi_ns)` with `lo_ns <= hi_ns`.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;

use leasesim_core::bugs::Bugs;
use leasesim_core::{ClientId, ExpiryStrategy, NodeId};

pub use super::selector::{Process, Selector};

/// One scenario file.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Unique across the files checked or swept together; kebab-case.
    pub name: String,
    pub description: Option<String>,
    /// Where it was loaded from (the `file_name` given to `parse`).
    pub path: PathBuf,
    /// Length of the fault phase.
    pub duration_ns: u64,
    /// Length of the healed phase after it, in which liveness is checked.
    pub settle_ns: u64,
    /// Default seeds for a sweep; never empty.
    pub seeds: Range<u64>,
    pub cluster: ClusterSpec,
    pub network: Network,
    /// Only the processes the file names; every other clock is exact.
    pub clocks: BTreeMap<Process, ClockSpec>,
    /// In file order; clients are numbered across them.
    pub workloads: Vec<Workload>,
    /// In file order (not sorted by `at_ns`).
    pub faults: Vec<ScheduledFault>,
    pub chaos: Option<Chaos>,
    pub expect: Expect,
    /// Planted bugs the file turns on (the `bugs = [..]` extension).
    pub bugs: Bugs,
}

/// Equal when they describe the same run: `path` says only where the file
/// was, so a scenario written back by `to_toml` equals its original.
impl PartialEq for Scenario {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.duration_ns == other.duration_ns
            && self.settle_ns == other.settle_ns
            && self.seeds == other.seeds
            && self.cluster == other.cluster
            && self.network == other.network
            && self.clocks == other.clocks
            && self.workloads == other.workloads
            && self.faults == other.faults
            && self.chaos == other.chaos
            && self.expect == other.expect
            && self.bugs == other.bugs
    }
}

impl Scenario {
    /// Each registry client's lease TTL, by client id: the liveness
    /// checker's bound on how long a registration may stay gone.
    pub fn registry_ttls_ns(&self) -> BTreeMap<ClientId, u64> {
        self.workloads
            .iter()
            .filter_map(|w| match &w.kind {
                WorkloadKind::Registry(r) => Some(w.client_ids().map(move |c| (c, r.ttl_ns))),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// How long a lock acquire may wait before liveness owes its grant:
    /// for each lock workload, every client ahead in the queue holding for
    /// its longest hold, then a TTL for a crashed holder's lease to end,
    /// and a think time. Both worlds judge by it (the simulator and the real
    /// runner).
    pub fn lock_wait_bound_ns(&self) -> u64 {
        self.workloads
            .iter()
            .filter_map(|w| match &w.kind {
                WorkloadKind::Lock(l) => Some((w.clients + 1) * (l.hold_ns.1 + l.ttl_ns + l.think_ns.1)),
                _ => None,
            })
            .sum()
    }

    /// Number of clients over all workloads (`c1`..=`cN`).
    pub fn client_count(&self) -> u64 {
        self.workloads.iter().map(|w| w.clients).sum()
    }

    /// The workload client `c` belongs to.
    pub fn workload_of(&self, client: ClientId) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.client_ids().contains(&client))
    }

    /// Every key some lock workload contends on.
    pub fn lock_keys(&self) -> BTreeSet<&str> {
        self.workloads
            .iter()
            .filter_map(|w| match &w.kind {
                WorkloadKind::Lock(lock) => Some(lock.keys.iter().map(String::as_str)),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Every singleton role (each is also a `holder:ROLE` selector).
    pub fn singleton_roles(&self) -> BTreeSet<&str> {
        self.workloads
            .iter()
            .filter_map(|w| match &w.kind {
                WorkloadKind::Singleton(singleton) => Some(singleton.role.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Every process of the run: voters, spares, clients, the data store.
    pub fn processes(&self) -> Vec<Process> {
        let servers = (1..=self.cluster.servers + self.cluster.spares).map(Process::Server);
        let clients = (1..=self.client_count()).map(Process::Client);
        servers.chain(clients).chain([Process::Store]).collect()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    /// Voters `s1`..=`sN`, 1 to 9.
    pub servers: u64,
    pub election_timeout_ns: (u64, u64),
    pub heartbeat_ns: u64,
    pub lease_expiry: ExpiryStrategy,
    /// Running servers outside the configuration until added, numbered
    /// after the voters.
    pub spares: u64,
    /// The clock-rate error the design assumes, in [0, 1).
    pub drift_bound: f64,
    /// Most entries in one AppendEntries (Raft's batch size).
    pub max_append_entries: u64,
    /// Pipelining depth: AppendEntries batches a leader keeps unacknowledged
    /// per follower.
    pub max_in_flight_appends: u64,
    /// Applied entries between two snapshots (log compaction).
    pub snapshot_every: u64,
    /// `leader-monotonic`: confirm leadership by a read-index round before
    /// answering a keep-alive (false: answer at once, as etcd's lessor).
    pub keepalive_read_index: bool,
    /// How long a client waits for an answer before it sends the request
    /// again to the next server.
    pub client_timeout_ns: u64,
    /// `leader-monotonic`: how often the leader logs every lease's
    /// remaining TTL, so that a new leader carries it over instead of
    /// restarting the full TTL (etcd's lease checkpoints). `None`: never.
    pub checkpoint_interval_ns: Option<u64>,
    /// Leader leases for reads (Raft thesis §6.4.1): the leader answers a
    /// read from its lease, which assumes every clock's rate error is
    /// within `drift_bound`, instead of confirming its leadership by a
    /// read-index round. Off unless a file says.
    pub lease_reads: bool,
}

impl ClusterSpec {
    /// Whether server `n` is one of the spares.
    pub fn is_spare(&self, n: NodeId) -> bool {
        n > self.servers && n <= self.servers + self.spares
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    /// One-way latency range.
    pub latency_ns: (u64, u64),
    /// Probability per message, in [0, 1].
    pub loss: f64,
    /// Probability per message, in [0, 1].
    pub duplicate: f64,
}

/// A process's clock at the start of the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSpec {
    /// Rate error in (-1, 1): 0.05 runs 5% fast.
    pub drift: f64,
    /// Wall-clock offset from true time.
    pub offset_ns: i64,
}

/// One `[[workload]]`: a group of clients doing the same thing.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Id of its first client: clients are numbered c1.. across workloads in
    /// file order.
    pub first_client: ClientId,
    /// How many clients, at least 1.
    pub clients: u64,
    pub kind: WorkloadKind,
}

impl Workload {
    /// The ids of this workload's clients.
    pub fn client_ids(&self) -> Range<ClientId> {
        self.first_client..self.first_client + self.clients
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadKind {
    Lock(LockWorkload),
    Registry(RegistryWorkload),
    Kv(KvWorkload),
    Task(TaskWorkload),
    Singleton(SingletonWorkload),
    Watch(WatchWorkload),
    Txn(TxnWorkload),
}

impl WorkloadKind {
    /// The `kind = "…"` string.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadKind::Lock(_) => "lock",
            WorkloadKind::Registry(_) => "registry",
            WorkloadKind::Kv(_) => "kv",
            WorkloadKind::Task(_) => "task",
            WorkloadKind::Singleton(_) => "singleton",
            WorkloadKind::Watch(_) => "watch",
            WorkloadKind::Txn(_) => "txn",
        }
    }

    /// The TTL of the leases this workload's clients hold (`None` for kv).
    pub fn lease_ttl_ns(&self) -> Option<u64> {
        match self {
            WorkloadKind::Lock(w) => Some(w.ttl_ns),
            WorkloadKind::Registry(w) => Some(w.ttl_ns),
            WorkloadKind::Task(w) => Some(w.ttl_ns),
            WorkloadKind::Singleton(w) => Some(w.ttl_ns),
            WorkloadKind::Kv(_) | WorkloadKind::Watch(_) | WorkloadKind::Txn(_) => None,
        }
    }
}

/// Clients acquire, hold, write to the data store with their token, release.
#[derive(Clone, Debug, PartialEq)]
pub struct LockWorkload {
    /// Lock keys, non-empty and distinct.
    pub keys: Vec<String>,
    pub ttl_ns: u64,
    /// Keep-alive interval, shorter than the TTL (default TTL / 3).
    pub keepalive_ns: u64,
    pub hold_ns: (u64, u64),
    pub think_ns: (u64, u64),
    /// Fraction of the TTL the client gives up its belief early, in [0, 1).
    pub margin: f64,
    pub belief_from: BeliefFrom,
    /// Whether the data store checks fencing tokens.
    pub fenced: bool,
}

/// When a client's lease timer starts: the engine's own type, so a
/// scenario's value reaches the client unconverted.
pub use leasesim_core::client::BeliefFrom;

/// Each client registers `/services/<client>` on its lease, kept alive.
#[derive(Clone, Debug, PartialEq)]
pub struct RegistryWorkload {
    pub ttl_ns: u64,
    pub keepalive_ns: u64,
}

/// Random read / write / cas on a few keys, for linearizability.
#[derive(Clone, Debug, PartialEq)]
pub struct KvWorkload {
    /// How many keys, at least 1.
    pub keys: u64,
    /// Pause between a client's operations.
    pub interval_ns: (u64, u64),
    /// Operations each client keeps open at once (1 to 16): with more than
    /// one, a client calls the next one `interval` after the last call
    /// while fewer than this many are unanswered.
    pub in_flight: u64,
}

/// Watch clients: each watches the keys starting with `prefix` (every key
/// when empty) and resumes from its last seen revision + 1 when its server
/// goes quiet, loses its leader or forgets the watch.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchWorkload {
    pub prefix: String,
    pub start: WatchStart,
    /// Whether the watch asks for each event's previous value.
    pub prev_kv: bool,
    /// How often a client asks its server whether the watch is alive and
    /// who leads (a silent server is left after `[cluster] client_timeout`).
    pub check_every_ns: u64,
}

/// Where a watch starts: the serving member's revision when it opens, or
/// revision 1 (the whole history).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchStart {
    Now,
    First,
}

impl WatchStart {
    pub fn name(self) -> &'static str {
        match self {
            WatchStart::Now => "now",
            WatchStart::First => "first",
        }
    }
}

/// Multi-key txns over keys `t0`…: compare-and-write-several, and
/// reads of several keys, each as one etcd Txn.
#[derive(Clone, Debug, PartialEq)]
pub struct TxnWorkload {
    /// How many keys, at least 2.
    pub keys: u64,
    /// Pause between a client's txns.
    pub interval_ns: (u64, u64),
}

/// The multi-instance lease design's work queue: the workload's first client
/// generates tasks into the KV, the others claim one at a time on their lease,
/// work on it while keeping the lease alive, and complete it at the data store
/// with the claim's fencing token.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskWorkload {
    /// The workers' lease.
    pub ttl_ns: u64,
    /// The workers' heartbeat (keep-alive) interval, shorter than the TTL.
    pub keepalive_ns: u64,
    /// How many tasks the generator creates in all, at least 1.
    pub tasks: u64,
    /// Pause between two generated tasks.
    pub task_every_ns: (u64, u64),
    /// How long a worker works on one task.
    pub work_ns: (u64, u64),
    /// How long an idle worker waits before it looks for a free task again.
    pub poll_ns: (u64, u64),
    /// Fraction of the TTL a worker gives up its belief early, in [0, 1).
    pub margin: f64,
    pub belief_from: BeliefFrom,
}

/// The multi-instance lease design's singleton: instances compete for one
/// lease-backed role; only the holder runs the job (a heartbeat write to the
/// data store with its token), the others wait and take over when it fails.
#[derive(Clone, Debug, PartialEq)]
pub struct SingletonWorkload {
    /// The role's name: its KV key is `/singleton/<role>`, its data-store key
    /// `singleton/<role>`, and `holder:<role>` selects its current holder.
    pub role: String,
    pub ttl_ns: u64,
    pub keepalive_ns: u64,
    /// Pause between two runs of the job while holding the role.
    pub interval_ns: (u64, u64),
    /// How long an idle instance waits before it tries to take the role.
    pub poll_ns: (u64, u64),
    pub margin: f64,
    pub belief_from: BeliefFrom,
}

/// One `[[fault]]` of the timeline.
#[derive(Clone, Debug)]
pub struct ScheduledFault {
    /// From the start of the run; at most the duration.
    pub at_ns: u64,
    pub action: FaultAction,
    /// Undo after this long; `None`: lasts until the settle phase heals it.
    /// Never set for `Clock`, `Add` and `Remove` (they are not undone).
    pub for_ns: Option<u64>,
    /// Line of the `[[fault]]` in its file, for traces and messages.
    pub line: usize,
    /// `crash`, `pause` and `clock` only: from `at` on, the fault waits for
    /// the first process its selector matches to reach this point of a step
    /// (`scenario::point`), and fires there, once.
    pub when: Option<crate::Point>,
}

/// Equal when they do the same thing at the same time: `line` only says
/// where the fault was written.
impl PartialEq for ScheduledFault {
    fn eq(&self, other: &Self) -> bool {
        self.at_ns == other.at_ns && self.action == other.action && self.for_ns == other.for_ns && self.when == other.when
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// Groups (at least two, disjoint) that cannot reach each other;
    /// unlisted processes reach everyone.
    Partition(Vec<Vec<Selector>>),
    /// Cut one process off from all others, both ways.
    Isolate(Selector),
    /// One-way: messages from `from` to each of `to` are dropped.
    Block {
        from: Selector,
        to: Vec<Selector>,
    },
    /// One way: messages from `from` to each of `to` take up to `by_ns`
    /// longer, drawn per message (so they also overtake each other).
    Delay {
        from: Selector,
        to: Vec<Selector>,
        by_ns: u64,
    },
    Crash(Selector),
    Pause(Selector),
    /// Change the rate from now on and/or step the wall clock; at least one
    /// of the two is set.
    Clock {
        target: Selector,
        drift: Option<f64>,
        jump_ns: Option<i64>,
    },
    /// Change the network's loss probability.
    Loss(f64),
    /// Add spare server `sN` to the configuration.
    Add(NodeId),
    /// Remove a server (always a server selector) from the configuration.
    Remove(Selector),
    /// Every message of one kind delayed, reordered, dropped or duplicated
    /// (`scenario::message_fault`).
    Messages(crate::message_fault::MessageFault),
}

impl FaultAction {
    /// The action's key in the file.
    pub fn name(&self) -> &'static str {
        match self {
            FaultAction::Partition(_) => "partition",
            FaultAction::Isolate(_) => "isolate",
            FaultAction::Block { .. } => "block",
            FaultAction::Delay { .. } => "delay",
            FaultAction::Crash(_) => "crash",
            FaultAction::Pause(_) => "pause",
            FaultAction::Clock { .. } => "clock",
            FaultAction::Loss(_) => "loss",
            FaultAction::Add(_) => "add",
            FaultAction::Remove(_) => "remove",
            FaultAction::Messages(_) => "messages",
        }
    }
}

/// Seeded random faults on top of the timeline. A fault kind whose mean
/// interval is absent does not happen.
#[derive(Clone, Debug, PartialEq)]
pub struct Chaos {
    pub partitions: Option<ChaosRate>,
    pub crashes: Option<ChaosRate>,
    pub pauses: Option<ChaosRate>,
    pub clock_jumps: Option<ChaosJumps>,
    /// Crashes of whoever leads when each one fires (`crash = "leader"`):
    /// leader changes are where consensus and lease hand-over go wrong.
    pub leader_crashes: Option<ChaosRate>,
    /// The leader cut off from every other server, but not from the
    /// clients (Jepsen's "isolate the leader"): those still talking to it
    /// hear from a deposed leader while a new one is elected.
    pub leader_isolations: Option<ChaosRate>,
    /// Links from the leader or a random server to every server slowed,
    /// each message by up to a drawn bound in the range given (`delay`
    /// faults): messages arrive after newer ones, across terms.
    pub slow_links: Option<(ChaosRate, (u64, u64))>,
    /// Crashes at a fault point (`scenario::point`), each drawn among every
    /// point and aimed at the leader, a follower or any server (any client
    /// for `after-send:request`), back after a few milliseconds.
    pub crash_points: Option<ChaosRate>,
    /// Pauses at a fault point, drawn the same way.
    pub pause_points: Option<ChaosRate>,
    /// Wall-clock jumps of a process at the instant its timer fires, when
    /// a deadline is being decided.
    pub timer_jumps: Option<ChaosJumps>,
    /// Pauses of a lock's holder (`pause = "holder:KEY"`, KEY drawn among
    /// the lock keys and singleton roles): the process pause that fencing
    /// exists for.
    pub holder_pauses: Option<ChaosRate>,
    /// Mean interval between membership changes; each adds a spare and
    /// removes a server at the same instant (a node replacement). Needs
    /// spares.
    pub membership_ns: Option<u64>,
    /// Probability that a chaos partition is followed, within two election
    /// timeouts, by a node replacement (automated failover reacting to an
    /// unreachable server); in [0, 1]. Needs `partitions` and spares.
    pub partition_replacements: f64,
    /// Probability that a chaos partition also puts every client on one
    /// side or the other (drawn per client), so that a client can reach
    /// only a deposed leader; in [0, 1]. Needs `partitions`.
    pub partition_clients: f64,
    /// Probability that a leader isolation takes the clients along: each
    /// client is drawn to the leader's side or the others' (an availability
    /// zone cut off with the leader and the clients running in it), so a
    /// client on the leader's side reaches only a leader about to be
    /// deposed, and nobody once it steps down; in [0, 1]. Needs
    /// `leader_isolations`.
    pub leader_isolation_clients: f64,
    /// Each process draws its rate error uniformly in [-drift, drift];
    /// in [0, 1).
    pub drift: f64,
    /// Each seed first draws every rate between none and the given value.
    pub swarm: bool,
    /// With `swarm`: the probability that a seed leaves each kind out
    /// altogether (Groce et al.'s swarm testing leaves each feature out
    /// half the time), on top of the rate draw; in [0, 1]. 0: a kind is
    /// left out only when its draw is near zero.
    pub swarm_off: f64,
    /// Each seed also draws the engine's knobs (`run::knobs`).
    pub knobs: bool,
}

/// A kind of chaos fault: how often, and how long each lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChaosRate {
    /// Mean time between two faults of this kind; positive.
    pub mean_interval_ns: u64,
    pub for_ns: (u64, u64),
}

/// Chaos wall-clock jumps: how often, and by how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChaosJumps {
    pub mean_interval_ns: u64,
    pub jump_ns: (i64, i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No invariant may fire in any seed.
    Safe,
    /// Some seed must fire one of these invariant ids (distinct, known, at
    /// least one); no other invariant may fire.
    Violation { ids: Vec<String> },
}

impl Verdict {
    /// The invariant ids some seed is expected to fire (none if safe).
    pub fn expected_ids(&self) -> Vec<String> {
        match self {
            Verdict::Safe => Vec::new(),
            Verdict::Violation { ids } => ids.clone(),
        }
    }

    /// Whether a run that fired `fired` (invariant ids, repeats allowed)
    /// is what this verdict allows: nothing for a safe scenario; for a
    /// violation scenario nothing but its ids (a clean run is allowed, as
    /// only some seed must fire).
    pub fn allows<'a>(&self, mut fired: impl Iterator<Item = &'a str>) -> bool {
        match self {
            Verdict::Safe => fired.next().is_none(),
            Verdict::Violation { ids } => fired.all(|id| ids.iter().any(|allowed| allowed == id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    /// The simulator and the real runner both grade a run by this; a
    /// verdict that allowed everything would pass every planted bug.
    #[test]
    fn a_verdict_allows_only_what_it_names() {
        let safe = Verdict::Safe;
        assert!(safe.allows([].into_iter()));
        assert!(!safe.allows(["liveness"].into_iter()));
        let violation = Verdict::Violation { ids: vec!["fencing-order".into(), "lease-early-expiry".into()] };
        assert!(violation.allows([].into_iter()), "a clean seed of a violation scenario is allowed");
        assert!(violation.allows(["fencing-order", "fencing-order", "lease-early-expiry"].into_iter()));
        assert!(!violation.allows(["fencing-order", "liveness"].into_iter()));
        assert_eq!(violation.expected_ids(), ["fencing-order", "lease-early-expiry"]);
        assert!(safe.expected_ids().is_empty());
    }
}
