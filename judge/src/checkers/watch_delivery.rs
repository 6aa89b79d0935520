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
use leasesim_core::service::kv::{Change, KeyRange};
use leasesim_core::server::ServerEvent;

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
            let detail = format!("{who} got {}, beyond every change of its keys the cluster committed", show(seen.revision, &seen.key, &seen.value));
            return Some(run.violation("watch-delivery", seen.at_ns, detail));
        };
        let want = expected(change, w.prev_kv);
        if got == want {
            continue;
        }
        let later = owed[i..].iter().any(|c| c.revision == seen.revision && c.key == seen.key.as_bytes());
        let what = if later {
            format!("skipped {}: its next event was {}", show(want.0, &want.1, &want.2), show(seen.revision, &seen.key, &seen.value))
        } else if i > 0 && (seen.revision, &seen.key) <= (w.seen[i - 1].revision, &w.seen[i - 1].key) {
            format!("got {} again or out of order, after revision {}", show(seen.revision, &seen.key, &seen.value), w.seen[i - 1].revision)
        } else {
            format!("got {} (prev {:?}) where the committed change is {} (prev {:?})", show(got.0, &got.1, &got.2), got.3, show(want.0, &want.1, &want.2), want.3)
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
