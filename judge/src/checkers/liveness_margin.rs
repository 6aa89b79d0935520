//! Liveness margins: by how much a run met each of `liveness`'s deadlines.
//!
//! A deadline met by a few milliseconds is an oracle that fires on any
//! harmless shift of the schedule (an extra message, one more split vote),
//! not on a stall. So each deadline is reported with its margin — the time
//! between the instant it was met and the instant it was due — and the
//! margin a run must keep is stated: `liveness_bounds::slack_ns`, two
//! maximum election timeouts plus 100 ms. That is what one more lost
//! election round and a few message delays cost. A run whose closest margin
//! is below it meets its deadlines by luck ([`Margin::below_slack`]); the
//! sweep reports the closest margin of every scenario and counts such runs,
//! so such a seed is seen before it flips.
//!
//! The deadlines are the ones `liveness` enforces, from the same functions
//! (`liveness_bounds`, where each formula is stated):
//! - an acquire is granted: met at its grant;
//! - a lease abandoned by a client's crash ends: met at its end (a crashed
//!   registry client's key is due with that lease, and goes with it);
//! - a leader is in office when the run ends: met when the leader in
//!   office at the end took office (the faults' end if earlier).
//!
//! Margins are reported, not enforced: enforcing them would change the
//! verdict of runs judged before the margin existed.

use leasesim_core::fmt_secs;
use leasesim_core::raft::{RaftEvent, Role};
use leasesim_core::server::ServerEvent;
use serde::Serialize;

use super::facts::{lease_ends, server_events};
use super::liveness::{abandoned_leases, acquires};
pub use super::liveness_bounds::slack_ns;
use super::liveness_bounds::{abandoned_lease_due_ns, acquire_due_ns, leader_due_ns};
use super::RunRecord;

/// One liveness deadline that the run met, and by how much.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Margin {
    /// What was due, in words (`c2's acquire of orders sent at 31.2s`).
    pub deadline: String,
    pub due_ns: u64,
    pub met_ns: u64,
    /// The stated slack it should be met by (`liveness_bounds::slack_ns`).
    pub slack_ns: u64,
}

impl Margin {
    /// Due minus met: how long before its deadline it was met.
    pub fn margin_ns(&self) -> u64 {
        self.due_ns - self.met_ns
    }

    /// Met, but by less than the stated slack: by luck, not by design.
    pub fn below_slack(&self) -> bool {
        self.margin_ns() < self.slack_ns
    }
}

/// The stated slack, for the liveness checker's output.
pub fn slack_text(run: &RunRecord<'_>) -> String {
    format!("stated slack {}", fmt_secs(slack_ns(run)))
}

/// Every deadline the run met (met no later than due, and due within the
/// run), in no particular order.
pub fn margins(run: &RunRecord<'_>) -> Vec<Margin> {
    let slack_ns = slack_ns(run);
    let mut out = Vec::new();
    for a in acquires(run) {
        let due_ns = acquire_due_ns(run, a.sent_ns);
        if let Some(met_ns) = a.granted_ns.filter(|&g| g <= due_ns && due_ns <= run.end_ns) {
            let deadline = format!("c{}'s acquire of {} sent at {}", a.client, a.key, fmt_secs(a.sent_ns));
            out.push(Margin { deadline, due_ns, met_ns, slack_ns });
        }
    }
    let ends = lease_ends(run);
    for (lease, client, ttl_ns, crashed_ns) in abandoned_leases(run) {
        let due_ns = abandoned_lease_due_ns(run, crashed_ns, ttl_ns);
        if let Some(end) = ends.get(&lease).filter(|e| e.at_ns <= due_ns && due_ns <= run.end_ns) {
            let deadline = format!("end of lease {lease}, abandoned by c{client}'s crash at {}", fmt_secs(crashed_ns));
            out.push(Margin { deadline, due_ns, met_ns: end.at_ns, slack_ns });
        }
    }
    out.extend(leader_margin(run));
    out
}

/// The closest margin of the run, if it met any deadline.
pub fn closest(run: &RunRecord<'_>) -> Option<Margin> {
    margins(run).into_iter().min_by_key(|m| (m.margin_ns(), m.due_ns))
}

/// The leader in office at the end (the check's own choice: the up voter
/// leading the highest term), and since when.
fn leader_margin(run: &RunRecord<'_>) -> Option<Margin> {
    let (id, term) = run
        .servers
        .iter()
        .filter(|(_, s)| s.voter && s.up)
        .filter_map(|(id, s)| s.probe.filter(|p| p.role == Role::Leader).map(|p| (*id, p.term)))
        .max_by_key(|(_, term)| *term)?;
    let took_office_ns = server_events(run.obs)
        .filter(|(_, server, event)| {
            *server == id && matches!(&**event, ServerEvent::Raft(RaftEvent::BecameLeader { term: t }) if *t == term)
        })
        .map(|(at_ns, _, _)| at_ns)
        .last()
        .unwrap_or(0);
    let due_ns = leader_due_ns(run);
    let met_ns = took_office_ns.max(run.settle_at_ns).min(due_ns);
    let deadline = format!("a leader in office at the end (s{id}, term {term})");
    Some(Margin { deadline, due_ns, met_ns, slack_ns: slack_ns(run) })
}

