//! The in-memory cluster: N Raft nodes, their disks, their toy state
//! machines, their clocks and the network between them, plus the manual
//! controls story-style tests use ("fire node 1's election timeout",
//! "deliver everything", "crash node 3"). The time-driven scheduler lives in
//! `sim.rs`; the safety checks in `checker.rs`.
//!
//! Every input to a node is followed at once by carrying out its Ready the
//! way a correct host must (`host.rs`), then checking every invariant. The
//! first violation is kept and can be read with [`RaftCluster::check`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::{ConfChange, ProposeError, RaftConfig, RaftEvent, ReadReady, Role, TransferError};
use leasesim_core::types::{LogIndex, NodeId};

use crate::checker::{RaftChecker, RaftViolation, RaftViolationKind, TestNode};
use crate::disk::TestDisk;
use crate::host::brief;
use crate::network::{Envelope, NetFaults, TestNetwork};
use crate::toy::ToyState;

#[derive(Clone, Debug)]
pub struct RaftClusterOptions {
    /// Initial voters: ids `1..=voters`.
    pub voters: usize,
    /// Spare servers (ids after the voters): running, not in the
    /// configuration, waiting to be added.
    pub spares: usize,
    /// Template for every node's settings (`id` and `voters` are filled in).
    pub raft: RaftConfig,
    pub seed: u64,
    pub net: NetFaults,
    /// Compact a node once it has applied this many entries past its
    /// snapshot (0: only when asked).
    pub compact_every: u64,
    /// Check after every Ready that term, vote and log are on disk.
    pub check_durability: bool,
    /// Check Log Matching after every input (O(log) per pair of nodes).
    pub check_log_matching: bool,
    /// Each node's clock runs at 1 ± up to this many millionths.
    pub max_drift_ppm: u32,
    /// Keep a readable trace of recent events.
    pub trace: bool,
}

impl RaftClusterOptions {
    /// `voters` voters, no spares, default Raft settings, reliable network
    /// (1..5 ms delays), every check on.
    pub fn new(voters: usize) -> Self {
        RaftClusterOptions {
            voters,
            spares: 0,
            raft: RaftConfig::new(0, BTreeSet::new()),
            seed: 1,
            net: NetFaults::default(),
            compact_every: 0,
            check_durability: true,
            check_log_matching: true,
            max_drift_ppm: 0,
            trace: false,
        }
    }
    pub fn spares(mut self, spares: usize) -> Self {
        self.spares = spares;
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Adjusts the Raft settings template.
    pub fn raft(mut self, f: impl FnOnce(&mut RaftConfig)) -> Self {
        f(&mut self.raft);
        self
    }
    pub fn bugs(mut self, bugs: Bugs) -> Self {
        self.raft.bugs = bugs;
        self
    }
    pub fn net(mut self, net: NetFaults) -> Self {
        self.net = net;
        self
    }
    pub fn compact_every(mut self, entries: u64) -> Self {
        self.compact_every = entries;
        self
    }
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }
}

/// Counters for throughput and coverage reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages handed to `RaftNode::step`.
    pub steps: u64,
    pub ticks: u64,
    pub proposals: u64,
    pub applied: u64,
    pub crashes: u64,
    pub snapshots_installed: u64,
    pub reads_served: u64,
    pub reads_failed: u64,
    pub elections_won: u64,
}

/// One server: the node while it runs, and what outlives it.
pub(crate) struct Slot {
    pub(crate) node: Option<TestNode>,
    pub(crate) disk: TestDisk,
    pub(crate) state: ToyState,
    clock_offset_ns: u64,
    drift_ppm: i64,
    pub(crate) local_ns: u64,
    /// Highest commit index this server ever reached (survives crashes):
    /// its log must never end below it again.
    pub(crate) max_commit_seen: LogIndex,
    /// Outstanding reads: ctx -> the index they must cover.
    pub(crate) reads: BTreeMap<u64, LogIndex>,
}

