//! The time-driven scheduler: global simulated time advances from event to
//! event — the next message delivery or the next node timer (each node's
//! deadline is on its own drifting clock, converted to global time). Ties
//! break by a fixed order, so a run is a pure function of the seed.

use leasesim_core::types::NodeId;

use crate::checker::RaftViolationKind;
use crate::cluster::RaftCluster;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Deliver,
    Timer(NodeId),
}

/// Events allowed at one instant before the run is declared stuck.
const MAX_EVENTS_PER_INSTANT: u32 = 100_000;

impl RaftCluster {
    fn next_event(&self) -> Option<(u64, Event)> {
        let mut best = self.net.next_delivery_ns().map(|at| (at, Event::Deliver));
        for (id, slot) in &self.slots {
            let Some(node) = slot.node.as_ref() else {
                continue;
            };
            let at = self.global_at_local(slot, node.next_deadline_ns());
            if best.is_none_or(|(t, _)| at < t) {
                best = Some((at, Event::Timer(*id)));
            }
        }
        best
    }

    /// Processes every event up to global time `until_ns` (stopping early at
    /// a violation), then sets the time to `until_ns`.
    pub fn run_until_time(&mut self, until_ns: u64) {
        self.run_events(until_ns, |_| false);
        if self.violation().is_none() {
            self.now_ns = self.now_ns.max(until_ns);
        }
    }

    /// Runs for `duration_ns` of global time.
    pub fn run_for(&mut self, duration_ns: u64) {
        self.run_until_time(self.now_ns + duration_ns);
    }

    /// Runs until `done` holds (checked after each event) or `max_ns` of
    /// global time pass. Returns whether `done` held.
    pub fn run_until(&mut self, max_ns: u64, mut done: impl FnMut(&RaftCluster) -> bool) -> bool {
        if done(self) {
            return true;
        }
        let until = self.now_ns + max_ns;
        let reached = self.run_events(until, |c| done(c));
        if !reached && self.violation().is_none() {
            self.now_ns = self.now_ns.max(until);
        }
        reached
    }

    fn run_events(&mut self, until_ns: u64, mut done: impl FnMut(&RaftCluster) -> bool) -> bool {
        let mut same_instant = 0;
        let mut since_prune = 0u32;
        while self.violation().is_none() {
            let Some((at, event)) = self.next_event() else {
                return false;
            };
            if at > until_ns {
                return false;
            }
            same_instant = if at == self.now_ns { same_instant + 1 } else { 0 };
            if same_instant > MAX_EVENTS_PER_INSTANT {
                self.record(RaftViolationKind::Liveness, format!("{MAX_EVENTS_PER_INSTANT} events at one instant: stuck"));
                return false;
            }
            self.now_ns = self.now_ns.max(at);
            match event {
                Event::Deliver => {
                    self.deliver_next();
                }
                Event::Timer(id) => self.tick(id),
            }
            since_prune += 1;
            if since_prune == 4096 {
                since_prune = 0;
                self.prune_history();
            }
            if done(self) {
                return true;
            }
        }
        false
    }
}
