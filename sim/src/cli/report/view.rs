//! Observations and clock histories → the report's plain `RunView`: a
//! role span list per process, clock errors, fault bands, each lock's
//! holders, beliefs and store writes, and the violations with the lanes
//! and keys their explanations name.
//!
//! Beliefs come from the `lock-belief-overlap` checker's own function, so
//! the chart shows exactly the windows that checker judged.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{ReleaseCause, RevokeCause, ServiceEvent};
use leasesim_reports::model::{
    Belief, ClockPoint, ClockTrace, FaultNote, Hold, Lane, LaneKind, LaneMark, LockTrack, Role, RoleSpan, RunView, Span, StoreWrite,
    TraceLine, ViolationMark,
};

use super::links;
use crate::run::setup::WALL_EPOCH_NS;
use crate::run::RunOutcome;
use leasesim_judge::checkers::belief_windows;
use leasesim_judge::observe::{BeliefEnd, Event, Obs};
use leasesim_judge::vocab::Proc;
use leasesim_judge::vocab::SimClock;
use leasesim_scenario::Scenario;

/// Builds the view of one run kept with `keep_observations`.
pub fn run_view(scenario: &Scenario, outcome: &RunOutcome) -> RunView {
    let settle_at_ns = scenario.duration_ns;
    let end_ns = (settle_at_ns + scenario.settle_ns).max(outcome.obs.last().map_or(0, |o| o.at_ns));
    let obs = &outcome.obs;
    let lanes = outcome.clocks.iter().filter(|(p, _)| **p != Proc::Admin).map(|(p, clock)| lane(*p, clock, obs, end_ns)).collect();
    let (link_faults, link_note) = links::link_faults(obs, &links::fault_times(scenario, outcome.seed), end_ns);
    let locks = lock_tracks(scenario, outcome, end_ns);
    let lane_names: Vec<String> = outcome.clocks.keys().filter(|p| **p != Proc::Admin).map(|p| p.to_string()).collect();
    let key_names: Vec<String> = locks.iter().map(|l: &LockTrack| l.key.clone()).collect();
    let violations = outcome
        .violations
        .iter()
        .map(|v| ViolationMark {
            invariant: v.invariant.clone(),
            at_ns: v.at_ns,
            detail: v.detail.clone(),
            assumptions_held: v.assumptions_held,
            procs: lane_names.iter().filter(|n| mentions(&v.detail, n)).cloned().collect(),
            keys: key_names.iter().filter(|k| mentions(&v.detail, k)).cloned().collect(),
        })
        .collect();
    let mut notes: Vec<String> = link_note.into_iter().collect();
    let trace = trace_lines(obs, &mut notes);
    if outcome.obs.is_empty() {
        notes.push("this run kept no observations (an engine panic ends a run before it records any)".to_string());
    }
    RunView {
        scenario: outcome.scenario.clone(),
        file: outcome.file.clone(),
        seed: outcome.seed,
        verdict: outcome.verdict.to_string(),
        expected: outcome.expected,
        trace_digest: outcome.trace_digest.clone(),
        replay: outcome.replay.clone(),
        sim_seconds: outcome.sim_seconds,
        wall_seconds: outcome.wall_seconds,
        events: outcome.events,
        end_ns,
        settle_at_ns,
        drift_bound: scenario.cluster.drift_bound,
        lanes,
        link_faults,
        fault_notes: fault_notes(obs),
        locks,
        violations,
        trace,
        notes,
    }
}

/// The page embeds the trace for its "near this instant" panel; past this
/// many lines the file gets too big for a browser to open comfortably.
const MAX_TRACE_LINES: usize = 150_000;

