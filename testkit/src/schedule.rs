//! A schedule is one simulated run: a seed (network randomness, clocks,
//! election jitter), a few knobs (cluster size, loss, duplication, delay,
//! proposal rate), and a list of timed faults. A fault phase runs the
//! workload under the faults; then every fault heals and the run must make
//! progress again (liveness) within a bounded number of election timeouts.
//!
//! Faults name nodes by small numbers taken modulo the cluster size, so a
//! shrinking property test can drop or simplify faults freely and the
//! schedule stays valid; the `Debug` form of a failing schedule is the
//! reproduction.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::{ConfChange, RaftConfig};
use leasesim_core::types::{NodeId, NS_PER_MS};

use crate::checker::{RaftViolation, RaftViolationKind};
use crate::cluster::{RaftCluster, RaftClusterOptions, Stats};
use crate::network::NetFaults;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduledFault {
    Crash(u8),
    Restart(u8),
    /// Cut one node off from all others.
    Isolate(u8),
    /// Nodes whose bit is set on one side, the rest on the other.
    Partition(u8),
    /// Reconnect everything and restart every crashed node.
    Heal,
    AddServer(u8),
    RemoveServer(u8),
    Compact(u8),
    Read(u8),
    /// Jump one node's clock forward by this many milliseconds.
    ClockJump(u8, u16),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub seed: u64,
    pub voters: u8,
    pub spares: u8,
    pub drop_permille: u16,
    pub dup_permille: u16,
    pub max_delay_ms: u8,
    /// A command is proposed to the leader this often (0: never).
    pub propose_every_ms: u16,
    pub max_drift_ppm: u32,
    pub compact_every: u8,
    pub fault_phase_ms: u32,
    /// Faults at offsets (ms) into the fault phase.
    pub faults: Vec<(u16, ScheduledFault)>,
    pub pre_vote: bool,
    pub check_quorum: bool,
    pub bugs: Bugs,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            seed: 0,
            voters: 3,
            spares: 0,
            drop_permille: 0,
            dup_permille: 0,
            max_delay_ms: 10,
            propose_every_ms: 20,
            max_drift_ppm: 0,
            compact_every: 16,
            fault_phase_ms: 2_000,
            faults: Vec::new(),
            pre_vote: true,
            check_quorum: true,
            bugs: Bugs::default(),
        }
    }
}

impl Schedule {
    /// A swarm-style schedule drawn entirely from `seed`: the seed picks the
    /// fault rates as well as the faults.
    pub fn random(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_5eed);
        let fault_phase_ms = 2_000;
        let fault_count = rng.gen_range(0..=10);
        let mut faults: Vec<(u16, ScheduledFault)> = (0..fault_count)
            .map(|_| {
                let at = rng.gen_range(0..fault_phase_ms) as u16;
                let n = rng.gen_range(0..8u8);
                let fault = match rng.gen_range(0..10) {
                    0 => ScheduledFault::Crash(n),
                    1 => ScheduledFault::Restart(n),
                    2 => ScheduledFault::Isolate(n),
                    3 => ScheduledFault::Partition(rng.gen()),
                    4 => ScheduledFault::Heal,
                    5 => ScheduledFault::AddServer(n),
                    6 => ScheduledFault::RemoveServer(n),
                    7 => ScheduledFault::Compact(n),
                    8 => ScheduledFault::Read(n),
                    _ => ScheduledFault::ClockJump(n, rng.gen_range(0..500)),
                };
                (at, fault)
            })
            .collect();
        faults.sort_by_key(|(at, _)| *at);
        Schedule {
            seed,
            voters: if rng.gen_bool(0.5) { 3 } else { 5 },
            spares: rng.gen_range(0..=1),
            drop_permille: [0, 0, 20, 100, 300][rng.gen_range(0..5)],
            dup_permille: [0, 0, 20, 100][rng.gen_range(0..4)],
            max_delay_ms: [2, 10, 40][rng.gen_range(0..3)],
            propose_every_ms: [10, 20, 50][rng.gen_range(0..3)],
            max_drift_ppm: [0, 1_000, 50_000][rng.gen_range(0..3)],
            compact_every: [4, 16, 64][rng.gen_range(0..3)],
            fault_phase_ms,
            faults,
            pre_vote: rng.gen_bool(0.8),
            check_quorum: rng.gen_bool(0.8),
            bugs: Bugs::default(),
        }
    }

    pub fn cluster_options(&self) -> RaftClusterOptions {
        let mut raft = RaftConfig::new(0, Default::default());
        raft.bugs = self.bugs;
        raft.pre_vote = self.pre_vote;
        raft.check_quorum = self.check_quorum;
        raft.max_entries_per_append = 8;
        RaftClusterOptions {
            voters: self.voters.max(1) as usize,
            spares: self.spares as usize,
            raft,
            seed: self.seed,
            net: NetFaults {
                drop_permille: self.drop_permille.min(1000) as u32,
                dup_permille: self.dup_permille.min(1000) as u32,
                min_delay_ns: NS_PER_MS,
                max_delay_ns: self.max_delay_ms.max(1) as u64 * NS_PER_MS,
            },
            compact_every: self.compact_every as u64,
            check_durability: true,
            check_log_matching: true,
            max_drift_ppm: self.max_drift_ppm,
            trace: false,
        }
    }
}

