//! The one task that drives a server's core: it feeds it peer messages,
//! client requests and timer firings with this process's real clocks, and
//! carries out its outputs in the order core's durability contract demands:
//! every persist written and fsynced, then messages sent and clients
//! answered.
//!
//! It runs on its own thread (a single-threaded tokio runtime): the rest of
//! the process (gRPC, WebSocket, peer sockets) goes on meanwhile. Inputs
//! that arrive together are handled as a batch whose log records go out in
//! one write; its fdatasync runs on the storage's sync thread while the
//! driver gathers and steps the next batch, so the disk and the driver work
//! side by side (batches queued behind a busy disk share its next fsync).
//! Every output of a batch (acks, votes, append replies, watch events, the
//! published status, answers that show the applied state) is held in
//! [`Held`] until the sync covering its writes, and every earlier one, is
//! reported done, then leaves in batch order: nothing is told of a change
//! before it is durable here. (A leader's own log counts toward its commit
//! index before it is synced, but its appends leave only after that sync,
//! so no follower can acknowledge an entry the leader has not made
//! durable: a committed entry is durable on a quorum that includes the
//! leader, and on a single member commit waits for its own sync.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leasesim_core::raft::{ConfChange, Role, TransferError};
use std::collections::VecDeque;

use leasesim_core::server::{PeerMessage, Server, ServerEvent, ServerOutput};
use leasesim_core::service::kv::Change;
use leasesim_core::service::{ClientRequest, ClientResponse, Response, StateMachine};
use leasesim_core::{ClientId, LogIndex, NodeId, Term};
use tokio::sync::{mpsc, oneshot, watch};

use crate::digests::Digests;
use crate::faults::clock::ClockSource;
use crate::faults::event_log::{monotonic_ns, EventLog, Logged};
use crate::faults::failpoint::{self, Action, Failpoints, Fired};
use crate::frame::PeerFrame;
use crate::storage::Storage;
use crate::transport::Links;
use crate::view::{RangeSpec, RangeView};
use leasesim_judge::observe::Event;

/// A forwarded or local request's waiter is dropped after this long.
const WAITER_TTL: Duration = Duration::from_secs(120);
/// Most inputs handled before one fsync.
const BATCH_INPUTS: usize = 512;

/// The answer to a client request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub resp: Response,
    pub view: Option<RangeView>,
}

/// What the rest of the process can ask of the driver.
pub enum Input {
    Peer {
        from: NodeId,
        frame: PeerFrame,
    },
    Client {
        req: ClientRequest,
        view: Option<RangeSpec>,
        reply: oneshot::Sender<Answer>,
    },
    ConfChange {
        change: ConfChange,
        reply: oneshot::Sender<Result<LogIndex, String>>,
    },
    /// A consistent copy of the applied state (etcd's Snapshot RPC).
    Backup {
        reply: oneshot::Sender<Backup>,
    },
    /// A hash of the whole applied state (etcd's Hash RPC).
    Hash {
        reply: oneshot::Sender<(u32, LogIndex)>,
    },
    /// Hand leadership to `target` (etcd's MoveLeader).
    Transfer {
        target: NodeId,
        reply: oneshot::Sender<Result<(), TransferError>>,
    },
    /// A new watch stream's feed of applied changes (etcd's Watch).
    WatchSubscribe {
        reply: oneshot::Sender<crate::watch_hub::Feed>,
    },
    /// The applied history's changes of `range` from revision `from` on
    /// (a watcher catching up).
    WatchHistory {
        range: leasesim_core::service::kv::KeyRange,
        from: LogIndex,
        max_events: usize,
        reply: oneshot::Sender<Result<leasesim_core::service::watch::EventsRead, leasesim_core::service::kv::RevisionError>>,
    },
    /// A serializable range (etcd's `serializable: true`): read from this
    /// member's own applied state, with no leader, read index or lease.
    LocalRange {
        view: RangeSpec,
        reply: oneshot::Sender<RangeView>,
    },
    /// This member's Raft log as term runs (`GET /log`).
    Log {
        reply: oneshot::Sender<crate::log_view::LogView>,
    },
}

