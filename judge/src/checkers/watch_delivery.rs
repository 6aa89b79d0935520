//! `watch-delivery`: every watch sees every committed change of its keys at
//! or above its start revision exactly once, in revision order, with the
//! committed value (and the value before, when it asked for it) — etcd's
//! watch guarantees (ordered, unique, reliable, atomic, resumable) as a
//! client that resumes from its last seen revision + 1 relies on them,
//! across disconnects, leader changes and member restarts.
//!
//! The truth is the run's committed history: the longest store history
//! among the servers at the end (every server applies a prefix of the same
//! committed sequence, which `state-machine-safety` checks apart). A
//! watch's events must be a prefix of the history's changes of its range
//! from its start: the first event that differs is a skipped, repeated,
//! reordered or wrong event. Reliability past the prefix: a watch whose
//! client lived to the end must have seen every change applied before the
//! settle phase began (the settle phase heals every fault, and is long
//! enough to resume).

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::kv::{Change, KeyRange};

use super::{RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;

/// Settle time a watcher needs to notice a lost server and resume
/// elsewhere; below it the completeness rule is not judged.
const RESUME_SLACK_NS: u64 = 3_000_000_000;

/// One delivered event as the client recorded it.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    at_ns: u64,
    revision: u64,
    key: String,
    value: Option<String>,
    prev: Option<String>,
}

struct Watch {
    client: u64,
    range: KeyRange,
    start_revision: u64,
    prev_kv: bool,
    seen: Vec<Seen>,
    /// The client crashed after it opened the watch: the watch died then.
    dead: bool,
    /// The server refused a resume below its compaction: the watch ended.
    compacted: bool,
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let watches = collect(run);
    if watches.is_empty() {
        return Vec::new();
    }
    let truth = run.servers.values().map(|s| &s.changes).max_by_key(|c| c.last().map_or(0, |c| c.revision)).cloned().unwrap_or_default();
    let applied_at = first_applications(run);
    watches.iter().find_map(|((_, id), w)| judge(run, *id, w, &truth, &applied_at)).into_iter().collect()
}

fn collect(run: &RunRecord<'_>) -> BTreeMap<(u64, u64), Watch> {
    let mut watches: BTreeMap<(u64, u64), Watch> = BTreeMap::new();
    for o in run.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::WatchOpened { watch, key, range_end, start_revision, prev_kv, .. } => {
                let range = KeyRange { key: key.as_bytes().to_vec(), range_end: range_end.as_bytes().to_vec() };
                let (start_revision, prev_kv) = (*start_revision, *prev_kv);
                let w = Watch { client, range, start_revision, prev_kv, seen: Vec::new(), dead: false, compacted: false };
                watches.insert((client, *watch), w);
            }
            Event::WatchEvent { watch, revision, key, value, prev } => {
                if let Some(w) = watches.get_mut(&(client, *watch)) {
                    let seen = Seen { at_ns: o.at_ns, revision: *revision, key: key.clone(), value: value.clone(), prev: prev.clone() };
                    w.seen.push(seen);
                }
            }
            Event::WatchCompacted { watch, .. } => {
                if let Some(w) = watches.get_mut(&(client, *watch)) {
                    w.compacted = true;
                }
            }
            Event::Crashed => watches.values_mut().filter(|w| w.client == client).for_each(|w| w.dead = true),
            _ => {}
        }
    }
    watches
}

/// The true time each log index was first applied anywhere.
fn first_applications(run: &RunRecord<'_>) -> BTreeMap<u64, u64> {
    let mut at: BTreeMap<u64, u64> = BTreeMap::new();
    for o in run.obs {
        if let Event::Server { event: ServerEvent::Applied { index, .. } } = &o.event {
            at.entry(*index).or_insert(o.at_ns);
        }
    }
    at
}

fn text(v: &Option<leasesim_core::service::kv::KvValue>) -> Option<String> {
    v.as_ref().map(|v| String::from_utf8_lossy(&v.value).into_owned())
}

fn expected(change: &Change, prev_kv: bool) -> (u64, String, Option<String>, Option<String>) {
    let prev = if prev_kv { text(&change.prev) } else { None };
    (change.revision, String::from_utf8_lossy(&change.key).into_owned(), text(&change.current), prev)
}

fn show(revision: u64, key: &str, value: &Option<String>) -> String {
    match value {
        Some(v) => format!("PUT {key}={v} at revision {revision}"),
        None => format!("DELETE {key} at revision {revision}"),
    }
}

