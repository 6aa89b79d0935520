//! The `[chaos]` table: seeded random faults on top of the timeline.
//!
//! Each fault kind is on when its mean interval is given; its length range
//! alone would do nothing, so giving one without the other is an error
//! rather than a silently ignored line. Kinds aimed at a role (`leader`,
//! a lock's holder, membership) are checked against the rest of the file:
//! a kind that could never find its target is an error, not a quiet no-op.

use std::ops::Range;

use super::error::Diags;
use super::fields::{Field, TableReader, Val};
use super::model::{Chaos, ChaosJumps, ChaosRate};
use super::selector::ScenarioFacts;

const KEYS: [&str; 31] = [
    "slow_links",
    "slow_link_for",
    "slow_link_by",
    "leader_isolations",
    "leader_isolation_for",
    "partition_clients",
    "leader_isolation_clients",
    "knobs",
    "crash_points",
    "crash_point_for",
    "pause_points",
    "pause_point_for",
    "timer_jumps",
    "timer_jump",
    "partitions",
    "partition_for",
    "crashes",
    "crash_for",
    "pauses",
    "pause_for",
    "clock_jumps",
    "jump",
    "leader_crashes",
    "leader_crash_for",
    "holder_pauses",
    "holder_pause_for",
    "membership",
    "partition_replacements",
    "drift",
    "swarm",
    "swarm_off",
];
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;

/// Default length ranges when only the mean interval is given.
pub(crate) const PARTITION_FOR_NS: (u64, u64) = (NS_PER_SEC, 5 * NS_PER_SEC);
pub(crate) const CRASH_FOR_NS: (u64, u64) = (NS_PER_SEC, 5 * NS_PER_SEC);
pub(crate) const PAUSE_FOR_NS: (u64, u64) = (500 * NS_PER_MS, 3 * NS_PER_SEC);
pub(crate) const JUMP_NS: (i64, i64) = (-(NS_PER_SEC as i64), NS_PER_SEC as i64);
/// Crashes at a fault point are back within milliseconds: what matters is
/// what the step had done when it stopped, and a quick restart is what
/// asks a server again in the term it voted in.
pub(crate) const CRASH_POINT_FOR_NS: (u64, u64) = (NS_PER_MS, 20 * NS_PER_MS);
pub(crate) const PAUSE_POINT_FOR_NS: (u64, u64) = (5 * NS_PER_MS, NS_PER_SEC);
/// Slow links add up to this much per message: past an election timeout,
/// so replies arrive after the term they answer has ended.
pub(crate) const SLOW_LINK_BY_NS: (u64, u64) = (200 * NS_PER_MS, NS_PER_SEC);

