//! The hunt's results as a Markdown table (one row per bug), with the
//! command that regenerates it and, for each bug not found, why.

use std::fmt::Write as _;

use super::{notes, BugHunt, HuntOptions};
use leasesim_scenario::Scenario;

pub const HEADER: &str = "| bug | found | invariant | scenario | seed | runs | wall s | shrunk faults | shrunk duration | shrunk file |\n\
                          |---|---|---|---|---|---|---|---|---|---|";

/// One bug's row.
pub fn row(h: &BugHunt) -> String {
    let found = format!("{}/{}", h.found_count(), h.attempts.len());
    let runs = h.median_runs().map_or_else(|| h.attempts.iter().map(|a| a.runs).sum::<usize>().to_string(), |r| r.to_string());
    let wall = h.median_wall().map_or_else(
        || format!("> {:.0}", h.attempts.iter().map(|a| a.wall.as_secs_f64()).fold(0.0, f64::max)),
        |w| format!("{:.1}", w.as_secs_f64()),
    );
    // With several searches, each one's figures too (`>` marks a search
    // that ended without the bug), so the worst case can be read off.
    let (runs, wall) = if h.attempts.len() > 1 {
        let each = |f: &dyn Fn(&super::Attempt) -> String| {
            h.attempts.iter().map(|a| format!("{}{}", if a.found.is_some() { "" } else { ">" }, f(a))).collect::<Vec<_>>().join(", ")
        };
        (format!("{runs} ({})", each(&|a| a.runs.to_string())), format!("{wall} ({})", each(&|a| format!("{:.1}", a.wall.as_secs_f64()))))
    } else {
        (runs, wall)
    };
    let Some(first) = h.first_found() else {
        return format!("| {} | {found} | — | — | — | {runs} | {wall} | — | — | — |", h.bug);
    };
    let (faults, duration) = match &h.shrunk {
        Some(Ok(s)) => (
            format!("{} → {}", s.before.faults, s.after.faults),
            format!("{} → {}", leasesim_core::fmt_secs(s.before.duration_ns), leasesim_core::fmt_secs(s.after.duration_ns)),
        ),
        Some(Err(_)) => ("(failed)".to_string(), "—".to_string()),
        None => ("—".to_string(), "—".to_string()),
    };
    let invariant = match &h.shrunk {
        Some(Ok(s)) => s.invariant.clone(),
        _ => first.fired.first().cloned().unwrap_or_default(),
    };
    let file = h.shrunk_file.as_ref().map_or("—".to_string(), |f| format!("`{}`", f.display()));
    format!(
        "| {} | {found} | {invariant} | {} | {} | {runs} | {wall} | {faults} | {duration} | {file} |",
        h.bug, first.scenario, first.seed
    )
}

/// The whole report.
pub fn markdown(hunts: &[BugHunt], scenarios: &[Scenario], options: &HuntOptions, command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Bug-finding power: the planted-bug hunt\n");
    let _ = writeln!(out, "Regenerate with:\n\n```sh\n{command}\n```\n");
    let files: Vec<String> = scenarios.iter().map(|s| format!("`{}`", s.path.display())).collect();
    let _ = writeln!(
        out,
        "Each planted bug is turned on alone; seeds {}..{} of {} are swept interleaved \
         (seed 0 of each, then seed 1, …) on {} thread(s) until an invariant fires{}{}. A failure counts only if the same seed is clean without the bug. *runs* and *wall s* are up \
         to and including the first failing run{}; the first failure is shrunk (same seed, same invariant) \
         with a budget of {} runs.\n",
        options.seeds.start,
        options.seeds.end,
        files.join(", "),
        options.jobs,
        options.budget.map(|b| format!(", for at most {} s of wall time", b.as_secs())).unwrap_or_default(),
        if options.repeat > 1 { format!(", {} times on successive seed windows", options.repeat) } else { String::new() },
        if options.repeat > 1 { " (medians over the searches that found it; *found* counts them)" } else { "" },
        options.shrink_budget_runs,
    );
    if let Some(g) = &options.guided {
        let _ = writeln!(
            out,
            "**Guided** (`--guided`): one run at a time; after one seed of each scenario, each run is a fresh seed with \
             probability {} and otherwise a mutation of a corpus entry (a run that reached new coverage); the run budget \
             is the same as the seed sweep's. *scenario* and *seed* name the failing run's own scenario file{}.\n",
            g.explore,
            g.corpus_dir.as_ref().map(|d| format!(" (under `{}`)", d.display())).unwrap_or_default(),
        );
    }
    let _ = writeln!(out, "{HEADER}");
    for h in hunts {
        let _ = writeln!(out, "{}", row(h));
    }
    let missing: Vec<&BugHunt> = hunts.iter().filter(|h| h.first_found().is_none()).collect();
    if !missing.is_empty() {
        let _ = writeln!(out, "\n## Not found\n");
        for h in missing {
            let _ = writeln!(out, "- **{}**: {}", h.bug, notes::not_found(&h.bug));
        }
    }
    let healthy_failures: Vec<String> = hunts
        .iter()
        .flat_map(|h| h.attempts.iter().flat_map(|a| &a.failing_without_bug))
        .map(|(file, seed, fired)| {
            format!("- `leasesim run {} --seed {seed}` fires {} with no planted bug", file.display(), fired.join(", "))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !healthy_failures.is_empty() {
        let _ = writeln!(out, "\n## Seeds that fail without any planted bug\n");
        let _ = writeln!(out, "A failure counts for a bug only if the same seed is clean without it; these were not:\n");
        for line in healthy_failures {
            let _ = writeln!(out, "{line}");
        }
    }
    let failed: Vec<(&BugHunt, &String)> = hunts
        .iter()
        .filter_map(|h| match &h.shrunk {
            Some(Err(e)) => Some((h, e)),
            _ => None,
        })
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n## Shrinks that failed\n");
        for (h, e) in failed {
            let _ = writeln!(out, "- **{}**: {e}", h.bug);
        }
    }
    out
}
