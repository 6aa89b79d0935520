//! Which scenarios a hunt sweeps: general chaos scenarios, never one written
//! for the bug being hunted (a scenario that turns the bug on itself, or
//! expects the violation, would prove only that it was written for it).
//!
//! By default: every file in `scenarios/` with a `[chaos]` table, no planted
//! bugs and a `safe` expectation — the healthy chaos scenarios CI already
//! sweeps, so the hunt measures the suite's real bug-finding power.

use std::path::Path;

use leasesim_scenario::{self as scenario, Scenario, Verdict};

/// The default set, from `dir` (sorted by file name).
pub fn general_chaos(dir: &Path) -> Result<Vec<Scenario>, String> {
    let (all, errors) = scenario::load_all(&[dir.to_path_buf()]);
    if !errors.is_empty() {
        let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        return Err(shown.join("\n"));
    }
    let chosen: Vec<Scenario> = all.into_iter().filter(is_general_chaos).collect();
    if chosen.is_empty() {
        return Err(format!(
            "{}: no general chaos scenario (a [chaos] table, no `bugs`, expect safe); give one with --scenario",
            dir.display()
        ));
    }
    Ok(chosen)
}

pub fn is_general_chaos(s: &Scenario) -> bool {
    s.chaos.is_some() && s.bugs.enabled().is_empty() && s.expect.verdict == Verdict::Safe
}

/// Why `s` may not be used to hunt `bug`, if it may not.
pub fn written_for(s: &Scenario, bug: &str) -> Option<String> {
    if s.bugs.is_enabled(bug) == Some(true) {
        return Some(format!("{} turns on `{bug}` itself (bugs = [...])", s.path.display()));
    }
    if let Verdict::Violation { ids } = &s.expect.verdict {
        return Some(format!("{} expects a violation ({}): it was written to show one", s.path.display(), ids.join(", ")));
    }
    None
}