pub(crate) fn chaos(mut t: TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<Chaos> {
    let partitions = paired(&mut t, d, "partitions", "partition_for", |v, d| v.duration_range(d), PARTITION_FOR_NS);
    let crashes = paired(&mut t, d, "crashes", "crash_for", |v, d| v.duration_range(d), CRASH_FOR_NS);
    let pauses = paired(&mut t, d, "pauses", "pause_for", |v, d| v.duration_range(d), PAUSE_FOR_NS);
    let clock_jumps = paired(&mut t, d, "clock_jumps", "jump", |v, d| v.signed_range(d), JUMP_NS);
    let leader_crashes = paired(&mut t, d, "leader_crashes", "leader_crash_for", |v, d| v.duration_range(d), CRASH_FOR_NS);
    let leader_isolations = paired(&mut t, d, "leader_isolations", "leader_isolation_for", |v, d| v.duration_range(d), PARTITION_FOR_NS);
    let slow_links = paired(&mut t, d, "slow_links", "slow_link_for", |v, d| v.duration_range(d), PARTITION_FOR_NS);
    let slow_by_span = t.key_span("slow_link_by");
    let slow_link_by = t.get("slow_link_by", d, |v, d| v.duration_range(d)).or(SLOW_LINK_BY_NS);
    let crash_points = paired(&mut t, d, "crash_points", "crash_point_for", |v, d| v.duration_range(d), CRASH_POINT_FOR_NS);
    let pause_points = paired(&mut t, d, "pause_points", "pause_point_for", |v, d| v.duration_range(d), PAUSE_POINT_FOR_NS);
    let timer_jumps = paired(&mut t, d, "timer_jumps", "timer_jump", |v, d| v.signed_range(d), JUMP_NS);
    let holder_pauses = needs(&mut t, d, "holder_pauses", holder_problem(facts), |t, d| {
        paired(t, d, "holder_pauses", "holder_pause_for", |v, d| v.duration_range(d), PAUSE_FOR_NS)
    });
    let membership = membership(&mut t, d, facts);
    let (clients_span, partition_clients) = probability(&mut t, d, "partition_clients");
    let (isolation_clients_span, leader_isolation_clients) = probability(&mut t, d, "leader_isolation_clients");
    let (replacements_span, partition_replacements) = probability(&mut t, d, "partition_replacements");
    let drift = t.get("drift", d, |v, d| v.fraction(d, "0.01")).or(0.0);
    let swarm = t.get("swarm", d, |v, d| v.boolean(d)).or(false);
    let (swarm_off_span, swarm_off) = probability(&mut t, d, "swarm_off");
    let knobs = t.get("knobs", d, |v, d| v.boolean(d)).or(false);
    t.finish(d, &KEYS);
    // A setting that would do nothing is an error at its key (the first
    // one found: they are checked in this order).
    let pointless = [
        (replacements_span, replacements_problem(partition_replacements, is_off(&partitions), facts)),
        (clients_span, no_effect("partition_clients", partition_clients, is_off(&partitions), "`partitions`", "partitions = \"10s\"")),
        (
            isolation_clients_span,
            no_effect(
                "leader_isolation_clients",
                leader_isolation_clients,
                is_off(&leader_isolations),
                "`leader_isolations`",
                "leader_isolations = \"10s\"",
            ),
        ),
        (swarm_off_span, no_effect("swarm_off", swarm_off, swarm == Some(false), "`swarm = true`", "swarm = true")),
        (slow_by_span, slow_by_problem(is_off(&slow_links), slow_link_by)),
    ];
    if let Some((span, (message, fix))) = pointless.into_iter().find_map(|(span, problem)| Some((span, problem?))) {
        d.error(span, message, fix);
        return None;
    }
    let rate =
        |pair: Option<Option<(u64, (u64, u64))>>| pair.map(|p| p.map(|(mean_interval_ns, for_ns)| ChaosRate { mean_interval_ns, for_ns }));
    let jumps = |pair: Option<Option<(u64, (i64, i64))>>| {
        pair.map(|p| p.map(|(mean_interval_ns, jump_ns)| ChaosJumps { mean_interval_ns, jump_ns }))
    };
    Some(Chaos {
        partitions: rate(partitions)?,
        crashes: rate(crashes)?,
        pauses: rate(pauses)?,
        clock_jumps: jumps(clock_jumps)?,
        leader_crashes: rate(leader_crashes)?,
        leader_isolations: rate(leader_isolations)?,
        slow_links: rate(slow_links)?.map(|rate| (rate, slow_link_by.expect("read above"))),
        crash_points: rate(crash_points)?,
        pause_points: rate(pause_points)?,
        timer_jumps: jumps(timer_jumps)?,
        holder_pauses: rate(holder_pauses)?,
        membership_ns: membership?,
        partition_replacements: partition_replacements?,
        partition_clients: partition_clients?,
        leader_isolation_clients: leader_isolation_clients?,
        drift: drift?,
        swarm: swarm?,
        swarm_off: swarm_off?,
        knobs: knobs?,
    })
}

/// `membership`, off when absent; an error when there is no spare to add.
fn membership(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<Option<u64>> {
    needs(t, d, "membership", membership_problem(facts), |t, d| match t.get("membership", d, |v, d| v.positive_duration(d)) {
        Field::Missing => Some(None),
        Field::Bad => None,
        Field::Ok(ns) => Some(Some(ns)),
    })
}

/// A probability (0 when absent; `None` when bad), with its key's span.
fn probability(t: &mut TableReader<'_>, d: &mut Diags, key: &str) -> (Option<Range<usize>>, Option<f64>) {
    let span = t.key_span(key);
    (span, t.get(key, d, |v, d| v.probability(d)).or(0.0))
}

/// Whether a kind was read and is off (not bad, not on).
fn is_off<T>(kind: &Option<Option<T>>) -> bool {
    matches!(kind, Some(None))
}

/// Why probability `key` = `p` would do nothing: what it acts on,
/// `needed`, is off. The fix adds `add`.
fn no_effect(key: &str, p: Option<f64>, needed_off: bool, needed: &str, add: &str) -> Option<(String, String)> {
    let p = p.filter(|p| *p > 0.0 && needed_off)?;
    Some((format!("`{key}` = {p} has no effect without {needed}"), format!("add `{add}`, or remove `{key}`")))
}

/// Why `partition_replacements` would do nothing: no partitions to follow,
/// or no spare to add.
fn replacements_problem(p: Option<f64>, partitions_off: bool, facts: &ScenarioFacts) -> Option<(String, String)> {
    let p = p.filter(|p| *p > 0.0)?;
    if partitions_off {
        return no_effect("partition_replacements", Some(p), true, "`partitions`", "partitions = \"10s\"");
    }
    let (_, fix) = membership_problem(facts)?;
    Some(("`partition_replacements` needs spare servers to add".to_string(), fix))
}

/// Why a `slow_link_by` other than the default would do nothing.
fn slow_by_problem(slow_links_off: bool, by: Option<(u64, u64)>) -> Option<(String, String)> {
    (slow_links_off && by.is_some_and(|by| by != SLOW_LINK_BY_NS)).then(|| {
        (
            "`slow_link_by` has no effect without `slow_links`".to_string(),
            "add `slow_links = \"10s\"`, or remove `slow_link_by`".to_string(),
        )
    })
}

/// Why `holder_pauses` could never fire, if it could not: there is no lock
/// to hold. `None` also when the workloads were bad (reported there).
fn holder_problem(facts: &ScenarioFacts) -> Option<(String, String)> {
    let keys = facts.lock_keys.as_ref()?;
    keys.is_empty().then(|| {
        (
            "`holder_pauses` needs a lock or singleton workload: no client ever holds a lock or a role here".to_string(),
            "add a `[[workload]]` with `kind = \"lock\"`, or use `pauses` to pause any process".to_string(),
        )
    })
}

/// Why `membership` could never do anything, if it could not: there is no
/// spare to add (removals alone would only shrink the cluster).
fn membership_problem(facts: &ScenarioFacts) -> Option<(String, String)> {
    (facts.spares? == 0).then(|| {
        (
            "`membership` needs spare servers to add: each change adds a spare and removes a server".to_string(),
            "add `spares = 2` to [cluster], or remove the membership chaos".to_string(),
        )
    })
}

/// Reads a kind with `read`, then reports `problem` at its key if the kind
/// is on although the file gives it nothing to act on.
fn needs<'a, T>(
    t: &mut TableReader<'a>,
    d: &mut Diags,
    key: &str,
    problem: Option<(String, String)>,
    read: impl FnOnce(&mut TableReader<'a>, &mut Diags) -> Option<Option<T>>,
) -> Option<Option<T>> {
    let key_span = t.key_span(key);
    let value = read(t, d)?;
    match (value, problem) {
        (Some(_), Some((message, fix))) => {
            d.error(key_span, message, fix);
            None
        }
        (value, _) => Some(value),
    }
}

/// A mean interval and the range that goes with it: `Some(None)` when the
/// kind is off, `None` when something was bad.
fn paired<'a, R>(
    t: &mut TableReader<'a>,
    d: &mut Diags,
    every_key: &str,
    range_key: &str,
    read_range: impl FnOnce(&Val<'a>, &mut Diags) -> Option<R>,
    default: R,
) -> Option<Option<(u64, R)>> {
    let every = t.get(every_key, d, |v, d| v.positive_duration(d));
    let range = t.take(range_key);
    let range_value = range.as_ref().map(|v| read_range(v, d));
    match (every, range_value) {
        (Field::Missing, None) => Some(None),
        (Field::Missing, Some(_)) => {
            let fix = format!("add `{every_key} = \"10s\"` (the mean time between them), or remove `{range_key}`");
            if let Some(v) = range {
                d.error(v.key_span.clone(), format!("`{range_key}` has no effect without `{every_key}`"), fix);
            }
            None
        }
        (Field::Bad, _) | (_, Some(None)) => None,
        (Field::Ok(every_ns), range_value) => Some(Some((every_ns, range_value.flatten().unwrap_or(default)))),
    }
}
