//! From the spanned tree to a `Scenario`: the top level, `[cluster]`,
//! `[network]`, `[clocks.NAME]`, and the order in which sections are read.
//!
//! Order matters because sections check against each other: selectors in
//! faults and clock names need the server and client counts, `holder:KEY`
//! needs the lock keys, `at` needs the duration. Each section reads as much
//! as it can even after an error, so one run reports every problem.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;

use leasesim_core::bugs::Bugs;
use leasesim_core::ExpiryStrategy;

use super::error::{Diagnostic, Diags, Location, ScenarioError};
use super::fields::{Field, TableReader, Val};
use super::model::{ClockSpec, ClusterSpec, Network, Process, Scenario, Workload, WorkloadKind};
use super::raw::{self, Node, Value};
use super::selector::ScenarioFacts;
use super::{chaos, expect, fault, suggest, workload};

const TOP_KEYS: [&str; 13] =
    ["name", "description", "duration", "settle", "seeds", "bugs", "cluster", "network", "clocks", "workload", "fault", "chaos", "expect"];
const CLUSTER_KEYS: [&str; 13] = [
    "servers",
    "election_timeout",
    "heartbeat",
    "lease_expiry",
    "spares",
    "drift_bound",
    "max_append_entries",
    "max_in_flight_appends",
    "snapshot_every",
    "keepalive_read_index",
    "client_timeout",
    "checkpoint_interval",
    "lease_reads",
];
const NETWORK_KEYS: [&str; 3] = ["latency", "loss", "duplicate"];
const CLOCK_KEYS: [&str; 2] = ["drift", "offset"];

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;
pub(crate) const MAX_SERVERS: u64 = 9;

/// Every expiry strategy with its name in scenario files.
pub(crate) const EXPIRY_STRATEGIES: [ExpiryStrategy; 3] =
    [ExpiryStrategy::LeaderMonotonic, ExpiryStrategy::LeaderStampedWall, ExpiryStrategy::WriterClock];

/// The name of a strategy in scenario files; exhaustive so that a new
/// strategy in core cannot be forgotten here.
/// Raft's batch limit and the compaction interval unless a file says.
pub const DEFAULT_MAX_APPEND_ENTRIES: u64 = 64;
/// Unacknowledged AppendEntries batches per follower (the core's default).
pub const DEFAULT_MAX_IN_FLIGHT_APPENDS: u64 = 4;
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 1000;
/// How long a client waits for an answer before trying the next server.
pub const DEFAULT_CLIENT_TIMEOUT_NS: u64 = 500 * NS_PER_MS;

/// The strategy a name in a file stands for.
pub fn expiry_from_name(name: &str) -> Option<ExpiryStrategy> {
    EXPIRY_STRATEGIES.iter().copied().find(|&s| expiry_name(s) == name)
}

pub fn expiry_name(strategy: ExpiryStrategy) -> &'static str {
    match strategy {
        ExpiryStrategy::LeaderMonotonic => "leader-monotonic",
        ExpiryStrategy::LeaderStampedWall => "leader-stamped-wall",
        ExpiryStrategy::WriterClock => "writer-clock",
    }
}

/// Where a scenario's `name` value is, so that a later file with the same
/// name can say where the first one was, and be pointed at itself.
pub(crate) struct NameSite {
    pub(crate) location: Location,
    /// A ready diagnostic for "this name is already used", at the value;
    /// its message is filled in by the caller.
    pub(crate) diagnostic: Diagnostic,
}

