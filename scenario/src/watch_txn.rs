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

#[cfg(test)]
mod tests {
    use crate::model::{WatchStart, WorkloadKind};
    use crate::{parse, to_toml};

    const HEAD: &str = "name = \"w\"\nduration = \"5s\"\n\n";

    fn workloads(body: &str) -> Result<Vec<WorkloadKind>, String> {
        parse(&format!("{HEAD}{body}"), "w.toml").map(|s| s.workloads.into_iter().map(|w| w.kind).collect()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_given_values_are_read_and_written_back() {
        let body = "[[workload]]\nkind = \"watch\"\nclients = 2\n\n[[workload]]\nkind = \"watch\"\nclients = 1\nprefix = \"t\"\nstart = \"first\"\nprev_kv = false\ncheck_every = \"50ms\"\n\n[[workload]]\nkind = \"txn\"\nclients = 2\nkeys = 5\n";
        let kinds = workloads(body).unwrap();
        let [WorkloadKind::Watch(a), WorkloadKind::Watch(b), WorkloadKind::Txn(t)] = &kinds[..] else { panic!("{kinds:?}") };
        assert_eq!((a.prefix.as_str(), a.start, a.prev_kv, a.check_every_ns), ("", WatchStart::Now, true, 200_000_000));
        assert_eq!((b.prefix.as_str(), b.start, b.prev_kv, b.check_every_ns), ("t", WatchStart::First, false, 50_000_000));
        assert_eq!((t.keys, t.interval_ns), (5, (10_000_000, 100_000_000)));
        let scenario = parse(&format!("{HEAD}{body}"), "w.toml").unwrap();
        let again = parse(&to_toml(&scenario), "w.toml").unwrap();
        assert_eq!(again, scenario);
    }

    #[test]
    fn bad_values_are_errors_at_their_line() {
        let start = workloads("[[workload]]\nkind = \"watch\"\nclients = 1\nstart = \"nwo\"\n").unwrap_err();
        assert!(start.contains("w.toml:7:9") && start.contains("unknown `start` = \"nwo\"; did you mean `now`"), "{start}");
        let keys = workloads("[[workload]]\nkind = \"txn\"\nclients = 1\nkeys = 1\n").unwrap_err();
        assert!(keys.contains("w.toml:7:") && keys.contains("2 to 100"), "{keys}");
        let unknown = workloads("[[workload]]\nkind = \"txn\"\nclients = 1\nprefix = \"t\"\n").unwrap_err();
        assert!(unknown.contains("unknown key `prefix`"), "{unknown}");
        let kind = workloads("[[workload]]\nkind = \"wach\"\nclients = 1\n").unwrap_err();
        assert!(kind.contains("did you mean `watch`"), "{kind}");
    }
}
