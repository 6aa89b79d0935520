//! A pure, deterministic cluster harness for servers: N `Server`s, scripted
//! clients, a seeded network (drop, delay, reorder, duplicate), crashes that
//! lose everything not persisted, isolations and leader changes, all in
//! harness time with no IO. Every server event and client observation goes
//! through the checkers (`checker.rs`, all of them the judge's).
//!
//! Shared by several test crates, each using part of it.

#![allow(dead_code)]

pub mod checker;
pub mod drivers;
pub mod net;
pub mod rpc;

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::bugs::Bugs;
use leasesim_core::raft::{ConfChange, Persisted, ProposeError, RaftConfig, Role};
use leasesim_core::server::{Clocks, Server, ServerConfig, ServerEvent};
use leasesim_core::service::ClientResponse;
use leasesim_core::service::{Command, Op, SharedState, StateMachine};
use leasesim_core::{ClientId, ExpiryStrategy, NodeId, NS_PER_MS, NS_PER_SEC};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use checker::{CheckSettings, ServiceChecker, ServiceViolation};
use drivers::{Driver, KvClient, LockClient, ManualClient, RegistryClient};
use net::{Delivery, DeliveryFaults, Partitions, Payload, Proc, Target, TimelineFault};
use rpc::Answer;

pub const TTL_NS: u64 = NS_PER_SEC;

#[derive(Clone, Debug)]
pub struct ServiceClusterConfig {
    pub servers: u64,
    pub expiry: ExpiryStrategy,
    pub bugs: Bugs,
    pub seed: u64,
    pub net: DeliveryFaults,
    pub snapshot_every_entries: u64,
    pub checkpoint_interval_ns: Option<u64>,
    /// Each server's wall clock is off true time by up to this much.
    pub wall_skew_ns: u64,
    /// `leader-monotonic`: confirm leadership by a read-index round before
    /// answering a keep-alive (false: answer at once, as etcd's lessor).
    pub keepalive_read_index: bool,
}

impl ServiceClusterConfig {
    pub fn new(servers: u64, seed: u64) -> Self {
        ServiceClusterConfig {
            servers,
            expiry: ExpiryStrategy::LeaderMonotonic,
            bugs: Bugs::default(),
            seed,
            net: DeliveryFaults::calm(),
            snapshot_every_entries: 40,
            checkpoint_interval_ns: None,
            wall_skew_ns: 0,
            keepalive_read_index: true,
        }
    }
}

type Image = Persisted<Command, SharedState>;

pub struct ServiceCluster {
    pub cfg: ServiceClusterConfig,
    pub now_ns: u64,
    servers: BTreeMap<NodeId, Option<Server>>,
    disks: BTreeMap<NodeId, Image>,
    /// Per server: monotonic offset, wall offset (may be negative).
    offsets: BTreeMap<NodeId, (u64, i64)>,
    pub clients: BTreeMap<ClientId, Driver>,
    queue: BTreeMap<(u64, u64), Delivery>,
    next_seq: u64,
    rng: ChaCha8Rng,
    pub checker: ServiceChecker,
    partitions: Partitions,
    timeline: Vec<(u64, TimelineFault)>,
    last_crashed: Option<NodeId>,
    restarts: u64,
    pub messages_delivered: u64,
    /// Every server event with its time, when `record_events` is on.
    pub events: Vec<(u64, NodeId, ServerEvent)>,
    pub record_events: bool,
    /// Every key change each server's applies reported (its output's
    /// `changes`), when `record_events` is on.
    pub changes: BTreeMap<NodeId, Vec<leasesim_core::service::kv::Change>>,
}

