//! The host side of every simulated process: one async loop per madsim node
//! that feeds a sans-IO actor its messages and timers, with the process's
//! own clock readings, and carries out what it asks for.
//!
//! The loop obeys the durability rule of the core: persist operations are
//! written and synced (which takes simulated time, and a crash in between
//! loses them) before any message of the same step is sent.
//!
//! madsim notes this file follows: `recv_from` is not cancellation-safe, so a
//! dedicated task receives and feeds a channel; every `select!` is `biased`.

pub mod server;
pub mod store;
pub mod task_table;

use std::sync::Arc;
use std::time::Duration;

use madsim::net::Endpoint;
use rand::Rng;

use crate::observe::Event;
use crate::world::disk;
use crate::world::wire::{Proc, Wire};
use crate::world::World;

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
    sends: Vec<(Proc, Wire)>,
    persist: Vec<disk::Op>,
}

impl<'a> Step<'a> {
    fn new(world: &'a World, proc: Proc) -> Self {
        let (mono_ns, wall_ns) = world.read_clock(proc);
        Step { proc, mono_ns, wall_ns, world, sends: Vec::new(), persist: Vec::new() }
    }

    pub fn send(&mut self, to: Proc, wire: Wire) {
        self.sends.push((to, wire));
    }

    pub fn persist(&mut self, ops: Vec<disk::Op>) {
        self.persist.extend(ops);
    }

    pub fn record(&self, event: Event) {
        self.world.record(self.proc, event);
    }

    /// True simulated time: for observations only, never for decisions.
    pub fn true_ns(&self) -> u64 {
        self.world.now_ns()
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

/// Network behaviour the host adds to madsim's (madsim never duplicates).
#[derive(Clone, Copy, Debug)]
pub struct HostNet {
    pub duplicate: f64,
}

// Lives on the stack for one loop turn; boxing the message would cost an
// allocation per delivery on the hottest path of the simulator.
#[allow(clippy::large_enum_variant)]
enum Input {
    Message(Proc, Wire),
    Timer,
    ClockChanged,
}

/// Runs `actor` as process `proc` until the node is killed.
pub async fn run_actor<A: Actor>(world: Arc<World>, proc: Proc, net: HostNet, mut actor: A) {
    let endpoint = Arc::new(Endpoint::bind(proc.addr()).await.expect("each process binds its own address once"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let receiver = endpoint.clone();
    madsim::task::spawn(async move {
        while let Ok((payload, from)) = receiver.recv_from_raw(0).await {
            let wire = *payload.downcast::<Wire>().expect("only Wire values travel");
            let from = Proc::from_addr(from).expect("every sender is a simulated process");
            if tx.send((from, wire)).is_err() {
                break;
            }
        }
    });
    let clock_changed = world.clock_changed(proc);

    let mut step = Step::new(&world, proc);
    actor.start(&mut step);
    let (sends, persist) = (step.sends, step.persist);
    carry_out(&world, &endpoint, net, proc, sends, persist).await;

    loop {
        let deadline = actor.next_deadline_mono_ns().map(|mono_ns| world.instant_of(world.true_time_of_mono(proc, mono_ns)));
        let input = tokio::select! {
            biased;
            Some((from, wire)) = rx.recv() => Input::Message(from, wire),
            _ = clock_changed.notified() => Input::ClockChanged,
            _ = sleep_until(deadline) => Input::Timer,
        };
        let mut step = Step::new(&world, proc);
        match input {
            Input::Message(from, wire) => actor.on_message(&mut step, from, wire),
            Input::Timer => {
                // The clock may have been slowed since the sleep was armed.
                if actor.next_deadline_mono_ns().is_some_and(|d| d > step.mono_ns) {
                    continue;
                }
                actor.on_timer(&mut step);
            }
            Input::ClockChanged => continue,
        }
        let (sends, persist) = (step.sends, step.persist);
        world.count_step(sends.len());
        carry_out(&world, &endpoint, net, proc, sends, persist).await;
    }
}

async fn sleep_until(deadline: Option<madsim::time::Instant>) {
    match deadline {
        Some(deadline) => madsim::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

async fn carry_out(
    world: &World,
    endpoint: &Endpoint,
    net: HostNet,
    proc: Proc,
    sends: Vec<(Proc, Wire)>,
    persist: Vec<disk::Op>,
) {
    if !persist.is_empty() {
        let Proc::Server(id) = proc else { panic!("only servers persist") };
        world.disk(id).write(persist);
        let fsync_ns = madsim::rand::thread_rng().gen_range(FSYNC_NS.0..=FSYNC_NS.1);
        madsim::time::sleep(Duration::from_nanos(fsync_ns)).await;
        world.disk(id).sync();
    }
    for (to, wire) in sends {
        let copies = if net.duplicate > 0.0 && madsim::rand::thread_rng().gen_bool(net.duplicate) { 2 } else { 1 };
        for _ in 1..copies {
            // A send to a dead address is dropped by madsim: not an error.
            let _ = endpoint.send_to_raw(to.addr(), 0, Box::new(wire.clone())).await;
        }
        let _ = endpoint.send_to_raw(to.addr(), 0, Box::new(wire)).await;
    }
}
