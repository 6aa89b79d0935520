//! The simulated world every process shares: true time, per-process clocks,
//! server disks, the observation log and what the fault injector needs to
//! resolve selectors (`leader`, `holder:KEY`).
//!
//! All of it lives outside the processes so it survives crashes. madsim runs
//! one simulation on one thread, so plain mutexes never contend; they exist
//! only because madsim's node closures must be `Send + Sync`.

pub mod disk;
pub mod network;
pub mod points;
pub mod runaway;
pub mod wire;
pub mod wire_kind;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use leasesim_core::byte_hash::ByteHasher;
use leasesim_core::raft::Role;
use leasesim_core::server::ServerEvent;
use leasesim_core::NodeId;
use xxhash_rust::xxh3::Xxh3;

use crate::run::phases::PhaseClock;
use crate::vocab::ProcMap;
use disk::Disk;
use leasesim_judge::observe::{Event, Obs, ObsLog};
use leasesim_judge::vocab::{Proc, ServerProbe, SimClock};
use network::{Network, Wait};
use wire::Wire;

/// A host loop's timer at a given true instant (`World::timer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    Due,
    /// Not due yet: due at this true instant (None: no timer set).
    At(Option<u64>),
}

/// Resolves when a message due sooner than a sleeping loop's wake instant
/// arrives, or its clock changes (`Network`'s doorbell).
pub struct MessageSooner<'a> {
    world: &'a World,
    proc: Proc,
    wait: Wait,
}

impl Future for MessageSooner<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.world.network().poll_doorbell(this.proc, &mut this.wait, cx.waker())
    }
}

impl Drop for MessageSooner<'_> {
    fn drop(&mut self) {
        if matches!(self.wait, Wait::Waiting(_)) {
            // Also while unwinding from a panic elsewhere: never a second panic.
            let mut network = self.world.network.lock().unwrap_or_else(PoisonError::into_inner);
            network.drop_doorbell_wait(self.proc, self.wait);
        }
    }
}

#[derive(Default)]
pub struct Recorder {
    pub obs: ObsLog,
    /// Observations recorded, kept or not.
    pub recorded: usize,
    digest: Xxh3,
    /// Observation bytes not yet fed to `digest`: fed in large chunks, as
    /// one `update` per field costs more than gathering them (XXH3 gives
    /// the same digest however its input is split).
    pending: ByteHasher,
    /// Actor steps taken (messages handled + timers fired).
    pub steps: u64,
    /// The same steps per simulated second, for the runaway guard.
    step_rate: runaway::StepRate,
    pub messages_sent: u64,
    /// Full trace to stderr (replay) — off in sweeps.
    pub echo: bool,
    /// Keep events no checker reads (`Event::for_traces_only`) and repeats
    /// of an applied entry: for traces and reports.
    pub keep_all: bool,
    /// (term, fingerprint, state digest) of the first application of each
    /// log index (index 0 unused). Every server applies every entry, so the
    /// log of applications is most of a run's observations; the checkers
    /// need the first at each index and every one that differs from it, so
    /// an application that repeats the first exactly is counted in the
    /// digest and not kept.
    first_applied: Vec<Option<(u64, u64, u64)>>,
    /// Servers whose last application reached a state unlike the first
    /// server's at that index. Once replicas diverge the digest chain keeps
    /// them apart at every later index; the replica-divergence checker
    /// needs only the application where a server moved apart, so while it
    /// stays apart its applications that differ only in state are not kept.
    apart: BTreeSet<Proc>,
}

impl Recorder {
    /// Whether `event` of `proc` applies an entry as the first server to
    /// apply that index did, or differs from it only in state while `proc`
    /// was already apart (and notes the first application of an index).
    fn repeats_an_application(&mut self, proc: Proc, event: &Event) -> bool {
        let Event::Server { event: ServerEvent::Applied { index, term, fingerprint, state } } = event else { return false };
        let at = *index as usize;
        if self.first_applied.len() <= at {
            self.first_applied.resize(at + 1, None);
        }
        let this = (*term, *fingerprint, *state);
        match self.first_applied[at] {
            None => {
                self.first_applied[at] = Some(this);
                self.apart.remove(&proc);
                false
            }
            Some(first) if first == this => {
                self.apart.remove(&proc);
                true
            }
            Some((term, fingerprint, _)) if (term, fingerprint) == (this.0, this.1) => !self.apart.insert(proc),
            Some(_) => false,
        }
    }

