//! One server process: drives its Raft node, applies committed entries to
//! the state machine, and turns what happened into the host's output.
//!
//! Every input follows the same path: note the clocks, hand the input to
//! Raft (or to the request handler), then drain Raft's `Ready` until it is
//! empty — persist and messages go to the output, a snapshot replaces the
//! state machine, committed entries are applied in order, confirmed reads are
//! served — with the leader's lease housekeeping run between rounds, since it
//! may itself propose. Replies to logged requests are sent by whichever
//! server is leader when it applies the entry, so a request that committed
//! survives a leader change.

use std::collections::BTreeMap;

use crate::raft::{ConfChange, Entry, Payload, Persisted, ProposeError, RaftNode, Ready, Role, Snapshot, TransferError};
use crate::server::deadlines::LeaseDeadlines;
use crate::server::event::fingerprint;
use crate::server::expiry::LeaseTracker;
use crate::server::reads::PendingReads;
use crate::server::{Clocks, ServerConfig, ServerEvent, ServerOutput};
use crate::service::{ClientRequest, ClientResponse, Command, Effect, Response, ServiceError, ServiceEvent, SharedState, StateMachine};
use crate::types::{ClientId, LogIndex, NodeId, Term};

pub struct Server {
    pub(super) config: ServerConfig,
    pub(super) raft: RaftNode<Command, SharedState>,
    pub(super) sm: StateMachine,
    /// The latest readings of this process's clocks.
    pub(super) clocks: Clocks,
    /// This process's lock grants since it started (planted bug
    /// `token_from_local_counter` only; lost on restart like any volatile
    /// counter).
    pub(super) local_grants: u64,
    pub(super) tracker: LeaseTracker,
    pub(super) reads: PendingReads,
    pub(super) output: ServerOutput,
    /// Raft's last batch, drained: its vectors go back to Raft for the next
    /// one (`RaftNode::swap_ready`), so a step grows no fresh ones.
    spare_ready: Ready<Command, SharedState>,
    /// Index of the last snapshot this server took or installed.
    pub(super) last_snapshot_index: LogIndex,
    /// Logged requests this leader proposed and has not yet applied, by
    /// `(client, seq)`, with the term and index it proposed them at. A
    /// resend of one of these is not proposed again: the copy already in
    /// the log answers it when applied (see `propose_request`).
    pub(super) proposed: BTreeMap<(ClientId, u64), (Term, LogIndex)>,
    /// The term in which this server last handed out key changes (planted
    /// bug `watch_skips_event_on_leader_change` only; see `planted_kv`).
    pub(super) changes_term: Term,
}

impl Server {
    /// A server starting fresh (`persisted` empty) or restarting from what
    /// it had made durable. A restart rebuilds the state machine from the
    /// persisted snapshot and re-applies committed entries as Raft learns the
    /// commit index again; nothing else survives.
    pub fn new(config: ServerConfig, persisted: Persisted<Command, SharedState>, rng_seed: u64, clocks: Clocks) -> Self {
        let raft = if persisted == Persisted::default() {
            RaftNode::new(config.raft.clone(), rng_seed, clocks.mono_ns)
        } else {
            RaftNode::restore(config.raft.clone(), persisted, rng_seed, clocks.mono_ns)
        };
        let sm = StateMachine::new(config.machine_settings());
        let mut server = Server {
            config,
            raft,
            sm,
            clocks,
            local_grants: 0,
            tracker: LeaseTracker::default(),
            reads: PendingReads::default(),
            output: ServerOutput::default(),
            spare_ready: Ready::default(),
            last_snapshot_index: 0,
            proposed: BTreeMap::new(),
            changes_term: 0,
        };
        server.after_input();
        server
    }

    pub fn handle_peer(&mut self, clocks: Clocks, from: NodeId, msg: crate::server::PeerMessage) {
        self.observe(clocks);
        self.raft.step(self.clocks.mono_ns, from, msg);
        self.after_input();
    }

    pub fn handle_client(&mut self, clocks: Clocks, req: ClientRequest) {
        self.observe(clocks);
        self.on_request(req);
        self.after_input();
    }

    /// Fires due timers: Raft's, and the leader's lease deadlines and
    /// checkpoints. Harmless when nothing is due.
    pub fn tick(&mut self, clocks: Clocks) {
        self.observe(clocks);
        if self.clocks.mono_ns >= self.raft.next_deadline_ns() {
            self.raft.tick(self.clocks.mono_ns);
        }
        self.after_input();
    }

