//! JUnit XML for CI dashboards (`sweep --junit F`, `merge --junit F`): one
//! testcase per scenario, failed when its expectation is not met, the
//! failure carrying each unexpected seed, what fired and the commands that
//! replay it. Dashboards then show scenarios, not one opaque CI step.

use std::fmt::Write as _;
use std::path::Path;

use super::summary::ScenarioSummary;

/// Unexpected seeds listed per failing testcase (the rest are counted).
const SEEDS_SHOWN: usize = 20;

/// The report. Each run's replay command carries its own `--bug` flags.
pub fn render(summaries: &[ScenarioSummary], suite: &str) -> String {
    let tests = summaries.len();
    let failures = summaries.iter().filter(|s| !s.met()).count();
    let time: f64 = summaries.iter().map(|s| s.wall_seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"leasesim\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time:.3}\">");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time:.3}\">",
        escape(suite)
    );
    for s in summaries {
        let _ = write!(
            out,
            "    <testcase classname=\"leasesim.scenarios\" name=\"{}\" file=\"{}\" time=\"{:.3}\"",
            escape(&s.name),
            escape(&s.file),
            s.wall_seconds
        );
        let summary = format!(
            "{} seed(s): {} clean, {} bug, {} assumption broken; fired: {}",
            s.runs,
            s.clean,
            s.bugs,
            s.broken,
            if s.fired.is_empty() { "nothing".to_string() } else { s.fired.join(", ") }
        );
        if s.met() {
            let _ = writeln!(out, ">\n      <system-out>{}</system-out>\n    </testcase>", escape(&summary));
            continue;
        }
        let _ = writeln!(out, ">");
        let _ = writeln!(
            out,
            "      <failure type=\"expectation-not-met\" message=\"{}\">{}</failure>",
            escape(&failure_message(s)),
            escape(&failure_body(s))
        );
        let _ = writeln!(out, "      <system-out>{}</system-out>\n    </testcase>", escape(&summary));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn failure_message(s: &ScenarioSummary) -> String {
    if s.unexpected_runs > 0 {
        format!("{} of {} seed(s) unexpected; fired: {}", s.unexpected_runs, s.runs, s.fired.join(", "))
    } else {
        format!("expected some seed to fire {}; none of {} did", s.expected_violations.join(" or "), s.runs)
    }
}

fn failure_body(s: &ScenarioSummary) -> String {
    let mut body = String::new();
    for r in s.unexpected.iter().take(SEEDS_SHOWN) {
        let _ = writeln!(body, "SEED={} scenario={}", r.seed, r.scenario);
        for v in r.violations.iter().take(3) {
            let _ = writeln!(body, "  {} at {}: {}", v.invariant, v.at, v.detail);
        }
        let flags: String = r.bugs.iter().map(|b| format!(" --bug {b}")).collect();
        let _ = writeln!(body, "replay: {}", r.replay);
        let _ = writeln!(body, "shrink: leasesim shrink {} --seed {} --out shrunk-{}-{}.toml{flags}", r.file, r.seed, r.scenario, r.seed);
    }
    if s.unexpected_runs > SEEDS_SHOWN {
        let _ = writeln!(body, "… and {} more seed(s)", s.unexpected_runs - SEEDS_SHOWN);
    }
    if s.unexpected_runs == 0 {
        let _ = writeln!(body, "every seed of {} ran clean, but the scenario expects a violation", s.file);
    }
    body
}

/// Text safe inside an XML attribute or element (and free of characters
/// XML 1.0 forbids).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Writes the report for `summaries`.
pub fn write(path: &Path, summaries: &[ScenarioSummary], suite: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    }
    std::fs::write(path, render(summaries, suite)).map_err(|e| format!("{}: cannot write the JUnit report: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_or_control_characters() {
        assert_eq!(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
        assert_eq!(escape("x\u{1}y\nz"), "x\u{FFFD}y\nz");
    }
}
