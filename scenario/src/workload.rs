//! `[[workload]]` tables: lock, registry and kv clients; the task and
//! singleton kinds of the multi-instance lease design are read in
//! `multi_instance`.
//!
//! The keys a workload may have depend on its `kind`, so the kind is read
//! first; with a bad kind only `clients` is still read (it numbers the
//! clients of later workloads) and no key is called unknown on a guess.

use std::collections::BTreeSet;
use std::ops::Range;

use super::error::Diags;
use super::fields::{TableReader, Val};
use super::model::{BeliefFrom, KvWorkload, LockWorkload, RegistryWorkload, WorkloadKind};
use super::selector::ScenarioFacts;
use super::{multi_instance, suggest, watch_txn};

pub(crate) const KINDS: [&str; 7] = ["lock", "registry", "kv", "task", "singleton", "watch", "txn"];
const LOCK_KEYS: [&str; 10] = ["kind", "clients", "keys", "ttl", "keepalive", "hold", "think", "margin", "belief_from", "fenced"];
const REGISTRY_KEYS: [&str; 4] = ["kind", "clients", "ttl", "keepalive"];
const KV_KEYS: [&str; 5] = ["kind", "clients", "keys", "interval", "in_flight"];

/// Largest client count per workload: far beyond useful, small enough that a
/// typo (`clients = 30000`) is caught before it builds a huge simulation.
pub(crate) const MAX_CLIENTS: u64 = 1000;
const MAX_KV_KEYS: u64 = 1000;
/// Most operations a KV client keeps open at once.
pub(crate) const MAX_KV_IN_FLIGHT: u64 = 16;

const NS_PER_MS: u64 = 1_000_000;

/// What validation learned from one workload, even if parts were bad.
pub(crate) struct ParsedWorkload {
    pub(crate) clients: Option<u64>,
    pub(crate) kind: Option<WorkloadKind>,
    /// Its lock keys; `None` when unknown (bad kind or bad `keys`).
    pub(crate) lock_keys: Option<Vec<String>>,
    /// A singleton's role and where it is written (the table's header when
    /// the role is the default), for the checks across workloads.
    pub(crate) role: Option<(String, Option<Range<usize>>)>,
    /// Where `kind` is written.
    pub(crate) kind_span: Option<Range<usize>>,
}

pub(crate) fn workload(mut t: TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> ParsedWorkload {
    let mut kind_span = None;
    let kind_name = t.require("kind", "\"lock\"", d, |v, d| {
        kind_span = v.span.clone();
        kind(v, d)
    });
    let mut clients_val = None;
    let clients = t.require("clients", "3", d, |v, d| {
        clients_val = Some(v.clone());
        v.integer(d, 1, MAX_CLIENTS, &format!("a workload has 1 to {MAX_CLIENTS} clients"))
    });
    let Some(kind_name) = kind_name else {
        return ParsedWorkload { clients, kind: None, lock_keys: None, role: None, kind_span };
    };
    let mut role = None;
    let (kind, lock_keys, valid_keys): (_, _, &[&str]) = match kind_name {
        "lock" => {
            let lock = lock(&mut t, d, facts);
            let keys = lock.as_ref().map(|l| l.keys.clone());
            (lock.map(WorkloadKind::Lock), keys, &LOCK_KEYS)
        }
        "registry" => (registry(&mut t, d, facts).map(WorkloadKind::Registry), Some(Vec::new()), &REGISTRY_KEYS),
        "kv" => (kv(&mut t, d).map(WorkloadKind::Kv), Some(Vec::new()), &KV_KEYS),
        "watch" => (watch_txn::watch(&mut t, d).map(WorkloadKind::Watch), Some(Vec::new()), &watch_txn::WATCH_KEYS),
        "txn" => (watch_txn::txn(&mut t, d).map(WorkloadKind::Txn), Some(Vec::new()), &watch_txn::TXN_KEYS),
        "task" => {
            let task = multi_instance::task(&mut t, d, facts);
            let enough = multi_instance::check_task_clients(clients, clients_val.as_ref(), d);
            (task.filter(|_| enough).map(WorkloadKind::Task), Some(Vec::new()), &multi_instance::TASK_KEYS)
        }
        _ => {
            let singleton = multi_instance::singleton(&mut t, d, facts);
            role = singleton.as_ref().map(|(s, span)| (s.role.clone(), span.clone()));
            let keys = singleton.as_ref().map(|(s, _)| vec![s.role.clone()]);
            (singleton.map(|(s, _)| WorkloadKind::Singleton(s)), keys, &multi_instance::SINGLETON_KEYS)
        }
    };
    let title = format!("{} (kind = \"{kind_name}\")", t.title);
    t.title = title;
    t.finish(d, valid_keys);
    ParsedWorkload { clients, kind, lock_keys, role, kind_span }
}

fn kind<'a>(v: &Val<'a>, d: &mut Diags) -> Option<&'a str> {
    let name = v.string(d, "\"lock\"")?;
    if KINDS.contains(&name) {
        return Some(name);
    }
    let message = format!("unknown workload kind `{name}`{}", suggest::did_you_mean(name, KINDS));
    v.error(d, message, format!("kinds: {}", KINDS.join(", ")));
    None
}

