//! `leasesim check FILE|DIR...`: validate scenario files, print each result.
//!
//! CI runs this over `scenarios/` before sweeping, so its output must be
//! greppable (`ok: FILE (NAME)`, `FILE:LINE:COL: message`) and its exit code
//! follow the CLI contract: 0 all valid, 2 bad input.

use std::io::Write;
use std::path::PathBuf;

use super::load::load_each;

/// Checks the files and folders; prints to stdout/stderr; returns the exit
/// code (0 if every file is valid, 2 otherwise).
pub fn check_command(paths: &[PathBuf]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    check_to(paths, &mut stdout.lock(), &mut stderr.lock())
}

/// `check_command` with its output streams given, for tests.
pub fn check_to(paths: &[PathBuf], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    // Output errors (a closed pipe) must not turn into a panic or change
    // the verdict, so they are ignored.
    if paths.is_empty() {
        let _ = writeln!(err, "leasesim check: no files given\n  fix: name scenario files or folders, e.g. `leasesim check scenarios/`");
        return 2;
    }
    let (mut valid, mut invalid) = (0usize, 0usize);
    for (path, result) in load_each(paths) {
        match result {
            Ok(scenario) => {
                valid += 1;
                let _ = writeln!(out, "ok: {} ({})", path.display(), scenario.name);
            }
            Err(error) => {
                invalid += 1;
                let _ = writeln!(err, "{error}");
            }
        }
    }
    if invalid == 0 {
        let _ = writeln!(out, "{valid} scenario file(s) ok");
        0
    } else {
        let _ = writeln!(err, "{invalid} file(s) with errors, {valid} ok");
        2
    }
}
