//! The crates both worlds share must link neither madsim nor tokio: the
//! simulator links madsim's tokio and leasesim-node and its tools link real
//! tokio, and both feed the judge and read scenario files with the
//! scenario crate. This reads each such crate's whole dependency tree from
//! `cargo metadata` (normal and build dependencies, transitively;
//! dev-dependencies are the tests' own business) and fails if any package
//! in it is one of those. It lives here, once, for every shared crate.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Package names that would bring an async runtime into a shared crate.
fn is_runtime(name: &str) -> bool {
    name == "tokio" || name.starts_with("tokio-") || name.starts_with("madsim")
}

/// Every package `crate_name` links, by name (`cargo metadata`'s resolve graph).
fn linked_packages(crate_name: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let nodes = meta["resolve"]["nodes"].as_array().expect("a resolve graph");
    let by_id: BTreeMap<&str, &Value> = nodes.iter().map(|n| (n["id"].as_str().expect("node id"), n)).collect();
    let name_of = |id: &str| -> String {
        let pkg = meta["packages"].as_array().expect("packages").iter().find(|p| p["id"] == id).expect("every node is a package");
        pkg["name"].as_str().expect("package name").to_string()
    };
    let root = by_id.keys().find(|id| name_of(id) == crate_name).unwrap_or_else(|| panic!("{crate_name} is a workspace member"));
    let (mut seen, mut todo) = (BTreeSet::new(), vec![root.to_string()]);
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        for dep in by_id[id.as_str()]["deps"].as_array().expect("deps") {
            let kinds = dep["dep_kinds"].as_array().expect("dep_kinds");
            if kinds.iter().any(|k| k["kind"] != "dev") {
                todo.push(dep["pkg"].as_str().expect("dep pkg").to_string());
            }
        }
    }
    seen.iter().map(|id| name_of(id)).collect()
}

/// The crates shared by the simulator and the real processes.
const SHARED_CRATES: [&str; 3] = ["leasesim-judge", "leasesim-scenario", "leasesim-reports"];

#[test]
fn the_shared_crates_link_neither_madsim_nor_tokio() {
    for shared in SHARED_CRATES {
        let linked = linked_packages(shared);
        assert!(linked.contains("leasesim-core"), "the walk found {shared}'s dependencies: {linked:?}");
        let runtimes: Vec<&String> = linked.iter().filter(|n| is_runtime(n)).collect();
        assert!(runtimes.is_empty(), "{shared} links {runtimes:?}: it must stay runtime-free");
    }
}

#[test]
fn the_runtime_test_recognises_both_runtimes() {
    for name in ["tokio", "madsim", "madsim-tokio", "tokio-util"] {
        assert!(is_runtime(name), "{name}");
    }
    assert!(!is_runtime("leasesim-core"));
}
