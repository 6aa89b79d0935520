//! Each lock key's track: who the cluster says held it when (from the
//! servers' grants and releases), what each client believed (the very
//! windows `lock-belief-overlap` judges) and which writes the data store
//! took or refused.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::server::ServerEvent;
use leasesim_core::service::{ReleaseCause, RevokeCause, ServiceEvent};
use leasesim_judge::checkers::belief_windows;
use leasesim_judge::observe::{BeliefEnd, Event, Obs};
use leasesim_judge::vocab::{Proc, SimClock};

use crate::model::{Belief, Hold, LockTrack, StoreWrite};

/// Per lock key: who held it when, what each client believed, and which
/// writes the store took; the scenario's keys (`lock_keys`) first, in its
/// order.
pub(super) fn lock_tracks(lock_keys: &[String], obs: &[Obs], clocks: &BTreeMap<Proc, SimClock>, end_ns: u64) -> Vec<LockTrack> {
    let mut tracks = holds_and_writes(obs, end_ns);
    add_beliefs(&mut tracks, obs, clocks, end_ns);
    in_scenario_order(lock_keys, tracks)
}

/// Tracks (keyed by the map; their `key` field is set when ordered) with
/// every hold, as the cluster granted and released it, and every write
/// the store accepted or rejected.
fn holds_and_writes(obs: &[Obs], end_ns: u64) -> BTreeMap<String, LockTrack> {
    let mut tracks: BTreeMap<String, LockTrack> = BTreeMap::new();
    let mut lease_end: BTreeMap<u64, RevokeCause> = BTreeMap::new();
    let mut open: BTreeMap<(String, u64), Hold> = BTreeMap::new();
    let mut closed: BTreeSet<(String, u64)> = BTreeSet::new();
    for o in obs {
        match &o.event {
            // Every server applies the same grant; the first apply is when
            // the cluster decided it.
            Event::Server { event: ServerEvent::Service { event: ServiceEvent::LockGranted { key, client, lease, token, .. }, .. } } => {
                let id = (key.clone(), *token);
                if !open.contains_key(&id) && !closed.contains(&id) {
                    tracks.entry(key.clone()).or_default();
                    let end = "still held at the end".into();
                    open.insert(id, Hold { client: *client, token: *token, lease: *lease, start_ns: o.at_ns, end_ns, end });
                }
            }
            Event::Server { event: ServerEvent::Service { event: ServiceEvent::LeaseRevoked { lease, cause, .. }, .. } } => {
                lease_end.entry(*lease).or_insert(*cause);
            }
            Event::Server { event: ServerEvent::Service { event: ServiceEvent::LockReleased { key, token, cause, .. }, .. } } => {
                let id = (key.clone(), *token);
                if let Some(mut hold) = open.remove(&id) {
                    hold.end_ns = o.at_ns;
                    hold.end = release_text(cause, lease_end.get(&hold.lease), hold.lease);
                    tracks.entry(key.clone()).or_default().holds.push(hold);
                    closed.insert(id);
                }
            }
            Event::StoreAccepted { client, key, token } | Event::StoreRejected { client, key, token, .. } => {
                let highest = match &o.event {
                    Event::StoreRejected { highest, .. } => Some(*highest),
                    _ => None,
                };
                let write = StoreWrite { at_ns: o.at_ns, client: *client, token: *token, accepted: highest.is_none(), highest };
                tracks.entry(key.clone()).or_default().writes.push(write);
            }
            _ => {}
        }
    }
    for ((key, _), hold) in open {
        tracks.entry(key).or_default().holds.push(hold);
    }
    tracks
}

/// Why a hold ended, in words; `revoked` is how its lease ended, if it did.
fn release_text(cause: &ReleaseCause, revoked: Option<&RevokeCause>, lease: u64) -> String {
    match cause {
        ReleaseCause::Release { by } => format!("released by c{by}"),
        ReleaseCause::LeaseEnded => match revoked {
            Some(RevokeCause::Expire) => format!("lease {lease} expired"),
            Some(RevokeCause::WallClockExpiry) => format!("lease {lease} expired by a wall clock"),
            Some(RevokeCause::Revoke) => format!("lease {lease} revoked"),
            None => format!("lease {lease} ended"),
        },
    }
}

/// Each client's belief that it holds a key, with why it ended.
fn add_beliefs(tracks: &mut BTreeMap<String, LockTrack>, obs: &[Obs], clocks: &BTreeMap<Proc, SimClock>, end_ns: u64) {
    let ends = belief_ends(obs);
    for (key, windows) in belief_windows(obs, clocks, end_ns) {
        let t = tracks.entry(key.clone()).or_default();
        for w in windows {
            let end = match ends.get(&(w.client, key.clone(), w.end_ns)) {
                Some(why) => why.to_string(),
                None if w.end_ns >= end_ns => "still believed at the end".to_string(),
                None => "its own clock reached the belief's end".to_string(),
            };
            t.beliefs.push(Belief { client: w.client, token: w.token, start_ns: w.start_ns, end_ns: w.end_ns, end });
        }
    }
}

/// The scenario's keys first, in its order; then any other key seen. Holds
/// and beliefs in time order.
fn in_scenario_order(lock_keys: &[String], mut tracks: BTreeMap<String, LockTrack>) -> Vec<LockTrack> {
    let mut ordered = Vec::new();
    for key in lock_keys {
        if let Some(mut t) = tracks.remove(key) {
            t.key = key.clone();
            ordered.push(t);
        }
    }
    for (key, mut t) in tracks {
        t.key = key;
        ordered.push(t);
    }
    for t in &mut ordered {
        t.holds.sort_by_key(|h| h.start_ns);
        t.beliefs.sort_by_key(|b| (b.start_ns, b.client));
    }
    ordered
}

/// (client, key, instant) → why the client's belief ended then.
fn belief_ends(obs: &[Obs]) -> BTreeMap<(u64, String, u64), &'static str> {
    obs.iter()
        .filter_map(|o| match (&o.proc, &o.event) {
            (Proc::Client(c), Event::BeliefEnded { key, why }) => {
                let why = match why {
                    BeliefEnd::Released => "released",
                    BeliefEnd::KeepAliveRefused => "a keep-alive was refused",
                    BeliefEnd::TimerLapsed => "its timer lapsed",
                    BeliefEnd::Crashed => "the client crashed",
                };
                Some(((*c, key.clone(), o.at_ns), why))
            }
            _ => None,
        })
        .collect()
}
