//! `liveness`: once the settle phase heals every fault, the service must
//! recover (TigerBeetle's VOPR: a safety phase, then a liveness phase):
//! - a leader is in office when the run ends, with a majority on its term;
//! - an acquire waiting longer than the lock wait bound has been granted;
//! - a crashed client's leases are revoked within TTL plus slack;
//! - a crashed registry client's key is gone from every live server.
//!
//! Each deadline allows the re-election and lease-extension time a new
//! leader needs (Promote adds one election timeout), so only a real stall
//! fires.

use std::collections::BTreeMap;

use leasesim_core::raft::Role;
use leasesim_core::server::ServerEvent;

use super::facts::lease_ends;
use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::world::wire::Proc;
use crate::workload::registry::registry_key;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    leader_in_office(run, &mut violations);
    let down_since = clients_down_at_end(run);
    acquires_granted(run, &down_since, &mut violations);
    leases_of_crashed_clients_revoked(run, &down_since, &mut violations);
    registry_keys_removed(run, &down_since, &mut violations);
    violations
}

/// Slack for anything the cluster must do after settle: several elections
/// plus the Promote extension.
fn recovery_slack_ns(run: &RunRecord<'_>) -> u64 {
    10 * run.election_timeout_max_ns + 1_000_000_000
}

fn leader_in_office(run: &RunRecord<'_>, violations: &mut Vec<Violation>) {
    let voters: Vec<_> = run.servers.iter().filter(|(_, s)| s.voter).collect();
    let leader = voters
        .iter()
        .filter(|(_, s)| s.up)
        .filter_map(|(id, s)| s.probe.filter(|p| p.role == Role::Leader).map(|p| (**id, p.term)))
        .max_by_key(|(_, term)| *term);
    let detail = match leader {
        None => {
            let seen: Vec<String> = voters
                .iter()
                .map(|(id, s)| format!("s{id}: {}", s.probe.map_or("silent".to_string(), |p| format!("{:?} of term {}", p.role, p.term))))
                .collect();
            Some(format!("no leader when the run ended ({})", seen.join(", ")))
        }
        Some((id, term)) => {
            let on_term = voters.iter().filter(|(_, s)| s.up && s.probe.is_some_and(|p| p.term == term)).count();
            (on_term * 2 <= voters.len())
                .then(|| format!("s{id} leads term {term} but only {on_term} of {} voters are on it", voters.len()))
        }
    };
    if let Some(detail) = detail {
        violations.push(run.violation("liveness", run.end_ns, format!("{detail} ({} after faults healed)", settle_len(run))));
    }
}

fn settle_len(run: &RunRecord<'_>) -> String {
    leasesim_core::fmt_secs(run.end_ns - run.settle_at_ns)
}

/// Clients down when the run ended, with when they went down.
fn clients_down_at_end(run: &RunRecord<'_>) -> BTreeMap<u64, u64> {
    let mut down = BTreeMap::new();
    for o in run.obs {
        let Proc::Client(c) = o.proc else { continue };
        match o.event {
            Event::Crashed => {
                down.insert(c, o.at_ns);
            }
            Event::Restarted => {
                down.remove(&c);
            }
            _ => {}
        }
    }
    down
}

fn acquires_granted(run: &RunRecord<'_>, down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    // client → (key, sent at) of its latest acquire
    let mut waiting: BTreeMap<u64, (String, u64)> = BTreeMap::new();
    for o in run.obs {
        match (&o.proc, &o.event) {
            (Proc::Client(c), Event::AcquireSent { key, .. }) => {
                waiting.insert(*c, (key.clone(), o.at_ns));
            }
            (Proc::Client(c), Event::KeepAliveRefused { .. } | Event::Crashed) => {
                waiting.remove(c);
            }
            (Proc::Server(_), Event::Server { event: ServerEvent::LockGranted { client, key, .. } })
                if waiting.get(client).is_some_and(|(k, _)| k == key) =>
            {
                waiting.remove(client);
            }
            _ => {}
        }
    }
    let bound_ns = run.lock_wait_bound_ns + recovery_slack_ns(run);
    for (client, (key, sent_ns)) in waiting {
        let overdue = sent_ns.max(run.settle_at_ns) + bound_ns <= run.end_ns;
        if overdue && !down.contains_key(&client) {
            violations.push(run.violation(
                "liveness",
                run.end_ns,
                format!(
                    "c{client}'s acquire of {key}, sent at {}, was never granted (bound {})",
                    leasesim_core::fmt_secs(sent_ns),
                    leasesim_core::fmt_secs(bound_ns)
                ),
            ));
        }
    }
}

