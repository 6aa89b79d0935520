//! Per-process clocks derived from the one true (simulated) time.
//!
//! local(t) = offset + ∫ (1 + drift(s)) ds, piecewise linear: a drift change
//! starts a new segment. The monotonic clock never goes back; the wall clock
//! can also be stepped (a jump). Clocks live outside the process, so they
//! survive crashes, and a paused process's clock keeps running.
//!
//! The whole history is kept so checkers can map a process's local deadline
//! back to the true instant it was reached (never the other way round: a
//! checker judges by true time only).

use serde::Serialize;

/// One piece of a clock's history: from true time `true_start_ns`, the
/// monotonic clock reads `mono_start_ns` and advances at `1 + drift`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    pub true_start_ns: u64,
    pub mono_start_ns: u64,
    /// Wall minus monotonic, constant within a segment (changed by jumps).
    pub wall_minus_mono_ns: i64,
    pub drift: f64,
}

/// Below this many nanoseconds (2^53, about 104 days) every integer is an
/// exact `f64`, so scaling by a rate of exactly 1 through floats returns it
/// unchanged.
const EXACT_BELOW_NS: u64 = 1 << 53;

/// `elapsed_ns` of true time in a segment's monotonic nanoseconds at rate
/// `1 + drift`, rounded down through `f64`. A clock without drift (most
/// processes of most scenarios) skips the float round trip, which gives the
/// same figure below [`EXACT_BELOW_NS`]: the host reads a clock at every
/// step and asks it when a deadline falls at every sleep, and the two
/// conversions were most of those readings' cost (callgrind).
fn scaled(elapsed_ns: u64, drift: f64) -> u64 {
    if drift == 0.0 && elapsed_ns < EXACT_BELOW_NS {
        elapsed_ns
    } else {
        (elapsed_ns as f64 * (1.0 + drift)) as u64
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimClock {
    segments: Vec<Segment>,
}

impl SimClock {
    /// A clock whose monotonic reading starts at `mono_start_ns` (arbitrary,
    /// drawn from the seed) and whose wall clock reads `wall_start_ns` at true
    /// time 0.
    pub fn new(mono_start_ns: u64, wall_start_ns: u64, drift: f64) -> Self {
        assert!(drift > -1.0 && drift < 1.0, "drift {drift} outside (-1, 1)");
        let wall_minus_mono_ns = wall_start_ns as i64 - mono_start_ns as i64;
        SimClock { segments: vec![Segment { true_start_ns: 0, mono_start_ns, wall_minus_mono_ns, drift }] }
    }

    fn segment_at(&self, true_ns: u64) -> &Segment {
        let i = self.segments.partition_point(|s| s.true_start_ns <= true_ns);
        &self.segments[i.max(1) - 1]
    }

    fn last(&self) -> &Segment {
        self.segments.last().expect("a clock has at least one segment")
    }

    /// The monotonic reading at true time `true_ns`.
    pub fn mono_at(&self, true_ns: u64) -> u64 {
        let s = self.segment_at(true_ns);
        s.mono_start_ns + scaled(true_ns.saturating_sub(s.true_start_ns), s.drift)
    }

    /// The wall reading at true time `true_ns`.
    pub fn wall_at(&self, true_ns: u64) -> u64 {
        let s = self.segment_at(true_ns);
        (self.mono_at(true_ns) as i64 + s.wall_minus_mono_ns).max(0) as u64
    }

    /// Both readings at true time `true_ns`, `(mono_at, wall_at)`, from one
    /// look-up of the segment (a simulated process reads its clocks at
    /// every step).
    pub fn read_at(&self, true_ns: u64) -> (u64, u64) {
        let s = self.segment_at(true_ns);
        let mono_ns = s.mono_start_ns + scaled(true_ns.saturating_sub(s.true_start_ns), s.drift);
        (mono_ns, (mono_ns as i64 + s.wall_minus_mono_ns).max(0) as u64)
    }

    /// The first true instant at which the monotonic clock reads at least
    /// `mono_ns` (given the history known so far; later drift changes are
    /// unknown, so the host re-checks after waking).
    pub fn true_time_of_mono(&self, mono_ns: u64) -> u64 {
        for (i, s) in self.segments.iter().enumerate() {
            let end_true_ns = self.segments.get(i + 1).map(|n| n.true_start_ns);
            if let Some(end_true_ns) = end_true_ns {
                if self.mono_at(end_true_ns) <= mono_ns {
                    continue;
                }
            }
            if mono_ns <= s.mono_start_ns {
                return s.true_start_ns;
            }
            if s.drift == 0.0 && mono_ns - s.mono_start_ns < EXACT_BELOW_NS {
                // An exact clock: the float path below gives this very
                // instant (every integer under 2^53 is an exact f64, so it
                // divides by 1 and rounds nothing), and this segment reads
                // `mono_ns` there, before the next one starts (that one
                // starts where this one read more than `mono_ns`).
                let t = s.true_start_ns + (mono_ns - s.mono_start_ns);
                debug_assert_eq!(self.mono_at(t), mono_ns);
                return t;
            }
            let delta_ns = (mono_ns - s.mono_start_ns) as f64 / (1.0 + s.drift);
            let mut t = s.true_start_ns + delta_ns.ceil() as u64;
            // Float rounding: step until the reading has really been reached.
            while self.mono_at(t) < mono_ns {
                t += 1;
            }
            return t;
        }
        unreachable!("the last segment is open-ended")
    }

    /// Changes the rate from true time `now_ns` on.
    pub fn set_drift(&mut self, now_ns: u64, drift: f64) {
        assert!(drift > -1.0 && drift < 1.0, "drift {drift} outside (-1, 1)");
        let mono_start_ns = self.mono_at(now_ns);
        let wall_minus_mono_ns = self.last().wall_minus_mono_ns;
        assert!(now_ns >= self.last().true_start_ns, "clock history is append-only");
        self.segments.push(Segment { true_start_ns: now_ns, mono_start_ns, wall_minus_mono_ns, drift });
    }

    /// Steps the wall clock by `jump_ns` (either sign) at true time `now_ns`;
    /// the monotonic clock is untouched.
    pub fn jump_wall(&mut self, now_ns: u64, jump_ns: i64) {
        let mono_start_ns = self.mono_at(now_ns);
        let last = self.last();
        let (drift, wall_minus_mono_ns) = (last.drift, last.wall_minus_mono_ns + jump_ns);
        self.segments.push(Segment { true_start_ns: now_ns, mono_start_ns, wall_minus_mono_ns, drift });
    }

    pub fn drift_now(&self) -> f64 {
        self.last().drift
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Largest |drift| in force at any time up to `true_ns`.
    pub fn max_abs_drift_until(&self, true_ns: u64) -> f64 {
        self.segments.iter().filter(|s| s.true_start_ns <= true_ns).map(|s| s.drift.abs()).fold(0.0, f64::max)
    }

    /// Whether the wall clock was stepped at or before `true_ns`.
    pub fn wall_jumped_until(&self, true_ns: u64) -> bool {
        self.segments.windows(2).any(|w| w[1].true_start_ns <= true_ns && w[1].wall_minus_mono_ns != w[0].wall_minus_mono_ns)
    }

    /// Whether the wall clock stepped forward at or before `true_ns`.
    pub fn wall_jumped_forward_until(&self, true_ns: u64) -> bool {
        self.segments.windows(2).any(|w| w[1].true_start_ns <= true_ns && w[1].wall_minus_mono_ns > w[0].wall_minus_mono_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_fast_clock_runs_ahead_of_true_time() {
        let clock = SimClock::new(500, 10 * S, 0.04);
        assert_eq!(clock.mono_at(S), 500 + 1_040_000_000);
        assert_eq!(clock.wall_at(S), 10 * S + 1_040_000_000);
    }

    #[test]
    fn inverse_finds_the_first_true_instant() {
        let mut clock = SimClock::new(0, 0, -0.5);
        clock.set_drift(2 * S, 0.5);
        // 2 s true at half speed = 1 s local; then 1.5x.
        assert_eq!(clock.mono_at(2 * S), S);
        let t = clock.true_time_of_mono(S + 1_500_000_000);
        assert_eq!(t, 3 * S);
        assert!(clock.mono_at(t) >= S + 1_500_000_000);
        assert!(clock.mono_at(t - 1) < S + 1_500_000_000);
        assert_eq!(clock.true_time_of_mono(0), 0);
    }

    #[test]
    fn monotonic_never_goes_back_across_a_wall_jump() {
        let mut clock = SimClock::new(7, 100 * S, 0.0);
        clock.jump_wall(S, -50 * S as i64);
        assert_eq!(clock.mono_at(2 * S), 7 + 2 * S);
        assert_eq!(clock.wall_at(2 * S), 52 * S);
        assert!(clock.wall_jumped_until(S));
        assert!(!clock.wall_jumped_until(S - 1));
    }

    #[test]
    fn one_reading_of_both_clocks_gives_what_each_gives() {
        let mut clock = SimClock::new(7, 100 * S, 0.03);
        clock.set_drift(2 * S, -0.4);
        clock.jump_wall(3 * S, -150 * S as i64);
        clock.jump_wall(4 * S, 7 * S as i64);
        for true_ns in [0, 1, S - 1, 2 * S, 2 * S + 3, 3 * S - 1, 3 * S, 3 * S + 999, 4 * S, 9 * S + 12_345] {
            assert_eq!(clock.read_at(true_ns), (clock.mono_at(true_ns), clock.wall_at(true_ns)), "at {true_ns} ns");
        }
    }

    /// The readings as they were computed before exact clocks skipped the
    /// float round trip (`scaled`): a run's schedule depends on every one.
    fn float_mono_at(clock: &SimClock, true_ns: u64) -> u64 {
        let s = clock.segment_at(true_ns);
        s.mono_start_ns + (true_ns.saturating_sub(s.true_start_ns) as f64 * (1.0 + s.drift)) as u64
    }

    fn float_true_time_of_mono(clock: &SimClock, mono_ns: u64) -> u64 {
        let segments = clock.segments();
        let i = (0..segments.len()).find(|&i| segments.get(i + 1).is_none_or(|n| float_mono_at(clock, n.true_start_ns) > mono_ns));
        let s = &segments[i.expect("the last segment is open-ended")];
        if mono_ns <= s.mono_start_ns {
            return s.true_start_ns;
        }
        let mut t = s.true_start_ns + ((mono_ns - s.mono_start_ns) as f64 / (1.0 + s.drift)).ceil() as u64;
        while float_mono_at(clock, t) < mono_ns {
            t += 1;
        }
        t
    }

    #[test]
    fn exact_clocks_read_what_the_float_path_reads() {
        let mut clock = SimClock::new(987_654_321_987, 100 * S, 0.0);
        clock.jump_wall(3 * S, -2 * S as i64);
        clock.set_drift(5 * S, 0.25);
        clock.set_drift(8 * S, 0.0);
        clock.jump_wall(8 * S, 5 * S as i64);
        let start = clock.mono_at(0);
        for true_ns in [0, 1, 7, S - 1, 3 * S, 3 * S + 1, 5 * S - 1, 5 * S, 6 * S + 3, 8 * S, 8 * S + 1, 90 * S + 12_345] {
            assert_eq!(clock.mono_at(true_ns), float_mono_at(&clock, true_ns), "mono at {true_ns} ns");
            assert_eq!(clock.read_at(true_ns).0, float_mono_at(&clock, true_ns), "read at {true_ns} ns");
            let mono_ns = start + true_ns;
            assert_eq!(clock.true_time_of_mono(mono_ns), float_true_time_of_mono(&clock, mono_ns), "inverse of {mono_ns} ns");
            let own = clock.mono_at(true_ns);
            assert_eq!(clock.true_time_of_mono(own), float_true_time_of_mono(&clock, own), "inverse of its own reading {own} ns");
        }
        assert_eq!(scaled(u64::MAX, 0.0), (u64::MAX as f64) as u64, "past 2^53 the float path, as before");
    }

    #[test]
    fn drift_bound_bookkeeping() {
        let mut clock = SimClock::new(0, 0, 0.01);
        clock.set_drift(5 * S, -0.2);
        assert_eq!(clock.max_abs_drift_until(4 * S), 0.01);
        assert_eq!(clock.max_abs_drift_until(5 * S), 0.2);
    }
}