/// Reads `ttl` and `keepalive` (default ttl / 3, shorter than the ttl).
pub(crate) fn lease(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<(u64, u64)> {
    let mut ttl_span = None;
    let ttl_ns = t.require("ttl", "\"2s\"", d, |v, d| {
        ttl_span = v.span.clone();
        v.positive_duration(d)
    });
    let keepalive = t.take("keepalive");
    let keepalive_ns = match &keepalive {
        Some(v) => Some(v.positive_duration(d)?),
        None => None,
    };
    let ttl_ns = ttl_ns?;
    let shown = leasesim_core::duration::format_duration;
    // The cluster refuses shorter grants (core's `min_ttl_ns`): every
    // client would be refused for the whole run.
    if let Some(election_max_ns) = facts.election_timeout_max_ns {
        let min_ttl_ns = leasesim_core::service::state_machine::min_ttl_ns(election_max_ns);
        if ttl_ns < min_ttl_ns {
            let message = format!(
                "`ttl` = {} is shorter than the cluster's minimum lease TTL, {} (1.5 × the longest election timeout, {})",
                shown(ttl_ns),
                shown(min_ttl_ns),
                shown(election_max_ns)
            );
            let fix = format!("use a ttl of at least {}, or shorten [cluster] election_timeout", shown(min_ttl_ns));
            d.error(ttl_span, message, fix);
            return None;
        }
    }
    let keepalive_ns = keepalive_ns.unwrap_or(ttl_ns / 3);
    if keepalive_ns > 0 && keepalive_ns < ttl_ns {
        return Some((ttl_ns, keepalive_ns));
    }
    let (message, fix) = if keepalive.is_some() {
        (
            format!("`keepalive` = {} is not shorter than `ttl` = {}", shown(keepalive_ns), shown(ttl_ns)),
            "keep-alives must come more often than the lease expires; leave `keepalive` out for ttl / 3".to_string(),
        )
    } else {
        (
            format!("`ttl` = {} is too short for the default `keepalive` of ttl / 3", shown(ttl_ns)),
            "use a ttl of at least 3ns, or set `keepalive`".to_string(),
        )
    };
    match keepalive {
        Some(v) => v.error(d, message, fix),
        None => d.error(t.span.clone(), message, fix),
    }
    None
}

fn lock(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<LockWorkload> {
    let keys = t.require("keys", "[\"orders\"]", d, |v, d| lock_keys(v, d));
    let lease = lease(t, d, facts);
    let hold_ns = t.get("hold", d, |v, d| v.duration_range(d)).or((100 * NS_PER_MS, 1000 * NS_PER_MS));
    let think_ns = t.get("think", d, |v, d| v.duration_range(d)).or((0, 200 * NS_PER_MS));
    let margin = t.get("margin", d, |v, d| v.fraction(d, "0.1")).or(0.1);
    let belief_from = t.get("belief_from", d, |v, d| belief_from(v, d)).or(BeliefFrom::Send);
    let fenced = t.get("fenced", d, |v, d| v.boolean(d)).or(true);
    let (ttl_ns, keepalive_ns) = lease?;
    Some(LockWorkload {
        keys: keys?,
        ttl_ns,
        keepalive_ns,
        hold_ns: hold_ns?,
        think_ns: think_ns?,
        margin: margin?,
        belief_from: belief_from?,
        fenced: fenced?,
    })
}

fn lock_keys(v: &Val<'_>, d: &mut Diags) -> Option<Vec<String>> {
    let items = v.strings(d, "[\"orders\"]")?;
    if items.is_empty() {
        v.error(d, "`keys` is empty: a lock workload needs at least one key", "write e.g. `keys = [\"orders\"]`");
        return None;
    }
    let mut seen = BTreeSet::new();
    let mut ok = true;
    for (key, element) in &items {
        if key.is_empty() {
            element.error(d, "a lock key cannot be empty", "name it, e.g. \"orders\"");
            ok = false;
        } else if !seen.insert(*key) {
            element.error(d, format!("`{key}` is listed twice in `keys`"), "list each lock key once");
            ok = false;
        }
    }
    ok.then(|| items.iter().map(|(key, _)| key.to_string()).collect())
}

pub(crate) fn belief_from(v: &Val<'_>, d: &mut Diags) -> Option<BeliefFrom> {
    match v.string(d, "\"send\"")? {
        "send" => Some(BeliefFrom::Send),
        "receipt" => Some(BeliefFrom::Receipt),
        other => {
            let message = format!("unknown `belief_from` = \"{other}\"{}", suggest::did_you_mean(other, ["send", "receipt"]));
            v.error(d, message, "use \"send\" (timer starts when the request is sent) or \"receipt\" (when the reply arrives)");
            None
        }
    }
}

fn registry(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<RegistryWorkload> {
    let (ttl_ns, keepalive_ns) = lease(t, d, facts)?;
    Some(RegistryWorkload { ttl_ns, keepalive_ns })
}

fn kv(t: &mut TableReader<'_>, d: &mut Diags) -> Option<KvWorkload> {
    let fix = format!("for kind = \"kv\", `keys` is how many keys the clients use, 1 to {MAX_KV_KEYS}");
    let keys = t.get("keys", d, |v, d| v.integer(d, 1, MAX_KV_KEYS, &fix)).or(3);
    let interval_ns = t.get("interval", d, |v, d| v.duration_range(d)).or((10 * NS_PER_MS, 100 * NS_PER_MS));
    let in_flight = t
        .get("in_flight", d, |v, d| {
            v.integer(
                d,
                1,
                MAX_KV_IN_FLIGHT,
                &format!("`in_flight` is how many operations a client keeps open at once, 1 to {MAX_KV_IN_FLIGHT}"),
            )
        })
        .or(1);
    Some(KvWorkload { keys: keys?, interval_ns: interval_ns?, in_flight: in_flight? })
}
