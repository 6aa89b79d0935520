//! `lease-early-expiry`: the cluster never ends a lease by expiry (nor hands
//! its lock on) before TTL / (1 + drift_bound) of true time after the send
//! of the holder's last acknowledged grant or keep-alive.
//!
//! Why that bound: the server may measure the TTL on a clock running up to
//! `drift_bound` fast, and it cannot have started the TTL before the request
//! left the client (Gray & Cheriton 1989; the Juju lease design's "ownership
//! until at least the duration after the start of the call").

use std::collections::BTreeMap;

use super::facts::{lease_ends, lease_ttls};
use super::{RunRecord, Violation};
use crate::observe::Event;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let ends = lease_ends(run);
    let ttls = lease_ttls(run.obs);
    // lease → latest send (true time) of an acknowledged grant/keep-alive
    // that left before the lease ended.
    let mut last_acked_send: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for o in run.obs {
        let Event::LeaseAcked { lease, sent_at_ns, ttl_ns, .. } = &o.event else { continue };
        let before_end = ends.get(lease).is_none_or(|end| *sent_at_ns <= end.at_ns);
        if before_end {
            let entry = last_acked_send.entry(*lease).or_insert((*sent_at_ns, *ttl_ns));
            if *sent_at_ns >= entry.0 {
                *entry = (*sent_at_ns, *ttl_ns);
            }
        }
    }
    let mut violations = Vec::new();
    for (lease, end) in ends {
        if !end.by_expiry {
            continue;
        }
        let Some((sent_at_ns, acked_ttl_ns)) = last_acked_send.get(&lease).copied() else { continue };
        let ttl_ns = ttls.get(&lease).copied().unwrap_or(acked_ttl_ns).max(acked_ttl_ns);
        let earliest_ns = sent_at_ns + (ttl_ns as f64 / (1.0 + run.drift_bound)) as u64;
        if end.at_ns < earliest_ns {
            violations.push(run.violation(
                "lease-early-expiry",
                end.at_ns,
                format!(
                    "lease {lease} (TTL {}) expired on s{} at {}, {} before its earliest allowed end {} \
                     (last acknowledged renewal sent at {})",
                    leasesim_core::fmt_secs(ttl_ns),
                    end.server,
                    leasesim_core::fmt_secs(end.at_ns),
                    leasesim_core::fmt_secs(earliest_ns - end.at_ns),
                    leasesim_core::fmt_secs(earliest_ns),
                    leasesim_core::fmt_secs(sent_at_ns),
                ),
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::RevokeCause;

    use crate::checkers::check_all;
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    /// Lease 7 (TTL 2 s) renewed by a keep-alive sent at 10 s, expired at `end`.
    fn run_ending_at(end_ns: u64, cause: RevokeCause) -> Fixture {
        let mut run = Fixture::new();
        run.everywhere(S, ServerEvent::LeaseGranted { lease: 7, ttl_ns: 2 * S, index: 3 });
        run.push(10 * S + 5 * MS, Proc::Client(1), Event::LeaseAcked { lease: 7, ttl_ns: 2 * S, sent_at_ns: 10 * S, keepalive: true });
        run.everywhere(end_ns, ServerEvent::LeaseRevoked { lease: 7, index: 9, cause, deleted_keys: vec![] });
        run
    }

    #[test]
    fn expiry_after_the_bound_is_fine() {
        // TTL / (1 + 0.01) after the send: 1.980 s.
        assert!(run_ending_at(11_981 * MS, RevokeCause::Expire).fired().is_empty());
    }

    #[test]
    fn expiry_before_the_bound_fires_as_a_bug() {
        let run = run_ending_at(11_500 * MS, RevokeCause::Expire);
        let violations = check_all(&run.record());
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].invariant, "lease-early-expiry");
        assert!(violations[0].assumptions_held, "every clock was exact: a bug");
    }

    #[test]
    fn a_fast_clock_makes_it_assumption_broken() {
        let mut run = run_ending_at(11_500 * MS, RevokeCause::Expire);
        run.clocks.get_mut(&Proc::Server(1)).unwrap().set_drift(5 * S, 0.3);
        let violations = check_all(&run.record());
        assert!(!violations[0].assumptions_held);
    }

    #[test]
    fn an_explicit_revoke_is_never_early() {
        assert!(run_ending_at(10_100 * MS, RevokeCause::Revoke).fired().is_empty());
    }
}
