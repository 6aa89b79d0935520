//! A member's one clock source, which a test can skew at run time.
//!
//! Processes on one machine share the kernel's clocks, and nothing outside
//! a process can make its clock run fast or jump: so every clock reading a
//! member hands core (monotonic time for leases, elections and ticks; wall
//! time for stamps) goes through [`ClockSource`], which adds a skew to the
//! real clocks. Each of the two clocks has its own [`Skew`]: a rate
//! (1.0 is exact, 2.0 runs twice as fast) and an offset. A rate change is
//! continuous (the reading at the change is kept, only its slope changes);
//! an offset change is a step, which the monotonic clock takes only
//! forward. Without `--unsafe-test-control-url` nobody can change a skew and
//! the readings are the real clocks'. [`Skews`] holds the pair and applies
//! changes to it; the real runner's clients (`leasesim-real`) read their
//! clocks through the same type.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasesim_core::server::Clocks;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// Readings start here, so no monotonic reading is 0 (core treats 0 as
/// "never").
const MONO_ORIGIN_NS: u64 = 1_000_000_000;
/// Rates outside this range are refused: a clock 1000 times off is no
/// longer a clock fault but a broken test.
pub const RATE_RANGE: (f64, f64) = (0.001, 1000.0);

/// The skew of one clock, as a function of true (real monotonic) time `t`
/// in nanoseconds: `reading(t) = real(t) + extra(t) + offset`, where
/// `extra(t) = extra_at_change + (rate − 1) × (t − changed_at)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skew {
    rate: f64,
    /// True time of the last rate change.
    changed_at_ns: u64,
    /// `extra` at that change.
    extra_at_change_ns: f64,
    /// The sum of every step taken.
    offset_ns: i64,
}

impl Default for Skew {
    fn default() -> Self {
        Skew { rate: 1.0, changed_at_ns: 0, extra_at_change_ns: 0.0, offset_ns: 0 }
    }
}

impl Skew {
    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// What this skew adds to the real clock at true time `t_ns`.
    pub fn added_ns(&self, t_ns: u64) -> i64 {
        let since = t_ns.saturating_sub(self.changed_at_ns) as f64;
        (self.extra_at_change_ns + (self.rate - 1.0) * since).round() as i64 + self.offset_ns
    }

    /// The clock runs at `rate` from true time `t_ns` on; the reading at
    /// `t_ns` is unchanged.
    pub fn set_rate(&mut self, t_ns: u64, rate: f64) -> Result<(), String> {
        if !(RATE_RANGE.0..=RATE_RANGE.1).contains(&rate) {
            return Err(format!("rate {rate} is outside [{}, {}] (1.0 is an exact clock)", RATE_RANGE.0, RATE_RANGE.1));
        }
        let since = t_ns.saturating_sub(self.changed_at_ns) as f64;
        self.extra_at_change_ns += (self.rate - 1.0) * since;
        self.changed_at_ns = t_ns;
        self.rate = rate;
        Ok(())
    }

    /// The reading jumps by `by_ns` (negative: back).
    pub fn step(&mut self, by_ns: i64) {
        self.offset_ns = self.offset_ns.saturating_add(by_ns);
    }

    /// The true time at which a clock skewed by this, whose real reading is
    /// `real(t) = t + real_at_zero_ns`, reads `target_ns` (at or after
    /// `now_ns`, the earliest instant it may be asked about).
    pub fn true_time_of(&self, target_ns: u64, real_at_zero_ns: u64, now_ns: u64) -> u64 {
        // reading(t) = t + real_at_zero + extra_at_change + (rate − 1)(t − changed_at) + offset,
        // so t = (target − real_at_zero − extra_at_change − offset + (rate − 1) changed_at) / rate.
        let numerator = target_ns as f64 - real_at_zero_ns as f64 - self.extra_at_change_ns - self.offset_ns as f64
            + (self.rate - 1.0) * self.changed_at_ns as f64;
        let t = (numerator / self.rate).ceil();
        if t <= now_ns as f64 {
            now_ns
        } else {
            t.min(u64::MAX as f64 / 4.0) as u64
        }
    }
}

/// What a test asks of one clock: a new rate, an absolute offset, or a
/// step (`offset_ms` and `step_ms` exclude each other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkewChange {
    pub rate: Option<f64>,
    /// The clock's total step from the real one, in milliseconds.
    pub offset_ms: Option<i64>,
    /// A step from where the clock reads now, in milliseconds.
    pub step_ms: Option<i64>,
}

/// A change to both clocks (either may be left out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockChange {
    pub monotonic: Option<SkewChange>,
    pub wall: Option<SkewChange>,
}

