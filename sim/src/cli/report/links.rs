//! Link-fault bands for the run report: when each partition, isolation or
//! block began and ended.
//!
//! The trace says `partition [s1,s3] | [s2,s4,s5]` when one fires but not
//! its fault number, and `heal links of fault #N` when one is undone. To
//! pair them this file rebuilds the run's fault list (the scenario's
//! faults, then the chaos faults drawn from the seed, exactly as the run
//! drew them) and matches each heal to the band that fired at fault N's
//! time. Should that ever disagree with the trace, it pairs by order and
//! says so on the page rather than guess silently.

use leasesim_reports::model::LinkFault;

use crate::run::chaos;
use leasesim_judge::observe::{Event, Obs};
use leasesim_judge::vocab::Proc;
use leasesim_scenario::Scenario;

/// How far after its scheduled time a fault's note may appear (the
/// injector wakes a few nanoseconds late).
const FIRE_SLACK_NS: u64 = 1_000_000;

/// The time each fault of the run was scheduled to fire, by fault number.
pub fn fault_times(scenario: &Scenario, seed: u64) -> Vec<u64> {
    // The run's own fault list: the file's faults, then the chaos draws
    // (the run simulates exactly `chaos::explicit`'s scenario).
    chaos::explicit(scenario, seed).faults.iter().map(|f| f.at_ns).collect()
}

fn is_link_fault(action: &str) -> bool {
    ["partition ", "isolate ", "block "].iter().any(|p| action.starts_with(p))
}

/// The processes a link fault cuts off: the smaller side of a partition
/// (the larger side keeps its quorum), the isolated process, the sender.
fn cut_off(action: &str) -> Vec<String> {
    if let Some(rest) = action.strip_prefix("partition ") {
        let groups: Vec<Vec<String>> = rest
            .split('|')
            .map(|g| {
                g.trim()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .collect();
        return groups.into_iter().min_by_key(|g| g.len()).unwrap_or_default();
    }
    if let Some(p) = action.strip_prefix("isolate ") {
        return vec![p.trim().to_string()];
    }
    if let Some(rest) = action.strip_prefix("block ") {
        return rest.split_whitespace().next().map(|p| vec![p.to_string()]).unwrap_or_default();
    }
    Vec::new()
}

/// Link-fault bands, plus a caveat when a heal had to be paired by order.
pub fn link_faults(obs: &[Obs], fault_times_ns: &[u64], end_ns: u64) -> (Vec<LinkFault>, Option<String>) {
    let mut done: Vec<LinkFault> = Vec::new();
    let mut open: Vec<LinkFault> = Vec::new();
    let mut guessed = 0;
    for o in obs.iter().filter(|o| o.proc == Proc::Admin) {
        match &o.event {
            Event::Fault { action } if is_link_fault(action) => {
                open.push(LinkFault { start_ns: o.at_ns, end_ns, label: action.clone(), procs: cut_off(action) });
            }
            Event::Fault { action } if action.starts_with("heal links of fault #") => {
                let id: Option<usize> = action.rsplit('#').next().and_then(|n| n.trim().parse().ok());
                let scheduled = id.and_then(|id| fault_times_ns.get(id)).copied();
                let found = scheduled.and_then(|at| open.iter().position(|f| f.start_ns >= at && f.start_ns - at <= FIRE_SLACK_NS));
                let index = match found {
                    Some(i) => Some(i),
                    None if !open.is_empty() => {
                        guessed += 1;
                        Some(0)
                    }
                    None => None,
                };
                if let Some(i) = index {
                    let mut band = open.remove(i);
                    band.end_ns = o.at_ns;
                    done.push(band);
                }
            }
            // The settle phase heals every link at once.
            Event::SettleBegins => {
                for mut band in open.drain(..) {
                    band.end_ns = o.at_ns;
                    done.push(band);
                }
            }
            _ => {}
        }
    }
    done.append(&mut open);
    done.sort_by_key(|f| (f.start_ns, f.end_ns));
    let note = (guessed > 0).then(|| {
        format!("{guessed} link-fault heal(s) could not be matched to their fault by number and were paired with the oldest open fault; those bands' ends may be swapped")
    });
    (done, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_off_side_is_the_smaller_one() {
        assert_eq!(cut_off("partition [s1,s3] | [s2,s4,s5]"), vec!["s1", "s3"]);
        assert_eq!(cut_off("isolate s2"), vec!["s2"]);
        assert_eq!(cut_off("block c1 -> [s1,s2]"), vec!["c1"]);
    }

    #[test]
    fn heals_close_the_band_of_their_fault_number() {
        let note = |at_ns: u64, action: &str| Obs { at_ns, proc: Proc::Admin, event: Event::Fault { action: action.into() } };
        let obs = vec![
            note(100, "partition [s1] | [s2,s3]"),
            note(200, "partition [s2] | [s1,s3]"),
            note(300, "heal links of fault #1"),
            note(400, "heal links of fault #0"),
        ];
        let (bands, caveat) = link_faults(&obs, &[100, 200], 1000);
        assert_eq!(bands.iter().map(|b| (b.start_ns, b.end_ns)).collect::<Vec<_>>(), vec![(100, 400), (200, 300)]);
        assert!(caveat.is_none());
        let (_, caveat) = link_faults(&obs, &[], 1000);
        assert!(caveat.is_some(), "without fault times the pairing is a guess, and says so");
    }
}
