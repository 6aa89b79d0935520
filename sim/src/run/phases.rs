//! Where a run's time goes, for `leasesim bench`: the engine (the servers'
//! core stepping an input and handing back its output), the clients (the
//! workload processes' steps, core's client library included), and the
//! checkers after the run; the bench calls the rest of the run's wall time
//! hosting (madsim's executor and timers, the network, clocks, the
//! observation log, setup).
//!
//! Inside a simulation `Instant::now()` reads simulated time (madsim
//! overrides `clock_gettime`), so these phases count the processor's
//! time-stamp counter instead: a few cycles to read, and the bench takes
//! shares of the same counter's total, so its rate never matters. Off
//! unless `RunOptions::time_phases` asks, when it costs one branch a step.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counter ticks spent in each measured phase of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTicks {
    pub engine: u64,
    pub clients: u64,
    pub checking: u64,
}

/// A reading of a counter that only moves forward, in ticks of unknown
/// but constant rate (shares are all the bench takes of it).
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions; every x86-64 processor has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // The raw system call: libc's clock_gettime is madsim's simulated
        // one inside a run.
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec pointer for the kernel to fill.
        unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// The world's accumulators (atomics only because the world is shared
/// between madsim's tasks, which run on one thread).
#[derive(Debug, Default)]
pub struct PhaseClock {
    enabled: bool,
    engine: AtomicU64,
    clients: AtomicU64,
}

impl PhaseClock {
    pub fn new(enabled: bool) -> Self {
        PhaseClock { enabled, ..PhaseClock::default() }
    }

    /// A start reading, if phases are timed.
    pub fn start(&self) -> Option<u64> {
        self.enabled.then(ticks)
    }

    pub fn add_engine(&self, started: Option<u64>) {
        if let Some(t0) = started {
            self.engine.fetch_add(ticks().saturating_sub(t0), Ordering::Relaxed);
        }
    }

    pub fn add_clients(&self, started: Option<u64>) {
        if let Some(t0) = started {
            self.clients.fetch_add(ticks().saturating_sub(t0), Ordering::Relaxed);
        }
    }

    /// What the simulation spent (checking is timed by the judge).
    pub fn totals(&self) -> PhaseTicks {
        PhaseTicks { engine: self.engine.load(Ordering::Relaxed), clients: self.clients.load(Ordering::Relaxed), checking: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disabled_clock_counts_nothing_and_an_enabled_one_counts_what_it_timed() {
        let off = PhaseClock::new(false);
        assert_eq!(off.start(), None);
        off.add_engine(off.start());
        assert_eq!(off.totals(), PhaseTicks::default());

        let on = PhaseClock::new(true);
        let t0 = on.start().expect("enabled");
        // Some work the counter must see pass.
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        on.add_engine(Some(t0));
        on.add_clients(Some(ticks()));
        let totals = on.totals();
        assert!(totals.engine > 0, "{totals:?}");
        assert!(totals.engine > totals.clients, "the long phase counted more than the empty one: {totals:?}");
        assert!(ticks() >= t0);
    }
}