fn leases_of_crashed_clients_revoked(run: &RunRecord<'_>, down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    let ends = lease_ends(run);
    let mut holder_of: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // lease → (client, ttl)
    for o in run.obs {
        if let (Proc::Client(c), Event::LeaseAcked { lease, ttl_ns, .. }) = (&o.proc, &o.event) {
            holder_of.insert(*lease, (*c, *ttl_ns));
        }
    }
    for (lease, (client, ttl_ns)) in holder_of {
        let Some(crashed_ns) = down.get(&client) else { continue };
        let due_ns = (*crashed_ns).max(run.settle_at_ns) + ttl_ns + recovery_slack_ns(run);
        if due_ns <= run.end_ns && !ends.contains_key(&lease) {
            violations.push(run.violation(
                "liveness",
                run.end_ns,
                format!(
                    "lease {lease} of c{client}, which crashed at {}, was still not revoked at the end (due by {})",
                    leasesim_core::fmt_secs(*crashed_ns),
                    leasesim_core::fmt_secs(due_ns)
                ),
            ));
        }
    }
}

fn registry_keys_removed(run: &RunRecord<'_>, down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    for (client, ttl_ns) in run.registry_ttl_ns {
        let Some(crashed_ns) = down.get(client) else { continue };
        let due_ns = (*crashed_ns).max(run.settle_at_ns) + ttl_ns + recovery_slack_ns(run);
        if due_ns > run.end_ns {
            continue;
        }
        let key = registry_key(*client);
        for (id, server) in run.servers.iter().filter(|(_, s)| s.up && s.voter) {
            if server.keys.contains(&key) {
                violations.push(run.violation(
                    "liveness",
                    run.end_ns,
                    format!("{key} of c{client}, which crashed at {}, is still on s{id}", leasesim_core::fmt_secs(*crashed_ns)),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use leasesim_core::raft::Role;
    use leasesim_core::server::ServerEvent;

    use crate::checkers::testing::{Fixture, S};
    use crate::observe::Event;
    use crate::world::wire::Proc;

    #[test]
    fn a_healthy_end_is_fine() {
        assert!(Fixture::new().fired().is_empty());
    }

    #[test]
    fn no_leader_at_the_end_fires() {
        let mut run = Fixture::new();
        run.servers.get_mut(&1).unwrap().probe.as_mut().unwrap().role = Role::Follower;
        assert_eq!(run.fired(), vec!["liveness"]);
    }

    #[test]
    fn an_acquire_never_granted_fires() {
        let mut run = Fixture::new();
        run.push(20 * S, Proc::Client(2), Event::AcquireSent { key: "orders".into(), lease: 5, seq: 3 });
        assert_eq!(run.fired(), vec!["liveness"]);
        run.everywhere(21 * S, ServerEvent::LockGranted { key: "orders".into(), client: 2, seq: 3, lease: 5, token: 8, index: 8 });
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_crashed_registry_clients_key_must_go() {
        let mut run = Fixture::new();
        run.registry_ttl_ns.insert(3, 2 * S);
        run.push(10 * S, Proc::Client(3), Event::Crashed);
        run.servers.get_mut(&2).unwrap().keys = vec!["/services/c3".into()];
        assert_eq!(run.fired(), vec!["liveness"]);
        run.servers.get_mut(&2).unwrap().keys.clear();
        assert!(run.fired().is_empty());
    }

    #[test]
    fn a_crashed_clients_lease_must_be_revoked() {
        let mut run = Fixture::new();
        run.push(5 * S, Proc::Client(1), Event::LeaseAcked { lease: 4, ttl_ns: 2 * S, sent_at_ns: 5 * S, keepalive: false });
        run.push(10 * S, Proc::Client(1), Event::Crashed);
        assert_eq!(run.fired(), vec!["liveness"]);
    }
}
