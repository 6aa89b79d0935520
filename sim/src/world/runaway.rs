//! The runaway guard: stops a run whose engine makes work without end, so
//! that it cannot stall a sweep, a hunt or a shrink (a planted bug once
//! sent appends in a storm that grew with its log; hand mutation 01 grows
//! its step rate about fivefold per simulated second).
//!
//! It judges each simulated second on its own: a run fails when one second
//! holds more steps than [`STEPS_PER_SIM_SECOND`]. The guard it replaces
//! capped the run's average since its start (100,000 + 20,000 a second),
//! which stopped chaos-nemesis seed 478 as "runaway" at 23.486 s although
//! that run's work was bounded: a slow link that reorders the leader's
//! appends made the leader resend its window after every out-of-order
//! rejection, about 130,000 steps a second for three seconds until that
//! leader crashed, while entries kept committing at the usual rate; with no
//! cap it ends `ok` after 855,217 steps. A storm that grows passes any
//! per-second bound within seconds of starting; one that does not grow
//! costs at most the bound times the run's length, which is what keeps a
//! sweep moving.

/// Steps (messages handled + timers fired, all processes) allowed in one
/// simulated second. Healthy runs take 800–3,000 on average and up to
/// about 30,000 in their busiest second (the chaos files with one entry
/// per append and 1–5 ms links); chaos-nemesis 478's reorder storm took
/// 130,428; hand mutation 01 on chaos-tasks 8 took 27,057, 174,852 and
/// then 953,112 in consecutive seconds. At about half a million steps a
/// wall second on one core, a 45 s run at the cap costs under a minute.
pub const STEPS_PER_SIM_SECOND: u64 = 500_000;

const SECOND_NS: u64 = 1_000_000_000;

/// Steps counted in the current simulated second.
#[derive(Default)]
pub struct StepRate {
    /// Which second (`now_ns / 1 s`) the count is for.
    second: u64,
    steps: u64,
}

impl StepRate {
    /// Counts one step at true time `now_ns` (never earlier than the last
    /// one's: madsim's time only moves forward); the error names the
    /// runaway second.
    pub fn count(&mut self, now_ns: u64) -> Result<(), String> {
        let second = now_ns / SECOND_NS;
        if second != self.second {
            self.second = second;
            self.steps = 0;
        }
        self.steps += 1;
        if self.steps > STEPS_PER_SIM_SECOND {
            return Err(format!(
                "runaway: more than {STEPS_PER_SIM_SECOND} steps in the simulated second from {}s (healthy runs take about \
                 1,000 a second, 30,000 in their busiest)",
                self.second
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `rate` steps a second, evenly spread, for each second in
    /// turn; returns the first error.
    fn feed(rates: &[u64]) -> Result<(), String> {
        let mut guard = StepRate::default();
        for (second, &rate) in rates.iter().enumerate() {
            for k in 0..rate {
                guard.count(second as u64 * SECOND_NS + k * SECOND_NS / rate)?;
            }
        }
        Ok(())
    }

    #[test]
    fn a_bounded_storm_late_in_a_busy_run_is_not_a_runaway() {
        // chaos-nemesis 478's shape: 20 s at 12,000 a second, then three
        // seconds of 130,000 (the old average cap stopped it at 23.5 s).
        let mut rates = vec![12_000; 20];
        rates.extend([130_000; 3]);
        rates.extend([12_000; 22]);
        assert_eq!(feed(&rates), Ok(()));
    }

    #[test]
    fn a_growing_storm_is_stopped_in_the_second_it_passes_the_cap() {
        // Hand mutation 01 on chaos-tasks 8.
        let err = feed(&[900, 1_566, 27_057, 174_852, 953_112, 3_680_757]).unwrap_err();
        assert!(err.starts_with("runaway: more than 500000 steps in the simulated second from 4s"), "{err}");
    }

    #[test]
    fn the_count_starts_afresh_each_second() {
        assert_eq!(feed(&[STEPS_PER_SIM_SECOND; 3]), Ok(()));
        assert!(feed(&[STEPS_PER_SIM_SECOND + 1]).is_err());
    }
}