pub struct RaftCluster {
    pub(crate) opts: RaftClusterOptions,
    pub(crate) slots: BTreeMap<NodeId, Slot>,
    pub net: TestNetwork,
    pub(crate) rng: ChaCha8Rng,
    /// Global ("true") simulated time.
    pub(crate) now_ns: u64,
    pub(crate) checker: RaftChecker,
    violation: Option<RaftViolation>,
    pub stats: Stats,
    pub(crate) trace: VecDeque<String>,
    next_ctx: u64,
    /// A command the liveness check waits for.
    pub(crate) watched_command: Option<u64>,
    pub(crate) watched_applied: bool,
    pub served_reads: Vec<(NodeId, ReadReady)>,
    pub failed_reads: Vec<(NodeId, u64)>,
    /// Every event any node reported, in order.
    pub events: Vec<(NodeId, RaftEvent)>,
}

const TRACE_LINES: usize = 2_000;

/// What a clock with `offset_ns` and `drift_ppm` reads at global time
/// `global_ns`. A clock without drift reads its offset plus global time:
/// the same figure as the 128-bit formula (× 0 ÷ 10⁶ adds nothing),
/// without its division, a software routine on x86-64 that every input
/// paid.
fn local_at_global(offset_ns: u64, drift_ppm: i64, global_ns: u64) -> u64 {
    if drift_ppm == 0 {
        return offset_ns + global_ns;
    }
    let drifted = global_ns as i128 + global_ns as i128 * drift_ppm as i128 / 1_000_000;
    (offset_ns as i128 + drifted).max(0) as u64
}

/// The global time a clock drifting by `drift_ppm` takes to show
/// `elapsed_ns` past its offset, rounded up. The scheduler asks this of
/// every node before every event, so the common case skips the 128-bit
/// division (with `local_at_global`'s, a third of the pure harness's
/// instructions, measured with callgrind): at rate 10⁶ the rounded-up
/// quotient is `elapsed_ns` itself.
fn global_after_local(elapsed_ns: u64, drift_ppm: i64) -> u64 {
    if drift_ppm == 0 {
        return elapsed_ns;
    }
    let rate = 1_000_000 + drift_ppm as i128;
    ((elapsed_ns as i128 * 1_000_000 + rate - 1) / rate) as u64
}

