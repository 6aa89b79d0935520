//! Fuzzing of every parser that reads a user's file: the scenario loader,
//! the study spec, the Jepsen log, Jepsen EDN and leasesim history readers,
//! and the saved results `report` and `merge` read.
//!
//! Each target gets arbitrary text built from its format's own tokens and
//! valid files mutated (cut, spliced, lines doubled or dropped), and must:
//! - never panic (a panic fails the case);
//! - answer every refusal with a location inside the text (line, and column
//!   where the format has them);
//! - do work bounded by its input, measured by counting, never by a clock:
//!   the EDN and Jepsen readers count the characters they look at, and every
//!   target's heap allocations are counted by this binary's allocator, so a
//!   blow-up (a loop that allocates, quadratic re-parsing) fails the case.
//!
//! Each property has its own fixed case count, so the suite's budget is the
//! same under the README's test command and in CI. (`PROPTEST_CASES`, if
//! set, overrides every count: proptest applies it over each property's
//! config. `.ci/run` does not set it.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::Config;

use leasesim_history::check::{check_keyed, check_register, CheckOptions};
use leasesim_history::jepsen::{parse_jepsen_log, ParseError};
use leasesim_history::jepsen_edn::parse_edn_history;
use leasesim_history::leasesim_format::parse_leasesim;
use leasesim_scenario::ScenarioError;

/// Counts this thread's allocations (tests run on several threads).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the allocations it made.
fn counting<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (out, ALLOCATIONS.with(Cell::get) - before)
}

/// The allocation bound: generous per input byte, plus a fixed allowance
/// (error messages, the parser's tables). Work beyond it is a blow-up.
fn allocation_bound(text: &str) -> u64 {
    64 * text.len() as u64 + 20_000
}

fn config(cases: u32) -> Config {
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// A location inside `text`: a line that exists (or the one after the
/// last) and a column inside it (or just past its end).
fn assert_inside(text: &str, line: usize, column: Option<usize>) -> Result<(), TestCaseError> {
    let lines: Vec<&str> = text.split('\n').collect();
    prop_assert!(line >= 1 && line <= lines.len() + 1, "line {line} of {} lines", lines.len());
    if let Some(column) = column {
        let width = lines.get(line - 1).map_or(0, |l| l.len());
        prop_assert!(column >= 1 && column <= width + 1, "column {column} of line {line} ({width} bytes)");
    }
    Ok(())
}

fn assert_parse_error(text: &str, e: &ParseError) -> Result<(), TestCaseError> {
    prop_assert!(e.column.is_some(), "no column: {e:?}");
    prop_assert!(!e.message.is_empty());
    assert_inside(text, e.line, e.column)
}

fn assert_scenario_error(text: &str, e: &ScenarioError) -> Result<(), TestCaseError> {
    prop_assert!(!e.diagnostics.is_empty());
    for d in &e.diagnostics {
        let Some(at) = d.location else {
            return Err(TestCaseError::fail(format!("no location: {d:?}")));
        };
        assert_inside(text, at.line, Some(at.col))?;
        prop_assert!(!d.message.is_empty());
    }
    Ok(())
}

/// Text made of a format's tokens, in any order.
fn tokens(alphabet: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 0..max).prop_map(|t| t.concat())
}

/// One change to a text, at a position given as a fraction of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(f64, usize),
    Insert(f64, &'static str),
    Truncate(f64),
    DoubleLine(f64),
    DropLine(f64),
}

#[rustfmt::skip]
const NOISE: &[&str] = &[
    "", " ", "\t", "\n", "\r\n", "\"", "'", "[", "]", "{", "}", "(", ")", "=", ",", ":", ";", "#", "\\", "-", "0",
    "-1", "99999999999999999999", "1.5", "nil", "true", ":ok", ":invoke", ":fail", ":info", "é", "\u{0}", "[[",
    "]]", "#_",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0, 1usize..20).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (0.0..1.0, prop::sample::select(NOISE)).prop_map(|(at, t)| Mutation::Insert(at, t)),
        (0.0..1.0).prop_map(Mutation::Truncate),
        (0.0..1.0).prop_map(Mutation::DoubleLine),
        (0.0..1.0).prop_map(Mutation::DropLine),
    ]
}

