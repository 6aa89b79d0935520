//! `liveness`: once the settle phase heals every fault, the service must
//! recover (TigerBeetle's VOPR: a safety phase, then a liveness phase):
//! - a leader is in office when the run ends, with a majority on its term;
//! - an acquire waiting longer than the lock wait bound has been granted;
//! - every lease a client held when it crashed is revoked within TTL plus
//!   slack of the crash (or of the settle phase's start), whether or not the
//!   client restarted;
//! - a registry client's key goes with the lease it was registered under,
//!   and a registry client still down at the end has no key left.
//!
//! Each deadline allows the re-election and lease-extension time a new
//! leader needs (Promote adds one election timeout), so only a real stall
//! fires; `liveness_bounds` states each formula (chaos-nemesis seed 25 drew
//! one entry per append, one append in flight and 75 ms latency: its expiry
//! entry waited 2.8 s behind 38 requests and met its bound by 108 ms, which
//! is why the recovery counts the commit backlog).

use std::collections::BTreeMap;

use leasesim_core::raft::Role;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;

use super::facts::lease_ends;
use super::liveness_bounds::{abandoned_lease_due_ns, acquire_due_ns, Recovery};
use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::{registry_key, Proc};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    leader_in_office(run, &mut violations);
    let down_since = clients_down_at_end(run);
    acquires_granted(run, &down_since, &mut violations);
    leases_of_crashed_clients_revoked(run, &down_since, &mut violations);
    registry_keys_removed(run, &down_since, &mut violations);
    violations
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

/// A lock acquire a client sent, and when it was granted (if ever).
pub(super) struct Acquire {
    pub client: u64,
    pub key: String,
    pub sent_ns: u64,
    pub granted_ns: Option<u64>,
}

/// Each client's latest acquire per wait (a refused keep-alive or a crash
/// ends the wait without a grant owed).
///
/// A grant ends the wait of the client it names; failing that, the wait
/// for its key under its lease. The two agree in the simulator, where a
/// lease belongs to the one client that asked for it; in a real run the
/// lock table names the API layer's session (leasesim-node sends each
/// request under a pooled session id), never the runner's client, and the
/// lease is what ties the grant to the client that waits.
pub(super) fn acquires(run: &RunRecord<'_>) -> Vec<Acquire> {
    let mut done = Vec::new();
    // client → (key, lease, sent at)
    let mut waiting: BTreeMap<u64, (String, u64, u64)> = BTreeMap::new();
    for o in run.obs {
        match (&o.proc, &o.event) {
            (Proc::Client(c), Event::AcquireSent { key, lease, .. }) => {
                waiting.insert(*c, (key.clone(), *lease, o.at_ns));
            }
            (Proc::Client(c), Event::KeepAliveRefused { .. } | Event::Crashed) => {
                waiting.remove(c);
            }
            (
                Proc::Server(_),
                Event::Server { event: ServerEvent::Service { event: ServiceEvent::LockGranted { client, key, lease, .. }, .. } },
            ) => {
                let waiter = Some(*client)
                    .filter(|c| waiting.get(c).is_some_and(|(k, _, _)| k == key))
                    .or_else(|| waiting.iter().find(|(_, (k, l, _))| k == key && l == lease).map(|(c, _)| *c));
                if let Some((c, (key, _, sent_ns))) = waiter.and_then(|c| waiting.remove_entry(&c)) {
                    done.push(Acquire { client: c, key, sent_ns, granted_ns: Some(o.at_ns) });
                }
            }
            _ => {}
        }
    }
    done.extend(waiting.into_iter().map(|(client, (key, _, sent_ns))| Acquire { client, key, sent_ns, granted_ns: None }));
    done
}