fn judge(run: &RunRecord<'_>, id: u64, w: &Watch, truth: &[Change], applied_at: &BTreeMap<u64, u64>) -> Option<Violation> {
    let owed: Vec<&Change> = truth.iter().filter(|c| c.revision >= w.start_revision && w.range.contains(&c.key)).collect();
    let who = format!("c{}'s watch {id} (from revision {})", w.client, w.start_revision);
    for (i, seen) in w.seen.iter().enumerate() {
        let got = (seen.revision, seen.key.clone(), seen.value.clone(), seen.prev.clone());
        let Some(change) = owed.get(i) else {
            let detail =
                format!("{who} got {}, beyond every change of its keys the cluster committed", show(seen.revision, &seen.key, &seen.value));
            return Some(run.violation("watch-delivery", seen.at_ns, detail));
        };
        let want = expected(change, w.prev_kv);
        if got == want {
            continue;
        }
        let later = owed[i + 1..].iter().any(|c| c.revision == seen.revision && c.key == seen.key.as_bytes());
        let what = if later {
            format!("skipped {}: its next event was {}", show(want.0, &want.1, &want.2), show(seen.revision, &seen.key, &seen.value))
        } else if i > 0 && (seen.revision, &seen.key) <= (w.seen[i - 1].revision, &w.seen[i - 1].key) {
            format!("got {} again or out of order, after revision {}", show(seen.revision, &seen.key, &seen.value), w.seen[i - 1].revision)
        } else {
            format!(
                "got {} (prev {:?}) where the committed change is {} (prev {:?})",
                show(got.0, &got.1, &got.2),
                got.3,
                show(want.0, &want.1, &want.2),
                want.3
            )
        };
        return Some(run.violation("watch-delivery", seen.at_ns, format!("{who} {what}")));
    }
    let settled = run.end_ns.saturating_sub(run.settle_at_ns) >= RESUME_SLACK_NS;
    if w.dead || w.compacted || !settled {
        return None;
    }
    let missing = owed.get(w.seen.len()).filter(|c| applied_at.get(&c.revision).is_some_and(|at| *at < run.settle_at_ns))?;
    let applied = applied_at.get(&missing.revision).copied().unwrap_or(0);
    let detail = format!(
        "{who} never got {} (applied at {}, before the settle phase began at {}); it saw {} event(s)",
        show(missing.revision, &String::from_utf8_lossy(&missing.key), &text(&missing.current)),
        fmt_secs(applied),
        fmt_secs(run.settle_at_ns),
        w.seen.len()
    );
    Some(run.violation("watch-delivery", run.end_ns, detail))
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::kv::{Change, KvValue};

    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    fn value(v: &str, revision: u64) -> KvValue {
        KvValue { value: v.as_bytes().to_vec(), create_revision: revision, mod_revision: revision, version: 1, lease: None }
    }

    /// The committed history: t0=a at 3, t1=b at 4 (one txn's two keys
    /// would share a revision; these are two), t0 deleted at 6, x=z at 7.
    fn history() -> Vec<Change> {
        let put =
            |rev, key: &str, v: &str, prev: Option<KvValue>| Change { revision: rev, key: key.into(), prev, current: Some(value(v, rev)) };
        vec![
            put(3, "t0", "a", None),
            put(4, "t1", "b", None),
            Change { revision: 6, key: b"t0".to_vec(), prev: Some(value("a", 3)), current: None },
            put(7, "x", "z", None),
        ]
    }

    /// A watch of the `t` keys from revision 1 with the given events
    /// (revision, key, value, prev), each 100 ms apart, and the history
    /// applied early in the fault phase.
    fn run(events: &[(u64, &str, Option<&str>, Option<&str>)]) -> Fixture {
        let mut run = Fixture::new();
        for server in run.servers.values_mut() {
            server.changes = history();
        }
        for (i, rev) in [3u64, 4, 6, 7].into_iter().enumerate() {
            let event = leasesim_core::server::ServerEvent::Applied { index: rev, term: 1, fingerprint: 0, state: 0 };
            run.everywhere(S + i as u64 * 10 * MS, event);
        }
        let opened = Event::WatchOpened { watch: 1, key: "t".into(), range_end: "u".into(), start_revision: 1, prev_kv: true, server: 1 };
        run.push(S / 2, Proc::Client(1), opened);
        for (i, (revision, key, value, prev)) in events.iter().enumerate() {
            let (value, prev) = (value.map(String::from), prev.map(String::from));
            let event = Event::WatchEvent { watch: 1, revision: *revision, key: key.to_string(), value, prev };
            run.push(2 * S + i as u64 * 100 * MS, Proc::Client(1), event);
        }
        run
    }

    const ALL: [(u64, &str, Option<&str>, Option<&str>); 3] =
        [(3, "t0", Some("a"), None), (4, "t1", Some("b"), None), (6, "t0", None, Some("a"))];

    #[test]
    fn every_change_once_in_order_is_fine() {
        assert!(super::check(&run(&ALL).record()).is_empty());
    }

    #[test]
    fn a_skipped_event_fires() {
        let violations = super::check(&run(&[ALL[0], ALL[2]]).record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].invariant, "watch-delivery");
        assert!(violations[0].detail.contains("skipped PUT t1=b at revision 4"), "{}", violations[0].detail);
        assert!(violations[0].assumptions_held, "exact clocks: a bug, not a broken assumption");
    }

    #[test]
    fn a_repeated_event_fires() {
        let violations = super::check(&run(&[ALL[0], ALL[1], ALL[1], ALL[2]]).record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("again or out of order"), "{}", violations[0].detail);
    }

    #[test]
    fn a_wrong_value_or_prev_value_fires() {
        let wrong = super::check(&run(&[ALL[0], (4, "t1", Some("c"), None), ALL[2]]).record());
        assert!(wrong[0].detail.contains("where the committed change is PUT t1=b"), "{}", wrong[0].detail);
        let no_prev = super::check(&run(&[ALL[0], ALL[1], (6, "t0", None, None)]).record());
        assert_eq!(no_prev.len(), 1, "prev_kv was asked for: {no_prev:?}");
    }

    #[test]
    fn an_event_the_cluster_never_committed_fires() {
        let violations = super::check(&run(&[ALL[0], ALL[1], ALL[2], (8, "t2", Some("q"), None)]).record());
        assert!(violations[0].detail.contains("beyond every change"), "{}", violations[0].detail);
    }

    #[test]
    fn a_live_watch_missing_old_changes_at_the_end_fires_and_a_dead_one_does_not() {
        let violations = super::check(&run(&ALL[..2]).record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("never got DELETE t0 at revision 6"), "{}", violations[0].detail);
        let mut crashed = run(&ALL[..2]);
        crashed.push(3 * S, Proc::Client(1), Event::Crashed);
        assert!(super::check(&crashed.record()).is_empty(), "a crashed client's watch owes nothing more");
    }
}
