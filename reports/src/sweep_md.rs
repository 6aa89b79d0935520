//! The sweep report as Markdown: readable in a terminal, a CI log or a
//! pull request. One table for the whole sweep, then a section per
//! scenario that fired anything.

use std::fmt::Write;

use crate::escape::md_cell;
use crate::sweep::{expectation_cell, seed_ranges, ScenarioSummary, SweepSummary};
use crate::units::seconds_f;

pub fn sweep_markdown(summary: &SweepSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# leasesim sweep report\n");
    let _ = writeln!(out, "{}\n", headline(summary));
    if !summary.sources.is_empty() {
        let _ = writeln!(out, "From: {}\n", summary.sources.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "));
    }
    let _ = writeln!(
        out,
        "| scenario | seeds | runs | clean | bug | assumption broken | unexpected | expectation | sim | wall | × real time |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for s in &summary.scenarios {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            md_cell(&s.name),
            seed_ranges(&s.seeds),
            s.runs(),
            s.clean,
            s.bug_runs,
            s.broken_runs,
            s.unexpected,
            expectation_cell(s),
            seconds_f(s.sim_seconds),
            seconds_f(s.wall_seconds),
            s.sim_seconds / s.wall_seconds.max(1e-9),
        );
    }
    out.push('\n');
    out.push_str("*bug*: a violation while every clock stayed within the stated assumptions; *assumption broken*: only outside them. ");
    out.push_str("Counts are runs. *wall* adds up each run's own time.\n");
    for s in summary.sections() {
        scenario_section(&mut out, s);
    }
    out
}

/// "40 runs of 11 scenarios: 1120s simulated in 4.1s of run time (273×);
/// 2 unexpected" — the one line a reader needs first.
pub fn headline(summary: &SweepSummary) -> String {
    let mut line = format!(
        "{} runs of {} scenarios: {} simulated in {} of run time ({:.0}× real time)",
        summary.runs(),
        summary.scenarios.len(),
        seconds_f(summary.sim_seconds()),
        seconds_f(summary.wall_seconds()),
        summary.sim_seconds() / summary.wall_seconds().max(1e-9)
    );
    if let Some(elapsed) = summary.elapsed_seconds {
        let _ = write!(line, ", {} elapsed", seconds_f(elapsed));
    }
    let unexpected = summary.unexpected();
    let _ = write!(line, "; {}", if unexpected == 0 { "no unexpected runs".to_string() } else { format!("**{unexpected} unexpected**") });
    if summary.duplicates > 0 {
        let _ = write!(line, "; {} duplicate results ignored", summary.duplicates);
    }
    line
}

fn scenario_section(out: &mut String, s: &ScenarioSummary) {
    let _ = writeln!(out, "\n## {}\n", s.name);
    let expect = s.expect.as_ref().map_or("unknown (scenario file not read)".to_string(), |e| e.describe());
    let _ = writeln!(out, "`{}` · seeds {} · expectation: {} — {}\n", s.file, seed_ranges(&s.seeds), expect, expectation_cell(s));
    if !s.invariants.is_empty() {
        let _ = writeln!(out, "| invariant | runs (bug) | runs (assumption broken) | violations | first seed |");
        let _ = writeln!(out, "|---|---:|---:|---:|---:|");
        for i in &s.invariants {
            let _ = writeln!(out, "| {} | {} | {} | {} | {} |", i.id, i.bug_runs, i.broken_runs, i.violations, i.first_seed);
        }
        out.push('\n');
    }
    if !s.failing.is_empty() {
        let _ = writeln!(out, "First failing seeds:\n");
        for f in &s.failing {
            let tag = if f.expected { "expected" } else { "**unexpected**" };
            let _ = writeln!(out, "- seed {} ({tag}): {}", f.seed, md_cell(&f.first_detail));
            let _ = writeln!(out, "  - replay: `{}`", f.replay);
            match &f.report_file {
                Some(file) => {
                    let _ = writeln!(out, "  - timeline: [{file}]({file})");
                }
                None => {
                    let _ = writeln!(out, "  - timeline: `{}`", f.report_command);
                }
            }
        }
    }
}
