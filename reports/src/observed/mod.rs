//! Observations and clock histories → the report's plain `RunView`: a
//! role span list per process, clock errors, fault bands, each lock's
//! holders, beliefs and store writes, and the violations with the lanes
//! and keys their explanations name.
//!
//! It lives here, beside the renderers, and reads only the judge's
//! vocabulary, so that both worlds draw their runs with it: the simulator
//! (`leasesim run --report`) and the real runner (`leasesim-real run
//! --report`), neither of whose runtimes this crate links. Beliefs come
//! from the `lock-belief-overlap` checker's own function, so the chart
//! shows exactly the windows that checker judged.

mod lanes;
mod locks;

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_judge::checkers::ViolationJson;
use leasesim_judge::observe::{Event, Obs};
use leasesim_judge::vocab::{Proc, SimClock};

use crate::model::{FaultNote, LinkFault, LockTrack, RunView, TraceLine, ViolationMark};

/// One run as either world observed it: what its timeline is drawn from.
pub struct ObservedRun<'a> {
    /// Every observation, in true-time order.
    pub obs: &'a [Obs],
    /// Every process's clock history (`Admin` is not drawn).
    pub clocks: &'a BTreeMap<Proc, SimClock>,
    /// The wall clocks' common reading at true time 0 (an unskewed wall
    /// clock draws as zero error).
    pub wall_epoch_ns: u64,
    pub violations: &'a [ViolationJson],
    /// Where the fault phase ends (the scenario's `duration`).
    pub settle_at_ns: u64,
    /// Where the timeline ends: [`end_of`].
    pub end_ns: u64,
    /// The scenario's `drift_bound`.
    pub drift_bound: f64,
    /// The scenario's lock keys, drawn first in this order.
    pub lock_keys: Vec<String>,
    /// Link faults as bands; the world that played them knows their ends.
    pub link_faults: Vec<LinkFault>,
    /// Caveats to show on the page.
    pub notes: Vec<String>,
}

/// The timeline's end: the planned end (duration + settle), or the last
/// observation if one came later.
pub fn end_of(obs: &[Obs], planned_end_ns: u64) -> u64 {
    planned_end_ns.max(obs.last().map_or(0, |o| o.at_ns))
}

/// The view of one run; the header fields (scenario, seed, verdict,
/// replay, facts) are the caller's to fill.
pub fn run_view(run: ObservedRun<'_>) -> RunView {
    let (obs, end_ns) = (run.obs, run.end_ns);
    let lanes = run
        .clocks
        .iter()
        .filter(|(p, _)| **p != Proc::Admin)
        .map(|(p, clock)| lanes::lane(*p, clock, obs, end_ns, run.wall_epoch_ns))
        .collect();
    let locks = locks::lock_tracks(&run.lock_keys, obs, run.clocks, end_ns);
    let lane_names: Vec<String> = run.clocks.keys().filter(|p| **p != Proc::Admin).map(|p| p.to_string()).collect();
    let key_names: Vec<String> = locks.iter().map(|l: &LockTrack| l.key.clone()).collect();
    let violations = run
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
    let mut notes = run.notes;
    let trace = trace_lines(obs, &mut notes);
    if obs.is_empty() {
        notes.push("this run kept no observations (an engine panic ends a run before it records any)".to_string());
    }
    let fault_notes = fault_notes(obs, &run.link_faults);
    RunView {
        end_ns,
        settle_at_ns: run.settle_at_ns,
        drift_bound: run.drift_bound,
        lanes,
        link_faults: run.link_faults,
        fault_notes,
        locks,
        violations,
        trace,
        notes,
        ..RunView::default()
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
            "the trace panel stops at {} ({} more lines left out); `--trace FILE` writes them all",
            leasesim_core::fmt_secs(last),
            kept.len() - MAX_TRACE_LINES
        ));
    }
    kept.into_iter().take(MAX_TRACE_LINES).map(line).collect()
}

/// Whether `text` names `word` as a whole word (`c1` but not `c12`).
pub fn mentions(text: &str, word: &str) -> bool {
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

/// Faults that are not link cuts, crashes, pauses or clock changes (those
/// have their own marks): membership asks, loss changes, skipped faults.
/// A fault drawn as one of `bands` is not noted again.
fn fault_notes(obs: &[Obs], bands: &[LinkFault]) -> Vec<FaultNote> {
    obs.iter()
        .filter_map(|o| match &o.event {
            Event::FaultSkipped { action, why } => {
                Some(FaultNote { at_ns: o.at_ns, label: format!("skipped {action}: {why}"), skipped: true })
            }
            Event::Fault { action } => {
                let own_mark =
                    ["partition ", "isolate ", "block ", "heal links", "clock of ", "crash:"].iter().any(|p| action.starts_with(p))
                        || bands.iter().any(|b| b.label == *action);
                (!own_mark).then(|| FaultNote { at_ns: o.at_ns, label: format!("{}: {action}", o.proc), skipped: false })
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
