//! The sweep report as one self-contained HTML page: the same summary as
//! the Markdown, with links to the run reports written beside it.

use std::fmt::Write;

use crate::escape::xml;
use crate::sweep::{expectation_cell, seed_ranges, ScenarioSummary, SweepSummary};
use crate::units::seconds_f;

const CSS: &str = include_str!("../assets/page.css");

pub fn sweep_html(summary: &SweepSummary) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<title>leasesim sweep report</title>");
    let _ = write!(out, "<style>{CSS}</style></head><body class=\"sweep-report\">");
    out.push_str("<h1>leasesim sweep report</h1>");
    let headline = crate::sweep_md::headline(summary).replace("**", "");
    let _ = write!(out, "<p class=\"headline\">{}</p>", xml(&headline));
    if !summary.sources.is_empty() {
        let sources: Vec<String> = summary.sources.iter().map(|s| format!("<code>{}</code>", xml(s))).collect();
        let _ = write!(out, "<p class=\"sources\">From: {}</p>", sources.join(", "));
    }
    out.push_str("<table id=\"summary\"><thead><tr><th>scenario</th><th>seeds</th><th>runs</th><th>clean</th><th>bug</th>");
    out.push_str("<th>assumption broken</th><th>unexpected</th><th>expectation</th><th>sim</th><th>wall</th><th>× real time</th></tr></thead><tbody>");
    for s in &summary.scenarios {
        let class = match (s.met, s.unexpected) {
            (Some(false), _) | (None, 1..) => "not-met",
            _ => "met",
        };
        let name = if s.invariants.is_empty() && s.unexpected == 0 && s.met != Some(false) {
            xml(&s.name)
        } else {
            format!("<a href=\"#{}\">{}</a>", crate::escape::id_part(&s.name), xml(&s.name))
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{name}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.0}</td></tr>",
            xml(&seed_ranges(&s.seeds)),
            s.runs(),
            s.clean,
            s.bug_runs,
            s.broken_runs,
            s.unexpected,
            xml(&expectation_cell(s)),
            seconds_f(s.sim_seconds),
            seconds_f(s.wall_seconds),
            s.sim_seconds / s.wall_seconds.max(1e-9),
        );
    }
    out.push_str("</tbody></table>");
    out.push_str("<p class=\"note\"><b>bug</b>: a violation while every clock stayed within the stated assumptions; ");
    out.push_str("<b>assumption broken</b>: only outside them. Counts are runs. <b>wall</b> adds up each run's own time.</p>");
    for s in summary.sections() {
        scenario_section(&mut out, s);
    }
    out.push_str("</body></html>\n");
    out
}

fn scenario_section(out: &mut String, s: &ScenarioSummary) {
    let _ = write!(out, "<section class=\"scenario\" id=\"{}\"><h2>{}</h2>", crate::escape::id_part(&s.name), xml(&s.name));
    let expect = s.expect.as_ref().map_or("unknown (scenario file not read)".to_string(), |e| e.describe());
    let _ = write!(
        out,
        "<p><code>{}</code> · seeds {} · expectation: {} — <b>{}</b></p>",
        xml(&s.file),
        xml(&seed_ranges(&s.seeds)),
        xml(&expect),
        xml(&expectation_cell(s))
    );
    if !s.invariants.is_empty() {
        out.push_str("<table class=\"invariants\"><thead><tr><th>invariant</th><th>runs (bug)</th><th>runs (assumption broken)</th>");
        out.push_str("<th>violations</th><th>first seed</th></tr></thead><tbody>");
        for i in &s.invariants {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                xml(&i.id),
                i.bug_runs,
                i.broken_runs,
                i.violations,
                i.first_seed
            );
        }
        out.push_str("</tbody></table>");
    }
    if !s.failing.is_empty() {
        out.push_str("<h3>First failing seeds</h3><ul class=\"failing\">");
        for f in &s.failing {
            let tag = if f.expected {
                "<span class=\"tag expected\">expected</span>"
            } else {
                "<span class=\"tag unexpected\">unexpected</span>"
            };
            let timeline = match &f.report_file {
                Some(file) => format!("timeline: <a class=\"run-report\" href=\"{0}\">{0}</a>", xml(file)),
                None => format!("timeline: <code>{}</code>", xml(&f.report_command)),
            };
            let _ = write!(
                out,
                "<li>seed {} {tag} {}<br><code class=\"replay\">{}</code><br>{timeline}</li>",
                f.seed,
                xml(&f.first_detail),
                xml(&f.replay)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}
