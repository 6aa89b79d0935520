//! The host side of every simulated process: one async loop per madsim node
//! that feeds a sans-IO actor its messages and timers, with the process's
//! own clock readings, and carries out what it asks for.
//!
//! The loop obeys the durability rule of the core: persist operations are
//! written and synced (which takes simulated time, and a crash in between
//! loses them) before any message of the same step is sent.
//!
//! Messages travel through the world's own network (`world::network`), not
//! madsim's sockets; every `select!` is `biased` (madsim note: an unbiased
//! select breaks determinism across runs in one process).

pub mod server;
pub mod store;
pub mod task_table;
pub mod watch_serve;

use std::sync::Arc;

use leasesim_core::raft::{Message, Payload, PersistOp};
use rand::Rng;

use crate::world::disk;
use crate::world::points::{CrashRequest, PointAction};
use crate::world::wire::Wire;
use crate::world::{Timer, World};
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::{MessageKind, Point};

/// How long a disk sync takes (drawn per sync): the window in which a crash
/// loses written but unsynced state.
const FSYNC_NS: (u64, u64) = (50_000, 500_000);

/// One step's view of the world and its effects.
pub struct Step<'a> {
    pub proc: Proc,
    /// This process's own clocks.
    pub mono_ns: u64,
    pub wall_ns: u64,
    pub world: &'a World,
    /// True time of the step: no simulated time passes inside one.
    now_ns: u64,
    sends: Vec<(Proc, Wire)>,
    persist: Vec<disk::Op>,
}

impl<'a> Step<'a> {
    /// A step of `proc` at `now_ns` that collects its effects into `buffers`
    /// (empty; the host loop reuses them from step to step, as growing two
    /// new vectors per step was a measurable share of a run).
    fn at(world: &'a World, proc: Proc, now_ns: u64, buffers: Effects) -> Self {
        let (mono_ns, wall_ns) = world.read_clock_at(proc, now_ns);
        let (sends, persist) = buffers;
        Step { proc, mono_ns, wall_ns, world, now_ns, sends, persist }
    }

    fn into_effects(self) -> Effects {
        (self.sends, self.persist)
    }

    pub fn send(&mut self, to: Proc, wire: Wire) {
        self.sends.push((to, wire));
    }

    /// Takes `ops`' operations, leaving the vector empty with its room.
    pub fn persist(&mut self, ops: &mut Vec<disk::Op>) {
        self.persist.append(ops);
    }

    pub fn record(&self, event: Event) {
        self.world.record_at(self.now_ns, self.proc, event);
    }

    /// True simulated time: for observations only, never for decisions.
    pub fn true_ns(&self) -> u64 {
        self.now_ns
    }
}

/// A sans-IO process: the host calls it, it never awaits.
pub trait Actor: 'static {
    fn start(&mut self, step: &mut Step<'_>);
    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire);
    fn on_timer(&mut self, step: &mut Step<'_>);
    /// Own monotonic time at which `on_timer` is due.
    fn next_deadline_mono_ns(&self) -> Option<u64>;
}

/// A step's messages to send and operations to persist.
type Effects = (Vec<(Proc, Wire)>, Vec<disk::Op>);

// Lives on the stack for one loop turn; boxing the message would cost an
// allocation per delivery on the hottest path of the simulator.
#[allow(clippy::large_enum_variant)]
enum Input {
    Message(Proc, Wire),
    Timer,
}

/// Runs `actor` as process `proc` until the node is killed.
///
/// One task per process: it takes the next message due from its inbox in
/// the world's network, else fires the actor's timer when the process's own
/// monotonic clock has reached it, else sleeps until the earlier of the two
/// (woken early by a message due sooner, or by a change of its clock: both
/// through the inbox's doorbell).
pub async fn run_actor<A: Actor>(world: Arc<World>, proc: Proc, mut actor: A) {
    let mut step = Step::at(&world, proc, world.now_ns(), (Vec::with_capacity(16), Vec::new()));
    actor.start(&mut step);
    let mut effects = step.into_effects();
    carry_out(&world, proc, &mut effects).await;

    loop {
        let now_ns = world.now_ns();
        let input = if let Some((from, wire)) = world.take_due(proc, now_ns) {
            Input::Message(from, wire)
        } else {
            // Asked once: nothing runs the actor between here and the sleep.
            match world.timer(proc, now_ns, actor.next_deadline_mono_ns()) {
                Timer::Due => {
                    // A fault aimed at the moment a deadline is decided acts
                    // before the step reads its clock; then everything is
                    // decided afresh.
                    if reach(&world, proc, Point::Timer).await {
                        continue;
                    }
                    Input::Timer
                }
                Timer::At(timer_ns) => {
                    let (wake_ns, message_sooner) = world.sleep(proc, timer_ns);
                    tokio::select! {
                        biased;
                        _ = message_sooner => {}
                        _ = sleep_until(&world, wake_ns) => {}
                    }
                    world.awake(proc);
                    continue;
                }
            }
        };
        let mut step = Step::at(&world, proc, now_ns, std::mem::take(&mut effects));
        // Servers time their core's part themselves (`ServerActor::drive`).
        let started = if matches!(proc, Proc::Server(_)) { None } else { world.phases.start() };
        match input {
            Input::Message(from, wire) => actor.on_message(&mut step, from, wire),
            Input::Timer => {
                let mono_ns = step.mono_ns;
                actor.on_timer(&mut step);
                // A timer that stays due after it fired would fire again at
                // the same instant forever: simulated time would stop and
                // the run would never end. The engine's contract is that a
                // tick moves every deadline it handled past `now`.
                let again = actor.next_deadline_mono_ns();
                assert!(
                    again.is_none_or(|d| d > mono_ns),
                    "{proc}'s timer is still due after it fired at {} (its clock {mono_ns} ns, next deadline {again:?}): \
                     the engine left a deadline in the past, a livelock",
                    leasesim_core::fmt_secs(now_ns)
                );
            }
        }
        world.phases.add_clients(started);
        effects = step.into_effects();
        world.count_step(now_ns, effects.0.len());
        carry_out(&world, proc, &mut effects).await;
    }
}

