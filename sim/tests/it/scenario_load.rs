//! Loading from disk and `leasesim check`: folders are searched recursively
//! in sorted order, names are unique across the files loaded together, and
//! check prints `ok:` lines and `file:line:col` errors with exit code 0 / 2.

use std::path::{Path, PathBuf};

use leasesim_scenario::check::check_to;
use leasesim_scenario::{load, load_all, load_each};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

/// Runs check; returns (exit code, stdout, stderr).
fn check(paths: &[PathBuf]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = check_to(paths, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

#[test]
fn load_reads_one_file() {
    let scenario = load(&data("good/format-example.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.name, "holder-pause-beyond-ttl");
    assert_eq!(scenario.path, data("good/format-example.toml"));
}

#[test]
fn a_missing_file_is_an_error_about_the_whole_file() {
    let path = data("good/no-such-file.toml");
    let error = load(&path).expect_err("loaded a file that does not exist");
    assert!(error.headline().starts_with(&format!("{}: cannot read the file:", path.display())), "{error}");
    assert_eq!(error.diagnostics[0].location, None);
}

#[test]
fn folders_are_searched_recursively_in_sorted_order() {
    let (scenarios, errors) = load_all(&[data("good")]);
    assert!(errors.is_empty(), "{errors:?}");
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    // everything.toml < format-example.toml < nested/registry.toml
    assert_eq!(names, ["everything-at-once", "holder-pause-beyond-ttl", "nested-registry"]);
}

#[test]
fn duplicate_names_across_files_point_at_both() {
    let (scenarios, errors) = load_all(&[data("dup")]);
    assert_eq!(scenarios.len(), 1);
    assert_eq!(scenarios[0].path, data("dup/a.toml"));
    assert_eq!(errors.len(), 1);
    let first = data("dup/a.toml");
    let expected = format!("{}:3:8: scenario name `twin` is already used by {}:2:8", data("dup/b.toml").display(), first.display());
    assert_eq!(errors[0].headline(), expected);
    assert!(errors[0].diagnostics[0].fix.contains("rename one"), "{}", errors[0]);
}

#[test]
fn a_file_named_twice_is_loaded_once() {
    let results = load_each(&[data("good"), data("good/everything.toml")]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
}

#[test]
fn a_folder_without_scenarios_is_an_error() {
    let (scenarios, errors) = load_all(&[data("no-scenarios")]);
    assert!(scenarios.is_empty());
    assert_eq!(errors.len(), 1);
    assert!(errors[0].headline().ends_with("no-scenarios: no *.toml scenario files in this folder"), "{}", errors[0]);
}

#[test]
fn check_passes_good_files() {
    let (code, out, err) = check(&[data("good")]);
    assert_eq!(code, 0, "stderr:\n{err}");
    let expected = format!(
        "ok: {} (everything-at-once)\nok: {} (holder-pause-beyond-ttl)\nok: {} (nested-registry)\n3 scenario file(s) ok\n",
        data("good/everything.toml").display(),
        data("good/format-example.toml").display(),
        data("good/nested/registry.toml").display()
    );
    assert_eq!(out, expected);
    assert_eq!(err, "");
}

#[test]
fn check_reports_every_bad_file_and_exits_2() {
    let (code, out, err) = check(&[data("bad"), data("good/format-example.toml")]);
    assert_eq!(code, 2);
    assert!(out.starts_with(&format!("ok: {} (holder-pause-beyond-ttl)\n", data("good/format-example.toml").display())), "{out}");
    let syntax = format!("{}:3:14: TOML syntax error", data("bad/syntax.toml").display());
    let unknown = format!("{}:6:1: unknown key `laetncy` in [network]; did you mean `latency`?", data("bad/unknown-key.toml").display());
    assert!(err.contains(&syntax), "{err}");
    assert!(err.contains(&unknown), "{err}");
    assert!(err.contains("  fix: valid keys in [network]: latency, loss, duplicate\n"), "{err}");
    assert!(err.ends_with("2 file(s) with errors, 1 ok\n"), "{err}");
}

#[test]
fn check_without_paths_is_bad_input() {
    let (code, out, err) = check(&[]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("leasesim check: no files given"), "{err}");
}