/// The byte offset nearest `at` (a fraction) on a character boundary.
fn boundary(text: &str, at: f64) -> usize {
    let mut i = ((text.len() as f64) * at) as usize;
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i.min(text.len())
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut text = text.to_string();
    for m in mutations {
        match *m {
            Mutation::Delete(at, n) => {
                let start = boundary(&text, at);
                let end = text[start..].char_indices().nth(n).map_or(text.len(), |(i, _)| start + i);
                text.replace_range(start..end, "");
            }
            Mutation::Insert(at, t) => text.insert_str(boundary(&text, at), t),
            Mutation::Truncate(at) => text.truncate(boundary(&text, at)),
            Mutation::DoubleLine(at) | Mutation::DropLine(at) => {
                let mut lines: Vec<&str> = text.split('\n').collect();
                let i = ((lines.len() as f64) * at) as usize % lines.len();
                if matches!(m, Mutation::DoubleLine(_)) {
                    lines.insert(i, lines[i]);
                } else {
                    lines.remove(i);
                }
                text = lines.join("\n");
            }
        }
    }
    text
}

/// A valid sample, mutated.
fn mutated(samples: &'static [&'static str]) -> impl Strategy<Value = String> {
    (prop::sample::select(samples), prop::collection::vec(mutation(), 1..6)).prop_map(|(s, m)| mutate(s, &m))
}

// ---- Jepsen log ----

const JEPSEN_SAMPLES: &[&str] = &[
    include_str!("../../../history/tests/data/jepsen-etcd-register/etcd_000.log"),
    "INFO  jepsen.util - 0\t:invoke\t:cas\t[1 2]\nINFO  jepsen.util - 0\t:fail\t:cas\t[1 2]\n\
     INFO  jepsen.core - Run complete\n1 :invoke :read nil\n1   :ok   :read   nil\n",
];
#[rustfmt::skip]
const JEPSEN_TOKENS: &[&str] = &[
    "INFO  jepsen.util - ", "jepsen.core", "WARN ", "0", "1", "12", ":nemesis", "\t", " ", "\n", ":invoke", ":ok",
    ":fail", ":info", ":read", ":write", ":cas", "nil", "[1 2]", "[nil 3]", "[", "]", ":timed-out", "-", ":", "x",
];