#[cfg(test)]
mod tests {
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::{RevokeCause, ServiceEvent};

    use crate::checkers::testing::{Fixture, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    #[test]
    fn the_closest_margin_is_the_latest_met_deadline() {
        let mut run = Fixture::new();
        let record = run.record();
        let slack_ns = super::slack_ns(&record);
        let bound_ns = record.lock_wait_bound_ns + super::super::liveness_bounds::Recovery::of(&record).total_ns();
        let settle_ns = record.settle_at_ns;
        let end_ns = record.end_ns;
        // A leader that took office well before the end, an acquire sent
        // at the settle phase's start and granted just before its bound.
        run.server(settle_ns + S, 1, ServerEvent::Raft(RaftEvent::BecameLeader { term: 2 }));
        run.push(settle_ns, Proc::Client(2), Event::AcquireSent { key: "orders".into(), lease: 5, seq: 3 });
        let granted_ns = settle_ns + bound_ns - slack_ns / 2;
        assert!(granted_ns < end_ns, "the fixture's run must be long enough");
        run.everywhere(
            granted_ns,
            ServerEvent::Service {
                index: 8,
                event: ServiceEvent::LockGranted { key: "orders".into(), client: 2, seq: 3, lease: 5, token: 8 },
            },
        );
        let closest = super::closest(&run.record()).expect("two deadlines met");
        assert_eq!(closest.margin_ns(), slack_ns / 2, "{closest:?}");
        assert!(closest.deadline.contains("c2's acquire of orders"), "{closest:?}");
        assert!(run.fired().is_empty(), "met, even if narrowly: margins are reported, not enforced");
    }

    /// A planted run: a crashed client's lease ends just inside its
    /// deadline. Met, so `liveness` stays silent, but by less than the
    /// stated slack, and reported as such; ended a slack earlier it is not.
    #[test]
    fn a_deadline_met_by_less_than_the_slack_is_reported_below_it() {
        let ended = |at_ns: u64| {
            let mut run = Fixture::new();
            run.push(5 * S, Proc::Client(1), Event::LeaseAcked { lease: 4, ttl_ns: 2 * S, sent_at_ns: 5 * S, keepalive: false });
            run.push(10 * S, Proc::Client(1), Event::Crashed);
            let revoked = ServiceEvent::LeaseRevoked { lease: 4, cause: RevokeCause::Expire, deleted_keys: vec![] };
            run.everywhere(at_ns, ServerEvent::Service { index: 30, event: revoked });
            run
        };
        let plain = Fixture::new();
        let record = plain.record();
        let due_ns = super::super::liveness_bounds::abandoned_lease_due_ns(&record, 10 * S, 2 * S);
        let slack_ns = super::slack_ns(&record);
        let lease_margin = |run: &Fixture| super::margins(&run.record()).into_iter().find(|m| m.deadline.contains("lease 4")).expect("met");

        let narrow = ended(due_ns - slack_ns + 1);
        assert!(narrow.fired().is_empty(), "met, so liveness is silent");
        let m = lease_margin(&narrow);
        assert_eq!((m.margin_ns(), m.slack_ns), (slack_ns - 1, slack_ns));
        assert!(m.below_slack(), "{m:?}");
        let closest = super::closest(&narrow.record()).expect("deadlines met");
        assert!(closest.below_slack() && closest.deadline.contains("lease 4"), "the run's closest is the narrow one: {closest:?}");

        let m = lease_margin(&ended(due_ns - slack_ns));
        assert_eq!(m.margin_ns(), slack_ns);
        assert!(!m.below_slack(), "met by exactly the slack is met by design: {m:?}");

        let late = ended(due_ns + 1);
        assert_eq!(late.fired(), vec!["liveness"], "a deadline missed is a violation, not a margin");
        assert!(super::margins(&late.record()).iter().all(|m| !m.deadline.contains("lease 4")));
    }

    #[test]
    fn an_abandoned_lease_is_measured_from_its_crash() {
        let mut run = Fixture::new();
        run.push(5 * S, Proc::Client(1), Event::LeaseAcked { lease: 4, ttl_ns: 2 * S, sent_at_ns: 5 * S, keepalive: false });
        run.push(10 * S, Proc::Client(1), Event::Crashed);
        run.everywhere(
            13 * S,
            ServerEvent::Service {
                index: 30,
                event: ServiceEvent::LeaseRevoked { lease: 4, cause: RevokeCause::Expire, deleted_keys: vec![] },
            },
        );
        let record = run.record();
        let due_ns = super::super::liveness_bounds::abandoned_lease_due_ns(&record, 10 * S, 2 * S);
        let lease = super::margins(&record).into_iter().find(|m| m.deadline.contains("lease 4")).expect("measured");
        assert_eq!((lease.due_ns, lease.met_ns), (due_ns, 13 * S));
    }
}