    pub fn digest(&self) -> u64 {
        let mut digest = self.digest.clone();
        digest.update(self.pending.bytes());
        digest.digest()
    }

    fn digest_obs(&mut self, obs: &Obs) {
        const CHUNK_BYTES: usize = 16 << 10;
        obs.digest_into(&mut self.pending);
        if self.pending.bytes().len() >= CHUNK_BYTES {
            self.digest.update(self.pending.bytes());
            self.pending.clear();
        }
    }
}

pub struct World {
    start: madsim::time::Instant,
    /// madsim's clock, held so that reading true time is one field read
    /// under its lock: `Instant::now()` goes through madsim's override of
    /// `clock_gettime` and a thread-local lookup, a twentieth of a run.
    time: madsim::time::TimeHandle,
    /// madsim's elapsed time when the run started (`start`).
    start_elapsed: std::time::Duration,
    clocks: Mutex<ProcMap<SimClock>>,
    disks: BTreeMap<NodeId, Mutex<Disk>>,
    recorder: Mutex<Recorder>,
    network: Mutex<Network>,
    /// By server id (a slot per id up to the highest seen): every server
    /// step sets its own, so a vector instead of a B-tree.
    probes: Mutex<Vec<Option<ServerProbe>>>,
    /// Lock key → client that currently believes it holds it.
    holders: Mutex<BTreeMap<String, u64>>,
    up: Mutex<ProcMap<bool>>,
    /// Faults armed at points of a step (`when = …`).
    pub points: points::Points,
    /// The engine's and the clients' shares of the run, when timed.
    pub phases: PhaseClock,
}

impl World {
    pub fn new(
        clocks: BTreeMap<Proc, SimClock>,
        servers: impl IntoIterator<Item = NodeId>,
        network: Network,
        echo: bool,
        keep_all: bool,
        observations_in_memory: usize,
    ) -> Self {
        let servers: Vec<NodeId> = servers.into_iter().collect();
        let up = clocks.keys().map(|p| (*p, true)).collect();
        let time = madsim::time::TimeHandle::current();
        World {
            start: madsim::time::Instant::now(),
            start_elapsed: time.elapsed(),
            time,
            clocks: Mutex::new(clocks.into_iter().collect()),
            disks: servers.iter().map(|n| (*n, Mutex::new(Disk::default()))).collect(),
            // A kept log is handed whole to traces and reports: it stays in
            // memory. Otherwise the log spills past `observations_in_memory`.
            recorder: Mutex::new(Recorder {
                echo,
                keep_all,
                obs: ObsLog::new(if keep_all { usize::MAX } else { observations_in_memory }),
                ..Recorder::default()
            }),
            network: Mutex::new(network),
            probes: Mutex::new(Vec::new()),
            holders: Mutex::new(BTreeMap::new()),
            up: Mutex::new(up),
            points: points::Points::default(),
            phases: PhaseClock::default(),
        }
    }

    /// Times the engine's and the clients' steps into `phases` (bench).
    pub fn with_phase_clock(mut self, phases: PhaseClock) -> Self {
        self.phases = phases;
        self
    }

    /// True simulated time since the run started.
    pub fn now_ns(&self) -> u64 {
        // The same figure as `Instant::now().duration_since(self.start)`:
        // madsim's instants are its base instant plus this elapsed time.
        (self.time.elapsed() - self.start_elapsed).as_nanos() as u64
    }

    pub fn instant_of(&self, true_ns: u64) -> madsim::time::Instant {
        self.start + std::time::Duration::from_nanos(true_ns)
    }