    /// A single-server membership change through this server (the leader).
    pub fn propose_conf_change(&mut self, clocks: Clocks, change: ConfChange) -> Result<LogIndex, ProposeError> {
        self.observe(clocks);
        let result = self.raft.propose_conf_change(self.clocks.mono_ns, change);
        self.after_input();
        result
    }

    /// Hands leadership to `target` (Raft thesis §3.10; etcd's MoveLeader).
    pub fn transfer_leadership(&mut self, clocks: Clocks, target: NodeId) -> Result<(), TransferError> {
        self.observe(clocks);
        let result = self.raft.transfer_leadership(self.clocks.mono_ns, target);
        self.after_input();
        result
    }

    /// How many events the output holds so far: a host that stamps each
    /// event when the input that produced it was handled reads it after
    /// every input, before [`Server::take_output`] drains them.
    pub fn pending_events(&self) -> usize {
        self.output.events.len()
    }

    /// Drains what the host must do: persist first, then send.
    pub fn take_output(&mut self) -> ServerOutput {
        std::mem::take(&mut self.output)
    }

    /// The same output as [`Server::take_output`], handed over in `spent`
    /// (which must be empty: the host drained it) while the server keeps
    /// `spent`'s vectors to collect the next input's output in. A host that
    /// hands every output back this way allocates and frees no vectors per
    /// step for it (freeing the fresh ones was 10.5M instructions of the
    /// baseline's 743M, seed 0).
    pub fn swap_output(&mut self, spent: &mut ServerOutput) {
        assert!(spent.is_empty(), "an output handed back must have been drained");
        std::mem::swap(&mut self.output, spent);
    }

    /// When `tick` is next due, on this process's monotonic clock.
    pub fn next_deadline_ns(&self) -> u64 {
        self.raft.next_deadline_ns().min(self.lease_deadline_ns())
    }

    pub fn raft(&self) -> &RaftNode<Command, SharedState> {
        &self.raft
    }