/// What a passing run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    pub stats: Stats,
    /// Global simulated time at the end.
    pub sim_ns: u64,
    /// From healing to the liveness probe being applied.
    pub recovery_ns: u64,
}

/// Election timeouts allowed after healing for a leader to be elected and a
/// proposal to commit.
pub const LIVENESS_ELECTION_TIMEOUTS: u64 = 10;

/// Runs a schedule: fault phase, heal, liveness phase. The first safety or
/// liveness violation comes back as the error.
pub fn run_schedule(schedule: &Schedule) -> Result<RunSummary, RaftViolation> {
    run_schedule_with(schedule, schedule.cluster_options()).0
}

/// Runs with a trace kept, returning the trace too (for failure reports).
pub fn run_schedule_traced(schedule: &Schedule) -> (Result<RunSummary, RaftViolation>, String) {
    let mut opts = schedule.cluster_options();
    opts.trace = true;
    run_schedule_with(schedule, opts)
}

fn run_schedule_with(schedule: &Schedule, opts: RaftClusterOptions) -> (Result<RunSummary, RaftViolation>, String) {
    let mut c = RaftCluster::new(opts);
    let result = drive(&mut c, schedule);
    let trace = c.trace();
    (result, trace)
}

fn drive(c: &mut RaftCluster, schedule: &Schedule) -> Result<RunSummary, RaftViolation> {
    let total = c.ids().len() as u64;
    let node = |n: u8| 1 + n as u64 % total;
    let fault_end_ns = schedule.fault_phase_ms as u64 * NS_PER_MS;
    let propose_every_ns = schedule.propose_every_ms as u64 * NS_PER_MS;
    let mut faults = schedule.faults.clone();
    faults.sort_by_key(|(at, _)| *at);
    let mut faults = faults.into_iter().peekable();
    let mut next_proposal_ns = propose_every_ns.max(1);
    let mut command = 0u64;
    loop {
        let next_fault_ns = faults.peek().map(|(at, _)| *at as u64 * NS_PER_MS);
        let next_work_ns = if propose_every_ns > 0 { next_proposal_ns } else { u64::MAX };
        let next_ns = next_fault_ns.unwrap_or(u64::MAX).min(next_work_ns).min(fault_end_ns);
        c.run_until_time(next_ns);
        c.check()?;
        if next_ns >= fault_end_ns {
            break;
        }
        if next_fault_ns == Some(next_ns) {
            let (_, fault) = faults.next().expect("peeked");
            apply_fault(c, fault, node);
        } else {
            command += 1;
            if let Some(leader) = c.leader() {
                let _ = c.propose(leader, command);
                // Every fourth proposal tick also reads.
                if command.is_multiple_of(4) {
                    let _ = c.read_index(leader);
                }
            }
            next_proposal_ns += propose_every_ns;
        }
        c.check()?;
    }
    let healed_at = c.now_ns();
    heal_everything(c);
    check_liveness(c, command + 1)?;
    Ok(RunSummary { stats: c.stats.clone(), sim_ns: c.now_ns(), recovery_ns: c.now_ns() - healed_at })
}

