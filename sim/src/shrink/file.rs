//! Writing a shrunk failure as a scenario file a person can read and run:
//! a header saying where it came from, how far it shrank and the command
//! that replays it, then the scenario (`to_toml`). The file keeps the
//! original's expectation, so running it fails (exit 1) for as long as the
//! bug is there, and passes once it is fixed: a ready regression test.
//!
//! Nothing is written unless the text, read back, fails the same way.

use std::path::Path;

use super::Shrunk;
use crate::run::{run_seed, RunOptions, RunOutcome};
use leasesim_scenario::{parse, to_toml, Scenario};

/// The file text for `shrunk`, taken from `source`, to be saved at `out`.
pub fn render(shrunk: &Shrunk, source: &Path, out: &Path) -> String {
    let s = describe(shrunk, source);
    let bugs = shrunk.scenario.bugs.enabled();
    let with_bugs = if bugs.is_empty() { String::new() } else { format!(" with planted bug(s) {}", bugs.join(", ")) };
    let (b, a) = (&shrunk.before, &shrunk.after);
    let drawn = if shrunk.drawn_faults > 0 { format!(" ({} drawn by [chaos])", shrunk.drawn_faults) } else { String::new() };
    let mut text = String::new();
    text.push_str(&format!(
        "# Shrunk by `leasesim shrink` from {}, seed {}{with_bugs}: {}.\n",
        source.display(),
        shrunk.seed,
        what_fires(shrunk)
    ));
    text.push_str(&format!("# Before: {b}{drawn}.\n# After:  {a} ({} shrink runs).\n", shrunk.runs));
    text.push_str(&format!("# Replay: leasesim run {} --seed {}   (exit 1 while the bug is there)\n", out.display(), shrunk.seed));
    text.push_str(&format!("# Trace:  leasesim replay {} --seed {}\n", out.display(), shrunk.seed));
    text.push_str(&to_toml(&s));
    text
}

/// "`lock-belief-overlap` fires at 18.234s", or for a panic (which has no
/// time: the run stopped) "the engine panics".
pub fn what_fires(shrunk: &Shrunk) -> String {
    if shrunk.invariant == "engine-panic" {
        "the engine panics (`engine-panic`)".to_string()
    } else {
        format!("`{}` fires at {}", shrunk.invariant, leasesim_core::fmt_secs(shrunk.fired_at_ns))
    }
}

/// The shrunk scenario with a description of what it shows.
fn describe(shrunk: &Shrunk, source: &Path) -> Scenario {
    let mut s = shrunk.scenario.clone();
    s.description = Some(format!(
        "Seed {} of {} ({}), shrunk: `{}` fires.",
        shrunk.seed,
        source.file_stem().map_or_else(|| shrunk.scenario.name.clone(), |stem| stem.to_string_lossy().into_owned()),
        source.display(),
        shrunk.invariant
    ));
    s.path = source.to_path_buf();
    s
}

/// Renders, reads back and re-runs the file; writes it only if it still
/// fires the invariant.
pub fn write(shrunk: &Shrunk, source: &Path, out: &Path) -> Result<(), String> {
    let text = render(shrunk, source, out);
    verify(&text, out, shrunk)?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(out, text).map_err(|e| format!("cannot write: {e}"))
}

/// Reads `text` back as if from `out` and runs the seed: the outcome if the
/// invariant fires, else why the file cannot be trusted.
pub fn verify(text: &str, out: &Path, shrunk: &Shrunk) -> Result<RunOutcome, String> {
    let name = out.display().to_string();
    let scenario = parse(text, &name).map_err(|e| format!("the shrunk file does not load back:\n{e}"))?;
    let outcome = run_seed(&scenario, shrunk.seed, &RunOptions::default());
    if outcome.violations.iter().any(|v| v.invariant == shrunk.invariant) {
        Ok(outcome)
    } else {
        Err(format!(
            "the shrunk file, run with seed {}, does not fire `{}` (it fires: {}); not written",
            shrunk.seed,
            shrunk.invariant,
            if outcome.fired().is_empty() { "nothing".to_string() } else { outcome.fired().join(", ") }
        ))
    }
}
