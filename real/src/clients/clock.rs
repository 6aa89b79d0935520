//! A runner client's own clocks, which the runner can skew at run time.
//!
//! The runner's clients are tasks of one process, and nothing can make the
//! kernel's clock run fast for one task: so every client reads time through
//! its [`ClientClock`], as a leasesim-node member reads it through its
//! `ClockSource`, with the same skew code (`leasesim_node::faults::clock::
//! Skews`: a rate and a step per clock, monotonic and wall apart). Every
//! decision a client takes by time reads this clock: its think, hold,
//! poll and keep-alive timers ([`ClientClock::sleep`], which `gate::Pass`
//! sleeps on), and its belief in its lease ([`ClientClock::mono_ns`]).
//! What it records for the judge stays stamped in true time.
//!
//! The readings follow the judge's clock model of a client exactly
//! (`SimClock::new(0, WALL_BASE_NS + offset, drift)`): at true time `t`
//! since the run began, an exact clock's monotonic reading is `t` and its
//! wall reading `WALL_BASE_NS + t`, so a deadline a client records on its
//! own clock maps back to the true instant the judge expects. The clock
//! lives in the run, not in the client's task: it survives a client crash,
//! as the simulator's clocks do.

use std::sync::Mutex;
use std::time::Duration;

use leasesim_core::server::Clocks;
use leasesim_judge::vocab::SimClock;
use leasesim_node::faults::clock::{ClockChange, SkewChange, Skews};
use leasesim_node::faults::event_log::monotonic_ns;
use leasesim_scenario::ClockSpec;
use tokio::sync::watch;

use crate::schedule::WALL_BASE_NS;

/// A clock fault made: true time, new drift, wall step.
pub type ClockFault = (u64, Option<f64>, Option<i64>);

/// One client's clocks.
pub struct ClientClock {
    /// CLOCK_MONOTONIC at the run's true time 0 (the recorder's origin).
    origin_ns: u64,
    skews: Mutex<Skews>,
    /// Every fault's change (true time, drift, jump), in the order made:
    /// the judge's model of this clock is built from it after the run
    /// (`Player::play`), so a change made at the client's timer point and
    /// one the runner made from the timeline can never reach the model
    /// out of order.
    faults: Mutex<Vec<ClockFault>>,
    /// Bumped at every change, so a sleeping client works its deadline out
    /// again.
    changes: watch::Sender<u64>,
}

impl ClientClock {
    /// A clock for a run that began at `origin_ns` (CLOCK_MONOTONIC), skewed
    /// from true time 0 by the file's `[clocks.cN]` spec, if any.
    pub fn new(origin_ns: u64, spec: Option<&ClockSpec>) -> Result<Self, String> {
        let mut skews = Skews::default();
        if let Some(spec) = spec {
            skews.apply(&from_spec(spec), 0)?;
        }
        Ok(ClientClock { origin_ns, skews: Mutex::new(skews), faults: Mutex::default(), changes: watch::channel(0).0 })
    }

    /// True time since the run began (the recorder's stamps).
    pub fn true_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }

    /// Both readings now.
    pub fn now(&self) -> Clocks {
        let t = self.true_ns();
        self.skews.lock().expect("client clock").read(t, t, WALL_BASE_NS + t)
    }

    /// The monotonic reading now: what a client's timers and beliefs read.
    pub fn mono_ns(&self) -> u64 {
        self.now().mono_ns
    }

    /// The wall reading now.
    pub fn wall_ns(&self) -> u64 {
        self.now().wall_ns
    }

    /// A clock fault (a new drift, a wall step) now, all or nothing; the
    /// true time it was made at, taken under the clock's lock so that the
    /// log of changes is in the order the clock made them.
    pub fn apply_fault(&self, drift: Option<f64>, jump_ns: Option<i64>) -> Result<u64, String> {
        let mut skews = self.skews.lock().expect("client clock");
        let t = self.true_ns();
        skews.apply(&from_fault(drift, jump_ns), t)?;
        self.faults.lock().expect("client clock").push((t, drift, jump_ns));
        drop(skews);
        self.changes.send_modify(|n| *n += 1);
        Ok(t)
    }

    /// The clock faults made so far (true time, drift, jump), in order.
    pub fn faults(&self) -> Vec<ClockFault> {
        self.faults.lock().expect("client clock").clone()
    }

    /// Sleeps until this clock's monotonic reading has advanced by `d`: a
    /// clock running at twice true speed sleeps half as long in true time.
    /// A change of skew during the sleep moves its end.
    pub async fn sleep(&self, d: Duration) {
        let target_ns = self.mono_ns().saturating_add(d.as_nanos() as u64);
        let mut changes = self.changes.subscribe();
        loop {
            let t = self.true_ns();
            let due_ns = {
                let mut skews = self.skews.lock().expect("client clock");
                if skews.read(t, t, WALL_BASE_NS + t).mono_ns >= target_ns {
                    return;
                }
                skews.mono.true_time_of(target_ns, 0, t)
            };
            // At least 1 µs: float rounding must not make this spin.
            let wait = Duration::from_nanos(due_ns.saturating_sub(t).max(1_000));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = changes.changed() => {}
            }
        }
    }
}