/// One clock's state as the control endpoint reports it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkewReport {
    pub rate: f64,
    pub offset_ms: f64,
    /// What the skew adds to the real clock now (rate and steps), ms.
    pub added_ms: f64,
    /// The clock's reading now, ns (monotonic: since an arbitrary origin;
    /// wall: since the Unix epoch).
    pub reading_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockReport {
    pub monotonic: SkewReport,
    pub wall: SkewReport,
}

/// A pair of clocks' skews, the one implementation of skewed readings and
/// of changes to them: a member's [`ClockSource`] and each of the real
/// runner's clients (`real/src/clients/clock.rs`) read their clocks
/// through one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Skews {
    pub mono: Skew,
    pub wall: Skew,
    /// The largest monotonic reading handed out: rounding never takes the
    /// monotonic clock back.
    last_mono_ns: u64,
}

impl Skews {
    /// Both clocks at true time `t_ns`, whose real readings are
    /// `real_mono_ns` and `real_wall_ns`.
    pub fn read(&mut self, t_ns: u64, real_mono_ns: u64, real_wall_ns: u64) -> Clocks {
        let mono = real_mono_ns.saturating_add_signed(self.mono.added_ns(t_ns)).max(self.last_mono_ns);
        self.last_mono_ns = mono;
        Clocks { mono_ns: mono, wall_ns: real_wall_ns.saturating_add_signed(self.wall.added_ns(t_ns)) }
    }

    /// Applies `change` to both clocks at true time `t_ns`, all or nothing.
    pub fn apply(&mut self, change: &ClockChange, t_ns: u64) -> Result<(), String> {
        let (mut mono, mut wall) = (self.mono, self.wall);
        if let Some(c) = &change.monotonic {
            apply_one(&mut mono, c, t_ns, true).map_err(|e| format!("monotonic: {e}"))?;
        }
        if let Some(c) = &change.wall {
            apply_one(&mut wall, c, t_ns, false).map_err(|e| format!("wall: {e}"))?;
        }
        (self.mono, self.wall) = (mono, wall);
        Ok(())
    }
}

/// This process's clocks: the real ones plus a skew per clock.
pub struct ClockSource {
    start: Instant,
    state: Mutex<Skews>,
    /// Bumped at every change, so a task sleeping until a reading wakes to
    /// work its deadline out again.
    changes: watch::Sender<u64>,
}

impl Default for ClockSource {
    fn default() -> Self {
        Self::new()
    }
}

impl ClockSource {
    pub fn new() -> Self {
        ClockSource { start: Instant::now(), state: Mutex::new(Skews::default()), changes: watch::channel(0).0 }
    }

    fn true_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn real_wall_ns() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    }

    /// Both clocks now, skewed.
    pub fn now(&self) -> Clocks {
        let t = self.true_ns();
        let wall_real = Self::real_wall_ns();
        self.state.lock().expect("clock lock").read(t, MONO_ORIGIN_NS + t, wall_real)
    }

    /// The instant at which the monotonic reading will be `mono_ns`, as
    /// the skew stands now (a change wakes [`ClockSource::subscribe`]rs).
    pub fn instant_of(&self, mono_ns: u64) -> Instant {
        let t = self.true_ns();
        let state = self.state.lock().expect("clock lock");
        let at = state.mono.true_time_of(mono_ns, MONO_ORIGIN_NS, t);
        self.start + Duration::from_nanos(at)
    }

    /// A receiver that sees every change of skew.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Applies `change` to both clocks, all or nothing.
    pub fn apply(&self, change: &ClockChange) -> Result<ClockReport, String> {
        let t = self.true_ns();
        self.state.lock().expect("clock lock").apply(change, t)?;
        self.changes.send_modify(|n| *n += 1);
        tracing::warn!("test clock control: {change:?}");
        Ok(self.report())
    }

    pub fn report(&self) -> ClockReport {
        let now = self.now();
        let t = self.true_ns();
        let state = self.state.lock().expect("clock lock");
        let one = |s: &Skew, reading_ns: u64| SkewReport {
            rate: s.rate,
            offset_ms: s.offset_ns as f64 / 1e6,
            added_ms: s.added_ns(t) as f64 / 1e6,
            reading_ns,
        };
        ClockReport { monotonic: one(&state.mono, now.mono_ns), wall: one(&state.wall, now.wall_ns) }
    }
}

