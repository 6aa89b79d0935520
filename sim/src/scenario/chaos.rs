//! The `[chaos]` table: seeded random faults on top of the timeline.
//!
//! Each fault kind is on when its mean interval is given; its length range
//! alone would do nothing, so giving one without the other is an error
//! rather than a silently ignored line.

use super::error::Diags;
use super::fields::{Field, TableReader, Val};
use super::model::{Chaos, ChaosJumps, ChaosRate};

const KEYS: [&str; 10] = ["partitions", "partition_for", "crashes", "crash_for", "pauses", "pause_for", "clock_jumps", "jump", "drift", "swarm"];
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;

/// Default length ranges when only the mean interval is given.
pub(crate) const PARTITION_FOR_NS: (u64, u64) = (NS_PER_SEC, 5 * NS_PER_SEC);
pub(crate) const CRASH_FOR_NS: (u64, u64) = (NS_PER_SEC, 5 * NS_PER_SEC);
pub(crate) const PAUSE_FOR_NS: (u64, u64) = (500 * NS_PER_MS, 3 * NS_PER_SEC);
pub(crate) const JUMP_NS: (i64, i64) = (-(NS_PER_SEC as i64), NS_PER_SEC as i64);

pub(crate) fn chaos(mut t: TableReader<'_>, d: &mut Diags) -> Option<Chaos> {
    let partitions = paired(&mut t, d, "partitions", "partition_for", |v, d| v.duration_range(d), PARTITION_FOR_NS);
    let crashes = paired(&mut t, d, "crashes", "crash_for", |v, d| v.duration_range(d), CRASH_FOR_NS);
    let pauses = paired(&mut t, d, "pauses", "pause_for", |v, d| v.duration_range(d), PAUSE_FOR_NS);
    let clock_jumps = paired(&mut t, d, "clock_jumps", "jump", |v, d| v.signed_range(d), JUMP_NS);
    let drift = t.get("drift", d, |v, d| v.fraction(d, "0.01")).or(0.0);
    let swarm = t.get("swarm", d, |v, d| v.boolean(d)).or(false);
    t.finish(d, &KEYS);
    let rate = |pair: Option<Option<(u64, (u64, u64))>>| pair.map(|p| p.map(|(mean_interval_ns, for_ns)| ChaosRate { mean_interval_ns, for_ns }));
    Some(Chaos {
        partitions: rate(partitions)?,
        crashes: rate(crashes)?,
        pauses: rate(pauses)?,
        clock_jumps: clock_jumps?.map(|(mean_interval_ns, jump_ns)| ChaosJumps { mean_interval_ns, jump_ns }),
        drift: drift?,
        swarm: swarm?,
    })
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