/// A `[clocks.X]` spec as a change from an exact clock: the drift is the
/// rate of both clocks, the offset a step of the wall clock only (the
/// simulator's `SimClock::new`).
pub fn from_spec(spec: &ClockSpec) -> ClockChange {
    let rate = Some(1.0 + spec.drift);
    let wall = SkewChange { rate, offset_ms: Some(spec.offset_ns / 1_000_000), step_ms: None };
    ClockChange { monotonic: Some(SkewChange { rate, ..SkewChange::default() }), wall: Some(wall) }
}

/// A `clock` fault as a change: a new drift is the rate of both clocks, a
/// jump steps the wall clock only (the simulator's `set_drift` and
/// `jump_wall`).
pub fn from_fault(drift: Option<f64>, jump_ns: Option<i64>) -> ClockChange {
    let rate = drift.map(|d| 1.0 + d);
    let wall = SkewChange { rate, offset_ms: None, step_ms: jump_ns.map(|j| j / 1_000_000) };
    ClockChange { monotonic: rate.map(|r| SkewChange { rate: Some(r), ..SkewChange::default() }), wall: Some(wall) }
}

/// The judge's model of a clock the file's `[clocks.X]` starts with.
pub fn judged(spec: Option<&ClockSpec>) -> SimClock {
    let (offset_ns, drift) = spec.map_or((0, 0.0), |s| (s.offset_ns, s.drift));
    SimClock::new(0, WALL_BASE_NS.saturating_add_signed(offset_ns), drift)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn clock(drift: f64, offset_ns: i64) -> ClientClock {
        ClientClock::new(monotonic_ns(), Some(&ClockSpec { drift, offset_ns })).unwrap()
    }

    #[test]
    fn readings_follow_the_judges_model_of_the_clock() {
        let spec = ClockSpec { drift: 0.9, offset_ns: -30_000 * MS as i64 };
        let c = ClientClock::new(monotonic_ns(), Some(&spec)).unwrap();
        let model = judged(Some(&spec));
        std::thread::sleep(Duration::from_millis(40));
        let (before, now, after) = (c.true_ns(), c.now(), c.true_ns());
        // The model's readings at the instants just before and after.
        assert!(model.mono_at(before) <= now.mono_ns && now.mono_ns <= model.mono_at(after), "{now:?}");
        assert!(model.wall_at(before) <= now.wall_ns && now.wall_ns <= model.wall_at(after), "{now:?}");
        assert!(now.mono_ns >= 76 * MS, "a clock at rate 1.9 read 40 ms as 76: {}", now.mono_ns);
    }

    #[test]
    fn a_jump_steps_the_wall_clock_only_and_a_drift_both() {
        let c = clock(0.0, 0);
        let before = c.now();
        c.apply_fault(None, Some(-5_000 * MS as i64)).unwrap();
        let after = c.now();
        assert!(after.wall_ns + 4_000 * MS < before.wall_ns, "the wall clock went 5 s back");
        assert!(after.mono_ns >= before.mono_ns, "the monotonic clock did not");
        c.apply_fault(Some(0.5), None).unwrap();
        let skews = *c.skews.lock().unwrap();
        assert_eq!((skews.mono.rate(), skews.wall.rate()), (1.5, 1.5));
    }

    #[tokio::test]
    async fn a_fast_clock_sleeps_less_true_time_and_a_change_moves_a_sleep() {
        let fast = clock(0.9, 0);
        let t0 = fast.true_ns();
        fast.sleep(Duration::from_millis(200)).await;
        let slept_ns = fast.true_ns() - t0;
        // 200 ms at rate 1.9 is 105 ms of true time (a loaded machine may
        // wake it late, never early).
        assert!((105 * MS..190 * MS).contains(&slept_ns), "200 ms at rate 1.9 took {} ms of true time", slept_ns / MS);
        // A clock at rate 0.01 would sleep 20 s; sped up to rate 1000 while
        // it sleeps, it wakes at once.
        let slow = std::sync::Arc::new(clock(-0.99, 0));
        let sleeper = tokio::spawn({
            let slow = slow.clone();
            async move { slow.sleep(Duration::from_millis(200)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished());
        slow.apply_fault(Some(999.0), None).unwrap();
        tokio::time::timeout(Duration::from_secs(5), sleeper).await.expect("the change woke the sleeper").unwrap();
    }
}
