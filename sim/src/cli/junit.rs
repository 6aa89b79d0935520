//! JUnit XML for CI dashboards (`sweep --junit F`, `merge --junit F`): one
//! testcase per scenario, failed when its expectation is not met, the
//! failure carrying each unexpected seed, what fired and the commands that
//! replay it. Dashboards then show scenarios, not one opaque CI step.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::summary::ScenarioSummary;

/// Unexpected seeds listed per failing testcase (the rest are counted).
const SEEDS_SHOWN: usize = 20;

/// The report. Each run's replay command carries its own `--bug` flags.
/// `quick-junit` writes the XML (escaping, and dropping what XML 1.0
/// forbids); no timestamp or id is set, so the same results give the same
/// bytes.
pub fn render(summaries: &[ScenarioSummary], suite: &str) -> String {
    let mut test_suite = TestSuite::new(suite);
    let mut total_seconds = 0.0;
    for s in summaries {
        let status = if s.met() {
            TestCaseStatus::success()
        } else {
            let mut failed = TestCaseStatus::non_success(NonSuccessKind::Failure);
            failed.set_type("expectation-not-met").set_message(failure_message(s)).set_description(failure_body(s));
            failed
        };
        let mut case = TestCase::new(s.name.as_str(), status);
        case.set_classname("leasesim.scenarios").set_time(seconds(s.wall_seconds)).set_system_out(summary_line(s));
        case.extra.insert("file".into(), s.file.as_str().into());
        test_suite.add_test_case(case);
        total_seconds += s.wall_seconds;
    }
    test_suite.set_time(seconds(total_seconds));
    let mut report = Report::new("leasesim");
    report.set_time(seconds(total_seconds)).add_test_suite(test_suite);
    report.to_string().expect("a report of strings always serializes")
}

fn seconds(wall_seconds: f64) -> Duration {
    Duration::from_secs_f64(wall_seconds.max(0.0))
}

fn summary_line(s: &ScenarioSummary) -> String {
    format!(
        "{} seed(s): {} clean, {} bug, {} assumption broken; fired: {}",
        s.runs,
        s.clean,
        s.bugs,
        s.broken,
        if s.fired.is_empty() { "nothing".to_string() } else { s.fired.join(", ") }
    )
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

/// Writes the report for `summaries`.
pub fn write(path: &Path, summaries: &[ScenarioSummary], suite: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    }
    std::fs::write(path, render(summaries, suite)).map_err(|e| format!("{}: cannot write the JUnit report: {e}", path.display()))
}
