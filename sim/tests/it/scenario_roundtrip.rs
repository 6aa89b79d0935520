//! Good scenario files load into the model with the documented defaults,
//! and `to_toml` writes any valid scenario back as a file that parses to an
//! equal scenario (what `shrink` relies on).

use std::collections::BTreeMap;
use std::path::PathBuf;

use leasesim_core::bugs::Bugs;
use leasesim_core::ExpiryStrategy;
use leasesim_scenario::*;
use proptest::prelude::*;
use proptest::sample::subsequence;
use proptest::strategy::{BoxedStrategy, Union};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn parsed(text: &str, file: &str) -> Scenario {
    parse(text, file).unwrap_or_else(|error| panic!("{file} was rejected:\n{error}"))
}

/// parse → to_toml → parse, and the two scenarios are equal.
#[track_caller]
fn assert_round_trip(scenario: &Scenario) {
    let text = to_toml(scenario);
    match parse(&text, "written.toml") {
        Ok(again) => assert_eq!(&again, scenario, "written as:\n{text}"),
        Err(error) => panic!("to_toml wrote a file that does not parse:\n{error}\n---\n{text}"),
    }
}

#[test]
fn format_document_example_parses_verbatim() {
    // A verbatim copy of the example in SCENARIO-FORMAT.md.
    let s = parsed(include_str!("../data/good/format-example.toml"), "format-example.toml");
    assert_eq!(s.name, "holder-pause-beyond-ttl");
    assert_eq!(s.description, None);
    assert_eq!((s.duration_ns, s.settle_ns, s.seeds.clone()), (30 * SEC, 10 * SEC, 0..200));
    let c = &s.cluster;
    assert_eq!((c.servers, c.election_timeout_ns, c.heartbeat_ns), (5, (150 * MS, 300 * MS), 50 * MS));
    assert_eq!((c.lease_expiry, c.spares, c.drift_bound), (ExpiryStrategy::LeaderMonotonic, 0, 0.05));
    assert_eq!((s.network.latency_ns, s.network.loss, s.network.duplicate), ((MS, 10 * MS), 0.01, 0.0));
    let clocks: Vec<_> = s.clocks.iter().map(|(p, c)| (*p, c.drift, c.offset_ns)).collect();
    assert_eq!(clocks, vec![(Process::Server(3), 0.04, 0), (Process::Client(2), 0.0, -2 * SEC as i64)]);
    assert_eq!(s.workloads.len(), 1);
    assert_eq!((s.workloads[0].first_client, s.workloads[0].clients), (1, 3));
    let WorkloadKind::Lock(lock) = &s.workloads[0].kind else { panic!("not a lock workload: {:?}", s.workloads[0]) };
    assert_eq!(
        lock,
        &LockWorkload {
            keys: vec!["orders".to_string()],
            ttl_ns: 2 * SEC,
            keepalive_ns: 500 * MS,
            hold_ns: (100 * MS, SEC),
            think_ns: (0, 200 * MS),
            margin: 0.1,
            belief_from: BeliefFrom::Send,
            fenced: true,
        }
    );
    let faults: Vec<_> = s.faults.iter().map(|f| (f.at_ns, f.action.clone(), f.for_ns, f.line)).collect();
    let group = |names: &[u64]| names.iter().map(|&n| Selector::Server(n)).collect::<Vec<_>>();
    assert_eq!(
        faults,
        vec![
            (8 * SEC, FaultAction::Pause(Selector::Holder("orders".to_string())), Some(4 * SEC), 38),
            (15 * SEC, FaultAction::Partition(vec![group(&[1, 2]), group(&[3, 4, 5])]), Some(5 * SEC), 43),
        ]
    );
    assert_eq!(s.chaos, None);
    assert_eq!(s.expect.verdict, Verdict::Safe);
    assert_eq!(s.bugs, Bugs::default());
    assert_eq!(s.path, PathBuf::from("format-example.toml"));
}

