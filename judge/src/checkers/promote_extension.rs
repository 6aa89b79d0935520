//! `promote-extension`: a new leader does not expire a lease it inherited
//! sooner than the extension plus the lease's TTL after it took office,
//! unless it renewed the lease since (etcd's `lessor.Promote`: a new leader
//! cannot know when the old one last renewed a lease, so it gives every
//! lease a fresh TTL plus the extension, the largest election timeout).
//! Core's service harness had its own copy of this rule; the judge took it
//! over.
//!
//! Judged under `leader-monotonic` only (the other strategies end leases by
//! a stamped wall time or the writer's clock, not by the leader's own
//! deadlines), and only in a run where no leader proposed a checkpoint: a
//! checkpointed lease legitimately keeps only its recorded remaining TTL.
//! The deadline is measured in true time, so a leader clock running fast
//! within `drift_bound` may reach it that much sooner, and a real run's
//! stamps may be late by the log's stamping error (twice: the leader's
//! start and the expiry).

use std::collections::BTreeMap;

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_core::{ExpiryStrategy, LeaseId, NodeId};

use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;

/// One server's term in office: since when, and the leases it renewed.
#[derive(Default)]
struct Office {
    since_ns: Option<u64>,
    renewed: Vec<LeaseId>,
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    if run.expiry != ExpiryStrategy::LeaderMonotonic || checkpointed(run) {
        return Vec::new();
    }
    let slack_ns = 2 * run.obs.stamp_error_ns();
    let mut granted: BTreeMap<LeaseId, (u64, u64)> = BTreeMap::new();
    let mut office: BTreeMap<NodeId, Office> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs.iter() {
        let Proc::Server(server) = o.proc else { continue };
        let Event::Server { event } = &o.event else {
            if o.event == Event::Restarted {
                office.remove(&server);
            }
            continue;
        };
        match event {
            ServerEvent::Raft(RaftEvent::BecameLeader { .. }) => {
                office.insert(server, Office { since_ns: Some(o.at_ns), renewed: Vec::new() });
            }
            ServerEvent::Raft(RaftEvent::SteppedDown { .. }) => {
                office.remove(&server);
            }
            ServerEvent::Service { event: ServiceEvent::LeaseGranted { lease, ttl_ns, .. }, .. } => {
                granted.entry(*lease).or_insert((o.at_ns, *ttl_ns));
            }
            ServerEvent::KeepAliveAnswered { lease, .. } => office.entry(server).or_default().renewed.push(*lease),
            ServerEvent::ExpiryProposed { lease } => {
                let Some(held) = office.get(&server) else { continue };
                let (Some(since_ns), Some(&(granted_ns, ttl_ns))) = (held.since_ns, granted.get(lease)) else { continue };
                let inherited = granted_ns < since_ns && !held.renewed.contains(lease);
                let owed_ns = ((run.election_timeout_max_ns + ttl_ns) as f64 / (1.0 + run.drift_bound)) as u64;
                let earliest_ns = since_ns + owed_ns;
                if inherited && o.at_ns + slack_ns < earliest_ns {
                    let detail = format!(
                        "s{server} (leader since {since_ns} ns) proposed expiring inherited lease {lease} at {} ns, before {earliest_ns} ns",
                        o.at_ns
                    );
                    violations.push(run.violation("promote-extension", o.at_ns, detail));
                }
            }
            _ => {}
        }
    }
    violations
}

/// Whether any leader proposed a lease checkpoint in this run.
fn checkpointed(run: &RunRecord<'_>) -> bool {
    run.obs.iter().any(|o| matches!(&o.event, Event::Server { event: ServerEvent::CheckpointProposed { .. } }))
}

#[cfg(test)]
mod tests {
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::ServiceEvent;

    use crate::checkers::testing::{Fixture, MS, S};

    fn inherited_lease_expired_at(at_ns: u64) -> Fixture {
        let mut run = Fixture::new();
        run.drift_bound = 0.0;
        run.server(S, 1, ServerEvent::Raft(RaftEvent::BecameLeader { term: 1 }));
        run.everywhere(2 * S, ServerEvent::Service { index: 3, event: ServiceEvent::LeaseGranted { lease: 7, ttl_ns: 2 * S } });
        run.server(3 * S, 2, ServerEvent::Raft(RaftEvent::BecameLeader { term: 2 }));
        run.server(at_ns, 2, ServerEvent::ExpiryProposed { lease: 7 });
        run
    }

    #[test]
    fn a_new_leader_expiring_an_inherited_lease_before_extension_plus_ttl_fires() {
        // s2 took office at 3 s: it owes lease 7 the extension (300 ms) and
        // its TTL (2 s), until 5.3 s.
        assert!(super::check(&inherited_lease_expired_at(5_300 * MS).record()).is_empty());
        let early = super::check(&inherited_lease_expired_at(4 * S).record());
        assert_eq!(early.len(), 1, "{early:?}");
        assert!(early[0].detail.contains("inherited lease 7 at 4000000000 ns, before 5300000000 ns"), "{}", early[0].detail);
    }

    #[test]
    fn a_renewal_or_a_checkpoint_lifts_the_rule() {
        let mut renewed = inherited_lease_expired_at(4 * S);
        let answered = ServerEvent::KeepAliveAnswered { lease: 7, client: 9, seq: 4, ttl_ns: 2 * S, index: None };
        renewed.server(3_500 * MS, 2, answered);
        assert!(super::check(&renewed.record()).is_empty());
        let mut checkpointed = inherited_lease_expired_at(4 * S);
        checkpointed.server(2_500 * MS, 1, ServerEvent::CheckpointProposed { leases: 1 });
        assert!(super::check(&checkpointed.record()).is_empty());
    }
}