/// Every observation as a line, unless there are too many: then the
/// servers' per-entry bookkeeping (every server's `Applied` of every entry)
/// goes first, then the tail, each dropped part said in `notes`.
fn trace_lines(obs: &[Obs], notes: &mut Vec<String>) -> Vec<TraceLine> {
    let bookkeeping = |o: &&Obs| {
        matches!(
            &o.event,
            Event::Server {
                event: ServerEvent::Applied { .. }
                    | ServerEvent::Service { event: ServiceEvent::RequestApplied { .. }, .. }
                    | ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { .. }, .. }
            }
        )
    };
    let line = |o: &Obs| TraceLine { at_ns: o.at_ns, proc: o.proc.to_string(), text: describe(&o.event) };
    if obs.len() <= MAX_TRACE_LINES {
        return obs.iter().map(line).collect();
    }
    let kept: Vec<&Obs> = obs.iter().filter(|o| !bookkeeping(o)).collect();
    notes.push(format!(
        "the trace panel leaves out {} Applied / RequestApplied / RequestDeduplicated lines to keep the page small",
        obs.len() - kept.len()
    ));
    if kept.len() > MAX_TRACE_LINES {
        let last = kept[MAX_TRACE_LINES - 1].at_ns;
        notes.push(format!(
            "the trace panel stops at {} ({} more lines left out); `leasesim run … --trace FILE` writes them all",
            leasesim_core::fmt_secs(last),
            kept.len() - MAX_TRACE_LINES
        ));
    }
    kept.into_iter().take(MAX_TRACE_LINES).map(line).collect()
}

/// Whether `text` names `word` as a whole word (`c1` but not `c12`).
fn mentions(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// One trace line: the event's own Debug text (server events unwrapped).
fn describe(event: &Event) -> String {
    match event {
        Event::Server { event } => format!("{event:?}"),
        other => format!("{other:?}"),
    }
}

fn lane(proc: Proc, clock: &SimClock, obs: &[Obs], end_ns: u64) -> Lane {
    let kind = match proc {
        Proc::Server(_) => LaneKind::Server,
        Proc::Client(_) => LaneKind::Client,
        _ => LaneKind::Store,
    };
    let running = if kind == LaneKind::Server { Role::Follower } else { Role::Up };
    let mut roles: Vec<RoleSpan> = Vec::new();
    let mut paused: Vec<Span> = Vec::new();
    let (mut role, mut since_ns) = (running, 0u64);
    let mut paused_since: Option<u64> = None;
    let switch = |roles: &mut Vec<RoleSpan>, role: &mut Role, since_ns: &mut u64, next: Role, at_ns: u64| {
        if *role != next {
            if at_ns > *since_ns {
                roles.push(RoleSpan { start_ns: *since_ns, end_ns: at_ns, role: *role });
            }
            (*role, *since_ns) = (next, at_ns);
        }
    };
    for o in obs.iter().filter(|o| o.proc == proc) {
        let next = match &o.event {
            Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term }) } => Role::Leader { term: *term },
            Event::Server { event: ServerEvent::Raft(RaftEvent::SteppedDown { .. }) } => Role::Follower,
            Event::Restarted => running,
            Event::Crashed => {
                // A crash ends a pause: the process is gone, not stopped.
                if let Some(start_ns) = paused_since.take() {
                    paused.push(Span { start_ns, end_ns: o.at_ns });
                }
                Role::Down
            }
            Event::Paused => {
                paused_since.get_or_insert(o.at_ns);
                continue;
            }
            Event::Resumed => {
                if let Some(start_ns) = paused_since.take() {
                    paused.push(Span { start_ns, end_ns: o.at_ns });
                }
                continue;
            }
            _ => continue,
        };
        switch(&mut roles, &mut role, &mut since_ns, next, o.at_ns);
    }
    roles.push(RoleSpan { start_ns: since_ns, end_ns: end_ns.max(since_ns), role });
    if let Some(start_ns) = paused_since {
        paused.push(Span { start_ns, end_ns });
    }
    let (clock, marks) = clock_trace(clock, end_ns);
    Lane { name: proc.to_string(), kind, roles, paused, clock, marks }
}

