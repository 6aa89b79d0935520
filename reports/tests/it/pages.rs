//! The pages as files a person opens: the run page is self-contained (no
//! network), keeps data as text (no markup injection from trace lines or
//! explanations), embeds a trace the script can parse; the sweep pages put
//! failed scenarios first with replay commands and links to timelines.

use crate::common;

use std::collections::BTreeMap;

use leasesim_reports::sweep_html::sweep_html;
use leasesim_reports::sweep_md::sweep_markdown;
use leasesim_reports::{parse_results, run_page, Expect, SweepSummary};

#[test]
fn the_run_page_is_self_contained() {
    let html = run_page(&common::small_run());
    for external in ["src=\"http", "href=\"http", "@import", "url(http", "<link "] {
        assert!(!html.contains(external), "the page must not fetch anything: found {external}");
    }
    assert!(html.contains("<style>") && html.contains("getElementById('timeline')"), "CSS and JS are inline");
    assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\""), "the SVG is inline");
}

#[test]
fn trace_text_stays_text_and_parses_back() {
    let mut view = common::small_run();
    view.trace[0].text = "</script><img src=x onerror=alert(1)>".into();
    view.violations[0].detail.push_str(" <b>bold</b>");
    let html = run_page(&view);
    assert!(!html.contains("</script><img"), "a trace line cannot end the data block");
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;") && !html.contains("<b>bold</b>"), "explanations are text");
    let open = "<script type=\"application/json\" id=\"trace-data\">";
    let start = html.find(open).expect("the trace block") + open.len();
    let end = start + html[start..].find("</script>").expect("the block closes");
    let trace: Vec<(u64, String, String)> = serde_json::from_str(&html[start..end]).expect("the trace is JSON");
    assert_eq!(trace.len(), view.trace.len());
    assert_eq!(trace[0].2, view.trace[0].text, "escaping round-trips");
    assert!(
        html.contains("<li class=\"bug\" data-target=\"v1\" data-at-ns=\"6700000000\"><b>lock-belief-overlap</b> at 6.700s"),
        "the violation list"
    );
    assert!(html.contains("<code id=\"replay\">leasesim replay scenarios/small-lock.toml --seed 7</code>"), "the replay command");
}

const RESULTS: &str = r#"{"scenario":"calm","file":"scenarios/calm.toml","seed":0,"verdict":"ok","violations":[],"expected":true,"trace_digest":"a","sim_seconds":10.0,"wall_seconds":0.1}
{"scenario":"calm","file":"scenarios/calm.toml","seed":1,"verdict":"ok","violations":[],"expected":true,"trace_digest":"b","sim_seconds":10.0,"wall_seconds":0.1}
{"scenario":"pause","file":"scenarios/pause.toml","seed":4,"verdict":"violation","violations":[{"invariant":"fencing-order","at":"10.005s","at_ns":10005000000,"detail":"the store accepted c1's write <after> c2's","assumptions_held":true}],"expected":false,"trace_digest":"c","sim_seconds":28.0,"wall_seconds":0.2}
"#;

fn summary() -> SweepSummary {
    let runs = parse_results("results.jsonl", RESULTS).expect("valid results");
    let expects = BTreeMap::from([("calm".to_string(), Expect::Safe), ("pause".to_string(), Expect::Safe)]);
    let reports = BTreeMap::from([(("pause".to_string(), 4), "pause-seed4.html".to_string())]);
    let mut s = SweepSummary::new(&runs, &expects, &reports, "out");
    s.sources = vec!["results.jsonl".into()];
    s
}

#[test]
fn the_markdown_summary_leads_with_what_failed() {
    let md = sweep_markdown(&summary());
    assert!(
        md.starts_with(
            "# leasesim sweep report\n\n3 runs of 2 scenarios: 48.0s simulated in 0.40s of run time (120× real time); **1 unexpected**"
        ),
        "{md}"
    );
    assert!(md.contains("| calm | 0..2 | 2 | 2 | 0 | 0 | 0 | met |"), "{md}");
    assert!(md.contains("| pause | 4 | 1 | 0 | 1 | 0 | 1 | NOT MET |"), "{md}");
    assert!(md.contains("## pause"), "a section for the failed scenario");
    assert!(!md.contains("## calm"), "no section for a scenario that fired nothing");
    assert!(md.contains("| fencing-order | 1 | 0 | 1 | 4 |"), "{md}");
    assert!(md.contains("- seed 4 (**unexpected**): fencing-order at 10.005s"), "{md}");
    assert!(md.contains("  - replay: `leasesim replay scenarios/pause.toml --seed 4`"), "{md}");
    assert!(md.contains("  - timeline: [pause-seed4.html](pause-seed4.html)"), "{md}");
}

#[test]
fn the_html_summary_links_the_timelines() {
    let html = sweep_html(&summary());
    assert!(html.contains("<tr class=\"not-met\"><td><a href=\"#pause\">pause</a></td>"), "the failed row links its section");
    assert!(html.contains("timeline: <a class=\"run-report\" href=\"pause-seed4.html\">pause-seed4.html</a>"), "the timeline link");
    assert!(html.contains("&lt;after&gt;"), "explanations stay text");
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "nothing is fetched");
}