/// Parses and validates one file's text, with where its `name` is.
pub(crate) fn parse_located(text: &str, file: &str) -> Result<(Scenario, NameSite), ScenarioError> {
    let mut d = Diags::new(text);
    let root = match raw::parse_document(text) {
        Ok(root) => root,
        Err(error) => {
            let fix = if error.message.contains("duplicate key") {
                "each key may appear once per table; remove or rename the repeated one"
            } else {
                "fix the TOML syntax (https://toml.io); strings need quotes, e.g. duration = \"30s\""
            };
            d.error(error.span, format!("TOML syntax error: {}", error.message), fix);
            return Err(d.into_error(file));
        }
    };
    match scenario(&root, &mut d, file) {
        Some((scenario, name_span)) if d.is_empty() => {
            let location = d.locate(&name_span);
            let diagnostic =
                d.diagnostic(name_span, "", "names must be unique among the files checked or swept together: rename one of them");
            Ok((scenario, NameSite { location, diagnostic }))
        }
        result => {
            if d.is_empty() {
                // Every path that yields `None` reports first; this is a
                // guard against a silent rejection, never a default.
                let missing = if result.is_none() { "validation failed without a message" } else { "validation reported nothing" };
                d.error(None, format!("internal error: {missing}"), "please report this file to the leasesim developers");
            }
            Err(d.into_error(file))
        }
    }
}

fn scenario(root: &Node, d: &mut Diags, file: &str) -> Option<(Scenario, Option<Range<usize>>)> {
    let mut top = TableReader::root(root);
    let mut name_span = None;
    let name = top.require("name", "\"my-scenario\"", d, |v, d| {
        name_span = v.span.clone();
        name(v, d)
    });
    let description = top.get("description", d, |v, d| v.string(d, "\"what this shows\"").map(str::to_string)).optional();
    let duration_ns = top.require("duration", "\"30s\"", d, |v, d| v.positive_duration(d));
    let settle_ns = top.get("settle", d, |v, d| v.duration(d)).or(10 * NS_PER_SEC);
    let seeds = top.get("seeds", d, seeds).or(0..100);
    let bugs = top.get("bugs", d, bugs).or(Bugs::default());

    let (cluster, mut facts) = match section(&mut top, "cluster", "[cluster]", d).or_else(|| TableReader::empty("[cluster]")) {
        Some(t) => cluster(t, d),
        None => (None, ScenarioFacts::default()),
    };
    let network = section(&mut top, "network", "[network]", d).or_else(|| TableReader::empty("[network]")).and_then(|t| network(t, d));

    let workloads = workloads(&mut top, d, &mut facts);
    let clocks = section(&mut top, "clocks", "[clocks]", d).or_else(|| TableReader::empty("[clocks]")).and_then(|t| clocks(t, d, &facts));
    let faults = match tables(&mut top, "fault", d) {
        Field::Missing => Some(Vec::new()),
        Field::Bad => None,
        Field::Ok(tables) => {
            // Collected in full first: every fault gets checked and reported.
            let faults: Vec<_> = tables.into_iter().map(|t| fault::fault(t, d, &facts, duration_ns)).collect();
            faults.into_iter().collect::<Option<Vec<_>>>()
        }
    };
    let chaos = match section(&mut top, "chaos", "[chaos]", d) {
        Field::Missing => Some(None),
        Field::Bad => None,
        Field::Ok(t) => chaos::chaos(t, d, &facts).map(Some),
    };
    let expect = match section(&mut top, "expect", "[expect]", d) {
        Field::Bad => None,
        Field::Missing => expect::expect(None, d),
        Field::Ok(t) => expect::expect(Some(t), d),
    };
    top.finish(d, &TOP_KEYS);

    let scenario = Scenario {
        name: name?,
        description: description?,
        path: PathBuf::from(file),
        duration_ns: duration_ns?,
        settle_ns: settle_ns?,
        seeds: seeds?,
        cluster: cluster?,
        network: network?,
        clocks: clocks?,
        workloads: workloads?,
        faults: faults?,
        chaos: chaos?,
        expect: expect?,
        bugs: bugs?,
    };
    Some((scenario, name_span))
}

/// A `[section]` of the top level, as a table reader.
fn section<'a>(top: &mut TableReader<'a>, key: &str, title: &str, d: &mut Diags) -> Field<TableReader<'a>> {
    match top.take(key) {
        None => Field::Missing,
        Some(v) => v.table(d, title, &format!("write it as a {title} section")).map_or(Field::Bad, Field::Ok),
    }
}