impl ServiceCluster {
    pub fn new(cfg: ServiceClusterConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let ids: Vec<NodeId> = (1..=cfg.servers).collect();
        let offsets = ids
            .iter()
            .map(|id| {
                let skew = cfg.wall_skew_ns as i64;
                let wall = if skew > 0 { rng.gen_range(-skew..=skew) } else { 0 };
                (*id, (rng.gen_range(0..1_000_000) * NS_PER_SEC, wall))
            })
            .collect();
        let settings = CheckSettings { expiry: cfg.expiry, extension_ns: RaftConfig::new(1, BTreeSet::new()).election_timeout_max_ns };
        let mut cluster = ServiceCluster {
            now_ns: 0,
            servers: BTreeMap::new(),
            disks: ids.iter().map(|id| (*id, Image::default())).collect(),
            offsets,
            clients: BTreeMap::new(),
            queue: BTreeMap::new(),
            next_seq: 0,
            rng,
            checker: ServiceChecker::new(settings),
            partitions: Partitions::default(),
            timeline: Vec::new(),
            last_crashed: None,
            restarts: 0,
            messages_delivered: 0,
            events: Vec::new(),
            record_events: false,
            changes: BTreeMap::new(),
            cfg,
        };
        for id in ids {
            cluster.start_server(id);
        }
        cluster
    }

    pub fn server_config(&self, id: NodeId) -> ServerConfig {
        let voters = (1..=self.cfg.servers).collect();
        let mut config = ServerConfig::new(RaftConfig::new(id, voters), self.cfg.expiry).with_bugs(self.cfg.bugs);
        config.snapshot_every_entries = self.cfg.snapshot_every_entries;
        config.checkpoint_interval_ns = self.cfg.checkpoint_interval_ns;
        config.keepalive_read_index = self.cfg.keepalive_read_index;
        config
    }

    fn clocks(&self, id: NodeId) -> Clocks {
        let (mono, wall) = self.offsets[&id];
        Clocks { mono_ns: self.now_ns + mono, wall_ns: (self.now_ns as i64 + wall).max(0) as u64 }
    }

    fn start_server(&mut self, id: NodeId) {
        self.restarts += 1;
        let seed = self.cfg.seed.wrapping_mul(31).wrapping_add(id * 1000 + self.restarts);
        let server = Server::new(self.server_config(id), self.disks[&id].clone(), seed, self.clocks(id));
        self.checker.restarted(self.now_ns, id);
        self.servers.insert(id, Some(server));
        self.drain(id);
    }

    // ----- clients -----

    fn server_ids(&self) -> Vec<NodeId> {
        (1..=self.cfg.servers).collect()
    }

    pub fn add_lock_client(&mut self, id: ClientId, keys: &[&str]) -> &mut LockClient {
        let client = LockClient::new(id, self.server_ids(), keys, TTL_NS, self.cfg.seed);
        self.clients.insert(id, Driver::Lock(client));
        match self.clients.get_mut(&id) {
            Some(Driver::Lock(c)) => c,
            _ => unreachable!("just inserted"),
        }
    }

    pub fn add_kv_client(&mut self, id: ClientId, keys: usize) -> &mut KvClient {
        let client = KvClient::new(id, self.server_ids(), keys, self.cfg.seed);
        self.clients.insert(id, Driver::Kv(client));
        match self.clients.get_mut(&id) {
            Some(Driver::Kv(c)) => c,
            _ => unreachable!("just inserted"),
        }
    }

    pub fn add_registry_client(&mut self, id: ClientId, dies_at_ns: u64) {
        let client = RegistryClient::new(id, self.server_ids(), TTL_NS, dies_at_ns);
        self.clients.insert(id, Driver::Registry(client));
    }

    pub fn add_manual_client(&mut self, id: ClientId) {
        self.clients.insert(id, Driver::Manual(ManualClient::new(id, self.server_ids())));
    }

    /// Sends `op` from manual client `client` (to the believed leader).
    pub fn submit(&mut self, client: ClientId, op: Op) -> u64 {
        let now = self.now_ns;
        let seq = self.clients.get_mut(&client).expect("client exists").rpc().call(now, op);
        self.flush_client(client);
        seq
    }