impl RaftCluster {
    pub fn new(opts: RaftClusterOptions) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let voters: BTreeSet<NodeId> = (1..=opts.voters as NodeId).collect();
        let mut slots = BTreeMap::new();
        for id in 1..=(opts.voters + opts.spares) as NodeId {
            let mut config = opts.raft.clone();
            config.id = id;
            config.voters = voters.clone();
            let clock_offset_ns = rng.gen_range(0..1_000_000_000);
            let drift = opts.max_drift_ppm as i64;
            let drift_ppm = if drift > 0 { rng.gen_range(-drift..=drift) } else { 0 };
            let node = TestNode::new(config, rng.gen(), clock_offset_ns);
            slots.insert(
                id,
                Slot {
                    node: Some(node),
                    disk: TestDisk::default(),
                    state: ToyState::default(),
                    clock_offset_ns,
                    drift_ppm,
                    local_ns: clock_offset_ns,
                    max_commit_seen: 0,
                    reads: BTreeMap::new(),
                },
            );
        }
        let net = TestNetwork { faults: opts.net.clone(), ..TestNetwork::default() };
        RaftCluster {
            opts,
            slots,
            net,
            rng,
            now_ns: 0,
            checker: RaftChecker::default(),
            violation: None,
            stats: Stats::default(),
            trace: VecDeque::new(),
            next_ctx: 0,
            watched_command: None,
            watched_applied: false,
            served_reads: Vec::new(),
            failed_reads: Vec::new(),
            events: Vec::new(),
        }
    }

    // ----- observation -----

    pub fn ids(&self) -> Vec<NodeId> {
        self.slots.keys().copied().collect()
    }
    pub fn is_up(&self, id: NodeId) -> bool {
        self.slots.get(&id).is_some_and(|s| s.node.is_some())
    }
    /// The running node `id` (panics if it is down: a test bug).
    pub fn node(&self, id: NodeId) -> &TestNode {
        self.try_node(id).unwrap_or_else(|| panic!("node {id} is down"))
    }
    pub fn try_node(&self, id: NodeId) -> Option<&TestNode> {
        self.slots.get(&id).and_then(|s| s.node.as_ref())
    }
    pub fn state(&self, id: NodeId) -> &ToyState {
        &self.slots[&id].state
    }
    pub fn disk(&self, id: NodeId) -> &TestDisk {
        &self.slots[&id].disk
    }
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
    pub fn local_ns(&self, id: NodeId) -> u64 {
        self.slots[&id].local_ns
    }
    /// The running leader with the highest term, if any.
    pub fn leader(&self) -> Option<NodeId> {
        self.slots
            .iter()
            .filter_map(|(id, s)| s.node.as_ref().filter(|n| n.role() == Role::Leader).map(|n| (n.term(), *id)))
            .max()
            .map(|(_, id)| id)
    }
    /// The first violation seen, if any.
    pub fn violation(&self) -> Option<&RaftViolation> {
        self.violation.as_ref()
    }
    pub fn check(&self) -> Result<(), RaftViolation> {
        self.violation.clone().map_or(Ok(()), Err)
    }
    /// The recent trace (empty unless `RaftClusterOptions::trace`).
    pub fn trace(&self) -> String {
        self.trace.iter().cloned().collect::<Vec<_>>().join("\n")
    }
    pub fn messages_in_flight(&self) -> impl Iterator<Item = &Envelope> {
        self.net.in_flight()
    }

    pub(crate) fn note(&mut self, line: impl FnOnce() -> String) {
        if self.opts.trace {
            if self.trace.len() == TRACE_LINES {
                self.trace.pop_front();
            }
            let line = format!("{:>12} {}", self.now_ns, line());
            self.trace.push_back(line);
        }
    }

    pub(crate) fn record(&mut self, kind: RaftViolationKind, detail: String) {
        if self.violation.is_none() {
            self.note(|| format!("VIOLATION {kind:?}: {detail}"));
            self.violation = Some(RaftViolation { kind, at_ns: self.now_ns, detail });
        }
    }

    // ----- clocks -----

    /// Brings node `id`'s clock reading up to the cluster's global time
    /// (`self.now_ns`), through the node's own offset and drift, never
    /// behind what its clock already showed.
    pub(crate) fn sync_clock(&mut self, id: NodeId) {
        let global = self.now_ns;
        let slot = self.slots.get_mut(&id).expect("known node");
        let local = local_at_global(slot.clock_offset_ns, slot.drift_ppm, global);
        slot.local_ns = slot.local_ns.max(local);
    }

    /// The global time at which `slot`'s clock reaches `local_ns`.
    pub(crate) fn global_at_local(&self, slot: &Slot, local_ns: u64) -> u64 {
        if local_ns <= slot.local_ns {
            return self.now_ns;
        }
        let elapsed = local_ns - slot.clock_offset_ns.min(local_ns);
        global_after_local(elapsed, slot.drift_ppm).max(self.now_ns)
    }

    /// Moves one node's clock forward for good (a clock jump; in manual
    /// tests, "time passes at node 2").
    pub fn advance_clock(&mut self, id: NodeId, by_ns: u64) {
        let slot = self.slots.get_mut(&id).expect("known node");
        slot.clock_offset_ns += by_ns;
        slot.local_ns += by_ns;
    }

    // ----- inputs -----

    /// Runs one input on node `id` at its current clock and carries out the
    /// Ready. Returns `None` if the node is down.
    pub(crate) fn input<R>(&mut self, id: NodeId, f: impl FnOnce(&mut TestNode, u64) -> R) -> Option<R> {
        self.sync_clock(id);
        let slot = self.slots.get_mut(&id)?;
        let now = slot.local_ns;
        let node = slot.node.as_mut()?;
        let result = f(node, now);
        self.process_ready(id);
        Some(result)
    }

    /// Calls `tick` at the node's current clock.
    pub fn tick(&mut self, id: NodeId) {
        self.stats.ticks += 1;
        self.input(id, |n, now| n.tick(now));
    }

    /// Moves the node's clock to its next deadline and ticks it: its election
    /// timeout (or heartbeat, for a leader) fires.
    pub fn fire_timeout(&mut self, id: NodeId) {
        let Some(deadline) = self.try_node(id).map(|n| n.next_deadline_ns()) else {
            return;
        };
        self.sync_clock(id);
        let slot = self.slots.get_mut(&id).expect("known node");
        slot.local_ns = slot.local_ns.max(deadline);
        self.note(|| format!("node {id} timer fires"));
        self.tick(id);
    }

    pub fn propose(&mut self, id: NodeId, command: u64) -> Result<LogIndex, ProposeError> {
        self.stats.proposals += 1;
        self.note(|| format!("propose {command} at node {id}"));
        self.input(id, |n, now| n.propose(now, command)).unwrap_or(Err(ProposeError::NotLeader { leader_hint: None }))
    }

    pub fn propose_conf_change(&mut self, id: NodeId, change: ConfChange) -> Result<LogIndex, ProposeError> {
        self.note(|| format!("propose {change:?} at node {id}"));
        self.input(id, |n, now| n.propose_conf_change(now, change)).unwrap_or(Err(ProposeError::NotLeader { leader_hint: None }))
    }

    /// Asks leader `id` to hand leadership to `target` (thesis §3.10).
    pub fn transfer_leadership(&mut self, id: NodeId, target: NodeId) -> Result<(), TransferError> {
        self.note(|| format!("transfer leadership from node {id} to node {target}"));
        self.input(id, |n, now| n.transfer_leadership(now, target)).unwrap_or(Err(TransferError::NotLeader { leader_hint: None }))
    }

    /// Starts a read at node `id`; returns its ctx. The read must later cover
    /// every entry applied anywhere by now.
    pub fn read_index(&mut self, id: NodeId) -> Result<u64, ProposeError> {
        self.next_ctx += 1;
        let ctx = self.next_ctx;
        let must_cover = self.checker.max_applied;
        if self.is_up(id) {
            self.slots.get_mut(&id).expect("known node").reads.insert(ctx, must_cover);
        }
        let result = self.input(id, |n, now| n.read_index(now, ctx)).unwrap_or(Err(ProposeError::NotLeader { leader_hint: None }));
        if result.is_err() {
            self.slots.get_mut(&id).expect("known node").reads.remove(&ctx);
        }
        result.map(|()| ctx)
    }

    /// Snapshots node `id` at its applied index.
    pub fn compact(&mut self, id: NodeId) {
        let slot = self.slots.get_mut(&id).expect("known node");
        let Some(node) = slot.node.as_mut() else {
            return;
        };
        let applied = slot.state.applied_index;
        if applied >= node.first_index() {
            node.compact(applied, slot.state.clone());
            self.note(|| format!("node {id} compacts to {applied}"));
            self.process_ready(id);
        }
    }

    /// Kills node `id`: everything not on its disk is lost.
    pub fn crash(&mut self, id: NodeId) {
        let slot = self.slots.get_mut(&id).expect("known node");
        if slot.node.take().is_some() {
            slot.state = ToyState::default();
            slot.reads.clear();
            self.stats.crashes += 1;
            self.note(|| format!("node {id} crashes"));
        }
    }

    /// Restarts node `id` from its disk (`RaftNode::restore`).
    pub fn restart(&mut self, id: NodeId) {
        if self.is_up(id) {
            return;
        }
        self.sync_clock(id);
        let seed = self.rng.gen();
        let slot = self.slots.get_mut(&id).expect("known node");
        let mut config = self.opts.raft.clone();
        config.id = id;
        config.voters = (1..=self.opts.voters as NodeId).collect();
        slot.node = Some(TestNode::restore(config, slot.disk.persisted.clone(), seed, slot.local_ns));
        self.note(|| format!("node {id} restarts"));
        self.process_ready(id);
    }

    /// Story helper: node `id`'s election timeout fires and every message is
    /// delivered. Returns whether `id` ends up leading.
    pub fn elect(&mut self, id: NodeId) -> bool {
        self.fire_timeout(id);
        self.deliver_all();
        self.try_node(id).is_some_and(|n| n.role() == Role::Leader)
    }

    /// Story helper: whether every running node has applied through `index`.
    pub fn applied_everywhere(&self, index: LogIndex) -> bool {
        self.slots.values().filter(|s| s.node.is_some()).all(|s| s.state.applied_index >= index)
    }

    // ----- network controls -----

    /// Cuts node `id` off from every other node.
    pub fn isolate(&mut self, id: NodeId) {
        for other in self.ids() {
            if other != id {
                self.net.cut(id, other);
            }
        }
        self.note(|| format!("node {id} isolated"));
    }

    /// Splits the cluster: links between different groups are cut. Nodes in
    /// no group are cut off from everyone.
    pub fn partition(&mut self, groups: &[&[NodeId]]) {
        let group_of = |id: NodeId| groups.iter().position(|g| g.contains(&id));
        for a in self.ids() {
            for b in self.ids() {
                if a != b && (group_of(a).is_none() || group_of(a) != group_of(b)) {
                    self.net.blocked.insert((a, b));
                }
            }
        }
        self.note(|| format!("partition {groups:?}"));
    }

    pub fn heal(&mut self) {
        self.net.blocked.clear();
        self.note(|| "network healed".to_string());
    }

    /// Delivers one message (lost if its link is cut or its receiver down).
    pub(crate) fn deliver(&mut self, envelope: Envelope) {
        let Envelope { from, to, msg } = envelope;
        if self.net.is_blocked(from, to) || !self.is_up(to) {
            self.net.dropped += 1;
            return;
        }
        self.stats.steps += 1;
        if self.opts.trace {
            self.note(|| format!("{from} -> {to}: {}", brief(&msg)));
        }
        self.input(to, |n, now| n.step(now, from, msg));
    }

    /// Delivers the next message in flight; false if none.
    pub fn deliver_next(&mut self) -> bool {
        match self.net.pop_next() {
            Some(envelope) => {
                self.deliver(envelope);
                true
            }
            None => false,
        }
    }

    /// Delivers messages (including the ones they cause) until none is in
    /// flight, ignoring delivery times; stops after `limit` deliveries.
    pub fn deliver_all(&mut self) {
        let limit = 100_000;
        for _ in 0..limit {
            if !self.deliver_next() {
                return;
            }
        }
    }

    /// Delivers, in order, the messages now in flight that match (messages
    /// they cause stay in flight). Returns how many.
    pub fn deliver_where(&mut self, mut pred: impl FnMut(&Envelope) -> bool) -> usize {
        let keys: Vec<(u64, u64)> = self.net.in_flight.iter().filter(|(_, e)| pred(e)).map(|(k, _)| *k).collect();
        for key in &keys {
            if let Some(envelope) = self.net.in_flight.remove(key) {
                self.deliver(envelope);
            }
        }
        keys.len()
    }

    /// Loses the messages in flight that match. Returns how many.
    pub fn drop_where(&mut self, pred: impl FnMut(&Envelope) -> bool) -> usize {
        self.net.drop_where(pred)
    }
}