/// The tables of an array of tables (`[[workload]]`, `[[fault]]`), titled
/// `[[key]] #n`. `None` after reporting a value of the wrong shape.
fn tables<'a>(top: &mut TableReader<'a>, key: &str, d: &mut Diags) -> Field<Vec<TableReader<'a>>> {
    let Some(v) = top.take(key) else { return Field::Missing };
    let fix = format!("write each as a [[{key}]] section (double brackets)");
    let Value::Array(items) = &v.node.value else {
        v.error(d, format!("`{key}` must be an array of tables, found {}", v.node.value.kind()), fix);
        return Field::Bad;
    };
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let title = format!("[[{key}]] #{}", i + 1);
        match v.element(item).table(d, &title, &fix) {
            Some(t) => out.push(t),
            None => ok = false,
        }
    }
    if ok {
        Field::Ok(out)
    } else {
        Field::Bad
    }
}

fn name<'a>(v: &Val<'a>, d: &mut Diags) -> Option<String> {
    let text = v.string(d, "\"my-scenario\"")?;
    let kebab = text.split('-').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if kebab {
        return Some(text.to_string());
    }
    let mut suggestion = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            suggestion.push(c.to_ascii_lowercase());
        } else if !suggestion.is_empty() && !suggestion.ends_with('-') {
            suggestion.push('-');
        }
    }
    let suggestion = suggestion.trim_end_matches('-');
    let example = if suggestion.is_empty() { "my-scenario" } else { suggestion };
    v.error(
        d,
        format!("`{text}` is not a kebab-case name"),
        format!("use lowercase letters, digits and single hyphens, e.g. \"{example}\""),
    );
    None
}

fn seeds(v: &Val<'_>, d: &mut Diags) -> Option<Range<u64>> {
    let text = v.string(d, "\"0..100\"")?;
    match super::seeds::parse(text) {
        Ok(range) => Some(range),
        Err(e) => {
            let (what, fix) = e.explain(text);
            v.error(d, what, fix);
            None
        }
    }
}

fn bugs(v: &Val<'_>, d: &mut Diags) -> Option<Bugs> {
    let names = v.strings(d, "[\"vote-without-log-check\"]")?;
    let mut bugs = Some(Bugs::default());
    let mut seen = BTreeSet::new();
    for (name, element) in names {
        if !seen.insert(name) {
            element.error(d, format!("bug `{name}` is listed twice"), "list each bug once");
            bugs = None;
            continue;
        }
        let enabled = bugs.as_mut().map_or(Bugs::default().enable(name), |b| b.enable(name));
        if enabled.is_err() {
            let message = format!("unknown bug `{name}`{}", suggest::did_you_mean(name, Bugs::NAMES));
            element.error(d, message, format!("known bugs: {}", Bugs::NAMES.join(", ")));
            bugs = None;
        }
    }
    bugs
}

