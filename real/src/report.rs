//! `leasesim-real run … --report DIR`: the real run's timeline, drawn by
//! the same view builder and page as a simulated run's
//! (`leasesim_reports::observed`), from what the clients, the fault player
//! and the members' skewed clocks recorded.
//!
//! What only the simulator sees (Raft roles, the cluster's lock table) is
//! absent from a real run's log, so server lanes show crashes and pauses
//! but no leader; the lock tracks show the clients' beliefs and the data
//! store's writes. Link faults become bands here, because only the runner
//! knows from the scenario which side of a partition was cut off and when
//! the fault's `for` ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use leasesim_judge::observe::{Event, Obs, ObsLog};
use leasesim_judge::vocab::{Proc, SimClock};
use leasesim_reports::model::LinkFault;
use leasesim_reports::observed::{self, ObservedRun};
use leasesim_reports::{run_page, run_report_name, RunView};
use leasesim_scenario::{FaultAction, Scenario};

use crate::schedule::WALL_BASE_NS;
use crate::verdict::Outcome;
use crate::RunArgs;

/// Writes the run's page into `dir`; returns its path.
pub fn write(
    dir: &Path,
    args: &RunArgs,
    s: &Scenario,
    log: &ObsLog,
    clocks: &BTreeMap<Proc, SimClock>,
    o: &Outcome,
) -> Result<PathBuf, String> {
    let obs: Vec<Obs> = log.iter().map(|o| (*o).clone()).collect();
    let view = view(args, s, &obs, clocks, o);
    std::fs::create_dir_all(dir).map_err(|e| format!("--report {}: cannot create the directory: {e}", dir.display()))?;
    let path = dir.join(run_report_name(&format!("{}-real-{}", o.scenario, o.target), o.seed));
    std::fs::write(&path, run_page(&view)).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    Ok(path)
}

/// The run's view: every server and every process seen gets a lane.
fn view(args: &RunArgs, s: &Scenario, obs: &[Obs], played: &BTreeMap<Proc, SimClock>, o: &Outcome) -> RunView {
    let mut clocks = played.clone();
    let procs = (1..=s.cluster.servers + s.cluster.spares).map(Proc::Server).chain(obs.iter().map(|o| o.proc));
    for proc in procs {
        clocks.entry(proc).or_insert_with(|| SimClock::new(0, WALL_BASE_NS, 0.0));
    }
    let end_ns = observed::end_of(obs, s.duration_ns + s.settle_ns);
    let not_judged: Vec<&str> = o.not_judged.iter().map(|n| n.invariant).collect();
    let lanes = if members_report_events(o) {
        "server lanes show the roles and lock holds the members wrote to their event logs, and the crashes and pauses played".to_string()
    } else {
        format!("server lanes show crashes and pauses but not Raft roles, and the lock tracks no cluster holds, because {} members do not report their own events", o.target)
    };
    let mut notes = vec![format!("A real run: {lanes}. Not judged: {}.", not_judged.join(", "))];
    notes.extend(o.notes.iter().cloned());
    let view = observed::run_view(ObservedRun {
        obs,
        clocks: &clocks,
        wall_epoch_ns: WALL_BASE_NS,
        violations: &o.violations,
        settle_at_ns: s.duration_ns,
        end_ns,
        drift_bound: s.cluster.drift_bound,
        lock_keys: s.lock_keys().into_iter().map(String::from).collect(),
        link_faults: link_bands(s, obs, end_ns),
        notes,
    });
    let facts = format!(
        "played for real on {} members: {:.1}s real time, {} observations, stamping error {:.1} ms (a violation is reported only if it \
         holds wherever its events fall within it)",
        o.target,
        o.real_seconds,
        o.observations,
        o.stamp_error_ns as f64 / 1e6
    );
    RunView {
        scenario: o.scenario.clone(),
        file: o.file.clone(),
        seed: o.seed,
        verdict: o.verdict.to_string(),
        expected: o.expected,
        replay: replay(args, o),
        wall_seconds: o.real_seconds,
        events: o.observations as u64,
        real_facts: Some(facts),
        ..view
    }
}