fn check_jepsen(text: &str) -> Result<(), TestCaseError> {
    let (result, allocations) = counting(|| parse_jepsen_log(text));
    prop_assert!(allocations <= allocation_bound(text), "{allocations} allocations for {} bytes", text.len());
    match result {
        Err(e) => assert_parse_error(text, &e),
        Ok(log) => {
            prop_assert!(log.steps <= 8 * (text.len() as u64 + 1), "{} steps for {} bytes", log.steps, text.len());
            // What parses, the checker takes without panicking.
            let options = CheckOptions { budget_steps: 20_000, shrink_budget_steps: 20_000 };
            let _ = check_register(&log.history, &options);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(config(400))]
    #[test]
    fn jepsen_log_arbitrary(text in tokens(JEPSEN_TOKENS, 80)) { check_jepsen(&text)?; }
    #[test]
    fn jepsen_log_mutated(text in mutated(JEPSEN_SAMPLES)) { check_jepsen(&text)?; }
}

// ---- Jepsen EDN ----

const EDN_SAMPLES: &[&str] = &[
    "{:process 0, :type :invoke, :f :write, :value 1, :time 10}\n{:process 0, :type :ok, :f :write, :value 1, :time 20}\n\
     {:process 1, :type :invoke, :f :cas, :value [1 2], :time 30}\n{:process 1, :type :fail, :f :cas, :value [1 2], :time 40}\n\
     {:process :nemesis, :type :info, :f :start, :value {\"n1\" #{\"n2\"}}, :time 41}\n",
    "[{:process 0, :type :invoke, :f :read, :value [3 nil]}\n {:process 0, :type :ok, :f :read, :value [3 7]}\n\
     {:process 1, :type :invoke, :f :cas, :value [3 [7 8]]} ; open\n #_ {:ignored 1}]\n",
    "{:process 9, :type :invoke, :f :append, :key \"0\", :value \"x 9 0 y\"}\n{:process 1, :type :invoke, :f :get, :key \"9\", :value nil}\n\
     {:process 1, :type :ok, :f :get, :key \"9\", :value \"\"}\n{:process 9, :type :ok, :f :append, :key \"0\", :value \"x 9 0 y\"}\n",
];
#[rustfmt::skip]
const EDN_TOKENS: &[&str] = &[
    "{", "}", "[", "]", "(", ")", "#{", "#_", "#inst ", ";", "\n", " ", ",", ":process", ":type", ":f", ":value",
    ":time", ":key", ":index", ":invoke", ":ok", ":fail", ":info", ":read", ":write", ":cas", ":get", ":put",
    ":append", ":nemesis", "0", "1", "-5", "nil", "\"a\"", "\"", "\\", "\\newline", "1/2", "2.5", "1N", "x",
];

fn check_edn(text: &str) -> Result<(), TestCaseError> {
    let (result, allocations) = counting(|| parse_edn_history(text));
    prop_assert!(allocations <= allocation_bound(text), "{allocations} allocations for {} bytes", text.len());
    match result {
        Err(e) => assert_parse_error(text, &e),
        Ok(parsed) => {
            prop_assert!(parsed.steps <= 8 * (text.len() as u64 + 1), "{} steps for {} bytes", parsed.steps, text.len());
            let options = CheckOptions { budget_steps: 20_000, shrink_budget_steps: 20_000 };
            if let Err(e) = check_keyed(&parsed.history, &parsed.model, &options) {
                prop_assert!(e.op_index < parsed.op_lines.len(), "a validation error names a line");
            }
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(config(400))]
    #[test]
    fn edn_arbitrary(text in tokens(EDN_TOKENS, 80)) { check_edn(&text)?; }
    #[test]
    fn edn_mutated(text in mutated(EDN_SAMPLES)) { check_edn(&text)?; }
    #[test]
    fn edn_any_characters(text in "\\PC{0,120}") { check_edn(&text)?; }
}

// ---- leasesim history ----

const LEASESIM_SAMPLES: &[&str] = &[
    "{\"client\":1,\"call_ns\":0,\"return_ns\":10,\"input\":{\"put\":{\"key\":\"a\",\"value\":\"1\"}},\"output\":\"ok\"}\n\
     {\"client\":2,\"call_ns\":20,\"return_ns\":30,\"input\":{\"get\":{\"key\":\"a\"}},\"output\":{\"value\":\"1\"}}\n",
    "{\n  \"ops\": [\n    {\"client\": 1, \"call_ns\": 5, \"input\": {\"lease_grant\": {\"lease\": 7}}}\n  ]\n}\n",
];

fn check_leasesim(text: &str) -> Result<(), TestCaseError> {
    let (result, allocations) = counting(|| parse_leasesim(text));
    prop_assert!(allocations <= allocation_bound(text), "{allocations} allocations for {} bytes", text.len());
    if let Err(e) = result {
        assert_parse_error(text, &e)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]
    #[test]
    fn leasesim_history_mutated(text in mutated(LEASESIM_SAMPLES)) { check_leasesim(&text)?; }
    #[test]
    fn leasesim_history_arbitrary(text in "[{}\\[\\]\":,0-9a-z_\n ]{0,120}") { check_leasesim(&text)?; }
}

// ---- scenario files and study specs ----

const SCENARIO_SAMPLES: &[&str] = &[
    include_str!("../../../scenarios/baseline.toml"),
    include_str!("../data/good/format-example.toml"),
    include_str!("../data/good/everything.toml"),
];
#[rustfmt::skip]
const TOML_TOKENS: &[&str] = &[
    "name", "duration", "seeds", "[cluster]", "[network]", "[[fault]]", "[expect]", "servers", "at", "crash",
    "latency", " = ", "\"", "\"5s\"", "\"s1\"", "[", "]", "{", "}", "3", "0..10", "\n", " ", ",", "#", "=", ".",
];

proptest! {
    #![proptest_config(config(300))]
    #[test]
    fn scenario_mutated(text in mutated(SCENARIO_SAMPLES)) {
        let (result, allocations) = counting(|| leasesim_scenario::parse(&text, "fuzz.toml"));
        prop_assert!(allocations <= allocation_bound(&text), "{allocations} allocations for {} bytes", text.len());
        if let Err(e) = result { assert_scenario_error(&text, &e)?; }
    }
    #[test]
    fn scenario_arbitrary(text in tokens(TOML_TOKENS, 60)) {
        let (result, allocations) = counting(|| leasesim_scenario::parse(&text, "fuzz.toml"));
        prop_assert!(allocations <= allocation_bound(&text), "{allocations} allocations for {} bytes", text.len());
        if let Err(e) = result { assert_scenario_error(&text, &e)?; }
    }
}

const STUDY_SAMPLES: &[&str] = &[include_str!("../../../reports/studies/drift-margin.toml")];
#[rustfmt::skip]
const STUDY_TOKENS: &[&str] = &[
    "name", "base", "seeds", "[axes]", "lease_expiry", "leader_drift", "margin", "ttl", "pause", "fenced", " = ",
    "\"drift-x\"", "\"base.toml\"", "\"0..8\"", "[", "]", "0.5", "\"1s\"", "true", ",", "\n", " ", "#", "\"",
];

proptest! {
    #![proptest_config(config(300))]
    #[test]
    fn study_spec_arbitrary(text in tokens(STUDY_TOKENS, 60)) {
        let (result, allocations) = counting(|| leasesim::study::spec::parse(&text, "fuzz-study.toml"));
        prop_assert!(allocations <= allocation_bound(&text), "{allocations} allocations for {} bytes", text.len());
        if let Err(e) = result { assert_scenario_error(&text, &e)?; }
    }
    #[test]
    fn study_spec_mutated(text in mutated(STUDY_SAMPLES)) {
        let (result, allocations) = counting(|| leasesim::study::spec::parse(&text, "fuzz-study.toml"));
        prop_assert!(allocations <= allocation_bound(&text), "{allocations} allocations for {} bytes", text.len());
        if let Err(e) = result { assert_scenario_error(&text, &e)?; }
    }
}

// ---- saved results (`report`, `merge`) ----

const RESULT_SAMPLES: &[&str] = &[
    "{\"scenario\":\"a\",\"file\":\"scenarios/a.toml\",\"seed\":3,\"verdict\":\"violation\",\"violations\":[{\"invariant\":\"fencing-order\",\
     \"at\":\"10.005s\",\"at_ns\":10005000000,\"detail\":\"x\",\"assumptions_held\":true}],\"expected\":true,\"expected_violations\":[],\
     \"trace_digest\":\"5dd2\",\"sim_seconds\":28.0,\"wall_seconds\":0.1,\"events\":4888,\"replay\":\"leasesim replay scenarios/a.toml --seed 3\"}\n\
     \n{\"scenario\":\"a\",\"file\":\"scenarios/a.toml\",\"seed\":4,\"verdict\":\"ok\",\"violations\":[],\"expected\":true,\
     \"sim_seconds\":1.0,\"wall_seconds\":0.1,\"replay\":\"r\"}\n",
];

fn check_results(text: &str) -> Result<(), TestCaseError> {
    let (result, allocations) = counting(|| leasesim_reports::parse_results("fuzz.jsonl", text));
    prop_assert!(allocations <= allocation_bound(text), "{allocations} allocations for {} bytes", text.len());
    if let Err(e) = result {
        // Line 0 is the whole file: only for a file without a single run.
        if e.line == 0 {
            prop_assert!(text.trim().is_empty(), "line 0 for a non-empty file: {e}");
        } else {
            assert_inside(text, e.line, None)?;
        }
    }
    // merge reads the same lines from a file, with its own record type.
    let path = std::env::temp_dir().join(format!("leasesim-fuzz-merge-{}-{:?}.jsonl", std::process::id(), std::thread::current().id()));
    std::fs::write(&path, text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut summaries = leasesim::cli::summary::Summaries::deduplicating();
    if let Err(message) = leasesim::cli::merge::read_into(&path, &mut summaries) {
        let prefix = format!("{}:", path.display());
        let line: usize = message
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| TestCaseError::fail(format!("no line in: {message}")))?;
        assert_inside(text, line, None)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]
    #[test]
    fn saved_results_mutated(text in mutated(RESULT_SAMPLES)) { check_results(&text)?; }
    #[test]
    fn saved_results_arbitrary(text in "[{}\\[\\]\":,0-9a-z_.\n ]{0,120}") { check_results(&text)?; }
}

/// The inputs reach both sides of every parser: a fuzzer whose inputs all
/// fail at the first byte (or all parse) would prove little.
#[test]
fn the_inputs_are_both_refused_and_accepted() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn tally<S: Strategy<Value = String>>(strategy: S, parses: impl Fn(&str) -> bool) -> (usize, usize) {
        let mut runner = TestRunner::deterministic();
        let mut counts = (0, 0);
        for _ in 0..300 {
            let text = strategy.new_tree(&mut runner).unwrap().current();
            if parses(&text) {
                counts.0 += 1;
            } else {
                counts.1 += 1;
            }
        }
        counts
    }
    let cases: Vec<(&str, (usize, usize))> = vec![
        ("jepsen", tally(mutated(JEPSEN_SAMPLES), |t| parse_jepsen_log(t).is_ok())),
        ("edn", tally(mutated(EDN_SAMPLES), |t| parse_edn_history(t).is_ok())),
        ("leasesim", tally(mutated(LEASESIM_SAMPLES), |t| parse_leasesim(t).is_ok())),
        ("scenario", tally(mutated(SCENARIO_SAMPLES), |t| leasesim_scenario::parse(t, "f.toml").is_ok())),
        ("study", tally(mutated(STUDY_SAMPLES), |t| leasesim::study::spec::parse(t, "s.toml").is_ok())),
        ("results", tally(mutated(RESULT_SAMPLES), |t| leasesim_reports::parse_results("r", t).is_ok())),
    ];
    for (name, (accepted, refused)) in cases {
        println!("{name}: {accepted} accepted, {refused} refused of 300");
        assert!(accepted >= 10 && refused >= 10, "{name}: {accepted} accepted, {refused} refused");
    }
}