#[test]
fn defaults_are_the_documented_ones() {
    let s = parsed("name = \"tiny\"\nduration = \"5s\"\n", "tiny.toml");
    assert_eq!((s.settle_ns, s.seeds.clone()), (10 * SEC, 0..100));
    assert_eq!(
        s.cluster,
        ClusterSpec {
            servers: 3,
            election_timeout_ns: (150 * MS, 300 * MS),
            heartbeat_ns: 50 * MS,
            lease_expiry: ExpiryStrategy::LeaderMonotonic,
            spares: 0,
            drift_bound: 0.001,
            max_append_entries: 64,
            max_in_flight_appends: 4,
            snapshot_every: 1000,
            keepalive_read_index: true,
            client_timeout_ns: 500 * MS,
            checkpoint_interval_ns: None,
            lease_reads: false
        }
    );
    assert_eq!(s.network, Network { latency_ns: (MS, 10 * MS), loss: 0.0, duplicate: 0.0 });
    assert!(s.clocks.is_empty() && s.workloads.is_empty() && s.faults.is_empty());
    assert_eq!((s.chaos, s.expect.verdict), (None, Verdict::Safe));

    let s = parsed("name = \"k\"\nduration = \"5s\"\n[[workload]]\nkind = \"lock\"\nclients = 1\nkeys = [\"a\"]\nttl = \"3s\"\n", "k.toml");
    let WorkloadKind::Lock(lock) = &s.workloads[0].kind else { panic!("not a lock workload") };
    // keepalive defaults to ttl / 3.
    assert_eq!(lock.keepalive_ns, SEC);
}

#[test]
fn every_key_lands_in_the_model() {
    let s = parsed(include_str!("../data/good/everything.toml"), "everything.toml");
    assert_eq!(s.description.as_deref(), Some("Uses every section and every fault action.\nNot meant to be run for its verdict."));
    assert_eq!((s.duration_ns, s.settle_ns, s.seeds.clone()), (60 * SEC, 2500 * MS, 10..20));
    assert_eq!(s.bugs.enabled(), vec!["token-from-local-counter", "client-trusts-full-ttl"]);
    assert_eq!((s.cluster.lease_expiry, s.cluster.spares), (ExpiryStrategy::LeaderStampedWall, 2));
    assert_eq!(s.network.latency_ns, (500_000, 5 * MS));
    assert_eq!(s.clocks.get(&Process::Store), Some(&ClockSpec { drift: 0.0, offset_ns: 0 }));
    assert_eq!(s.clocks.get(&Process::Client(4)), Some(&ClockSpec { drift: 0.3, offset_ns: -1_500_000_000 }));
    let firsts: Vec<_> = s.workloads.iter().map(|w| (w.kind.name(), w.first_client, w.clients)).collect();
    assert_eq!(firsts, vec![("lock", 1, 2), ("registry", 3, 2), ("kv", 5, 1)]);
    assert_eq!(s.client_count(), 5);
    assert_eq!(s.workload_of(4).map(|w| w.kind.name()), Some("registry"));
    assert_eq!(s.lock_keys().into_iter().collect::<Vec<_>>(), vec!["invoices", "orders"]);
    assert_eq!(s.workloads[2].kind, WorkloadKind::Kv(KvWorkload { keys: 7, interval_ns: (MS, 2 * MS), in_flight: 1 }));
    let WorkloadKind::Lock(lock) = &s.workloads[0].kind else { panic!("not a lock workload") };
    assert_eq!((lock.hold_ns, lock.margin, lock.belief_from, lock.fenced), ((200 * MS, 200 * MS), 0.0, BeliefFrom::Receipt, false));
    let actions: Vec<&str> = s.faults.iter().map(|f| f.action.name()).collect();
    assert_eq!(actions, ["partition", "isolate", "block", "crash", "pause", "clock", "clock", "loss", "add", "remove"]);
    assert_eq!(s.faults[2].action, FaultAction::Block { from: Selector::Server(1), to: vec![Selector::Server(2), Selector::Store] });
    assert_eq!(s.faults[5].action, FaultAction::Clock { target: Selector::Client(3), drift: Some(0.5), jump_ns: Some(-2 * SEC as i64) });
    assert_eq!(s.faults[6].action, FaultAction::Clock { target: Selector::RandomClient, drift: None, jump_ns: Some(60 * SEC as i64) });
    assert_eq!((s.faults[8].action.clone(), s.faults[8].for_ns), (FaultAction::Add(4), None));
    let chaos = s.chaos.as_ref().unwrap_or_else(|| panic!("no chaos"));
    assert_eq!(chaos.partitions, Some(ChaosRate { mean_interval_ns: 20 * SEC, for_ns: (2 * SEC, 4 * SEC) }));
    // Only the mean interval given: the default length range.
    assert_eq!(chaos.crashes, Some(ChaosRate { mean_interval_ns: 30 * SEC, for_ns: (SEC, 5 * SEC) }));
    assert_eq!(chaos.clock_jumps, Some(ChaosJumps { mean_interval_ns: 40 * SEC, jump_ns: (-500 * MS as i64, 250 * MS as i64) }));
    assert_eq!((chaos.drift, chaos.swarm), (0.02, true));
    assert_eq!(chaos.leader_crashes, Some(ChaosRate { mean_interval_ns: 25 * SEC, for_ns: (SEC, 5 * SEC) }));
    assert_eq!(chaos.holder_pauses, Some(ChaosRate { mean_interval_ns: 35 * SEC, for_ns: (SEC, 3 * SEC) }));
    assert_eq!(chaos.membership_ns, Some(45 * SEC));
    assert_eq!(chaos.partition_replacements, 0.5);
    assert_eq!(s.expect.verdict, Verdict::Violation { ids: vec!["lock-belief-overlap".into(), "fencing-order".into()] });
}