async fn sleep_until(world: &World, true_ns: Option<u64>) {
    match true_ns {
        Some(true_ns) => world.sleep_until(true_ns).await,
        None => std::future::pending().await,
    }
}

/// Carries out a step's effects, leaving `effects` empty for the next step.
async fn carry_out(world: &World, proc: Proc, effects: &mut Effects) {
    let (sends, persist) = effects;
    if !persist.is_empty() {
        let Proc::Server(id) = proc else { panic!("only servers persist") };
        let aimed = world.points.any_armed().then(|| written_points(persist));
        world.disk(id).write(persist);
        for point in aimed.into_iter().flatten() {
            reach(world, proc, point).await;
        }
        let fsync_ns = madsim::rand::thread_rng().gen_range(FSYNC_NS.0..=FSYNC_NS.1);
        world.sleep_for(fsync_ns).await;
        world.disk(id).sync();
        reach(world, proc, Point::AfterSync).await;
    }
    let mut now_ns = world.now_ns();
    // A candidate's vote for itself counts as a vote too (Raft §5.2: it
    // "votes for itself" and persists it before asking): recorded once per
    // step that asks for votes, when its first request leaves.
    let mut self_vote_recorded = false;
    for (to, wire) in sends.drain(..) {
        if let (Wire::Peer(Message::VoteResponse { term, pre_vote: false, granted: true }), Proc::Server(candidate)) = (&wire, to) {
            world.record_at(now_ns, proc, Event::VoteGranted { term: *term, candidate });
        }
        if let (Wire::Peer(Message::RequestVote { term, pre_vote: false, .. }), Proc::Server(me)) = (&wire, proc) {
            if !std::mem::replace(&mut self_vote_recorded, true) {
                world.record_at(now_ns, proc, Event::VoteGranted { term: *term, candidate: me });
            }
        }
        let kind = if world.points.any_armed() { message_kind(&wire) } else { None };
        world.send_at(now_ns, proc, to, wire);
        if let Some(kind) = kind {
            if reach(world, proc, Point::AfterSend(kind)).await {
                now_ns = world.now_ns();
            }
        }
    }
}

/// The points a server's write passes, most specific first.
fn written_points(persist: &[disk::Op]) -> Vec<Point> {
    let mut points = Vec::new();
    if persist.iter().any(|op| matches!(op, PersistOp::SaveSnapshot(_))) {
        points.push(Point::SnapshotInstall);
    }
    let config =
        |op: &disk::Op| matches!(op, PersistOp::Append(entries) if entries.iter().any(|e| matches!(e.payload, Payload::Config(_))));
    if persist.iter().any(config) {
        points.push(Point::MembershipChange);
    }
    points.push(Point::AfterWrite);
    points
}

/// The kind a fault point names this message by (pre-votes are none:
/// nothing about them is persisted).
fn message_kind(wire: &Wire) -> Option<MessageKind> {
    Some(match wire {
        Wire::Peer(Message::RequestVote { pre_vote: false, .. }) => MessageKind::VoteRequest,
        Wire::Peer(Message::VoteResponse { pre_vote: false, .. }) => MessageKind::VoteReply,
        Wire::Peer(Message::AppendEntries { .. }) => MessageKind::Append,
        Wire::Peer(Message::AppendResponse { .. }) => MessageKind::AppendReply,
        Wire::Peer(Message::InstallSnapshot { .. }) => MessageKind::Snapshot,
        Wire::Peer(Message::InstallSnapshotResponse { .. }) => MessageKind::SnapshotReply,
        Wire::Response(_) => MessageKind::ClientReply,
        Wire::Request(_) => MessageKind::Request,
        _ => return None,
    })
}

/// `proc` reached `point`: if a fault is armed there for it, carry it out.
/// A crash is handed to the injector and this never returns (the node is
/// killed at this very instant); a pause sleeps here and a clock fault
/// changes the clock, and both return true.
async fn reach(world: &World, proc: Proc, point: Point) -> bool {
    if !world.points.any_armed() {
        return false;
    }
    let Some(armed) = world.points.take(point, |selector| world.selects(selector, proc)) else { return false };
    let now_ns = world.now_ns();
    let fault = armed.fault;
    match armed.action {
        PointAction::Crash { for_ns } => {
            world.record_at(now_ns, Proc::Admin, Event::Fault { action: format!("crash {proc} at {point} (fault #{fault})") });
            world.points.request_crash(CrashRequest { fault, proc, point, for_ns });
            std::future::pending::<()>().await;
            unreachable!("a crashed process never runs again")
        }
        PointAction::Pause { for_ns, settle_at_ns } => {
            let until_ns = for_ns.map_or(settle_at_ns, |f| now_ns.saturating_add(f)).min(settle_at_ns).max(now_ns);
            world.record_at(now_ns, Proc::Admin, Event::Fault { action: format!("pause {proc} at {point} (fault #{fault})") });
            world.record_at(now_ns, proc, Event::Paused);
            world.sleep_until(until_ns).await;
            world.record_at(world.now_ns(), proc, Event::Resumed);
        }
        PointAction::Clock { drift, jump_ns } => {
            world.set_clock(proc, drift, jump_ns);
            world.record_at(now_ns, Proc::Admin, Event::Fault { action: format!("clock of {proc} at {point} (fault #{fault})") });
        }
    }
    true
}
