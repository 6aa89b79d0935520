//! The checker against Jepsen's etcd register histories, whose answers are
//! known (porcupine's test suite): every verdict must match.
//!
//! The histories are third-party data copied into the repository
//! (`history/tests/data/jepsen-etcd-register/`, MIT, see its LICENSE), so this
//! test always runs.

use std::path::PathBuf;

use leasesim_history::history::RegisterHistory;
use leasesim_history::jepsen::parse_jepsen;
use leasesim_history::{check_register, CheckOptions, Verdict};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen-etcd-register")
}

/// (file name, expected verdict name) from `verdicts.txt`.
fn expected_verdicts(dir: &std::path::Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("verdicts.txt")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let rows = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split_whitespace();
            let file = parts.next().expect("file name").to_string();
            let verdict = parts.next().unwrap_or_else(|| panic!("verdicts.txt: no verdict for {file}")).to_string();
            assert!(verdict == "linearizable" || verdict == "not-linearizable", "verdicts.txt: unexpected verdict `{verdict}` for {file}");
            (file, verdict)
        })
        .collect();
    rows
}

fn load(dir: &std::path::Path, file: &str) -> RegisterHistory {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    parse_jepsen(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn every_jepsen_etcd_history_gets_its_known_verdict() {
    let dir = data_dir();
    let expected = expected_verdicts(&dir);
    assert_eq!(expected.len(), 50, "verdicts.txt lists the 50 etcd histories");
    let options = CheckOptions::default();
    let mut mismatches = Vec::new();
    let (mut total_steps, mut worst) = (0u64, (0u64, String::new()));
    for (file, want) in &expected {
        let history = load(&dir, file);
        let report = check_register(&history, &options).unwrap_or_else(|e| panic!("{file}: {e}"));
        total_steps += report.steps;
        if report.steps > worst.0 {
            worst = (report.steps, file.clone());
        }
        if report.verdict.name() != want {
            mismatches.push(format!("{file}: expected {want}, got {} after {} steps", report.verdict.name(), report.steps));
        }
    }
    println!("{} histories, {total_steps} steps in all, worst {} steps ({})", expected.len(), worst.0, worst.1);
    assert!(mismatches.is_empty(), "verdict mismatches:\n{}", mismatches.join("\n"));
}

/// A window must be a witness on its own: the operations it names fail
/// without the rest of the history.
#[test]
fn jepsen_windows_fail_on_their_own() {
    let dir = data_dir();
    let expected = expected_verdicts(&dir);
    let failing: Vec<&String> = expected.iter().filter(|(_, v)| v == "not-linearizable").map(|(f, _)| f).take(5).collect();
    for file in failing {
        let history = load(&dir, file);
        let report = check_register(&history, &CheckOptions::default()).unwrap();
        let Verdict::NotLinearizable { window } = report.verdict else {
            panic!("{file}: expected not-linearizable, got {:?}", report.verdict);
        };
        assert!(!window.is_empty() && window.len() < history.ops.len(), "{file}: window of {} ops", window.len());
        let alone = RegisterHistory { ops: window.iter().map(|&i| history.ops[i].clone()).collect() };
        let again = check_register(&alone, &CheckOptions::default()).unwrap();
        assert!(matches!(again.verdict, Verdict::NotLinearizable { .. }), "{file}: window alone is {:?}", again.verdict);
    }
}
