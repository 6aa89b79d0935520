//! The run report: one self-contained HTML page for one seed — what
//! happened, where it went wrong and why, in a minute. The header gives the
//! verdict and the replay command; the violation list explains each
//! violation; the timeline shows it in place; the trace panel lists the
//! events near any instant clicked. CSS, JS and SVG are inline and nothing
//! is fetched, so the file can be attached to an issue or opened offline.

use std::fmt::Write;

use crate::escape::{script_json, xml};
use crate::model::RunView;
use crate::timeline::timeline_svg;
use crate::units::{percent, secs};

const CSS: &str = include_str!("../assets/page.css");
const JS: &str = include_str!("../assets/run.js");

pub fn run_page(view: &RunView) -> String {
    let mut out = String::with_capacity(64 * 1024 + view.trace.len() * 96);
    let title = format!("{} seed {} — {}", view.scenario, view.seed, view.verdict);
    out.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = write!(out, "<title>{}</title><style>{CSS}</style></head><body class=\"run-report\">", xml(&title));
    header(&mut out, view);
    violation_list(&mut out, view);
    legend(&mut out);
    out.push_str(
        "<div class=\"chart-tools\"><button id=\"zoom-out\" type=\"button\">−</button><span id=\"zoom-level\">1×</span>\
         <button id=\"zoom-in\" type=\"button\">+</button><span>zoom · hover for details · click for the trace near an instant</span>\
         <span id=\"readout\"></span></div>",
    );
    let _ = write!(out, "<div id=\"chart\" class=\"chart\">{}</div>", timeline_svg(view));
    if !view.notes.is_empty() {
        out.push_str("<div class=\"notes\">");
        for note in &view.notes {
            let _ = write!(out, "<div>{}</div>", xml(note));
        }
        out.push_str("</div>");
    }
    out.push_str(
        "<section id=\"near\"><h2>Trace near <span id=\"near-time\">—</span>\
         <input id=\"filter\" type=\"search\" placeholder=\"filter: words that must all appear (c1 lock)\">\
         <span class=\"hint\">click the timeline or a violation</span><button id=\"near-toggle\" type=\"button\">hide</button></h2>\
         <div id=\"near-scroll\"><table id=\"near-events\"><tbody></tbody></table></div></section>",
    );
    let trace: Vec<(u64, &str, &str)> = view.trace.iter().map(|t| (t.at_ns, t.proc.as_str(), t.text.as_str())).collect();
    let json = serde_json::to_string(&trace).expect("tuples of numbers and strings serialize");
    let _ = write!(out, "<script type=\"application/json\" id=\"trace-data\">{}</script>", script_json(&json));
    let _ = writeln!(out, "<script>{JS}</script></body></html>");
    out
}

fn header(out: &mut String, view: &RunView) {
    let verdict_class = if view.verdict == "ok" { "ok" } else { "violation" };
    let expected = if view.expected {
        "<span class=\"tag expected\">as the scenario expects</span>"
    } else {
        "<span class=\"tag unexpected\">unexpected</span>"
    };
    let _ = write!(
        out,
        "<header><h1>{} · seed {} <span class=\"verdict {verdict_class}\">{}</span> {expected}</h1>",
        xml(&view.scenario),
        view.seed,
        xml(&view.verdict)
    );
    let _ = write!(out, "<p class=\"replay\">replay: <code id=\"replay\">{}</code>", xml(&view.replay));
    if let Some(facts) = &view.real_facts {
        let _ = write!(out, " <span class=\"facts\">· <code>{}</code> · {}</span></p></header>", xml(&view.file), xml(facts));
        return;
    }
    let _ = write!(
        out,
        " <span class=\"facts\">· <code>{}</code> · {:.1}s simulated in {:.3}s wall ({:.0}×) · {} events · {} trace lines · digest {} · \
         drift bound {} (a violation inside it is a bug)</span></p></header>",
        xml(&view.file),
        view.sim_seconds,
        view.wall_seconds,
        view.sim_seconds / view.wall_seconds.max(1e-9),
        view.events,
        view.trace.len(),
        xml(&view.trace_digest),
        percent(view.drift_bound).trim_start_matches('+'),
    );
}