/// The applied state machine as of `index`, with the term of that entry
/// and the voters in force: what a backup holds.
#[derive(Clone, Debug)]
pub struct Backup {
    pub index: LogIndex,
    pub term: Term,
    pub voters: Vec<NodeId>,
    pub state: StateMachine,
}

/// This member as its driver last saw it, published after every batch:
/// its Raft role, term and indices, the voters, the leader it knows (for
/// redirects), its disk use, and the applied auth store and alarms that the
/// API layers check requests against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberStatus {
    pub id: NodeId,
    pub role: Option<Role>,
    pub term: Term,
    pub leader: Option<NodeId>,
    pub commit_index: LogIndex,
    pub applied_index: LogIndex,
    pub revision: u64,
    /// The KV store's last compaction (0: never).
    pub compact_revision: u64,
    pub voters: Vec<NodeId>,
    pub db_size_bytes: u64,
    /// The applied auth store: what this member's etcd
    /// API checks tokens and permissions against. Shared, rebuilt only when
    /// its revision moves.
    pub auth: std::sync::Arc<leasesim_core::service::auth::AuthStore>,
    /// Every member's active alarm, from the replicated store.
    pub alarms: Vec<crate::pb::etcdserverpb::AlarmMember>,
    /// This member's disk met ENOSPC and its alarm is not yet disarmed.
    pub disk_full: bool,
}

/// The node's own planted bugs (`--bug`), beside core's: the driver's
/// side of the durability contract.
pub const NODE_BUGS: [&str; 1] = [
    // Answer clients and send messages before fsyncing the batch's log
    // writes, and fsync them only when a snapshot is saved: acknowledged
    // writes then live in the page cache alone (a power loss, or a SIGKILL
    // under --unsafe-test-lose-unsynced, loses them).
    "ack-before-fsync",
];

/// What woke the driver. Lives for one loop turn only, so the input is
/// kept inline rather than boxed (an allocation per input for nothing).
#[allow(clippy::large_enum_variant)]
enum Step {
    Input(Input),
    Timer,
    SkewChanged,
    /// The sync thread reported a sync done (or failed).
    Synced(std::io::Result<u64>),
}

/// One batch's outputs, held until its writes are durable.
struct Held {
    /// The storage's sync number that covers the batch's writes (and every
    /// earlier batch's): it leaves once that sync is reported done.
    needs: u64,
    /// The batch wrote (so the `after-sync` failpoint is its own).
    wrote: bool,
    /// The rest of a batch an after-send pause stopped midway: its
    /// `after-sync` point, watch events and votes were done before.
    resumed: bool,
    batch_start_ns: u64,
    messages: Vec<(NodeId, PeerMessage)>,
    /// Client answers, each with its view read when the batch ended.
    answers: Vec<(Waiter, ClientResponse, Option<RangeView>)>,
    changes: Vec<Change>,
    /// The store's revision after the batch, and whether `changes` cover
    /// every revision up to it (not after a snapshot install).
    revision: LogIndex,
    whole: bool,
    status: MemberStatus,
    /// Answers to backups and hashes, read from the state as of the batch.
    later: Vec<Box<dyn FnOnce() + Send>>,
}

enum Waiter {
    Local(oneshot::Sender<Answer>),
    Remote(NodeId),
}

struct Pending {
    waiter: Waiter,
    view: Option<RangeSpec>,
    since: Instant,
}