fn acquires_granted(run: &RunRecord<'_>, down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    let bound_ns = run.lock_wait_bound_ns + Recovery::of(run).total_ns();
    for Acquire { client, key, sent_ns, .. } in acquires(run).into_iter().filter(|a| a.granted_ns.is_none()) {
        let overdue = acquire_due_ns(run, sent_ns) <= run.end_ns;
        if overdue && !down.contains_key(&client) {
            violations.push(run.violation(
                "liveness",
                run.end_ns,
                format!(
                    "c{client}'s acquire of {key}, sent at {}, was never granted (bound {}; {})",
                    leasesim_core::fmt_secs(sent_ns),
                    leasesim_core::fmt_secs(bound_ns),
                    super::liveness_margin::slack_text(run)
                ),
            ));
        }
    }
}

/// Leases a client incarnation held when it crashed: (lease, client, TTL,
/// crashed at). A restarted client grants itself a new lease, so the old
/// one is never renewed again and the cluster must end it — whether or not
/// the client is back by the end (the settle phase restarts every client,
/// so judging only clients still down at the end would judge none).
pub(super) fn abandoned_leases(run: &RunRecord<'_>) -> Vec<(u64, u64, u64, u64)> {
    let mut held: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new(); // client → lease → ttl
    let mut abandoned = Vec::new();
    for o in run.obs {
        let Proc::Client(c) = o.proc else { continue };
        match &o.event {
            Event::LeaseAcked { lease, ttl_ns, .. } => {
                held.entry(c).or_default().insert(*lease, *ttl_ns);
            }
            Event::KeepAliveRefused { lease } => {
                held.entry(c).or_default().remove(lease);
            }
            Event::Crashed => {
                for (lease, ttl_ns) in held.remove(&c).unwrap_or_default() {
                    abandoned.push((lease, c, ttl_ns, o.at_ns));
                }
            }
            _ => {}
        }
    }
    abandoned
}

fn leases_of_crashed_clients_revoked(run: &RunRecord<'_>, _down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    let ends = lease_ends(run);
    for (lease, client, ttl_ns, crashed_ns) in abandoned_leases(run) {
        let due_ns = abandoned_lease_due_ns(run, crashed_ns, ttl_ns);
        let late = ends.get(&lease).is_none_or(|end| end.at_ns > due_ns);
        if due_ns <= run.end_ns && late {
            let when = ends
                .get(&lease)
                .map_or("was never revoked".to_string(), |e| format!("was revoked only at {}", leasesim_core::fmt_secs(e.at_ns)));
            violations.push(run.violation(
                "liveness",
                due_ns.min(run.end_ns),
                format!(
                    "lease {lease} of c{client}, which crashed at {} holding it, {when} (due by {}; {})",
                    leasesim_core::fmt_secs(crashed_ns),
                    leasesim_core::fmt_secs(due_ns),
                    super::liveness_margin::slack_text(run)
                ),
            ));
        }
    }
}