/// One clock's change at true time `t_ns`; the monotonic clock refuses to
/// step back.
fn apply_one(skew: &mut Skew, change: &SkewChange, t_ns: u64, monotonic: bool) -> Result<(), String> {
    let step_ns = match (change.offset_ms, change.step_ms) {
        (Some(_), Some(_)) => return Err("give offset_ms or step_ms, not both".into()),
        (Some(offset_ms), None) => offset_ms.saturating_mul(1_000_000) - skew.offset_ns,
        (None, Some(step_ms)) => step_ms.saturating_mul(1_000_000),
        (None, None) => 0,
    };
    if monotonic && step_ns < 0 {
        return Err(format!("a monotonic clock never goes back (this would step it {} ms back)", -step_ns / 1_000_000));
    }
    if let Some(rate) = change.rate {
        skew.set_rate(t_ns, rate)?;
    }
    skew.step(step_ns);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_rate_change_keeps_the_reading_and_changes_the_slope() {
        let mut skew = Skew::default();
        assert_eq!(skew.added_ns(5 * S), 0, "an exact clock adds nothing");
        skew.set_rate(10 * S, 2.0).unwrap();
        assert_eq!(skew.added_ns(10 * S), 0, "no jump at the change");
        assert_eq!(skew.added_ns(13 * S), 3 * S as i64, "3 s at rate 2 read 6 s: 3 s added");
        skew.set_rate(13 * S, 0.5).unwrap();
        assert_eq!(skew.added_ns(13 * S), 3 * S as i64, "the second change keeps what the first added");
        assert_eq!(skew.added_ns(17 * S), S as i64, "4 s at rate 0.5 read 2 s: 2 s taken back");
        // The reading (real + added) never decreased over the whole walk.
        let mut last = 0i64;
        for t in (0..40 * S).step_by((S / 8) as usize) {
            let reading = t as i64 + skew.added_ns(t);
            assert!(reading >= last, "the reading went back at {t}");
            last = reading;
        }
    }

    #[test]
    fn steps_move_the_reading_and_monotonic_ones_only_forward() {
        let mut mono = Skew::default();
        apply_one(&mut mono, &SkewChange { step_ms: Some(250), ..Default::default() }, S, true).unwrap();
        assert_eq!(mono.added_ns(S), 250_000_000);
        let back = apply_one(&mut mono, &SkewChange { step_ms: Some(-1), ..Default::default() }, S, true);
        assert!(back.unwrap_err().contains("never goes back"));
        let back = apply_one(&mut mono, &SkewChange { offset_ms: Some(100), ..Default::default() }, S, true);
        assert!(back.is_err(), "an absolute offset below the current one is a step back");
        let mut wall = Skew::default();
        apply_one(&mut wall, &SkewChange { offset_ms: Some(-2000), rate: Some(1.5), step_ms: None }, 4 * S, false).unwrap();
        assert_eq!(wall.added_ns(4 * S), -2_000_000_000, "the wall clock may step back");
        assert_eq!(wall.added_ns(6 * S), -1_000_000_000, "then runs fast from the change");
        let both = SkewChange { offset_ms: Some(1), step_ms: Some(1), rate: None };
        assert!(apply_one(&mut wall, &both, 6 * S, false).is_err());
        assert!(apply_one(&mut wall, &SkewChange { rate: Some(0.0), ..Default::default() }, 6 * S, false).is_err());
        assert!(apply_one(&mut wall, &SkewChange { rate: Some(f64::NAN), ..Default::default() }, 6 * S, false).is_err());
    }

    #[test]
    fn the_true_time_of_a_reading_inverts_the_skew() {
        let mut skew = Skew::default();
        skew.set_rate(2 * S, 2.0).unwrap();
        skew.step(S as i64);
        for t in [2 * S, 3 * S, 10 * S + 7] {
            let reading = t + MONO_ORIGIN_NS + skew.added_ns(t) as u64;
            let back = skew.true_time_of(reading, MONO_ORIGIN_NS, 0);
            assert!(back.abs_diff(t) <= 1, "{t} read {reading}, inverted to {back}");
        }
        assert_eq!(skew.true_time_of(0, MONO_ORIGIN_NS, 5 * S), 5 * S, "a reading already passed is due now");
    }

    #[test]
    fn the_source_applies_changes_all_or_nothing() {
        let clocks = ClockSource::new();
        let before = clocks.now();
        let refused = ClockChange {
            monotonic: Some(SkewChange { rate: Some(3.0), ..Default::default() }),
            wall: Some(SkewChange { rate: Some(-1.0), ..Default::default() }),
        };
        assert!(clocks.apply(&refused).unwrap_err().starts_with("wall: rate -1"));
        assert_eq!(clocks.report().monotonic.rate, 1.0, "the monotonic half was not applied either");
        let changes = clocks.subscribe();
        let stepped = ClockChange { wall: Some(SkewChange { step_ms: Some(60_000), ..Default::default() }), ..Default::default() };
        clocks.apply(&stepped).unwrap();
        assert!(changes.has_changed().unwrap(), "a change wakes the driver");
        let after = clocks.now();
        assert!(after.wall_ns >= before.wall_ns + 60 * S, "the wall clock stepped a minute forward");
        assert!(after.mono_ns >= before.mono_ns && after.mono_ns < before.mono_ns + 60 * S, "the monotonic one did not");
    }
}