pub struct Driver {
    server: Server,
    storage: Storage,
    links: Links,
    /// Every clock reading core gets comes from here (skewable in tests).
    clocks: Arc<ClockSource>,
    pending: BTreeMap<(ClientId, u64), Pending>,
    status: watch::Sender<MemberStatus>,
    disk: crate::nospace::DiskWatch,
    /// The planted bug `ack-before-fsync`.
    ack_before_fsync: bool,
    digests: Digests,
    /// Applied changes out to the watch streams.
    watch_hub: crate::watch_hub::WatchHub,
    /// `--unsafe-test-event-log`: this member's events for a test runner.
    event_log: Option<EventLog>,
    /// Crash and pause points a test runner armed (never armed without the
    /// control endpoint).
    failpoints: Arc<Failpoints>,
    /// CLOCK_MONOTONIC when the current batch began (the event log's
    /// stamping error is measured from it).
    batch_start_ns: u64,
    /// An after-send failpoint fired (its point and armed entry): once the
    /// frame has left (the peer it went to, if a peer) the member dies, or
    /// stops and, resumed, sends the rest of the batch.
    after_send: Option<(&'static str, Fired, Option<NodeId>)>,
    /// Batches whose writes are not yet durable, oldest first.
    held: VecDeque<Held>,
    /// The batch was one input with none queued behind it: its sync may
    /// run here (see [`Storage::sync_here_if_idle`]).
    lone: bool,
    /// This batch's answers to backups and hashes (see [`Held::later`]).
    later: Vec<Box<dyn FnOnce() + Send>>,
}

impl Driver {
    pub fn new(
        server: Server,
        storage: Storage,
        links: Links,
        clocks: Arc<ClockSource>,
        status: watch::Sender<MemberStatus>,
        digests: Digests,
    ) -> Self {
        let watch_hub = crate::watch_hub::WatchHub::starting_at(server.state_machine().kv().revision());
        Driver {
            server,
            storage,
            links,
            clocks,
            pending: BTreeMap::new(),
            status,
            disk: crate::nospace::DiskWatch::default(),
            ack_before_fsync: false,
            digests,
            watch_hub,
            event_log: None,
            failpoints: Arc::default(),
            batch_start_ns: 0,
            after_send: None,
            held: VecDeque::new(),
            lone: false,
            later: Vec::new(),
        }
    }

    /// A test runner's hooks: the event log (`--unsafe-test-event-log`)
    /// and the failpoints its control endpoint arms.
    pub fn with_test_hooks(mut self, event_log: Option<EventLog>, failpoints: Arc<Failpoints>) -> Self {
        self.event_log = event_log;
        self.failpoints = failpoints;
        self
    }

    /// How often watches asking for progress notifications get one
    /// (`--experimental-watch-progress-notify-interval`).
    pub fn with_watch_progress_interval(mut self, interval: Duration) -> Self {
        self.watch_hub.set_progress_interval(interval);
        self
    }

    /// Plants the node's own bugs ([`NODE_BUGS`]) named in `bugs`.
    pub fn with_bugs(mut self, bugs: &[String]) -> Self {
        self.ack_before_fsync = bugs.iter().any(|b| b == "ack-before-fsync");
        self
    }

