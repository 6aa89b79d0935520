//! The etcd client libraries people use — npm `etcd3` and PyPI `etcd3` —
//! run the same data-model checks (`node/clients/{js,py}/suite.*`) against
//! real etcd 3.4 and against leasesim-node, side by side.
//!
//! Real etcd must pass every check: a check etcd fails is a wrong check (or
//! a broken machine), never a difference. leasesim-node must fail exactly
//! the checks listed in node/README.md's "Client-library differences" table,
//! each with its reason: a listed check that now passes must leave the
//! table, and an unlisted failure is a regression. The table is the one
//! list; nothing else names the expected failures.
//!
//! The clients are installed by `node/clients/setup.sh` (`.ci/run` calls
//! it). Outside CI a machine without them skips this test and says how to
//! install them; under CI they must be there. The two servers run at once;
//! on each server the two suites run one after the other.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{have_etcd, Kind, ProcessCluster};

/// (client, check) → passed, for one server.
type Verdicts = BTreeMap<(String, String), bool>;

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// The Python interpreter of the clients' virtual environment.
fn python() -> PathBuf {
    std::env::var_os("LEASESIM_CLIENTS_PYTHON").map(PathBuf::from).unwrap_or_else(|| clients_dir().join("py/.venv/bin/python"))
}

/// Whether both clients are installed; the same skip rule as etcdctl's.
fn have_clients() -> bool {
    let js = clients_dir().join("js/node_modules/etcd3");
    let node_ok = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    let py_ok = Command::new(python()).args(["-c", "import etcd3"]).output().is_ok_and(|o| o.status.success());
    if node_ok && js.is_dir() && py_ok {
        return true;
    }
    let missing = format!("node: {node_ok}, npm etcd3: {}, PyPI etcd3 at {}: {py_ok}", js.is_dir(), python().display());
    if let Ok(reason) = std::env::var("LEASESIM_SKIP_CLIENTS") {
        eprintln!("skipping the client-library suite: .ci/run says: {reason}");
    } else if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!("the client libraries are required under CI ({missing}); .ci/run installs them with node/clients/setup.sh");
    } else {
        eprintln!("skipping the client-library suite ({missing}); install them with: bash node/clients/setup.sh");
    }
    false
}

/// Runs one suite against `endpoint` and reads its JSON lines.
fn run_suite(client: &str, endpoint: &str) -> Verdicts {
    let out = match client {
        "npm-etcd3" => Command::new("node").arg(clients_dir().join("js/suite.js")).args(["--endpoint", endpoint]).output(),
        _ => Command::new(python()).arg(clients_dir().join("py/suite.py")).args(["--endpoint", endpoint]).output(),
    }
    .expect("start the client suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Exit 0: all passed; 1: some failed; anything else: the suite broke.
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{client} suite against {endpoint} exited {code:?}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut verdicts = Verdicts::new();
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{client}: not a JSON line ({e}): {line}"));
        let (check, ok) = (v["check"].as_str().expect("check"), v["ok"].as_bool().expect("ok"));
        if !ok {
            eprintln!("{client} against {endpoint}: {check} failed: {}", v["detail"]);
        }
        verdicts.insert((client.to_string(), check.to_string()), ok);
    }
    assert!(!verdicts.is_empty(), "{client} printed no verdicts");
    verdicts
}

/// Both suites against one server, one after the other: the revision
/// checks count revisions, so no other client may write meanwhile.
fn run_both(endpoint: &str) -> Verdicts {
    let mut all = run_suite("npm-etcd3", endpoint);
    all.extend(run_suite("pypi-etcd3", endpoint));
    all
}

/// The (client, check) rows of node/README.md's "Client-library
/// differences" table: `| client | check | reason |`.
fn listed_differences() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("node/README.md");
    let section = readme.split("## Client-library differences").nth(1).expect("node/README.md has a 'Client-library differences' section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(|c| c.trim().trim_matches('`')).collect();
        assert!(cells.len() >= 4 && !cells[3].is_empty(), "a difference row needs client, check and reason: {line}");
        rows.push((cells[1].to_string(), cells[2].to_string()));
    }
    rows
}

#[test]
fn etcd_client_libraries_behave_as_against_etcd_except_the_listed_differences() {
    if !have_clients() || !have_etcd() {
        return;
    }
    let mut etcd = ProcessCluster::start_kind(Kind::Etcd, 3, 100, 1000);
    etcd.wait_for_leader();
    let mut node = ProcessCluster::start_kind(Kind::Leasesim, 3, 100, 1000);
    node.wait_for_leader();
    let (on_etcd, on_node) = std::thread::scope(|s| {
        let e = s.spawn(|| run_both(&etcd.endpoint(0)));
        let n = s.spawn(|| run_both(&node.endpoint(0)));
        (e.join().expect("etcd runs"), n.join().expect("leasesim-node runs"))
    });

    let etcd_failed: Vec<_> = on_etcd.iter().filter(|(_, ok)| !**ok).map(|(k, _)| k).collect();
    assert!(etcd_failed.is_empty(), "real etcd failed checks (the checks are wrong, or the machine is): {etcd_failed:?}");
    assert_eq!(on_etcd.keys().collect::<Vec<_>>(), on_node.keys().collect::<Vec<_>>(), "both servers ran the same checks");

    let listed = listed_differences();
    for (client, check) in &listed {
        let key = (client.clone(), check.clone());
        assert!(on_node.contains_key(&key), "node/README.md lists {client} {check}, which no suite runs");
        assert!(!on_node[&key], "{client} {check} now passes on leasesim-node: remove its row from node/README.md's table");
    }
    let unlisted: Vec<_> = on_node.iter().filter(|(k, ok)| !**ok && !listed.contains(k)).map(|(k, _)| k).collect();
    assert!(unlisted.is_empty(), "leasesim-node fails checks that node/README.md does not list: {unlisted:?}");
    let passed = on_node.values().filter(|ok| **ok).count();
    eprintln!(
        "client libraries: etcd {}/{} checks, leasesim-node {passed}/{} ({} listed differences)",
        on_etcd.len(),
        on_etcd.len(),
        on_node.len(),
        listed.len()
    );
}
