//! The published hunt (`reports/hunt.md` and the shrunk scenarios in
//! `reports/hunt/`) stays true: each shrunk file the table names still
//! fires the invariant its row names when replayed, every planted bug has a
//! row, and no shrunk file lingers that the table no longer names (a file
//! from an older hunt would be replayed by nobody and trusted by mistake).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use leasesim::run::{run_seed, RunOptions};
use leasesim_core::bugs::Bugs;
use leasesim_scenario as scenario;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One row of the table: bug, invariant, shrunk file (if any).
struct Row {
    bug: String,
    invariant: String,
    file: Option<String>,
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("reports/hunt.md")).expect("reports/hunt.md");
    let mut out = Vec::new();
    // The hunt's table only: the report's later tables (guided search) have
    // other columns.
    let table = text.lines().skip_while(|l| !l.starts_with("| bug | found |")).skip(2).take_while(|l| l.starts_with('|'));
    for line in table {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 10, "a table row has 10 cells: {line}");
        let file = cells[9].strip_prefix('`').and_then(|f| f.strip_suffix('`')).map(String::from);
        out.push(Row { bug: cells[0].to_string(), invariant: cells[2].to_string(), file });
    }
    out
}

#[test]
fn every_published_shrunk_failure_fails_when_replayed() {
    let rows = rows();
    let bugs: BTreeSet<&str> = rows.iter().map(|r| r.bug.as_str()).collect();
    assert_eq!(bugs, Bugs::NAMES.iter().copied().collect::<BTreeSet<_>>(), "one row per planted bug");
    let mut replayed = 0;
    for row in &rows {
        let Some(file) = &row.file else { continue };
        let s = scenario::load(&root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(s.bugs.is_enabled(&row.bug) == Some(true), "{file} turns on {}", row.bug);
        let seed = s.seeds.start;
        let outcome = run_seed(&s, seed, &RunOptions::default());
        assert!(
            outcome.fired().contains(&row.invariant.as_str()),
            "{file} seed {seed}: fired {:?}, not {}",
            outcome.fired(),
            row.invariant
        );
        replayed += 1;
    }
    assert!(replayed >= 10, "only {replayed} shrunk files named");
}

#[test]
fn no_shrunk_file_lingers_that_the_table_does_not_name() {
    let named: BTreeSet<String> = rows().into_iter().filter_map(|r| r.file).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("reports/hunt"))
        .expect("reports/hunt")
        .map(|e| format!("reports/hunt/{}", e.expect("an entry").file_name().to_string_lossy()))
        .collect();
    let stale: Vec<&String> = on_disk.difference(&named).collect();
    assert!(stale.is_empty(), "files in reports/hunt the table does not name: {stale:?}");
    let missing: Vec<&String> = named.difference(&on_disk).collect();
    assert!(missing.is_empty(), "files the table names that do not exist: {missing:?}");
}