    pub fn state_machine(&self) -> &StateMachine {
        &self.sm
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn id(&self) -> NodeId {
        self.raft.id()
    }

    /// Reads (and `leader-monotonic` keep-alives) waiting for the read index.
    pub fn pending_reads(&self) -> usize {
        self.reads.len()
    }

    /// The leader's lease deadlines (empty on followers; under
    /// `leader-stamped-wall` the stamps live in the state machine instead).
    pub fn lease_deadlines(&self) -> &LeaseDeadlines {
        &self.tracker.deadlines
    }

    fn observe(&mut self, clocks: Clocks) {
        // The monotonic clock never goes back; a defensive max keeps a
        // confused host from moving deadlines backwards.
        self.clocks.mono_ns = self.clocks.mono_ns.max(clocks.mono_ns);
        self.clocks.wall_ns = clocks.wall_ns;
    }

    pub(super) fn is_leader(&self) -> bool {
        self.raft.role() == Role::Leader
    }

    pub(super) fn reply(&mut self, client: ClientId, seq: u64, body: Response) {
        if self.is_split_tail(client) {
            return;
        }
        let from = self.raft.id();
        self.output.replies.push(ClientResponse { client, seq, from, body });
    }

    pub(super) fn reply_to(&mut self, req: &ClientRequest, body: Response) {
        self.reply(req.client, req.seq, body);
    }

    /// The answer for a proposal Raft refused.
    pub(super) fn refused(&self, error: ProposeError) -> Response {
        match error {
            ProposeError::NotLeader { leader_hint } => Response::Error(ServiceError::NotLeader { leader_hint }),
            // Asked again shortly, the new leader (or this one, if the
            // transfer is abandoned) takes it.
            ProposeError::ConfChangeRefused | ProposeError::TransferInProgress { .. } => Response::Error(ServiceError::Retry),
        }
    }

    fn after_input(&mut self) {
        // Out of `self` while it is handled, since handling it needs `self`.
        let mut ready = std::mem::take(&mut self.spare_ready);
        loop {
            self.sync_role();
            self.lease_housekeeping();
            self.raft.swap_ready(&mut ready);
            if ready.is_empty() {
                break;
            }
            self.handle_ready(&mut ready);
            self.serve_reads();
            self.maybe_compact();
        }
        self.spare_ready = ready;
        self.serve_reads();
    }

    /// Carries out Raft's batch, draining every part of it (its vectors
    /// keep their room for the next batch).
    fn handle_ready(&mut self, ready: &mut Ready<Command, SharedState>) {
        self.output.persist.append(&mut ready.persist);
        self.output.messages.append(&mut ready.messages);
        self.output.events.extend(ready.events.drain(..).map(ServerEvent::Raft));
        // Role changes reported in this batch take effect before its entries
        // are applied, so a new leader arms the leases those entries grant.
        self.sync_role();
        if let Some(snapshot) = ready.install.take() {
            self.install(*snapshot);
        }
        for entry in ready.committed.drain(..) {
            self.apply(entry);
        }
        for read in ready.reads.drain(..) {
            self.reads.confirm(read.ctx, read.index);
        }
        for ctx in ready.reads_failed.drain(..) {
            if let Some(req) = self.reads.fail(ctx) {
                self.reply_to(&req, Response::Error(ServiceError::Retry));
            }
        }
    }

    fn install(&mut self, snapshot: Snapshot<SharedState>) {
        let index = snapshot.last_index;
        invariant_eq!(snapshot.data.applied_index(), index, "a snapshot is the state as of its index");
        self.sm = snapshot.data.into_state();
        self.last_snapshot_index = index;
        self.output.events.push(ServerEvent::SnapshotInstalled { index });
        self.on_state_replaced();
    }

    fn apply(&mut self, entry: Entry<Command>) {
        if entry.index <= self.sm.applied_index() {
            // Already covered by an installed snapshot.
            return;
        }
        if let Payload::Command(Command::Request { req, .. }) = &entry.payload {
            // Applied (or answered from the session record) from here on.
            self.proposed.remove(&(req.client, req.seq));
        }
        let mut ctx = self.config.apply_context(self.clocks.wall_ns, self.local_grants);
        let effects = self.sm.apply_entry(&entry, &mut ctx);
        self.local_grants = ctx.local_grants;
        let (index, term) = (entry.index, entry.term);
        let state = self.sm.applied_digest();
        self.output.events.push(ServerEvent::Applied { index, term, fingerprint: fingerprint(&entry), state });
        self.forward_changes(index);
        self.handle_effects(effects, index, term);
        self.on_entry_applied(index);
    }

    /// Turns the state machine's effects into events, and into replies if
    /// this server leads (followers never answer clients).
    pub(super) fn handle_effects(&mut self, effects: Vec<Effect>, index: LogIndex, term: Term) {
        let leader = self.is_leader();
        for effect in effects {
            let event = match effect {
                Effect::Reply { client, seq, body } => {
                    if leader {
                        if let Response::KeepAlive { lease, ttl_ns } = body {
                            // Refreshes are never answered from a record, so
                            // a KeepAlive reply is always a live renewal.
                            self.output.events.push(ServerEvent::KeepAliveAnswered { lease, client, seq, ttl_ns, index: Some(index) });
                        }
                        self.reply(client, seq, body);
                    }
                    continue;
                }
                Effect::Event(event) => {
                    match &event {
                        ServiceEvent::LeaseGranted { lease, ttl_ns } => self.on_lease_granted(*lease, *ttl_ns, term),
                        ServiceEvent::LeaseRevoked { lease, .. } => self.on_lease_ended(*lease),
                        _ => {}
                    }
                    ServerEvent::Service { index, event }
                }
                Effect::WriterWrote { client } => {
                    self.on_writer_wrote(client, term);
                    continue;
                }
                Effect::LeaseRenewed { lease } => {
                    self.on_lease_renewed(lease, term);
                    continue;
                }
            };
            self.output.events.push(event);
        }
    }

    fn serve_reads(&mut self) {
        for req in self.reads.take_servable(self.sm.applied_index()) {
            self.serve_read(req);
        }
    }

    /// Compacts the log every `snapshot_every_entries` applied entries: the
    /// state machine as of the applied index becomes the snapshot (Raft §7).
    fn maybe_compact(&mut self) {
        let every = self.config.snapshot_every_entries;
        let applied = self.sm.applied_index();
        if every > 0 && applied >= self.last_snapshot_index + every {
            self.raft.compact(applied, SharedState::new(self.sm.clone()));
            self.last_snapshot_index = applied;
        }
    }
}
