//! `[[workload]]` tables of the multi-instance lease design's pattern (leases
//! for task workers and a singleton): `kind = "task"` and
//! `kind = "singleton"`.
//!
//! Both hold a lease like the lock workload (`ttl`, `keepalive`, `margin`,
//! `belief_from`, read by the same code); what is new is the work queue's
//! pace (`tasks`, `task_every`, `work`, `poll`) and the singleton's `role`,
//! whose checks across workloads (one task workload per file, roles unique
//! and apart from lock keys) live in `validate`.

use std::ops::Range;

use super::error::Diags;
use super::fields::{TableReader, Val};
use super::model::{BeliefFrom, SingletonWorkload, TaskWorkload};
use super::selector::ScenarioFacts;
use super::workload::{belief_from, lease};

pub(crate) const TASK_KEYS: [&str; 10] =
    ["kind", "clients", "ttl", "keepalive", "tasks", "task_every", "work", "poll", "margin", "belief_from"];
pub(crate) const SINGLETON_KEYS: [&str; 9] = ["kind", "clients", "role", "ttl", "keepalive", "interval", "poll", "margin", "belief_from"];

/// Largest number of tasks: far beyond what a run gets through, small
/// enough to catch a typo.
pub(crate) const MAX_TASKS: u64 = 100_000;
/// The role when `role` is absent.
pub(crate) const DEFAULT_ROLE: &str = "singleton";

const NS_PER_MS: u64 = 1_000_000;

pub(crate) fn task(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<TaskWorkload> {
    let lease = lease(t, d, facts);
    let fix = format!("`tasks` is how many tasks the generator creates in all, 1 to {MAX_TASKS}");
    let tasks = t.get("tasks", d, |v, d| v.integer(d, 1, MAX_TASKS, &fix)).or(20);
    let task_every_ns = t.get("task_every", d, |v, d| v.duration_range(d)).or((100 * NS_PER_MS, 500 * NS_PER_MS));
    let work_ns = t.get("work", d, |v, d| v.duration_range(d)).or((100 * NS_PER_MS, 1000 * NS_PER_MS));
    let poll_ns = t.get("poll", d, |v, d| positive_range(v, d)).or((50 * NS_PER_MS, 200 * NS_PER_MS));
    let margin = t.get("margin", d, |v, d| v.fraction(d, "0.1")).or(0.1);
    let belief_from = t.get("belief_from", d, |v, d| belief_from(v, d)).or(BeliefFrom::Send);
    let (ttl_ns, keepalive_ns) = lease?;
    Some(TaskWorkload {
        ttl_ns,
        keepalive_ns,
        tasks: tasks?,
        task_every_ns: task_every_ns?,
        work_ns: work_ns?,
        poll_ns: poll_ns?,
        margin: margin?,
        belief_from: belief_from?,
    })
}

/// A task workload's first client generates and the others work, so it
/// needs two at least. `clients` is `None` when already reported.
pub(crate) fn check_task_clients(clients: Option<u64>, value: Option<&Val<'_>>, d: &mut Diags) -> bool {
    match (clients, value) {
        (Some(n), Some(v)) if n < 2 => {
            let message = format!("`clients` = {n}: a task workload needs a generator and at least one worker");
            v.error(d, message, "write `clients = 2` or more: the first client generates tasks, the others work on them");
            false
        }
        (clients, _) => clients.is_some(),
    }
}

/// The singleton and where its role is written (for the checks across
/// workloads; the table's header when the role is the default).
pub(crate) fn singleton(
    t: &mut TableReader<'_>,
    d: &mut Diags,
    facts: &ScenarioFacts,
) -> Option<(SingletonWorkload, Option<Range<usize>>)> {
    let mut role_span = t.span.clone();
    let role = t
        .get("role", d, |v, d| {
            role_span = v.span.clone();
            role(v, d)
        })
        .or_else(|| DEFAULT_ROLE.to_string());
    let lease = lease(t, d, facts);
    let interval_ns = t.get("interval", d, |v, d| positive_range(v, d)).or((100 * NS_PER_MS, 300 * NS_PER_MS));
    let poll_ns = t.get("poll", d, |v, d| positive_range(v, d)).or((100 * NS_PER_MS, 300 * NS_PER_MS));
    let margin = t.get("margin", d, |v, d| v.fraction(d, "0.1")).or(0.1);
    let belief_from = t.get("belief_from", d, |v, d| belief_from(v, d)).or(BeliefFrom::Send);
    let (ttl_ns, keepalive_ns) = lease?;
    let singleton = SingletonWorkload {
        role: role?,
        ttl_ns,
        keepalive_ns,
        interval_ns: interval_ns?,
        poll_ns: poll_ns?,
        margin: margin?,
        belief_from: belief_from?,
    };
    Some((singleton, role_span))
}

/// A role names a KV key and a selector (`holder:ROLE`): printable, no
/// spaces, not empty.
fn role(v: &Val<'_>, d: &mut Diags) -> Option<String> {
    let text = v.string(d, "\"generator\"")?;
    let fine = !text.is_empty() && text.chars().all(|c| c.is_ascii_graphic());
    if fine {
        return Some(text.to_string());
    }
    v.error(
        d,
        format!("`role` = {:?} is not a usable name", text),
        "name the role with printable characters and no spaces, e.g. \"generator\"",
    );
    None
}

/// A range whose low end is above zero: an instance that waits zero time
/// between two tries would spin without ever letting time pass.
fn positive_range(v: &Val<'_>, d: &mut Diags) -> Option<(u64, u64)> {
    let range = v.duration_range(d)?;
    if range.0 > 0 {
        return Some(range);
    }
    v.error(d, format!("`{}` must be longer than zero", v.key), format!("write e.g. `{} = [\"50ms\", \"200ms\"]`", v.key));
    None
}