/// `[cluster]`; also starts the `ScenarioFacts` with the server counts, which are
/// known even when another cluster key is bad.
fn cluster(mut t: TableReader<'_>, d: &mut Diags) -> (Option<ClusterSpec>, ScenarioFacts) {
    let servers = t.get("servers", d, |v, d| v.integer(d, 1, MAX_SERVERS, "a cluster has 1 to 9 servers, named s1…s9")).or(3);
    let election_timeout_ns = t
        .get("election_timeout", d, |v, d| {
            let range = v.duration_range(d)?;
            if range.0 == 0 {
                v.error(d, "`election_timeout` must be longer than zero", "write e.g. `election_timeout = [\"150ms\", \"300ms\"]`");
                return None;
            }
            Some(range)
        })
        .or((150 * NS_PER_MS, 300 * NS_PER_MS));
    let heartbeat_ns = t.get("heartbeat", d, |v, d| v.positive_duration(d)).or(50 * NS_PER_MS);
    let lease_expiry = t.get("lease_expiry", d, lease_expiry).or(ExpiryStrategy::LeaderMonotonic);
    let spares = t.get("spares", d, |v, d| v.integer(d, 0, MAX_SERVERS, "at most 9 spares, numbered after the voters")).or(0);
    let drift_bound = t.get("drift_bound", d, |v, d| v.fraction(d, "0.001")).or(0.001);
    let max_append_entries = t
        .get("max_append_entries", d, |v, d| v.integer(d, 1, 100_000, "entries per AppendEntries: 1 to 100000"))
        .or(DEFAULT_MAX_APPEND_ENTRIES);
    let max_in_flight_appends = t
        .get("max_in_flight_appends", d, |v, d| {
            v.integer(d, 1, 1_000, "unacknowledged AppendEntries per follower (pipelining depth): 1 to 1000")
        })
        .or(DEFAULT_MAX_IN_FLIGHT_APPENDS);
    let snapshot_every = t
        .get("snapshot_every", d, |v, d| v.integer(d, 1, 10_000_000, "applied entries between snapshots: 1 to 10000000"))
        .or(DEFAULT_SNAPSHOT_EVERY);
    let keepalive_read_index = t.get("keepalive_read_index", d, |v, d| v.boolean(d)).or(true);
    let client_timeout_ns = t.get("client_timeout", d, |v, d| v.positive_duration(d)).or(DEFAULT_CLIENT_TIMEOUT_NS);
    // Absent: no checkpoints (etcd's default before 3.6), so every file
    // written before this key runs as it did.
    let checkpoint_interval_ns = t.get("checkpoint_interval", d, |v, d| v.positive_duration(d).map(Some)).or(None);
    // Absent: reads go through the read index, as before this key.
    let lease_reads = t.get("lease_reads", d, |v, d| v.boolean(d)).or(false);
    t.finish(d, &CLUSTER_KEYS);
    let facts =
        ScenarioFacts { servers, spares, election_timeout_max_ns: election_timeout_ns.map(|(_, max)| max), ..ScenarioFacts::default() };
    let cluster = (|| {
        Some(ClusterSpec {
            servers: servers?,
            election_timeout_ns: election_timeout_ns?,
            heartbeat_ns: heartbeat_ns?,
            lease_expiry: lease_expiry?,
            spares: spares?,
            drift_bound: drift_bound?,
            max_append_entries: max_append_entries?,
            max_in_flight_appends: max_in_flight_appends?,
            snapshot_every: snapshot_every?,
            keepalive_read_index: keepalive_read_index?,
            client_timeout_ns: client_timeout_ns?,
            checkpoint_interval_ns: checkpoint_interval_ns?,
            lease_reads: lease_reads?,
        })
    })();
    (cluster, facts)
}

fn lease_expiry(v: &Val<'_>, d: &mut Diags) -> Option<ExpiryStrategy> {
    let text = v.string(d, "\"leader-monotonic\"")?;
    if let Some(&strategy) = EXPIRY_STRATEGIES.iter().find(|&&s| expiry_name(s) == text) {
        return Some(strategy);
    }
    let names: Vec<&str> = EXPIRY_STRATEGIES.iter().map(|&s| expiry_name(s)).collect();
    let message = format!("unknown `lease_expiry` = \"{text}\"{}", suggest::did_you_mean(text, names.iter().copied()));
    v.error(d, message, format!("strategies: {}", names.join(", ")));
    None
}

fn network(mut t: TableReader<'_>, d: &mut Diags) -> Option<Network> {
    let latency_ns = t.get("latency", d, |v, d| v.duration_range(d)).or((NS_PER_MS, 10 * NS_PER_MS));
    let loss = t.get("loss", d, |v, d| v.probability(d)).or(0.0);
    let duplicate = t.get("duplicate", d, |v, d| v.probability(d)).or(0.0);
    t.finish(d, &NETWORK_KEYS);
    Some(Network { latency_ns: latency_ns?, loss: loss?, duplicate: duplicate? })
}

