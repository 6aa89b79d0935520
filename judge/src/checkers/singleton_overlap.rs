//! `singleton-overlap`: no two instances believe they run one singleton role
//! at the same true instant. The multi-instance lease design's task generator
//! uses a lease "to ensure that only one instance of the generator is actively
//! producing tasks at any time"; an overlap is two generators at once.
//!
//! An instance's belief runs from its winning compare-and-set's reply until
//! its own clock reaches the belief's end (renewed by keep-alives), or until
//! it steps down or crashes (a dead process believes nothing); the end is
//! mapped to true time through the instance's clock history.

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;

use super::{RunRecord, Violation};
use crate::observe::{Event, Obs};
use crate::vocab::Proc;
use crate::vocab::SimClock;

/// One instance's belief that it runs a role, in true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleWindow {
    pub client: u64,
    pub token: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (role, mut windows) in role_windows(run.obs, run.clocks, run.end_ns) {
        windows.sort_by_key(|w| (w.start_ns, w.client));
        for (n, later) in windows.iter().enumerate() {
            if let Some(earlier) = windows[..n].iter().find(|e| e.client != later.client && e.end_ns > later.start_ns) {
                violations.push(run.violation(
                    "singleton-overlap",
                    later.start_ns,
                    format!(
                        "c{} (token {}) and c{} (token {}) both believe they run {role} from {} to {}",
                        earlier.client,
                        earlier.token,
                        later.client,
                        later.token,
                        fmt_secs(later.start_ns),
                        fmt_secs(earlier.end_ns.min(later.end_ns)),
                    ),
                ));
            }
        }
    }
    violations
}

/// Every instance's belief windows, per role.
pub fn role_windows<O: std::ops::Deref<Target = Obs>>(
    obs: impl IntoIterator<Item = O>,
    clocks: &BTreeMap<Proc, SimClock>,
    end_ns: u64,
) -> BTreeMap<String, Vec<RoleWindow>> {
    struct Open {
        role: String,
        token: u64,
        start_ns: u64,
        until_mono_ns: u64,
    }
    let lapse_ns = |client: u64, until_mono_ns: u64| clocks[&Proc::Client(client)].true_time_of_mono(until_mono_ns);
    let mut open: BTreeMap<u64, Open> = BTreeMap::new();
    let mut done: BTreeMap<String, Vec<RoleWindow>> = BTreeMap::new();
    let mut close = |client: u64, o: Open, at_ns: u64| {
        let end_ns = at_ns.min(lapse_ns(client, o.until_mono_ns));
        done.entry(o.role).or_default().push(RoleWindow { client, token: o.token, start_ns: o.start_ns, end_ns });
    };
    for o in obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::SingletonStarted { role, token, until_mono_ns, .. } => {
                let started = Open { role: role.clone(), token: *token, start_ns: o.at_ns, until_mono_ns: *until_mono_ns };
                if let Some(previous) = open.insert(client, started) {
                    close(client, previous, o.at_ns);
                }
            }
            Event::SingletonExtended { until_mono_ns, .. } => {
                if let Some(belief) = open.get_mut(&client) {
                    // A renewal counts only while the belief still holds.
                    if o.at_ns < lapse_ns(client, belief.until_mono_ns) {
                        belief.until_mono_ns = belief.until_mono_ns.max(*until_mono_ns);
                    }
                }
            }
            Event::SingletonEnded { .. } | Event::Crashed => {
                if let Some(belief) = open.remove(&client) {
                    close(client, belief, o.at_ns);
                }
            }
            _ => {}
        }
    }
    for (client, belief) in std::mem::take(&mut open) {
        close(client, belief, end_ns);
    }
    done
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::{BeliefEnd, Event};
    use crate::vocab::Proc;

    fn started(run: &mut Fixture, at_ns: u64, client: u64, until_true_ns: u64) {
        let until_mono_ns = run.clocks[&Proc::Client(client)].mono_at(until_true_ns);
        let event = Event::SingletonStarted { role: "generator".into(), lease: client, token: at_ns, until_mono_ns };
        run.push(at_ns, Proc::Client(client), event);
    }

    #[test]
    fn a_takeover_after_the_holder_stepped_down_is_fine() {
        let mut run = Fixture::new();
        started(&mut run, S, 1, 3 * S);
        run.push(2 * S, Proc::Client(1), Event::SingletonEnded { role: "generator".into(), why: BeliefEnd::TimerLapsed });
        started(&mut run, 2 * S + MS, 2, 5 * S);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_crash_ends_the_belief() {
        let mut run = Fixture::new();
        started(&mut run, S, 1, 9 * S);
        run.push(2 * S, Proc::Client(1), Event::Crashed);
        started(&mut run, 3 * S, 2, 5 * S);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn two_believers_at_once_fire() {
        let mut run = Fixture::new();
        started(&mut run, S, 1, 3 * S);
        started(&mut run, 3 * S + MS, 2, 6 * S);
        assert!(run.fired().is_empty(), "c1's belief lapsed at 3 s");
        // An extension while c2 still believes stretches its window.
        let until_mono_ns = run.clocks[&Proc::Client(2)].mono_at(8 * S);
        run.push(5 * S, Proc::Client(2), Event::SingletonExtended { role: "generator".into(), until_mono_ns });
        started(&mut run, 7 * S, 3, 9 * S);
        let violations = crate::checkers::check_all(&run.record()).violations;
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].invariant, "singleton-overlap");
        assert!(violations[0].detail.starts_with("c2 (token"), "{}", violations[0].detail);
    }

    #[test]
    fn a_late_extension_does_not_revive_a_lapsed_belief() {
        let mut run = Fixture::new();
        started(&mut run, S, 1, 2 * S);
        let until_mono_ns = run.clocks[&Proc::Client(1)].mono_at(9 * S);
        run.push(3 * S, Proc::Client(1), Event::SingletonExtended { role: "generator".into(), until_mono_ns });
        started(&mut run, 4 * S, 2, 6 * S);
        assert!(run.fired().is_empty());
    }

    #[test]
    fn roles_are_judged_apart() {
        let mut run = Fixture::new();
        started(&mut run, S, 1, 5 * S);
        let until_mono_ns = run.clocks[&Proc::Client(2)].mono_at(5 * S);
        run.push(2 * S, Proc::Client(2), Event::SingletonStarted { role: "janitor".into(), lease: 2, token: 9, until_mono_ns });
        assert!(run.fired().is_empty());
    }
}