#[cfg(test)]
mod tests {
    use super::{global_after_local, local_at_global};

    /// The drift-free shortcuts must give what the 128-bit formulas give,
    /// or every harness schedule (and the tests pinned on them) would move.
    #[test]
    fn clocks_without_drift_convert_as_the_general_formulas_do() {
        let local_128 = |offset: u64, drift: i64, global: u64| {
            let drifted = global as i128 + global as i128 * drift as i128 / 1_000_000;
            (offset as i128 + drifted).max(0) as u64
        };
        let global_128 = |elapsed: u64, drift: i64| {
            let rate = 1_000_000 + drift as i128;
            ((elapsed as i128 * 1_000_000 + rate - 1) / rate) as u64
        };
        let times = [0, 1, 999_999, 1_000_000, 1_000_001, 123_456_789_012, 86_400_000_000_000];
        for drift in [0, 1, -1, 250, -250] {
            for &t in &times {
                assert_eq!(global_after_local(t, drift), global_128(t, drift), "elapsed {t}, drift {drift}");
                for offset in [0, 7, 999_999_999] {
                    assert_eq!(
                        local_at_global(offset, drift, t),
                        local_128(offset, drift, t),
                        "offset {offset}, global {t}, drift {drift}"
                    );
                }
            }
        }
    }
}