/// Errors at every segment boundary (just before and just after, so a
/// jump draws as a vertical step) and at both ends.
fn clock_trace(clock: &SimClock, end_ns: u64) -> (ClockTrace, Vec<LaneMark>) {
    let segments = clock.segments();
    let mono_zero = i128::from(clock.mono_at(0));
    let point = |at_ns: u64, mono_ns: i128, wall_minus_mono_ns: i64| ClockPoint {
        at_ns,
        wall_error_ns: (mono_ns + i128::from(wall_minus_mono_ns) - i128::from(WALL_EPOCH_NS) - i128::from(at_ns)) as i64,
        mono_error_ns: (mono_ns - mono_zero - i128::from(at_ns)) as i64,
    };
    let mut points = Vec::new();
    let mut marks = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        if s.true_start_ns > end_ns {
            break;
        }
        if let Some(prev) = i.checked_sub(1).map(|j| &segments[j]) {
            points.push(point(s.true_start_ns, i128::from(s.mono_start_ns), prev.wall_minus_mono_ns));
            if s.wall_minus_mono_ns != prev.wall_minus_mono_ns {
                let jump = s.wall_minus_mono_ns - prev.wall_minus_mono_ns;
                let label = format!("wall clock stepped {}", leasesim_reports::units::signed_duration(jump));
                marks.push(LaneMark { at_ns: s.true_start_ns, kind: "jump".into(), label });
            }
            if s.drift != prev.drift {
                let label = format!(
                    "clock rate now {} (was {})",
                    leasesim_reports::units::percent(s.drift),
                    leasesim_reports::units::percent(prev.drift)
                );
                marks.push(LaneMark { at_ns: s.true_start_ns, kind: "drift".into(), label });
            }
        }
        points.push(point(s.true_start_ns, i128::from(s.mono_start_ns), s.wall_minus_mono_ns));
    }
    let last = segments.iter().rev().find(|s| s.true_start_ns <= end_ns).unwrap_or(&segments[0]);
    points.push(point(end_ns, i128::from(clock.mono_at(end_ns)), last.wall_minus_mono_ns));
    (ClockTrace { points, max_abs_drift: clock.max_abs_drift_until(end_ns) }, marks)
}

/// Faults that are not link cuts, crashes, pauses or clock changes (those
/// have their own marks): membership asks, loss changes, skipped faults.
fn fault_notes(obs: &[Obs]) -> Vec<FaultNote> {
    obs.iter()
        .filter_map(|o| match &o.event {
            Event::FaultSkipped { action, why } => {
                Some(FaultNote { at_ns: o.at_ns, label: format!("skipped {action}: {why}"), skipped: true })
            }
            Event::Fault { action } => {
                let own_mark =
                    ["partition ", "isolate ", "block ", "heal links", "clock of ", "crash:"].iter().any(|p| action.starts_with(p));
                (!own_mark).then(|| FaultNote { at_ns: o.at_ns, label: format!("{}: {action}", o.proc), skipped: false })
            }
            _ => None,
        })
        .collect()
}

/// Per lock key: who held it when, what each client believed, and which
/// writes the store took; the scenario's keys first, in its order.
fn lock_tracks(scenario: &Scenario, outcome: &RunOutcome, end_ns: u64) -> Vec<LockTrack> {
    let mut tracks = holds_and_writes(&outcome.obs, end_ns);
    add_beliefs(&mut tracks, &outcome.obs, &outcome.clocks, end_ns);
    in_scenario_order(scenario, tracks)
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
fn in_scenario_order(scenario: &Scenario, mut tracks: BTreeMap<String, LockTrack>) -> Vec<LockTrack> {
    let mut ordered = Vec::new();
    for key in scenario.lock_keys() {
        if let Some(mut t) = tracks.remove(key) {
            t.key = key.to_string();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_as_whole_words() {
        assert!(mentions("c1 (token 3) and c12 both believe", "c1"));
        assert!(!mentions("c12 both believe", "c1"));
        assert!(mentions("they hold orders from 1s", "orders"));
        assert!(!mentions("they hold orders-eu", "orders"));
        assert!(mentions("s3 stepped down", "s3"));
    }
}