    fn clocks(&self) -> MutexGuard<'_, ProcMap<SimClock>> {
        self.clocks.lock().expect("single-threaded simulation")
    }

    /// (monotonic, wall) readings of `proc`'s clocks now.
    pub fn read_clock(&self, proc: Proc) -> (u64, u64) {
        self.read_clock_at(proc, self.now_ns())
    }

    /// (monotonic, wall) readings of `proc`'s clocks at true time `now_ns`
    /// (reading madsim's time is not free: a step reads it once).
    pub fn read_clock_at(&self, proc: Proc, now_ns: u64) -> (u64, u64) {
        self.clocks()[proc].read_at(now_ns)
    }

    /// Whether `proc`'s timer, due at `deadline_mono_ns` on its own
    /// monotonic clock, is due at true time `now_ns`, else the true instant
    /// it will be (one look-up of the clock for the host loop's two
    /// questions).
    pub fn timer(&self, proc: Proc, now_ns: u64, deadline_mono_ns: Option<u64>) -> Timer {
        let Some(deadline_mono_ns) = deadline_mono_ns else { return Timer::At(None) };
        let clocks = self.clocks();
        let clock = &clocks[proc];
        if deadline_mono_ns <= clock.mono_at(now_ns) {
            Timer::Due
        } else {
            Timer::At(Some(clock.true_time_of_mono(deadline_mono_ns)))
        }
    }

    pub fn true_time_of_mono(&self, proc: Proc, mono_ns: u64) -> u64 {
        self.clocks()[proc].true_time_of_mono(mono_ns)
    }

    /// Changes a clock and wakes its process so it re-arms its timer.
    pub fn change_clock(&self, proc: Proc, change: impl FnOnce(&mut SimClock, u64)) {
        let now_ns = self.now_ns();
        change(self.clocks().get_mut(proc).expect("every process has a clock"), now_ns);
        // Its host loop re-arms its timer for the new rate when it wakes.
        self.network().wake(proc);
    }

    /// A clock fault: a new rate error from now on and/or a wall-clock step.
    pub fn set_clock(&self, proc: Proc, drift: Option<f64>, jump_ns: Option<i64>) {
        self.change_clock(proc, |clock, now_ns| {
            if let Some(drift) = drift {
                clock.set_drift(now_ns, drift);
            }
            if let Some(jump_ns) = jump_ns {
                clock.jump_wall(now_ns, jump_ns);
            }
        });
    }

    pub fn disk(&self, server: NodeId) -> MutexGuard<'_, Disk> {
        self.disks[&server].lock().expect("single-threaded simulation")
    }

    pub fn record(&self, proc: Proc, event: Event) {
        self.record_at(self.now_ns(), proc, event);
    }

    /// Records `event` of `proc` at true time `at_ns` (now, as the caller
    /// read it).
    pub fn record_at(&self, at_ns: u64, proc: Proc, event: Event) {
        let obs = Obs { at_ns, proc, event };
        let mut recorder = self.recorder.lock().expect("single-threaded simulation");
        if recorder.echo {
            tracing::info!(target: "leasesim::trace", at = %leasesim_core::fmt_secs(obs.at_ns), proc = %proc, event = ?obs.event);
        }
        recorder.digest_obs(&obs);
        recorder.recorded += 1;
        let keep = recorder.keep_all || (!obs.event.for_traces_only() && !recorder.repeats_an_application(obs.proc, &obs.event));
        if keep {
            recorder.obs.push(obs);
        }
    }

    /// The network, for the fault injector (cut and mend links, loss).
    pub fn network(&self) -> MutexGuard<'_, Network> {
        self.network.lock().expect("single-threaded simulation")
    }

    /// Sends `wire` now; the network decides its fate from the seed.
    pub fn send(&self, from: Proc, to: Proc, wire: Wire) {
        self.send_at(self.now_ns(), from, to, wire);
    }

    /// Sends `wire` at true time `now_ns` (now, as the caller read it).
    pub fn send_at(&self, now_ns: u64, from: Proc, to: Proc, wire: Wire) {
        let to_up = self.is_up(to);
        self.network().send(now_ns, from, to, wire, to_up);
    }

    /// The next message for `proc` due by `now_ns`.
    pub fn take_due(&self, proc: Proc, now_ns: u64) -> Option<(Proc, Wire)> {
        self.network().take_due(proc, now_ns)
    }

    /// `proc`'s loop sleeps until the earlier of true time `timer_ns` and
    /// its next delivery (None: until a message): returns that instant,
    /// and what wakes it for a message due sooner.
    pub fn sleep(&self, proc: Proc, timer_ns: Option<u64>) -> (Option<u64>, MessageSooner<'_>) {
        let until_ns = self.network().sleep(proc, timer_ns);
        (until_ns, MessageSooner { world: self, proc, wait: Wait::Init })
    }

    /// Sleeps until true time `true_ns` (madsim's sleep at least 1 ms, as
    /// `madsim::time::sleep_until`, through the handle the world holds
    /// instead of a look-up of the running context).
    pub fn sleep_until(&self, true_ns: u64) -> madsim::time::Sleep {
        self.time.sleep_until(self.instant_of(true_ns))
    }

    /// Sleeps for `ns` (as `madsim::time::sleep`).
    pub fn sleep_for(&self, ns: u64) -> madsim::time::Sleep {
        self.time.sleep(std::time::Duration::from_nanos(ns))
    }

    pub fn awake(&self, proc: Proc) {
        self.network().awake(proc);
    }

    pub fn count_step(&self, now_ns: u64, messages_sent: usize) {
        let mut recorder = self.recorder.lock().expect("single-threaded simulation");
        recorder.steps += 1;
        recorder.messages_sent += messages_sent as u64;
        // A broken engine can make work without end: stop such a run as an
        // engine failure, named, instead of letting it stall a sweep.
        if let Err(runaway) = recorder.step_rate.count(now_ns) {
            panic!("{runaway}");
        }
    }

    pub fn take_recorder(&self) -> Recorder {
        std::mem::take(&mut *self.recorder.lock().expect("single-threaded simulation"))
    }

    pub fn set_probe(&self, server: NodeId, probe: ServerProbe) {
        let mut probes = self.probes.lock().expect("single-threaded simulation");
        let at = server as usize;
        if probes.len() <= at {
            probes.resize(at + 1, None);
        }
        probes[at] = Some(probe);
    }

    pub fn probes(&self) -> BTreeMap<NodeId, ServerProbe> {
        let probes = self.probes.lock().expect("single-threaded simulation");
        probes.iter().enumerate().filter_map(|(server, probe)| probe.map(|p| (server as NodeId, p))).collect()
    }

    pub fn set_holder(&self, key: &str, client: Option<u64>) {
        let mut holders = self.holders.lock().expect("single-threaded simulation");
        match client {
            Some(c) => holders.insert(key.to_string(), c),
            None => holders.remove(key),
        };
    }

    pub fn holder(&self, key: &str) -> Option<u64> {
        self.holders.lock().expect("single-threaded simulation").get(key).copied()
    }

    pub fn set_up(&self, proc: Proc, up: bool) {
        self.up.lock().expect("single-threaded simulation").insert(proc, up);
    }

    pub fn is_up(&self, proc: Proc) -> bool {
        self.up.lock().expect("single-threaded simulation").get(proc).copied().unwrap_or(false)
    }

    /// The current leader: the up server reporting Leader with the highest term.
    pub fn leader(&self) -> Option<NodeId> {
        let probes = self.probes();
        probes.iter().filter(|(n, p)| p.role == Role::Leader && self.is_up(Proc::Server(**n))).max_by_key(|(_, p)| p.term).map(|(n, _)| *n)
    }

    /// Whether `selector` names `proc` right now (a point fault's target is
    /// matched when the process reaches the point).
    pub fn selects(&self, selector: &leasesim_scenario::Selector, proc: Proc) -> bool {
        use leasesim_scenario::Selector;
        match (selector, proc) {
            (Selector::Server(n), Proc::Server(m)) | (Selector::Client(n), Proc::Client(m)) => *n == m,
            (Selector::Store, Proc::Store) => true,
            (Selector::Leader, Proc::Server(m)) => self.leader() == Some(m),
            (Selector::Follower, Proc::Server(m)) => self.leader() != Some(m),
            (Selector::RandomServer, Proc::Server(_)) | (Selector::RandomClient, Proc::Client(_)) => true,
            (Selector::Holder(key), Proc::Client(m)) => self.holder(key) == Some(m),
            _ => false,
        }
    }

    pub fn clocks_snapshot(&self) -> BTreeMap<Proc, SimClock> {
        self.clocks().iter().map(|(p, c)| (p, c.clone())).collect()
    }
}