    /// Sends `op` from manual client `client` to `server` first.
    pub fn submit_to(&mut self, client: ClientId, server: NodeId, op: Op) -> u64 {
        let now = self.now_ns;
        let seq = self.clients.get_mut(&client).expect("client exists").rpc().call_at(now, server, op);
        self.flush_client(client);
        seq
    }

    /// Sends `req` as client `req.client` to `server` as it is: a resend
    /// keeps its sequence number.
    pub fn send_request(&mut self, server: NodeId, req: leasesim_core::service::ClientRequest) {
        self.send(Proc::Client(req.client), Proc::Server(server), Payload::Request(req));
    }

    /// Every reply manual client `client` received, NotLeader and Retry
    /// included, in order.
    pub fn raw_replies(&self, client: ClientId) -> Vec<ClientResponse> {
        match self.clients.get(&client) {
            Some(Driver::Manual(c)) => c.raw.clone(),
            _ => Vec::new(),
        }
    }

    pub fn answer(&self, client: ClientId, seq: u64) -> Option<&Answer> {
        match self.clients.get(&client) {
            Some(Driver::Manual(c)) => c.answers.get(&seq),
            _ => None,
        }
    }

    /// Submits `op` and runs until it is answered (or `timeout_ns` passes).
    pub fn call(&mut self, client: ClientId, op: Op, timeout_ns: u64) -> Option<Answer> {
        let seq = self.submit(client, op);
        let deadline = self.now_ns + timeout_ns;
        while self.answer(client, seq).is_none() && self.now_ns < deadline {
            let step_to = (self.now_ns + 5 * NS_PER_MS).min(deadline);
            self.run_until(step_to);
        }
        self.answer(client, seq).cloned()
    }

    // ----- faults -----

