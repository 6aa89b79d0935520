//! `[[workload]]` tables for etcd's data model: `kind = "watch"` (watch
//! clients that resume from their last seen revision, judged by
//! `watch-delivery`) and `kind = "txn"` (multi-key txns, judged by
//! `linearizable` over a multi-key model).

use super::error::Diags;
use super::fields::{TableReader, Val};
use super::model::{TxnWorkload, WatchStart, WatchWorkload};
use super::suggest;

pub(crate) const WATCH_KEYS: [&str; 6] = ["kind", "clients", "prefix", "start", "prev_kv", "check_every"];
pub(crate) const TXN_KEYS: [&str; 4] = ["kind", "clients", "keys", "interval"];

/// Most keys a txn workload spreads its txns over.
const MAX_TXN_KEYS: u64 = 100;

const NS_PER_MS: u64 = 1_000_000;

pub(crate) fn watch(t: &mut TableReader<'_>, d: &mut Diags) -> Option<WatchWorkload> {
    let prefix = t.get("prefix", d, |v, d| v.string(d, "\"t\"").map(str::to_string)).or(String::new());
    let start = t.get("start", d, |v, d| start(v, d)).or(WatchStart::Now);
    let prev_kv = t.get("prev_kv", d, |v, d| v.boolean(d)).or(true);
    let check_every_ns = t.get("check_every", d, |v, d| v.positive_duration(d)).or(200 * NS_PER_MS);
    Some(WatchWorkload { prefix: prefix?, start: start?, prev_kv: prev_kv?, check_every_ns: check_every_ns? })
}

fn start(v: &Val<'_>, d: &mut Diags) -> Option<WatchStart> {
    match v.string(d, "\"now\"")? {
        "now" => Some(WatchStart::Now),
        "first" => Some(WatchStart::First),
        other => {
            let message = format!("unknown `start` = \"{other}\"{}", suggest::did_you_mean(other, ["now", "first"]));
            v.error(d, message, "use \"now\" (the server's revision when the watch opens) or \"first\" (revision 1: the whole history)");
            None
        }
    }
}

pub(crate) fn txn(t: &mut TableReader<'_>, d: &mut Diags) -> Option<TxnWorkload> {
    let fix = format!("for kind = \"txn\", `keys` is how many keys the txns span, 2 to {MAX_TXN_KEYS}");
    let keys = t.get("keys", d, |v, d| v.integer(d, 2, MAX_TXN_KEYS, &fix)).or(3);
    let interval_ns = t.get("interval", d, |v, d| v.duration_range(d)).or((10 * NS_PER_MS, 100 * NS_PER_MS));
    Some(TxnWorkload { keys: keys?, interval_ns: interval_ns? })
}