#[test]
fn fixtures_round_trip() {
    assert_round_trip(&parsed(include_str!("../data/good/format-example.toml"), "format-example.toml"));
    assert_round_trip(&parsed(include_str!("../data/good/everything.toml"), "everything.toml"));
    assert_round_trip(&parsed("name = \"tiny\"\nduration = \"5s\"\n[chaos]\n", "tiny.toml"));
}

#[test]
fn written_files_start_with_what_they_show_and_expect() {
    let text = to_toml(&parsed(include_str!("../data/good/everything.toml"), "everything.toml"));
    assert!(text.starts_with("# Uses every section and every fault action.\n# Not meant to be run for its verdict.\n# Expect: violation of lock-belief-overlap or fencing-order."), "{text}");
}

#[test]
fn equality_ignores_only_where_a_scenario_was_written() {
    let a = parsed(include_str!("../data/good/format-example.toml"), "a.toml");
    let mut b = parsed(&format!("\n\n{}", include_str!("../data/good/format-example.toml")), "b.toml");
    assert_ne!(a.faults[0].line, b.faults[0].line);
    assert_eq!(a, b);
    b.faults[0].at_ns += 1;
    assert_ne!(a, b);
}

// ---- generated scenarios ----

fn ns() -> BoxedStrategy<u64> {
    prop_oneof![0u64..2_000, (0u64..100_000).prop_map(|x| x * MS), (0u64..600).prop_map(|x| x * SEC), any::<u64>().prop_map(|x| x >> 8)]
        .boxed()
}

fn positive_ns() -> BoxedStrategy<u64> {
    ns().prop_map(|x| x.max(1)).boxed()
}

fn range_ns() -> BoxedStrategy<(u64, u64)> {
    (ns(), ns()).prop_map(|(a, b)| (a.min(b), a.max(b))).boxed()
}

fn signed_ns() -> BoxedStrategy<i64> {
    prop_oneof![-5_000i64..5_000, (-600i64..600).prop_map(|x| x * SEC as i64), any::<i64>()].boxed()
}

fn signed_range_ns() -> BoxedStrategy<(i64, i64)> {
    (signed_ns(), signed_ns()).prop_map(|(a, b)| (a.min(b), a.max(b))).boxed()
}

fn probability() -> BoxedStrategy<f64> {
    prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64].boxed()
}

fn drift() -> BoxedStrategy<f64> {
    prop_oneof![Just(0.0), -0.999_999..0.999_999f64, 1e-12..1e-6f64].boxed()
}

fn fraction() -> BoxedStrategy<f64> {
    prop_oneof![Just(0.0), 0.0..1.0f64].boxed()
}

/// TTL and a keep-alive strictly shorter than it.
fn lease() -> BoxedStrategy<(u64, u64)> {
    (2u64..1 << 50, any::<u64>()).prop_map(|(ttl, k)| (ttl, 1 + k % (ttl - 1))).boxed()
}