/// The command that plays this run again (a real run repeats its seed's
/// draws, not its timing).
fn replay(args: &RunArgs, o: &Outcome) -> String {
    let mut command = format!("leasesim-real run {} --seed {}", o.file, o.seed);
    if o.target != "node" {
        command.push_str(&format!(" --target {}", o.target));
    }
    for bug in &args.bugs {
        command.push_str(&format!(" --bug {bug}"));
    }
    command
}

/// A band per partition, isolation or block the player noted: from its
/// note to its `for` (or the settle phase), shading the cut-off side (the
/// smaller group of a partition, the isolated server, the blocked sender).
fn link_bands(s: &Scenario, obs: &[Obs], end_ns: u64) -> Vec<LinkFault> {
    let settle_ns = obs.iter().find(|o| o.event == Event::SettleBegins).map_or(end_ns, |o| o.at_ns);
    let mut bands = Vec::new();
    for o in obs.iter().filter(|o| o.proc == Proc::Admin) {
        let Event::Fault { action } = &o.event else { continue };
        let Some(fault) = line_of(action).and_then(|line| s.faults.iter().find(|f| f.line == line)) else { continue };
        let named = resolved_names(action);
        let procs: Vec<String> = match &fault.action {
            FaultAction::Partition(groups) => smallest_side(groups.iter().map(Vec::len), &named),
            FaultAction::Isolate(_) | FaultAction::Block { .. } => named.into_iter().take(1).collect(),
            _ => continue,
        };
        let until_ns = fault.for_ns.map_or(settle_ns, |for_ns| (o.at_ns + for_ns).min(settle_ns));
        bands.push(LinkFault { start_ns: o.at_ns, end_ns: until_ns, label: action.clone(), procs });
    }
    bands
}

/// `line 43: partition …` → 43.
fn line_of(action: &str) -> Option<usize> {
    action.strip_prefix("line ")?.split(':').next()?.parse().ok()
}

/// The processes a played fault named, in its selectors' order:
/// `line 9: partition leader=s2 s1 s3 for 2s` → s2, s1, s3.
fn resolved_names(action: &str) -> Vec<String> {
    let words = action.split_once(": ").map_or("", |(_, rest)| rest).split_whitespace().skip(1);
    words.take_while(|w| *w != "for").map(|w| w.rsplit('=').next().unwrap_or(w).to_string()).collect()
}

/// The smallest group, given each group's size in selector order.
fn smallest_side(sizes: impl Iterator<Item = usize>, named: &[String]) -> Vec<String> {
    let mut start = 0;
    let mut sides: Vec<&[String]> = Vec::new();
    for size in sizes {
        let end = (start + size).min(named.len());
        sides.push(&named[start..end]);
        start = end;
    }
    sides.into_iter().min_by_key(|side| side.len()).map(<[String]>::to_vec).unwrap_or_default()
}

/// Whether the members wrote their own Raft and lock-table events (leasesim-node
/// does, under `--unsafe-test-event-log`; etcd does not).
fn members_report_events(o: &Outcome) -> bool {
    o.target == crate::Target::Node.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_played_fault_names_its_processes_in_order() {
        assert_eq!(line_of("line 43: partition s1 s2 s3 for 2s"), Some(43));
        assert_eq!(resolved_names("line 9: partition leader=s2 s1 s3 for 2s"), vec!["s2", "s1", "s3"]);
        assert_eq!(resolved_names("line 9: isolate s3"), vec!["s3"]);
        let named: Vec<String> = ["s1", "s2", "s3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(smallest_side([2, 1].into_iter(), &named), vec!["s3"]);
        assert_eq!(smallest_side([1, 2].into_iter(), &named), vec!["s1"]);
    }
}
