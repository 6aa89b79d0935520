//! The invariant ids live in three places: the judge's checkers (what
//! fires), the scenario loader (what `[expect]` may name) and the docs (what
//! users read). They must name the same set.

use std::collections::BTreeSet;

#[test]
fn checkers_loader_and_docs_name_the_same_invariants() {
    let checkers: BTreeSet<&str> = leasesim_judge::checkers::CHECKERS.iter().map(|(id, _)| *id).collect();
    let loader: BTreeSet<&str> = leasesim_scenario::invariant_ids().collect();
    assert_eq!(checkers, loader, "the judge's CHECKERS and scenario::invariants disagree");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/");
    let docs = ["SCENARIO-FORMAT.md", "SCENARIO-EXTENSIONS.md"]
        .map(|f| std::fs::read_to_string(format!("{root}{f}")).unwrap_or_else(|e| panic!("{f}: {e}")))
        .join("\n");
    for id in checkers {
        assert!(docs.contains(&format!("`{id}`")), "docs/ does not describe the invariant `{id}`");
    }
}