fn apply_fault(c: &mut RaftCluster, fault: ScheduledFault, node: impl Fn(u8) -> NodeId) {
    match fault {
        ScheduledFault::Crash(n) => c.crash(node(n)),
        ScheduledFault::Restart(n) => c.restart(node(n)),
        ScheduledFault::Isolate(n) => c.isolate(node(n)),
        ScheduledFault::Partition(mask) => {
            let ids = c.ids();
            let (a, b): (Vec<NodeId>, Vec<NodeId>) = ids.iter().partition(|&&id| mask & (1 << ((id - 1) % 8)) != 0);
            c.partition(&[&a, &b]);
        }
        ScheduledFault::Heal => heal_everything(c),
        ScheduledFault::AddServer(n) => {
            if let Some(leader) = c.leader() {
                let _ = c.propose_conf_change(leader, ConfChange::AddServer(node(n)));
            }
        }
        ScheduledFault::RemoveServer(n) => {
            if let Some(leader) = c.leader() {
                let _ = c.propose_conf_change(leader, ConfChange::RemoveServer(node(n)));
            }
        }
        ScheduledFault::Compact(n) => c.compact(node(n)),
        ScheduledFault::Read(n) => {
            let _ = c.read_index(node(n));
        }
        ScheduledFault::ClockJump(n, ms) => c.advance_clock(node(n), ms as u64 * NS_PER_MS),
    }
}

fn heal_everything(c: &mut RaftCluster) {
    c.heal();
    c.net.faults.drop_permille = 0;
    c.net.faults.dup_permille = 0;
    for id in c.ids() {
        c.restart(id);
    }
}

/// After healing: within a bounded number of election timeouts some leader
/// must have committed an entry of its term and then a fresh proposal.
fn check_liveness(c: &mut RaftCluster, first_probe: u64) -> Result<(), RaftViolation> {
    let timeout_ns = c.opts.raft.election_timeout_max_ns;
    let deadline_ns = c.now_ns() + LIVENESS_ELECTION_TIMEOUTS * timeout_ns;
    let mut probe = first_probe;
    let mut probed_leader = None;
    c.watched_command = None;
    c.watched_applied = false;
    while c.now_ns() < deadline_ns {
        let leader = c.leader().filter(|&l| c.node(l).has_committed_in_term());
        if let Some(l) = leader {
            let key = (l, c.node(l).term());
            if probed_leader != Some(key) {
                probe += 1;
                c.watched_command = Some(probe);
                c.watched_applied = false;
                if c.propose(l, probe).is_ok() {
                    probed_leader = Some(key);
                }
            }
        }
        let step_ns = (timeout_ns / 4).min(deadline_ns - c.now_ns()).max(1);
        c.run_until(step_ns, |c| c.watched_applied);
        c.check()?;
        if c.watched_applied {
            return Ok(());
        }
    }
    let roles: Vec<String> = c
        .ids()
        .into_iter()
        .map(|id| match c.try_node(id) {
            Some(n) => format!("{id}:{:?}@t{} commit {} voters {:?}", n.role(), n.term(), n.commit_index(), n.voters()),
            None => format!("{id}:down"),
        })
        .collect();
    Err(RaftViolation {
        kind: RaftViolationKind::Liveness,
        at_ns: c.now_ns(),
        detail: format!(
            "no proposal committed within {LIVENESS_ELECTION_TIMEOUTS} election timeouts after healing; nodes: {}",
            roles.join(", ")
        ),
    })
}
