//! `lock-belief-overlap`: no two clients believe they hold one lock at the
//! same true instant — the property a lock exists for (SCENARIO-FORMAT.md,
//! "belief"). A belief runs from the grant reply until the client's own
//! clock reaches its end (renewed by keep-alives), or until it is ended
//! early; its end is mapped to true time through the client's clock history.

use std::collections::BTreeMap;

use super::{RunRecord, Violation};
use crate::observe::{Event, Obs};
use crate::vocab::Proc;
use crate::vocab::SimClock;

/// One client's belief that it holds a key, in true time.
#[derive(Clone, Debug)]
pub struct Interval {
    pub client: u64,
    pub token: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let intervals = belief_windows(run.obs, run.clocks, run.end_ns);
    // Conservative about stamping: each end and start may have happened up
    // to `stamp_error_ns` before its stamp, so two beliefs overlap for every
    // placement only if one ends more than that after the other starts.
    let error_ns = run.obs.stamp_error_ns();
    let mut violations = Vec::new();
    for (key, mut list) in intervals {
        list.sort_by_key(|i| (i.start_ns, i.client));
        for (n, later) in list.iter().enumerate() {
            let overlaps = |e: &&Interval| e.client != later.client && e.end_ns > later.start_ns + error_ns;
            if let Some(earlier) = list[..n].iter().find(overlaps) {
                violations.push(run.violation(
                    "lock-belief-overlap",
                    later.start_ns,
                    format!(
                        "c{} (token {}) and c{} (token {}) both believe they hold {key} from {} to {}",
                        earlier.client,
                        earlier.token,
                        later.client,
                        later.token,
                        leasesim_core::fmt_secs(later.start_ns),
                        leasesim_core::fmt_secs(earlier.end_ns.min(later.end_ns)),
                    ),
                ));
            }
        }
    }
    violations
}

/// Belief intervals per key, in true time (the run reports draw the very
/// windows this checker judges).
pub fn belief_windows<O: std::ops::Deref<Target = Obs>>(
    obs: impl IntoIterator<Item = O>,
    clocks: &BTreeMap<Proc, SimClock>,
    end_ns: u64,
) -> BTreeMap<String, Vec<Interval>> {
    struct Open {
        key: String,
        token: u64,
        start_ns: u64,
        until_mono_ns: u64,
    }
    let mut open: BTreeMap<u64, Open> = BTreeMap::new();
    let mut done: BTreeMap<String, Vec<Interval>> = BTreeMap::new();
    let lapse_ns = |client: u64, until_mono_ns: u64| clocks[&Proc::Client(client)].true_time_of_mono(until_mono_ns);
    let close = |client: u64, o: Open, at_ns: u64, done: &mut BTreeMap<String, Vec<Interval>>| {
        let end_ns = at_ns.min(lapse_ns(client, o.until_mono_ns));
        done.entry(o.key).or_default().push(Interval { client, token: o.token, start_ns: o.start_ns, end_ns });
    };
    for obs in obs {
        let Proc::Client(client) = obs.proc else { continue };
        match &obs.event {
            Event::BeliefStarted { key, token, until_mono_ns, .. } => {
                let o = Open { key: key.clone(), token: *token, start_ns: obs.at_ns, until_mono_ns: *until_mono_ns };
                if let Some(previous) = open.insert(client, o) {
                    close(client, previous, obs.at_ns, &mut done);
                }
            }
            Event::BeliefExtended { until_mono_ns, .. } => {
                if let Some(o) = open.get_mut(&client) {
                    // A renewal counts only while the belief still holds.
                    if obs.at_ns < lapse_ns(client, o.until_mono_ns) {
                        o.until_mono_ns = o.until_mono_ns.max(*until_mono_ns);
                    }
                }
            }
            Event::BeliefEnded { .. } => {
                if let Some(o) = open.remove(&client) {
                    close(client, o, obs.at_ns, &mut done);
                }
            }
            _ => {}
        }
    }
    for (client, o) in std::mem::take(&mut open) {
        close(client, o, end_ns, &mut done);
    }
    done
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::{BeliefEnd, Event};
    use crate::vocab::Proc;

    fn start(run: &mut Fixture, at_ns: u64, client: u64, until_true_ns: u64) {
        let until_mono_ns = run.clocks[&Proc::Client(client)].mono_at(until_true_ns);
        let event = Event::BeliefStarted { key: "orders".into(), lease: client, token: at_ns, until_mono_ns };
        run.push(at_ns, Proc::Client(client), event);
    }

    #[test]
    fn back_to_back_beliefs_are_fine() {
        let mut run = Fixture::new();
        start(&mut run, S, 1, 3 * S);
        run.push(2 * S, Proc::Client(1), Event::BeliefEnded { key: "orders".into(), why: BeliefEnd::Released });
        start(&mut run, 2 * S + MS, 2, 4 * S);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn an_overlap_within_the_stamping_error_is_not_reported() {
        let overlapping_by = |overlap_ns: u64, stamp_error_ns: u64| {
            let mut run = Fixture::new();
            start(&mut run, S, 1, 3 * S);
            run.push(2 * S, Proc::Client(1), Event::BeliefEnded { key: "orders".into(), why: BeliefEnd::Released });
            start(&mut run, 2 * S - overlap_ns, 2, 4 * S);
            run.obs = std::mem::take(&mut run.obs).with_stamp_error(stamp_error_ns);
            run.fired()
        };
        assert_eq!(overlapping_by(5 * MS, 0), vec!["lock-belief-overlap"]);
        assert!(overlapping_by(5 * MS, 10 * MS).is_empty(), "the release may have happened 10 ms before its stamp");
        assert_eq!(overlapping_by(20 * MS, 10 * MS), vec!["lock-belief-overlap"]);
    }

    #[test]
    fn a_belief_that_lapses_by_the_clock_ends_then() {
        let mut run = Fixture::new();
        start(&mut run, S, 1, 3 * S);
        start(&mut run, 3 * S + MS, 2, 5 * S);
        assert!(run.fired().is_empty(), "c1's belief lapsed at 3 s");
        start(&mut run, 4 * S, 3, 6 * S);
        assert_eq!(run.fired(), vec!["lock-belief-overlap"], "c2 still believed at 4 s");
    }

    #[test]
    fn a_slow_client_clock_stretches_its_belief_in_true_time() {
        let mut run = Fixture::new();
        // c1's clock runs at half speed from the start: a belief of 2 s of its
        // own time lasts 4 s of true time.
        run.clocks.get_mut(&Proc::Client(1)).unwrap().set_drift(0, -0.5);
        let until_mono_ns = run.clocks[&Proc::Client(1)].mono_at(0) + 2 * S;
        run.push(0, Proc::Client(1), Event::BeliefStarted { key: "orders".into(), lease: 1, token: 1, until_mono_ns });
        start(&mut run, 3 * S, 2, 5 * S);
        let violations = crate::checkers::check_all(&run.record()).violations;
        assert_eq!(violations.len(), 1);
        assert!(!violations[0].assumptions_held, "a 50% slow clock is outside the 1% bound");
    }
}