fn workload_kind() -> BoxedStrategy<WorkloadKind> {
    let lock = (
        proptest::collection::btree_set(prop_oneof!["[a-z]{1,3}", "\\PC{1,5}", "[\"'\\\\ #=.\\[\\]]{1,3}"], 1..4),
        lease(),
        range_ns(),
        range_ns(),
        fraction(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(keys, (ttl_ns, keepalive_ns), hold_ns, think_ns, margin, receipt, fenced)| {
            let belief_from = if receipt { BeliefFrom::Receipt } else { BeliefFrom::Send };
            WorkloadKind::Lock(LockWorkload {
                keys: keys.into_iter().collect(),
                ttl_ns,
                keepalive_ns,
                hold_ns,
                think_ns,
                margin,
                belief_from,
                fenced,
            })
        });
    let registry = lease().prop_map(|(ttl_ns, keepalive_ns)| WorkloadKind::Registry(RegistryWorkload { ttl_ns, keepalive_ns }));
    let kv = (1u64..=1000, range_ns(), 1u64..=16)
        .prop_map(|(keys, interval_ns, in_flight)| WorkloadKind::Kv(KvWorkload { keys, interval_ns, in_flight }));
    let belief = |receipt: bool| if receipt { BeliefFrom::Receipt } else { BeliefFrom::Send };
    let task = (lease(), 1u64..=100_000, range_ns(), range_ns(), positive_range_ns(), fraction(), any::<bool>()).prop_map(
        move |((ttl_ns, keepalive_ns), tasks, task_every_ns, work_ns, poll_ns, margin, receipt)| {
            WorkloadKind::Task(TaskWorkload {
                ttl_ns,
                keepalive_ns,
                tasks,
                task_every_ns,
                work_ns,
                poll_ns,
                margin,
                belief_from: belief(receipt),
            })
        },
    );
    // Roles are made unique (and apart from lock keys) in `workloads()`.
    let singleton = (lease(), positive_range_ns(), positive_range_ns(), fraction(), any::<bool>()).prop_map(
        move |((ttl_ns, keepalive_ns), interval_ns, poll_ns, margin, receipt)| {
            let role = String::new();
            WorkloadKind::Singleton(SingletonWorkload {
                role,
                ttl_ns,
                keepalive_ns,
                interval_ns,
                poll_ns,
                margin,
                belief_from: belief(receipt),
            })
        },
    );
    prop_oneof![lock, registry, kv, task, singleton].boxed()
}

/// A range whose low end is above zero (`poll`, `interval`).
fn positive_range_ns() -> BoxedStrategy<(u64, u64)> {
    range_ns().prop_map(|(low, high)| (low.max(1), high.max(1))).boxed()
}

fn workloads() -> BoxedStrategy<Vec<Workload>> {
    proptest::collection::vec((1u64..5, workload_kind()), 0..4)
        .prop_map(|list| {
            let mut next = 1;
            let mut has_task = false;
            list.into_iter()
                .enumerate()
                // The loader allows one task workload, of two clients at least;
                // each singleton gets its own role, longer than any lock key.
                .filter(|(_, (_, kind))| !matches!(kind, WorkloadKind::Task(_)) || !std::mem::replace(&mut has_task, true))
                .map(|(n, (clients, mut kind))| {
                    let clients = match &mut kind {
                        WorkloadKind::Task(_) => clients.max(2),
                        WorkloadKind::Singleton(singleton) => {
                            singleton.role = format!("role-{n}/x");
                            clients
                        }
                        _ => clients,
                    };
                    let workload = Workload { first_client: next, clients, kind };
                    next += clients;
                    workload
                })
                .collect()
        })
        .boxed()
}

/// What selectors may name in a generated scenario.
#[derive(Clone, Debug)]
struct GeneratedFacts {
    servers: u64,
    spares: u64,
    clients: u64,
    keys: Vec<String>,
}

impl GeneratedFacts {
    fn processes(&self) -> Vec<Process> {
        let servers = (1..=self.servers + self.spares).map(Process::Server);
        servers.chain((1..=self.clients).map(Process::Client)).chain([Process::Store]).collect()
    }

    fn process(&self) -> BoxedStrategy<Process> {
        proptest::sample::select(self.processes()).boxed()
    }

    fn selector(&self) -> BoxedStrategy<Selector> {
        let mut options: Vec<BoxedStrategy<Selector>> = vec![
            (1..=self.servers + self.spares).prop_map(Selector::Server).boxed(),
            Just(Selector::Store).boxed(),
            Just(Selector::Leader).boxed(),
            Just(Selector::Follower).boxed(),
            Just(Selector::RandomServer).boxed(),
        ];
        if self.clients > 0 {
            options.push((1..=self.clients).prop_map(Selector::Client).boxed());
            options.push(Just(Selector::RandomClient).boxed());
        }
        if !self.keys.is_empty() {
            options.push(proptest::sample::select(self.keys.clone()).prop_map(Selector::Holder).boxed());
        }
        Union::new(options).boxed()
    }

    fn server_selector(&self) -> BoxedStrategy<Selector> {
        prop_oneof![
            (1..=self.servers + self.spares).prop_map(Selector::Server),
            Just(Selector::Leader),
            Just(Selector::Follower),
            Just(Selector::RandomServer)
        ]
        .boxed()
    }

    fn action(&self) -> BoxedStrategy<FaultAction> {
        let processes = self.processes();
        let count = processes.len();
        let partition = (subsequence(processes, 2..=count), any::<prop::sample::Index>(), proptest::option::of(self.selector())).prop_map(
            |(members, split, extra): (Vec<Process>, prop::sample::Index, Option<Selector>)| {
                let at = 1 + split.index(members.len() - 1);
                let to_selector = |p: &Process| match *p {
                    Process::Server(n) => Selector::Server(n),
                    Process::Client(n) => Selector::Client(n),
                    Process::Store => Selector::Store,
                };
                let mut groups: Vec<Vec<Selector>> =
                    vec![members[..at].iter().map(to_selector).collect(), members[at..].iter().map(to_selector).collect()];
                // A dynamic selector may share a group with anything.
                if let Some(extra) = extra.filter(|e| e.process().is_none()) {
                    groups.push(vec![extra]);
                }
                FaultAction::Partition(groups)
            },
        );
        let clock =
            (self.selector(), proptest::option::of(drift()), proptest::option::of(signed_ns())).prop_map(|(target, drift, jump_ns)| {
                let drift = if drift.is_none() && jump_ns.is_none() { Some(0.0) } else { drift };
                FaultAction::Clock { target, drift, jump_ns }
            });
        let mut options: Vec<BoxedStrategy<FaultAction>> = vec![
            partition.boxed(),
            self.selector().prop_map(FaultAction::Isolate).boxed(),
            (self.selector(), proptest::collection::vec(self.selector(), 1..3))
                .prop_map(|(from, to)| FaultAction::Block { from, to })
                .boxed(),
            (self.selector(), proptest::collection::vec(self.selector(), 1..3), positive_ns())
                .prop_map(|(from, to, by_ns)| FaultAction::Delay { from, to, by_ns })
                .boxed(),
            self.selector().prop_map(FaultAction::Crash).boxed(),
            self.selector().prop_map(FaultAction::Pause).boxed(),
            clock.boxed(),
            probability().prop_map(FaultAction::Loss).boxed(),
            self.server_selector().prop_map(FaultAction::Remove).boxed(),
        ];
        if self.spares > 0 {
            options.push((self.servers + 1..=self.servers + self.spares).prop_map(FaultAction::Add).boxed());
        }
        Union::new(options).boxed()
    }

    fn fault(&self, duration_ns: u64) -> BoxedStrategy<ScheduledFault> {
        let points: Vec<Point> = Point::all().into_iter().filter(|p| p.servers_only()).chain([Point::Timer]).collect();
        (0..=duration_ns, self.action(), proptest::option::of(positive_ns()), proptest::option::of(proptest::sample::select(points)))
            .prop_map(|(at_ns, action, for_ns, point)| {
                let undoable = !matches!(action, FaultAction::Clock { .. } | FaultAction::Add(_) | FaultAction::Remove(_));
                // A point only where the loader takes one: crash, pause or
                // clock of a process that reaches it.
                let when = match &action {
                    FaultAction::Crash(s) | FaultAction::Pause(s) | FaultAction::Clock { target: s, .. } if s.is_server() => point,
                    FaultAction::Crash(_) | FaultAction::Pause(_) | FaultAction::Clock { .. } => point.filter(|p| *p == Point::Timer),
                    _ => None,
                };
                ScheduledFault { at_ns, action, for_ns: for_ns.filter(|_| undoable), line: 0, when }
            })
            .boxed()
    }
}

/// Kinds aimed at a lock holder or at membership only where the facts has
/// a lock or spares: elsewhere the loader rejects them.
fn chaos(facts: &GeneratedFacts) -> BoxedStrategy<Option<Chaos>> {
    let rate =
        || proptest::option::of((positive_ns(), range_ns()).prop_map(|(mean_interval_ns, for_ns)| ChaosRate { mean_interval_ns, for_ns }));
    let jumps = proptest::option::of(
        (positive_ns(), signed_range_ns()).prop_map(|(mean_interval_ns, jump_ns)| ChaosJumps { mean_interval_ns, jump_ns }),
    );
    let (has_lock, has_spares) = (!facts.keys.is_empty(), facts.spares > 0);
    let roles = (rate(), rate(), proptest::option::of(positive_ns()), probability()).prop_map(
        move |(leader_crashes, holder_pauses, membership_ns, replacements)| {
            (
                leader_crashes,
                holder_pauses.filter(|_| has_lock),
                membership_ns.filter(|_| has_spares),
                if has_spares { replacements } else { 0.0 },
            )
        },
    );
    let timer_jumps = proptest::option::of(
        (positive_ns(), signed_range_ns()).prop_map(|(mean_interval_ns, jump_ns)| ChaosJumps { mean_interval_ns, jump_ns }),
    );
    let slow = proptest::option::of((rate().prop_filter_map("on", |r| r), range_ns()));
    let aimed = (rate(), rate(), timer_jumps, rate(), slow);
    proptest::option::of((rate(), rate(), rate(), jumps, roles, fraction(), any::<bool>(), aimed).prop_map(
        |(
            partitions,
            crashes,
            pauses,
            clock_jumps,
            (leader_crashes, holder_pauses, membership_ns, replacements),
            drift,
            swarm,
            (crash_points, pause_points, timer_jumps, leader_isolations, slow_links),
        )| Chaos {
            // Replacements ride on partitions: without them the loader rejects them.
            partition_replacements: if partitions.is_some() { replacements } else { 0.0 },
            partition_clients: 0.0,
            leader_isolation_clients: if leader_isolations.is_some() { 0.5 } else { 0.0 },
            partitions,
            crashes,
            pauses,
            clock_jumps,
            leader_crashes,
            leader_isolations,
            slow_links,
            crash_points,
            pause_points,
            timer_jumps,
            holder_pauses,
            membership_ns,
            drift,
            swarm,
            swarm_off: if swarm { 0.5 } else { 0.0 },
            knobs: false,
        },
    ))
    .boxed()
}

fn expect() -> BoxedStrategy<Expect> {
    let ids: Vec<&'static str> = invariant_ids().collect();
    prop_oneof![
        Just(Verdict::Safe),
        subsequence(ids, 1..4).prop_map(|ids| Verdict::Violation { ids: ids.into_iter().map(String::from).collect() }),
    ]
    .prop_map(|verdict| Expect { verdict })
    .boxed()
}

fn bugs() -> BoxedStrategy<Bugs> {
    subsequence(Bugs::NAMES.to_vec(), 0..4)
        .prop_map(|names| {
            let mut bugs = Bugs::default();
            for name in names {
                bugs.enable(name).unwrap_or_else(|e| panic!("{e}"));
            }
            bugs
        })
        .boxed()
}

/// `[cluster]` with `servers` and `spares` as drawn for the rest of the
/// file.
fn cluster(servers: u64, spares: u64) -> impl Strategy<Value = ClusterSpec> {
    let knobs = (1u64..=100_000, 1u64..=1_000, 1u64..=10_000_000, any::<bool>());
    (range_ns().prop_filter("election timeout above zero", |r| r.0 > 0), positive_ns(), any::<bool>(), fraction(), knobs).prop_map(
        move |(
            election_timeout_ns,
            heartbeat_ns,
            wall,
            drift_bound,
            (max_append_entries, max_in_flight_appends, snapshot_every, keepalive_read_index),
        )| ClusterSpec {
            servers,
            election_timeout_ns,
            heartbeat_ns,
            lease_expiry: if wall { ExpiryStrategy::LeaderStampedWall } else { ExpiryStrategy::LeaderMonotonic },
            spares,
            drift_bound,
            max_append_entries,
            max_in_flight_appends,
            snapshot_every,
            keepalive_read_index,
            client_timeout_ns: 250 * MS,
            checkpoint_interval_ns: if wall { None } else { Some(200 * MS) },
            // Both values round-trip, without a new draw.
            lease_reads: !wall,
        },
    )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (1u64..=9, 0u64..=3, workloads(), positive_ns()).prop_flat_map(|(servers, spares, workloads, duration_ns)| {
        let clients = workloads.iter().map(|w| w.clients).sum();
        let keys = workloads
            .iter()
            .filter_map(|w| match &w.kind {
                WorkloadKind::Lock(lock) => Some(lock.keys.clone()),
                WorkloadKind::Singleton(singleton) => Some(vec![singleton.role.clone()]),
                _ => None,
            })
            .flatten()
            .collect();
        let facts = GeneratedFacts { servers, spares, clients, keys };
        let cluster = cluster(servers, spares);
        let network =
            (range_ns(), probability(), probability()).prop_map(|(latency_ns, loss, duplicate)| Network { latency_ns, loss, duplicate });
        let clocks: BoxedStrategy<BTreeMap<Process, ClockSpec>> = proptest::collection::btree_map(
            facts.process(),
            (drift(), signed_ns()).prop_map(|(drift, offset_ns)| ClockSpec { drift, offset_ns }),
            0..4,
        )
        .boxed();
        let top =
            ("[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,3}", proptest::option::of(any::<String>()), ns(), (0u64..u64::MAX - 1, any::<u64>()), bugs());
        (top, cluster, network, clocks, Just(workloads), proptest::collection::vec(facts.fault(duration_ns), 0..6), chaos(&facts), expect())
            .prop_map(
                move |(
                    (name, description, settle_ns, (seed, span), bugs),
                    mut cluster,
                    network,
                    clocks,
                    workloads,
                    faults,
                    chaos,
                    expect,
                )| {
                    // The loader refuses a TTL below 1.5 × the longest
                    // election timeout: shorten the timeouts to fit.
                    if let Some(ttl_ns) = workloads.iter().filter_map(|w| w.kind.lease_ttl_ns()).min() {
                        let fits_ns = (ttl_ns * 2 / 3).max(1);
                        let (min_ns, max_ns) = cluster.election_timeout_ns;
                        cluster.election_timeout_ns = (min_ns.min(fits_ns), max_ns.min(fits_ns));
                    }
                    Scenario {
                        name,
                        description,
                        path: PathBuf::from("generated.toml"),
                        duration_ns,
                        settle_ns,
                        seeds: seed..seed + 1 + span % (u64::MAX - 1 - seed),
                        cluster,
                        network,
                        clocks,
                        workloads,
                        faults,
                        chaos,
                        expect,
                        bugs,
                    }
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn generated_scenarios_round_trip(s in scenario()) {
        let text = to_toml(&s);
        let again = parse(&text, "written.toml").map_err(|e| TestCaseError::fail(format!("{e}\n---\n{text}")))?;
        prop_assert_eq!(again, s, "written as:\n{}", text);
    }

    #[test]
    fn arbitrary_text_gets_a_verdict_and_errors_name_the_file(text in "\\PC{0,200}") {
        if let Err(error) = parse(&text, "fuzz.toml") {
            prop_assert!(!error.diagnostics.is_empty());
            prop_assert!(error.to_string().starts_with("fuzz.toml:"), "{}", error);
        }
    }

    #[test]
    fn parse_never_panics_on_damaged_scenarios(cut in 0usize..2000, insert in "[\\[\\]{}=\",.#\n a-z0-9-]{0,6}") {
        let original = include_str!("../data/good/everything.toml");
        let boundary = |mut i: usize| {
            i = i.min(original.len());
            while !original.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        // Overwrite as many bytes as are inserted, at a random place.
        let (at, end) = (boundary(cut), boundary(cut + insert.len()));
        let text = format!("{}{}{}", &original[..at], insert, &original[end..]);
        if let Err(error) = parse(&text, "damaged.toml") {
            // Every diagnostic points into the file (or at nothing at all).
            let lines = text.lines().count().max(1);
            for d in &error.diagnostics {
                if let Some(location) = d.location {
                    prop_assert!(location.line >= 1 && location.line <= lines + 1, "{}", error);
                    prop_assert!(location.col >= 1);
                }
            }
        }
    }
}