/// A registry client's key goes with the lease it was registered under (the
/// consistent-core lease design: "keys attached to a lease are deleted when it
/// expires"): when that lease ends and the client has not registered again
/// under another, the end must delete the key. Every client whose lease ended
/// is judged, restarted or not; and a client still down at the end must have no
/// key left on any live server.
fn registry_keys_removed(run: &RunRecord<'_>, down: &BTreeMap<u64, u64>, violations: &mut Vec<Violation>) {
    // client → revision of each registration → the lease it named. The key
    // is attached, at a log index, to the lease of the latest registration
    // applied up to it (a client hears of its registration only after it
    // applied, so the whole run's registrations are read first). Up to and
    // including: a revocation the log carries is an entry of its own, so no
    // registration shares its index; the planted bug's local expiry carries
    // the last index applied before it, and a registration applied there
    // has already moved the key (a restarted follower replays the log, sits
    // at that put and ends the old lease a TTL later: leasesim-real seed 0
    // of real/tests/data/registry-leader-crash.toml).
    let mut registrations: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new();
    for o in run.obs {
        if let (Proc::Client(c), Event::Registered { lease, revision, .. }) = (&o.proc, &o.event) {
            registrations.entry(*c).or_default().insert(*revision, *lease);
        }
    }
    // Puts whose answer never came (the client crashed, or gave up on the
    // lease): from when each was sent, the key may hang on that lease
    // instead, at an index nobody observed. (client, lease) → sent at.
    let mut unanswered: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for o in run.obs {
        if let (Proc::Client(c), Event::RegisterSent { lease, .. }) = (&o.proc, &o.event) {
            let answered = registrations.get(c).is_some_and(|r| r.values().any(|l| l == lease));
            if !answered {
                unanswered.entry((*c, *lease)).or_insert(o.at_ns);
            }
        }
    }
    let attached_at =
        |client: u64, index: u64| -> Option<u64> { registrations.get(&client)?.range(..=index).next_back().map(|(_, lease)| *lease) };
    // Whether `client` may have moved its key off `lease` by a put sent
    // before `at_ns` whose index is unknown.
    let maybe_moved = |client: u64, lease: u64, at_ns: u64| {
        unanswered.range((client, 0)..=(client, u64::MAX)).any(|(&(_, other), &sent_ns)| other != lease && sent_ns <= at_ns)
    };
    let mut judged: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
    for o in run.obs {
        let (
            Proc::Server(n),
            Event::Server { event: ServerEvent::Service { index, event: ServiceEvent::LeaseRevoked { lease, deleted_keys, .. } } },
        ) = (&o.proc, &o.event)
        else {
            continue;
        };
        let owners: Vec<u64> = run
            .registry_ttl_ns
            .keys()
            .copied()
            .filter(|c| attached_at(*c, *index) == Some(*lease) && !maybe_moved(*c, *lease, o.at_ns))
            .collect();
        for client in owners {
            let key = registry_key(client);
            if !deleted_keys.contains(&key) && judged.insert(*lease) {
                violations.push(run.violation(
                    "liveness",
                    o.at_ns,
                    format!("s{n} ended lease {lease} but kept {key}, registered under it by c{client}"),
                ));
            }
        }
    }
    for (client, ttl_ns) in run.registry_ttl_ns {
        let Some(crashed_ns) = down.get(client) else { continue };
        let due_ns = abandoned_lease_due_ns(run, *crashed_ns, *ttl_ns);
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
    use leasesim_core::service::{RevokeCause, ServiceEvent};

    use crate::checkers::testing::{Fixture, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

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
        run.everywhere(
            21 * S,
            ServerEvent::Service {
                index: 8,
                event: ServiceEvent::LockGranted { key: "orders".into(), client: 2, seq: 3, lease: 5, token: 8 },
            },
        );
        assert!(run.fired().is_empty());
    }

    /// A real leasesim-node's lock table names the API layer's session, not
    /// the runner's client: the grant of the wait's key under the wait's
    /// lease ends it; a grant under another lease does not.
    #[test]
    fn a_grant_naming_another_session_ends_the_wait_of_its_lease() {
        let granted = |lease| ServerEvent::Service {
            index: 8,
            event: ServiceEvent::LockGranted { key: "orders".into(), client: 1_000_017, seq: 1, lease, token: 8 },
        };
        let mut run = Fixture::new();
        run.push(20 * S, Proc::Client(2), Event::AcquireSent { key: "orders".into(), lease: 5, seq: 3 });
        run.everywhere(21 * S, granted(6));
        assert_eq!(run.fired(), vec!["liveness"], "lease 6 is not the waiter's");
        run.everywhere(22 * S, granted(5));
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
    fn a_lease_abandoned_by_a_crash_must_end_even_if_the_client_restarted() {
        let mut run = Fixture::new();
        run.push(5 * S, Proc::Client(1), Event::LeaseAcked { lease: 4, ttl_ns: 2 * S, sent_at_ns: 5 * S, keepalive: false });
        run.push(10 * S, Proc::Client(1), Event::Crashed);
        run.push(11 * S, Proc::Client(1), Event::Restarted);
        run.push(12 * S, Proc::Client(1), Event::LeaseAcked { lease: 9, ttl_ns: 2 * S, sent_at_ns: 12 * S, keepalive: false });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(
            violations[0].detail.contains("lease 4 of c1, which crashed at 10.000s holding it, was never revoked"),
            "{}",
            violations[0].detail
        );
        run.everywhere(
            14 * S,
            ServerEvent::Service {
                index: 30,
                event: ServiceEvent::LeaseRevoked { lease: 4, cause: RevokeCause::Expire, deleted_keys: vec![] },
            },
        );
        assert!(run.fired().is_empty(), "the restarted client's new lease 9 is its own business");
    }

    #[test]
    fn a_registry_key_must_go_with_its_lease() {
        let mut run = Fixture::new();
        run.registry_ttl_ns.insert(2, 2 * S);
        run.push(5 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 7, revision: 20 });
        run.server(
            9 * S,
            1,
            ServerEvent::Service {
                index: 40,
                event: ServiceEvent::LeaseRevoked { lease: 7, cause: RevokeCause::Expire, deleted_keys: vec![] },
            },
        );
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("s1 ended lease 7 but kept /services/c2"), "{}", violations[0].detail);
        // Registered again under lease 8 (applied at 35, before 7 ended at
        // 40, though the client heard of it only later): 7 owes nothing.
        let mut run = Fixture::new();
        run.registry_ttl_ns.insert(2, 2 * S);
        run.push(5 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 7, revision: 20 });
        run.server(
            9 * S,
            1,
            ServerEvent::Service {
                index: 40,
                event: ServiceEvent::LeaseRevoked { lease: 7, cause: RevokeCause::Expire, deleted_keys: vec![] },
            },
        );
        run.push(10 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 8, revision: 35 });
        assert!(run.fired().is_empty());
        // A follower's local end of 7 (the planted bug) names the last index
        // it applied: the put under lease 8 itself, which moved the key.
        let mut run = Fixture::new();
        run.registry_ttl_ns.insert(2, 2 * S);
        run.push(5 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 7, revision: 20 });
        run.push(6 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 8, revision: 35 });
        let local_end = |index| ServerEvent::Service {
            index,
            event: ServiceEvent::LeaseRevoked { lease: 7, cause: RevokeCause::Expire, deleted_keys: vec![] },
        };
        run.server(9 * S, 1, local_end(35));
        assert!(run.fired().is_empty(), "the key had moved to lease 8 at index 35");
        run.server(9 * S, 2, local_end(34));
        assert_eq!(run.fired(), vec!["liveness"], "at index 34 the key was still lease 7's");
        // Sent again under lease 8 and crashed before the answer (chaos-nemesis
        // seed 285 under writer-clock): the put may have applied before 7
        // ended, so 7 owes nothing; a put sent only after 7 ended does not
        // excuse it.
        for (sent_ns, fires) in [(8 * S, false), (9 * S + 1, true)] {
            let mut run = Fixture::new();
            run.registry_ttl_ns.insert(2, 2 * S);
            run.push(5 * S, Proc::Client(2), Event::Registered { key: "/services/c2".into(), lease: 7, revision: 20 });
            run.push(sent_ns, Proc::Client(2), Event::RegisterSent { key: "/services/c2".into(), lease: 8 });
            run.push(sent_ns + 1, Proc::Client(2), Event::Crashed);
            run.server(
                9 * S,
                1,
                ServerEvent::Service {
                    index: 40,
                    event: ServiceEvent::LeaseRevoked { lease: 7, cause: RevokeCause::Expire, deleted_keys: vec![] },
                },
            );
            let violations = super::check(&run.record());
            let kept = violations.iter().any(|v| v.detail.contains("ended lease 7 but kept"));
            assert_eq!(kept, fires, "put under lease 8 sent at {sent_ns}: {violations:?}");
        }
    }

    #[test]
    fn a_crashed_clients_lease_must_be_revoked() {
        let mut run = Fixture::new();
        run.push(5 * S, Proc::Client(1), Event::LeaseAcked { lease: 4, ttl_ns: 2 * S, sent_at_ns: 5 * S, keepalive: false });
        run.push(10 * S, Proc::Client(1), Event::Crashed);
        assert_eq!(run.fired(), vec!["liveness"]);
    }
}