    /// Schedules a seeded timeline of crashes and isolations in [start, end).
    pub fn schedule_chaos(&mut self, start_ns: u64, end_ns: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.cfg.seed ^ 0xc4a05);
        let mut timeline = net::draw_timeline(&mut rng, self.cfg.servers, start_ns, end_ns);
        self.timeline.append(&mut timeline);
        self.timeline.sort_by_key(|(t, _)| *t);
    }

    pub fn leader(&self) -> Option<NodeId> {
        self.servers
            .iter()
            .filter_map(|(id, s)| s.as_ref().map(|s| (*id, s)))
            .filter(|(_, s)| s.raft().role() == Role::Leader)
            .max_by_key(|(_, s)| s.raft().term())
            .map(|(id, _)| id)
    }

    /// Runs until a leader has committed an entry of its own term (so it
    /// serves reads and grants), in 10 ms steps for at most 3 s of simulated
    /// time; panics when none does.
    pub fn wait_for_leader(&mut self) -> NodeId {
        for _ in 0..300 {
            if let Some(leader) = self.leader() {
                if self.server(leader).is_some_and(|s| s.raft().has_committed_in_term()) {
                    return leader;
                }
            }
            self.run_until(self.now_ns + 10 * NS_PER_MS);
        }
        panic!("no leader committed in its term within 3 s");
    }

    pub fn server(&self, id: NodeId) -> Option<&Server> {
        self.servers.get(&id).and_then(|s| s.as_ref())
    }

    pub fn crash(&mut self, id: NodeId) {
        self.servers.insert(id, None);
        self.last_crashed = Some(id);
    }

    pub fn restart(&mut self, id: NodeId) {
        if self.servers.get(&id).is_some_and(|s| s.is_none()) {
            self.start_server(id);
        }
    }

    pub fn isolate(&mut self, id: NodeId, clients: bool) {
        self.partitions.isolated.insert(id, clients);
    }

    /// Cuts `id` off from clients only (its peers still reach it).
    pub fn cut_clients(&mut self, id: NodeId) {
        self.partitions.clients_cut.insert(id);
    }

    pub fn heal(&mut self) {
        self.partitions.isolated.clear();
        self.partitions.clients_cut.clear();
    }

    /// Sets server `id`'s wall clock to true time + `offset_ns`.
    pub fn set_wall_offset(&mut self, id: NodeId, offset_ns: i64) {
        self.offsets.get_mut(&id).expect("server exists").1 = offset_ns;
    }

    pub fn propose_conf_change(&mut self, id: NodeId, change: ConfChange) -> Result<u64, ProposeError> {
        let clocks = self.clocks(id);
        let result = match self.servers.get_mut(&id) {
            Some(Some(server)) => server.propose_conf_change(clocks, change),
            _ => Err(ProposeError::NotLeader { leader_hint: None }),
        };
        self.drain(id);
        result
    }

    /// Recorded events (with `record_events` on) that `pick` selects.
    pub fn events_where<T>(&self, pick: impl Fn(u64, NodeId, &ServerEvent) -> Option<T>) -> Vec<T> {
        self.events.iter().filter_map(|(t, id, e)| pick(*t, *id, e)).collect()
    }

    /// Stops every client (their requests in flight may still land).
    pub fn stop_clients(&mut self) {
        self.clients.clear();
    }

    fn apply_fault(&mut self, fault: TimelineFault) {
        let resolve = |c: &ServiceCluster, target: Target| match target {
            Target::Server(id) => Some(id),
            Target::Leader => c.leader(),
        };
        match fault {
            TimelineFault::Crash(target) => {
                if let Some(id) = resolve(self, target) {
                    self.crash(id);
                }
            }
            TimelineFault::Restart(_) => {
                if let Some(id) = self.last_crashed.take() {
                    self.restart(id);
                }
            }
            TimelineFault::Isolate { target, clients } => {
                if let Some(id) = resolve(self, target) {
                    self.isolate(id, clients);
                }
            }
            TimelineFault::Heal => self.heal(),
        }
    }

    // ----- the run loop -----

    fn send(&mut self, from: Proc, to: Proc, payload: Payload) {
        if self.partitions.blocks(from, to) || self.rng.gen_bool(self.cfg.net.drop) {
            return;
        }
        let copies = if self.rng.gen_bool(self.cfg.net.duplicate) { 2 } else { 1 };
        for _ in 0..copies {
            let (lo, hi) = self.cfg.net.delay_ns;
            let at = self.now_ns + self.rng.gen_range(lo..=hi);
            self.next_seq += 1;
            self.queue.insert((at, self.next_seq), Delivery { from, to, payload: payload.clone() });
        }
    }

    /// Carries out a server's output: persist (durable at once, before any
    /// send, as the contract requires), then send, then check its events.
    fn drain(&mut self, id: NodeId) {
        let Some(Some(server)) = self.servers.get_mut(&id) else { return };
        let output = server.take_output();
        let disk = self.disks.get_mut(&id).expect("every server has a disk");
        for op in output.persist {
            disk.apply(op);
        }
        for (to, msg) in output.messages {
            self.send(Proc::Server(id), Proc::Server(to), Payload::Peer(msg));
        }
        for reply in output.replies {
            let to = Proc::Client(reply.client);
            self.send(Proc::Server(id), to, Payload::Response(reply));
        }
        for event in &output.events {
            self.checker.observe(self.now_ns, id, event);
        }
        if self.record_events {
            self.changes.entry(id).or_default().extend(output.changes.iter().cloned());
        }
        if self.record_events {
            self.events.extend(output.events.into_iter().map(|e| (self.now_ns, id, e)));
        }
    }

    fn flush_client(&mut self, id: ClientId) {
        let outbox = self.clients.get_mut(&id).map(|c| c.take_outbox()).unwrap_or_default();
        for (server, req) in outbox {
            self.checker.kv_called(self.now_ns, id, req.seq, &req.op);
            self.send(Proc::Client(id), Proc::Server(server), Payload::Request(req));
        }
    }

    fn server_due_ns(&self, id: NodeId, server: &Server) -> u64 {
        let (mono, _) = self.offsets[&id];
        server.next_deadline_ns().saturating_sub(mono)
    }

    /// Runs the world until `end_ns` of harness time.
    pub fn run_until(&mut self, end_ns: u64) {
        let mut steps_at_same_time = 0u32;
        loop {
            let fault_ns = self.timeline.first().map_or(u64::MAX, |(t, _)| *t);
            let delivery_ns = self.queue.keys().next().map_or(u64::MAX, |(t, _)| *t);
            let server = self.servers.iter().filter_map(|(id, s)| s.as_ref().map(|s| (self.server_due_ns(*id, s), *id))).min();
            let client = self.clients.iter().map(|(id, c)| (c.next_wake_ns(), *id)).min();
            let server_ns = server.map_or(u64::MAX, |(t, _)| t);
            let client_ns = client.map_or(u64::MAX, |(t, _)| t);
            let next = fault_ns.min(delivery_ns).min(server_ns).min(client_ns);
            if next > end_ns {
                self.now_ns = self.now_ns.max(end_ns);
                return;
            }
            if next <= self.now_ns {
                steps_at_same_time += 1;
                assert!(steps_at_same_time < 100_000, "no progress at {} ns", self.now_ns);
            } else {
                steps_at_same_time = 0;
                self.now_ns = next;
            }
            if fault_ns == next {
                let (_, fault) = self.timeline.remove(0);
                self.apply_fault(fault);
            } else if delivery_ns == next {
                let key = *self.queue.keys().next().expect("non-empty");
                let delivery = self.queue.remove(&key).expect("present");
                self.deliver(delivery);
            } else if server_ns == next {
                let id = server.expect("some").1;
                let clocks = self.clocks(id);
                if let Some(Some(s)) = self.servers.get_mut(&id) {
                    s.tick(clocks);
                }
                self.drain(id);
            } else {
                let id = client.expect("some").1;
                let now = self.now_ns;
                if let Some(c) = self.clients.get_mut(&id) {
                    c.wake(now);
                }
                self.flush_client(id);
            }
        }
    }

    fn deliver(&mut self, delivery: Delivery) {
        self.messages_delivered += 1;
        let Delivery { from, to, payload } = delivery;
        match (to, payload) {
            (Proc::Server(id), payload) => {
                let clocks = self.clocks(id);
                let Some(Some(server)) = self.servers.get_mut(&id) else { return };
                match payload {
                    Payload::Peer(msg) => {
                        let Proc::Server(from) = from else { return };
                        server.handle_peer(clocks, from, msg);
                    }
                    Payload::Request(req) => server.handle_client(clocks, req),
                    Payload::Response(_) => return,
                }
                self.drain(id);
            }
            (Proc::Client(id), Payload::Response(resp)) => {
                let now = self.now_ns;
                if let Some(client) = self.clients.get_mut(&id) {
                    client.on_response(now, resp, &mut self.checker);
                }
                self.flush_client(id);
            }
            (Proc::Client(_), _) => {}
        }
    }

    /// Heals every fault, restarts every crashed server and lets the cluster
    /// settle for `for_ns`.
    pub fn settle(&mut self, for_ns: u64) {
        self.timeline.clear();
        self.heal();
        let crashed: Vec<NodeId> = self.servers.iter().filter(|(_, s)| s.is_none()).map(|(id, _)| *id).collect();
        for id in crashed {
            self.restart(id);
        }
        self.run_until(self.now_ns + for_ns);
    }

    pub fn violations(&self) -> Vec<ServiceViolation> {
        self.checker.violations()
    }

    /// The state machines of running servers.
    pub fn state_machines(&self) -> Vec<(NodeId, &StateMachine)> {
        self.servers.iter().filter_map(|(id, s)| s.as_ref().map(|s| (*id, s.state_machine()))).collect()
    }
}
