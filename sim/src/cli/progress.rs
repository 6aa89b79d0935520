//! Progress of a long sweep: a live bar on a terminal (indicatif), and a
//! plain line every few seconds on stderr when it is not one (CI logs), so
//! a nightly job shows it is alive and how long it has left. Progress is
//! for people: it reads the wall clock, and nothing else depends on it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain progress line is written when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    total: usize,
    done: usize,
    unexpected: usize,
    started: Instant,
    bar: Option<ProgressBar>,
    last_line: Instant,
}

impl Progress {
    pub fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs · {msg} · ETA {eta}").expect("a valid template");
            bar.set_style(style);
            bar
        });
        let now = Instant::now();
        Progress { total, done: 0, unexpected: 0, started: now, bar, last_line: now }
    }

    /// One more run finished (`unexpected`: outside its scenario's expectation).
    pub fn count(&mut self, unexpected: bool) {
        self.done += 1;
        self.unexpected += usize::from(unexpected);
        let per_min = self.runs_per_min();
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{per_min:.0} runs/min · {} unexpected", self.unexpected));
            bar.set_position(self.done as u64);
        } else if self.last_line.elapsed() >= PLAIN_EVERY && self.done < self.total {
            self.last_line = Instant::now();
            eprintln!("{}", self.line());
        }
    }

    fn runs_per_min(&self) -> f64 {
        self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9) * 60.0
    }

    /// The plain progress line.
    pub fn line(&self) -> String {
        let per_min = self.runs_per_min();
        let left = self.total.saturating_sub(self.done);
        let eta = if per_min > 0.0 { format!("{:.0}s", left as f64 / per_min * 60.0) } else { "?".to_string() };
        format!("sweep: {}/{} runs, {per_min:.0} runs/min, {} unexpected, ETA {eta}", self.done, self.total, self.unexpected)
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