    /// Runs until every input sender is gone. A disk error stops the
    /// process: a server that cannot persist must not go on answering.
    pub async fn run(mut self, mut inputs: mpsc::UnboundedReceiver<Input>) {
        self.batch_start_ns = monotonic_ns();
        self.flush_or_die().await;
        // A skew changed by a test moves the instant the next deadline is
        // due: wake and work it out again.
        let mut skew_changes = self.clocks.subscribe();
        loop {
            let deadline = self.clocks.instant_of(self.server.next_deadline_ns());
            let first = tokio::select! {
                biased;
                // First: a finished sync lets held answers go.
                synced = self.storage.next_synced() => match synced {
                    Some(report) => Step::Synced(report),
                    None => fatal_disk(std::io::Error::other("the log's sync thread stopped")),
                },
                input = inputs.recv() => match input {
                    Some(input) => Step::Input(input),
                    None => return self.drain().await,
                },
                _ = tokio::time::sleep_until(deadline.into()) => Step::Timer,
                _ = skew_changes.changed() => Step::SkewChanged,
            };
            self.batch_start_ns = monotonic_ns();
            match first {
                Step::SkewChanged => continue,
                Step::Synced(report) => {
                    if let Err(e) = report {
                        fatal_disk(e);
                    }
                    self.release();
                    self.act_after_send().await;
                    continue;
                }
                Step::Input(input) => {
                    self.stamped(|d| d.handle(input));
                    let mut handled = 1;
                    for _ in 1..BATCH_INPUTS {
                        match inputs.try_recv() {
                            Ok(input) => self.stamped(|d| d.handle(input)),
                            Err(_) => break,
                        }
                        handled += 1;
                    }
                    self.lone = handled == 1 && inputs.is_empty();
                }
                Step::Timer => {
                    self.reach("timer");
                    self.stamped(|d| d.server.tick(d.clocks.now()));
                    self.lone = inputs.is_empty();
                }
            }
            // Deadlines that passed while the batch was handled. Under a
            // steady stream of inputs this, not `Step::Timer`, is where most
            // deadlines are decided: the `timer` point is reached here too
            // (the simulator's host reaches it whenever a deadline is due).
            if self.server.next_deadline_ns() <= self.clocks.now().mono_ns {
                self.reach("timer");
            }
            self.stamped(|d| d.server.tick(d.clocks.now()));
            self.flush_or_die().await;
        }
    }

    /// Runs one step (an input or a timer) with the event log told when it
    /// began and ended, so that each server event is stamped by the step
    /// that produced it.
    fn stamped(&mut self, step: impl FnOnce(&mut Self)) {
        if let Some(log) = &mut self.event_log {
            log.step_began();
        }
        step(self);
        if let Some(log) = &mut self.event_log {
            log.step_ended(self.server.pending_events());
        }
    }

    /// Inputs are gone: lets the batches still held go once durable.
    async fn drain(&mut self) {
        while !self.held.is_empty() {
            match self.storage.next_synced().await {
                Some(Ok(_)) => self.release(),
                Some(Err(e)) => fatal_disk(e),
                None => return,
            }
        }
    }

    /// Flushes; if an after-send failpoint fired, waits for the frame to
    /// leave and dies or stops there.
    async fn flush_or_die(&mut self) {
        self.flush();
        self.act_after_send().await;
    }