/// Reads the workloads, numbering clients, and completes the `ScenarioFacts` with
/// the client count and lock keys (each left unknown if a workload is bad).
fn workloads(top: &mut TableReader<'_>, d: &mut Diags, facts: &mut ScenarioFacts) -> Option<Vec<Workload>> {
    let tables = match tables(top, "workload", d) {
        Field::Missing => Vec::new(),
        Field::Ok(tables) => tables,
        Field::Bad => {
            facts.clients = None;
            facts.lock_keys = None;
            return None;
        }
    };
    let mut out = Some(Vec::with_capacity(tables.len()));
    let mut next_client = Some(1u64);
    let mut lock_keys = Some(BTreeSet::new());
    let mut shared = SharedNames::default();
    for t in tables {
        let parsed = workload::workload(t, d, facts);
        shared.note(&parsed, d);
        match (&mut lock_keys, parsed.lock_keys) {
            (Some(all), Some(keys)) => all.extend(keys),
            _ => lock_keys = None,
        }
        let first_client = next_client;
        next_client = next_client.zip(parsed.clients).map(|(next, clients)| next + clients);
        match (out.as_mut(), first_client, parsed.clients, parsed.kind) {
            (Some(list), Some(first_client), Some(clients), Some(kind)) => list.push(Workload { first_client, clients, kind }),
            _ => out = None,
        }
    }
    facts.clients = next_client.map(|next| next - 1);
    facts.lock_keys = lock_keys;
    if !shared.finish(d) {
        out = None;
    }
    out
}

/// What workloads share and must not collide on: the one work queue of the
/// task workload (its KV keys are fixed), and the names `holder:NAME`
/// selects (lock keys and singleton roles).
#[derive(Default)]
struct SharedNames {
    task_seen: bool,
    lock_keys: BTreeSet<String>,
    roles: Vec<(String, Option<Range<usize>>)>,
    collided: bool,
}

impl SharedNames {
    fn note(&mut self, parsed: &workload::ParsedWorkload, d: &mut Diags) {
        match &parsed.kind {
            Some(WorkloadKind::Task(_)) if self.task_seen => {
                let message = "a second task workload: task workloads would share one work queue (`/tasks/…` in the KV)";
                d.error(parsed.kind_span.clone(), message, "use one [[workload]] with kind = \"task\" and more clients");
                self.collided = true;
            }
            Some(WorkloadKind::Task(_)) => self.task_seen = true,
            Some(WorkloadKind::Lock(lock)) => self.lock_keys.extend(lock.keys.iter().cloned()),
            _ => {}
        }
        if let Some((role, span)) = &parsed.role {
            if self.roles.iter().any(|(seen, _)| seen == role) {
                let message = format!("role `{role}` is already a singleton role: two singleton workloads would compete for one role");
                d.error(span.clone(), message, "give each singleton workload its own `role`");
                self.collided = true;
            } else {
                self.roles.push((role.clone(), span.clone()));
            }
        }
    }

    /// Reports roles that are also lock keys (`holder:NAME` would be
    /// ambiguous); false if anything collided.
    fn finish(self, d: &mut Diags) -> bool {
        let mut collided = self.collided;
        for (role, span) in &self.roles {
            if self.lock_keys.contains(role) {
                let message = format!("role `{role}` is also a lock key: `holder:{role}` would not say which it means");
                d.error(span.clone(), message, "rename the singleton's `role` or the lock key");
                collided = true;
            }
        }
        !collided
    }
}

fn clocks(mut t: TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<BTreeMap<Process, ClockSpec>> {
    let mut out = Some(BTreeMap::new());
    for v in t.take_all() {
        let title = format!("[clocks.{}]", v.key);
        let process = match Process::parse(v.key) {
            Ok(process) => facts.check_process(process).map(|()| process),
            Err(message) => Err((message, "name a process: s1…, c1… or store".to_string())),
        };
        let process = match process {
            Ok(process) => Some(process),
            Err((message, fix)) => {
                d.error(v.key_span.clone(), format!("{title}: {message}"), fix);
                None
            }
        };
        let Some(mut clock) = v.table(d, &title, &format!("write a {title} section with `drift` and/or `offset`")) else {
            out = None;
            continue;
        };
        let drift = clock.get("drift", d, |v, d| v.drift(d)).or(0.0);
        let offset_ns = clock.get("offset", d, |v, d| v.signed_duration(d)).or(0);
        clock.finish(d, &CLOCK_KEYS);
        match (out.as_mut(), process, drift, offset_ns) {
            (Some(map), Some(process), Some(drift), Some(offset_ns)) => {
                map.insert(process, ClockSpec { drift, offset_ns });
            }
            _ => out = None,
        }
    }
    out
}
