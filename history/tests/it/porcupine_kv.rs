//! porcupine's two large key-value histories (`c50-ok`, `c50-bad`, 50
//! clients, 10 keys): porcupine's verdicts within budgets counted in model
//! steps, and the explanation of `c50-bad`'s failure bounded by its own
//! budget and reported as partial when that budget is cut short. (That
//! `leasesim check-history` says so in its JSON and text output is tested
//! with the command, in sim/tests/it/linearizability_cli.rs.)
//!
//! The step budgets are a few times what the checker needs today (measured:
//! about 61 thousand steps for `c50-bad`'s verdict, 0.71 million for
//! `c50-ok`); before the partitions took turns, `c50-bad` needed 1.7 million.

use std::path::PathBuf;

use leasesim_history::check::check_keyed;
use leasesim_history::jepsen_edn::{parse_edn_history, EdnHistory};
use leasesim_history::model::keyed::KeyedHistory;
use leasesim_history::{CheckOptions, Verdict};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine-kv").join(name)
}

fn parsed(name: &str) -> EdnHistory {
    parse_edn_history(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
}

#[test]
fn c50_ok_is_linearizable_within_a_million_steps() {
    let edn = parsed("c50-ok.txt");
    let options = CheckOptions { budget_steps: 1_000_000, shrink_budget_steps: 0 };
    let report = check_keyed(&edn.history, &edn.model, &options).unwrap();
    assert_eq!(report.verdict, Verdict::Linearizable, "{} steps", report.steps);
    assert_eq!((report.operations, report.partitions), (1712, 10));
}

#[test]
fn c50_bad_is_not_linearizable_within_two_hundred_thousand_steps() {
    let edn = parsed("c50-bad.txt");
    let options = CheckOptions { budget_steps: 200_000, shrink_budget_steps: 1_000_000 };
    let report = check_keyed(&edn.history, &edn.model, &options).unwrap();
    let Verdict::NotLinearizable { window } = &report.verdict else { panic!("{:?} after {} steps", report.verdict, report.steps) };
    assert!(report.steps <= options.budget_steps);
    assert!(report.shrink_steps <= options.shrink_budget_steps, "{} shrink steps", report.shrink_steps);
    // The window fails on its own: its operations, and nothing else.
    assert!(!window.is_empty() && window.len() < 20, "{window:?}");
    let alone = KeyedHistory { ops: window.iter().map(|&i| edn.history.ops[i].clone()).collect() };
    let again = check_keyed(&alone, &edn.model, &CheckOptions { budget_steps: 100_000, shrink_budget_steps: 0 }).unwrap();
    assert!(matches!(again.verdict, Verdict::NotLinearizable { .. }), "{:?}", again.verdict);
}

#[test]
fn a_cut_short_explanation_is_partial_and_keeps_its_budget() {
    let edn = parsed("c50-bad.txt");
    let options = CheckOptions { budget_steps: 200_000, shrink_budget_steps: 1_000 };
    let report = check_keyed(&edn.history, &edn.model, &options).unwrap();
    assert!(matches!(report.verdict, Verdict::NotLinearizable { .. }), "the verdict does not depend on the shrink budget");
    assert!(!report.window_minimal);
    assert!(report.shrink_steps <= 1_000, "{} shrink steps", report.shrink_steps);
}