    /// If an after-send failpoint fired, waits for the frame to leave and
    /// dies or stops there; resumed from a stop, sends the rest of the
    /// batches whose sync is done (which may stop at another point).
    async fn act_after_send(&mut self) {
        while let Some((point, fired, peer)) = self.after_send.take() {
            // The frame is handed to the link's writer, which runs on this
            // thread's runtime: let it write (cut links drop it, as a cut
            // wire does), then give it a moment to flush to the socket.
            let give_up = Instant::now() + Duration::from_millis(500);
            while peer.is_some_and(|p| self.links.queued(p) > 0) && Instant::now() < give_up {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.act_at(point, fired);
            // Only a pause comes back here.
            self.release();
        }
    }

    /// SIGKILLs or stops this member at a failpoint if an entry is armed at
    /// `point`, or changes its clocks there (a stop returns once the runner
    /// resumed it).
    fn reach(&mut self, point: &'static str) {
        if let Some(fired) = self.failpoints.reached(point) {
            self.act_at(point, fired);
        }
    }

    /// Dies, or stops until resumed, or changes its clocks, at armed entry
    /// `fired`, its event log's line naming it (the last one before a
    /// death or a stop).
    fn act_at(&mut self, point: &'static str, fired: Fired) {
        let id = fired.id;
        let event = match fired.action {
            Action::Crash => Event::Crashed,
            Action::Pause => Event::Paused,
            Action::Clock(change) => match self.clocks.apply(&change) {
                Ok(_) => Event::Fault { action: format!("clock at {point} (failpoint #{id})") },
                Err(why) => {
                    tracing::error!("failpoint {point} (armed entry {id}): clock change refused: {why}");
                    Event::FaultSkipped { action: format!("clock at {point} (failpoint #{id})"), why }
                }
            },
        };
        if let Some(log) = &mut self.event_log {
            log.write_fired(self.batch_start_ns, failpoint::Entry { id, point: point.to_string(), action: fired.action }, event);
        }
        match fired.action {
            Action::Crash => failpoint::die(point, id),
            Action::Pause => failpoint::stop(point, id),
            Action::Clock(_) => {}
        }
    }

    fn handle(&mut self, input: Input) {
        let clocks = self.clocks.now();
        match input {
            Input::Peer { from, frame } => match frame {
                PeerFrame::Raft(msg) => self.server.handle_peer(clocks, from, msg),
                PeerFrame::Forward { req, view } => {
                    self.wait_for(&req, Waiter::Remote(from), view);
                    self.server.handle_client(clocks, req);
                }
                PeerFrame::Reply { resp, view } => {
                    if let Some(p) = self.pending.remove(&(resp.client, resp.seq)) {
                        if let Waiter::Local(tx) = p.waiter {
                            let _ = tx.send(Answer { resp: resp.body, view });
                        }
                    }
                }
                // Hellos fill the directory on the way in; join calls are
                // answered on their own connections, never here.
                PeerFrame::Hello { .. }
                | PeerFrame::Join { .. }
                | PeerFrame::JoinReply(_)
                | PeerFrame::FetchPeers { .. }
                | PeerFrame::PeerList(_) => {}
            },
            Input::Client { req, view, reply } => {
                let leader = self.server.raft().leader_id();
                let me = self.server.id();
                match leader {
                    Some(leader) if leader != me && self.server.raft().role() != Role::Leader => {
                        self.wait_for(&req, Waiter::Local(reply), None);
                        self.links.send(leader, PeerFrame::Forward { req, view });
                    }
                    _ => {
                        self.wait_for(&req, Waiter::Local(reply), view);
                        self.server.handle_client(clocks, req);
                    }
                }
            }
            Input::ConfChange { change, reply } => {
                let result = self.server.propose_conf_change(clocks, change).map_err(|e| format!("{e:?}"));
                let _ = reply.send(result);
            }
            // Both show the applied state: answered once this batch is
            // durable, with the state as of now.
            Input::Backup { reply } => {
                let backup = self.backup();
                self.later.push(Box::new(move || {
                    let _ = reply.send(backup);
                }));
            }
            Input::Hash { reply } => {
                let sm = self.server.state_machine();
                let bytes = bincode::serialize(sm).expect("the state machine serializes");
                let hash = (crc32fast::hash(&bytes), sm.applied_index());
                self.later.push(Box::new(move || {
                    let _ = reply.send(hash);
                }));
            }
            Input::Transfer { target, reply } => {
                let _ = reply.send(self.server.transfer_leadership(clocks, target));
            }
            Input::WatchSubscribe { reply } => {
                let _ = reply.send(self.watch_hub.subscribe());
            }
            Input::WatchHistory { range, from, max_events, reply } => {
                let read = self.server.state_machine().kv().events(&range, from, max_events);
                let _ = reply.send(read.map(|read| published_part(read, from, self.watch_hub.published())));
            }
            Input::LocalRange { view, reply } => self.local_range(&view, reply),
            // The log's shape (indices and terms, not what entries hold),
            // as core has it now, synced or not: a test runner reads it
            // once clients stopped, and tests use it to see progress.
            Input::Log { reply } => {
                let _ = reply.send(crate::log_view::LogView::of(self.server.raft()));
            }
        }
    }

    /// A serializable range: read now, answered once this batch is
    /// durable, as the Hash is (what it shows is applied, hence committed,
    /// entries only).
    fn local_range(&mut self, view: &RangeSpec, reply: oneshot::Sender<RangeView>) {
        let read = view.read(self.server.state_machine());
        self.later.push(Box::new(move || {
            let _ = reply.send(read);
        }));
    }

    fn backup(&self) -> Backup {
        let state = self.server.state_machine().clone();
        let index = state.applied_index();
        let raft = self.server.raft();
        let term = state.applied_term();
        Backup { index, term, voters: raft.voters().iter().copied().collect(), state }
    }

    fn wait_for(&mut self, req: &ClientRequest, waiter: Waiter, view: Option<RangeSpec>) {
        self.pending.insert((req.client, req.seq), Pending { waiter, view, since: Instant::now() });
    }

    /// Carries out the core's output: writes the batch's persist
    /// operations and asks for their sync, then holds everything else of
    /// the batch until that sync is done (sent at once when nothing is
    /// waiting for a sync).
    fn flush(&mut self) {
        let ServerOutput { persist, messages, replies, events, changes } = self.server.take_output();
        self.record_digests(&events);
        if let Some(log) = &mut self.event_log {
            log.write_server_events(self.batch_start_ns, &events);
        }
        let whole = !events.iter().any(|e| matches!(e, ServerEvent::SnapshotInstalled { .. }));
        let (needs, wrote) = self.persist(persist, !whole);
        let answers = replies.into_iter().filter_map(|resp| self.resolve(resp)).collect();
        let held = Held {
            needs,
            wrote,
            resumed: false,
            batch_start_ns: self.batch_start_ns,
            messages,
            answers,
            changes,
            revision: self.server.state_machine().kv().revision(),
            whole,
            status: self.status_now(),
            later: std::mem::take(&mut self.later),
        };
        self.held.push_back(held);
        let now = Instant::now();
        self.pending.retain(|_, p| now.duration_since(p.since) < WAITER_TTL);
        self.release();
    }

    /// Sends out, in batch order, every held batch whose sync is done;
    /// stops early when an after-send failpoint fires (what is left of its
    /// batch waits at the front).
    fn release(&mut self) {
        let synced = self.storage.synced();
        while self.held.front().is_some_and(|h| h.needs <= synced) {
            let held = self.held.pop_front().expect("checked");
            if !self.send_out(held) {
                return;
            }
        }
    }

    /// One durable batch's outputs: watch events, votes logged, messages,
    /// answers, then the status. False when an after-send failpoint fired:
    /// the member dies once the frame has left, or stops, and the rest of
    /// the batch goes when it is resumed (the simulator's host sleeps at
    /// the point and then goes on with the step).
    fn send_out(&mut self, mut held: Held) -> bool {
        if !held.resumed {
            if held.wrote {
                self.reach("after-sync");
            }
            self.watch_hub.publish(std::mem::take(&mut held.changes), held.revision, held.whole);
            self.log_votes(&held.messages, held.batch_start_ns);
        }
        let mut messages = std::mem::take(&mut held.messages).into_iter();
        while let Some((to, msg)) = messages.next() {
            let point = failpoint_of(&msg);
            self.links.send(to, PeerFrame::Raft(msg));
            if let Some((p, fired)) = point.and_then(|p| Some((p, self.failpoints.reached(p)?))) {
                if matches!(fired.action, Action::Clock(_)) {
                    // Nothing to wait for: the clock changes and the batch goes on.
                    self.act_at(p, fired);
                    continue;
                }
                self.after_send = Some((p, fired, Some(to)));
                held.messages = messages.collect();
                return self.stopped_midway(held);
            }
        }
        let mut answers = std::mem::take(&mut held.answers).into_iter();
        while let Some((waiter, resp, view)) = answers.next() {
            self.answer(waiter, resp, view);
            if let Some(fired) = self.failpoints.reached("after-send:client-reply") {
                if matches!(fired.action, Action::Clock(_)) {
                    self.act_at("after-send:client-reply", fired);
                    continue;
                }
                self.after_send = Some(("after-send:client-reply", fired, None));
                held.answers = answers.collect();
                return self.stopped_midway(held);
            }
        }
        for answer in held.later {
            answer();
        }
        self.status.send_if_modified(|old| {
            let changed = *old != held.status;
            *old = held.status;
            changed
        });
        true
    }

    /// What is left of a batch an after-send failpoint stopped: back at the
    /// front, sent on if the member is resumed (a crash never comes back).
    fn stopped_midway(&mut self, mut held: Held) -> bool {
        held.resumed = true;
        self.held.push_front(held);
        false
    }

    /// Writes the batch's persist operations (one write) and asks for
    /// their sync, stopping at the write failpoints (after the write,
    /// before its fsync). Returns the sync number the batch's outputs wait
    /// for (the last one asked for when the batch wrote nothing: what it
    /// shows may rest on earlier batches) and whether it wrote. A snapshot
    /// this member took (not `installed` from a leader, whose answer waits
    /// for it) is written behind, off this thread: nothing depends on it
    /// being durable, since the log still holds what it covers until it is.
    fn persist(
        &mut self,
        persist: Vec<leasesim_core::raft::PersistOp<leasesim_core::service::Command, leasesim_core::service::SharedState>>,
        installed: bool,
    ) -> (u64, bool) {
        use leasesim_core::raft::{Payload, PersistOp};
        if let Err(e) = self.storage.finish_snapshots() {
            fatal_disk(e);
        }
        if persist.is_empty() {
            return (self.storage.sync_requested(), false);
        }
        let snapshot = persist.iter().any(|op| matches!(op, PersistOp::SaveSnapshot(_)));
        let config = persist
            .iter()
            .any(|op| matches!(op, PersistOp::Append(entries) if entries.iter().any(|e| matches!(e.payload, Payload::Config(_)))));
        for op in persist {
            let written = match op {
                PersistOp::SaveSnapshot(snapshot) if !installed => self.storage.save_snapshot_behind(snapshot),
                op => self.storage.write(op),
            };
            if let Err(e) = written {
                fatal_disk(e);
            }
        }
        if let Err(e) = self.storage.write_out() {
            fatal_disk(e);
        }
        if snapshot {
            self.reach("snapshot-install");
        }
        if config {
            self.reach("membership-change");
        }
        self.reach("after-write");
        if self.ack_before_fsync {
            // The planted bug: nothing waits, nothing is synced.
            return (0, false);
        }
        let here = if self.lone { self.storage.sync_here_if_idle() } else { Ok(false) };
        match here.and_then(|here| if here { Ok(self.storage.sync_requested()) } else { self.storage.sync_behind() }) {
            Ok(needs) => (needs, true),
            Err(e) => fatal_disk(e),
        }
    }

    /// The votes this batch grants, logged once they are synced and before
    /// the replies leave (the simulator records them as the reply is
    /// sent): a granted vote reply, and a candidate's vote for itself when
    /// its first vote request of the election leaves.
    fn log_votes(&mut self, messages: &[(NodeId, PeerMessage)], batch_start_ns: u64) {
        use leasesim_core::raft::Message;
        let Some(log) = &mut self.event_log else { return };
        let me = self.server.id();
        let mut votes = Vec::new();
        for (to, msg) in messages {
            match msg {
                Message::VoteResponse { term, pre_vote: false, granted: true } => {
                    votes.push(Logged::VoteGranted { term: *term, candidate: *to })
                }
                Message::RequestVote { term, pre_vote: false, .. }
                    if !votes.iter().any(|v| matches!(v, Logged::VoteGranted { candidate, .. } if *candidate == me)) =>
                {
                    votes.push(Logged::VoteGranted { term: *term, candidate: me });
                }
                _ => {}
            }
        }
        log.write(batch_start_ns, &votes);
    }

    /// Keeps the digest of every applied index for HashKV and the
    /// corruption check (the state after a snapshot install or a restart
    /// too, so a quiet member still has one).
    fn record_digests(&self, events: &[ServerEvent]) {
        let mut digests = self.digests.lock().expect("digests lock");
        for event in events {
            if let ServerEvent::Applied { index, state, .. } = event {
                digests.record(*index, *state);
            }
        }
        let sm = self.server.state_machine();
        digests.record(sm.applied_index(), sm.applied_digest());
    }

    /// The waiter of `resp`, and its view read from the state now (as of
    /// the batch that answers it); `None` if nobody waits.
    fn resolve(&mut self, resp: ClientResponse) -> Option<(Waiter, ClientResponse, Option<RangeView>)> {
        let p = self.pending.remove(&(resp.client, resp.seq))?;
        let view = p.view.map(|spec| spec.read(self.server.state_machine()));
        Some((p.waiter, resp, view))
    }

    fn answer(&mut self, waiter: Waiter, resp: ClientResponse, view: Option<RangeView>) {
        match waiter {
            Waiter::Local(tx) => {
                let _ = tx.send(Answer { resp: resp.body, view });
            }
            Waiter::Remote(origin) => self.links.send(origin, PeerFrame::Reply { resp, view }),
        }
    }

    /// This member as of the batch just handled (published with its
    /// outputs).
    fn status_now(&mut self) -> MemberStatus {
        let raft = self.server.raft();
        let sm = self.server.state_machine();
        let auth = {
            let old = &self.status.borrow().auth;
            let applied = sm.auth();
            if old.revision == applied.revision && old.enabled == applied.enabled {
                old.clone()
            } else {
                std::sync::Arc::new(applied.clone())
            }
        };
        let status = MemberStatus {
            auth,
            id: raft.id(),
            role: Some(raft.role()),
            term: raft.term(),
            leader: raft.leader_id(),
            commit_index: raft.commit_index(),
            applied_index: sm.applied_index(),
            revision: sm.kv().revision(),
            compact_revision: sm.kv().compact_revision(),
            voters: raft.voters().iter().copied().collect(),
            db_size_bytes: self.storage.size_bytes(),
            alarms: crate::nospace::active(sm.kv()),
            disk_full: false,
        };
        MemberStatus { disk_full: self.disk.after_batch(&mut self.storage, status.id, &status.alarms), ..status }
    }
}

/// The failpoint a message passes as it leaves (pre-votes pass none:
/// nothing about them is persisted).
fn failpoint_of(msg: &leasesim_core::server::PeerMessage) -> Option<&'static str> {
    use leasesim_core::raft::Message;
    Some(match msg {
        Message::RequestVote { pre_vote: false, .. } => "after-send:vote-request",
        Message::VoteResponse { pre_vote: false, .. } => "after-send:vote-reply",
        Message::AppendEntries { .. } => "after-send:append",
        Message::AppendResponse { .. } => "after-send:append-reply",
        Message::InstallSnapshot { .. } => "after-send:snapshot",
        Message::InstallSnapshotResponse { .. } => "after-send:snapshot-reply",
        _ => return None,
    })
}

/// The part of a history `read` from revision `from` that is published
/// (durable): a watcher catching up must not see a change before it is.
fn published_part(
    mut read: leasesim_core::service::watch::EventsRead,
    from: LogIndex,
    published: LogIndex,
) -> leasesim_core::service::watch::EventsRead {
    // Never below what the reader already has.
    let upto = read.upto.min(published.max(from.saturating_sub(1)));
    read.events.retain(|c| c.revision <= upto);
    read.upto = upto;
    read
}

fn fatal_disk(e: std::io::Error) -> ! {
    tracing::error!("cannot persist to the data directory: {e}; stopping");
    std::process::exit(3)
}