fn violation_list(out: &mut String, view: &RunView) {
    if view.violations.is_empty() {
        out.push_str("<section id=\"violation-list\"><h2>No violations</h2></section>");
        return;
    }
    let _ = write!(out, "<section id=\"violation-list\"><h2>Violations ({})</h2><ol>", view.violations.len());
    for (i, v) in view.violations.iter().enumerate() {
        let class = if v.assumptions_held { "bug" } else { "broken" };
        let _ = write!(
            out,
            "<li class=\"{class}\" data-target=\"v{}\" data-at-ns=\"{}\"><b>{}</b> at {} <span class=\"tag {class}\">{}</span> {}</li>",
            i + 1,
            v.at_ns,
            xml(&v.invariant),
            secs(v.at_ns),
            v.kind(),
            xml(&v.detail)
        );
    }
    out.push_str("</ol></section>");
}

/// Swatches drawn with the timeline's own classes, so the legend cannot
/// drift from the chart.
fn legend(out: &mut String) {
    let swatch = |shape: &str, label: &str| -> String {
        format!("<span><svg width=\"26\" height=\"14\" viewBox=\"0 0 26 14\">{shape}</svg>{}</span>", xml(label))
    };
    let items = [
        swatch("<rect class=\"role leader\" x=\"1\" y=\"2\" width=\"24\" height=\"10\"/>", "leader (term)"),
        swatch("<rect class=\"role follower\" x=\"1\" y=\"2\" width=\"24\" height=\"10\"/>", "follower"),
        swatch("<rect class=\"role down\" x=\"1\" y=\"2\" width=\"24\" height=\"10\"/>", "crashed"),
        swatch("<rect class=\"paused\" x=\"1\" y=\"2\" width=\"24\" height=\"10\"/>", "paused"),
        swatch("<rect class=\"cut\" x=\"1\" y=\"2\" width=\"24\" height=\"10\"/>", "links cut (partition / isolate / block)"),
        swatch("<path class=\"clock wall\" d=\"M1 10L25 4\"/>", "wall clock error"),
        swatch("<path class=\"clock mono\" d=\"M1 10L25 6\"/>", "monotonic clock error"),
        swatch("<path class=\"mark jump\" d=\"M13 1L19 7L13 13L7 7Z\"/>", "clock jump / drift change"),
        swatch("<rect class=\"hold\" x=\"1\" y=\"2\" width=\"24\" height=\"10\" fill=\"#3182ce\"/>", "holder per the cluster (#token)"),
        swatch("<rect class=\"belief\" x=\"1\" y=\"2\" width=\"24\" height=\"10\" fill=\"#3182ce\" stroke=\"#3182ce\"/>", "client believes it holds"),
        swatch("<rect class=\"overlap\" x=\"1\" y=\"1\" width=\"24\" height=\"12\"/>", "two clients believe at once"),
        swatch("<circle class=\"write-dot\" cx=\"13\" cy=\"7\" r=\"4.5\" fill=\"#3182ce\"/>", "store accepted"),
        swatch("<circle class=\"write-dot\" cx=\"13\" cy=\"7\" r=\"3.5\" fill=\"#3182ce\"/><circle class=\"write-ring\" cx=\"13\" cy=\"7\" r=\"6\"/>", "accepted, token went backwards"),
        swatch("<path class=\"write-x\" d=\"M9 3L17 11M9 11L17 3\"/>", "store rejected"),
        swatch("<g class=\"violation bug\"><circle class=\"violation-badge\" cx=\"13\" cy=\"7\" r=\"6\"/></g>", "violation: bug"),
        swatch("<g class=\"violation broken\"><circle class=\"violation-badge\" cx=\"13\" cy=\"7\" r=\"6\"/></g>", "violation: assumption broken"),
        swatch("<line class=\"settle-line\" x1=\"13\" y1=\"0\" x2=\"13\" y2=\"14\"/>", "settle begins"),
    ];
    let _ = write!(out, "<div class=\"legend\" id=\"legend\">{}</div>", items.concat());
}
