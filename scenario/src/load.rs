//! Reading scenario files from disk: single files, and folders swept for
//! `*.toml` (recursively, in sorted order so every machine agrees).
//!
//! Scenario names must be unique among the files loaded together: results,
//! reports and replay commands refer to scenarios by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::{Location, ScenarioError};
use super::model::Scenario;
use super::validate::{self, NameSite};

/// Reads, parses and validates one file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_located(path).map(|(scenario, _)| scenario)
}

/// Loads files and folders; returns the valid scenarios and the errors, each
/// in file order.
pub fn load_all(paths: &[PathBuf]) -> (Vec<Scenario>, Vec<ScenarioError>) {
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    for (_, result) in load_each(paths) {
        match result {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => errors.push(error),
        }
    }
    (scenarios, errors)
}

/// Like `load_all`, but keeps each file's result in place, in file order:
/// what `leasesim check` prints. A folder without scenarios is an error
/// (likely a wrong path), and so is a name already used by an earlier file.
pub fn load_each(paths: &[PathBuf]) -> Vec<(PathBuf, Result<Scenario, ScenarioError>)> {
    let mut results = Vec::new();
    let mut seen_paths = Vec::new();
    let mut names: BTreeMap<String, (String, Location)> = BTreeMap::new();
    for path in paths {
        let files = match expand(path) {
            Ok(files) => files,
            Err(error) => {
                results.push((path.clone(), Err(error)));
                continue;
            }
        };
        for file in files {
            // The same file through a folder and by name is loaded once.
            let identity = file.canonicalize().unwrap_or_else(|_| file.clone());
            if seen_paths.contains(&identity) {
                continue;
            }
            seen_paths.push(identity);
            let result = load_located(&file).and_then(|(scenario, site)| {
                let file_name = file.display().to_string();
                match names.get(&scenario.name) {
                    Some((first_file, first)) => {
                        let mut diagnostic = site.diagnostic;
                        diagnostic.message =
                            format!("scenario name `{}` is already used by {first_file}:{}:{}", scenario.name, first.line, first.col);
                        Err(ScenarioError { file: file_name, diagnostics: vec![diagnostic] })
                    }
                    None => {
                        names.insert(scenario.name.clone(), (file_name, site.location));
                        Ok(scenario)
                    }
                }
            });
            results.push((file, result));
        }
    }
    results
}

fn load_located(path: &Path) -> Result<(Scenario, NameSite), ScenarioError> {
    let file_name = path.display().to_string();
    let text = std::fs::read(path).map_err(|error| {
        ScenarioError::whole_file(&file_name, format!("cannot read the file: {error}"), "check the path and its permissions")
    })?;
    let text = String::from_utf8(text).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        ScenarioError::whole_file(&file_name, format!("not UTF-8 text (bad byte at offset {at})"), "save the file as UTF-8")
    })?;
    validate::parse_located(&text, &file_name)
}

/// A file as itself; a folder as its `*.toml` files, recursively, sorted.
fn expand(path: &Path) -> Result<Vec<PathBuf>, ScenarioError> {
    let name = path.display().to_string();
    let metadata =
        std::fs::metadata(path).map_err(|error| ScenarioError::whole_file(&name, format!("cannot read: {error}"), "check the path"))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    collect_toml(path, &mut files).map_err(|error| {
        ScenarioError::whole_file(&name, format!("cannot list the folder: {error}"), "check the path and its permissions")
    })?;
    if files.is_empty() {
        return Err(ScenarioError::whole_file(
            &name,
            "no *.toml scenario files in this folder",
            "check the path; scenario files end in .toml",
        ));
    }
    Ok(files)
}

fn collect_toml(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        // `file_type` does not follow symlinks, so a linked folder cannot
        // make the walk loop; a linked file is still read.
        if entry.file_type()?.is_dir() {
            collect_toml(&path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            files.push(path);
        }
    }
    Ok(())
}
