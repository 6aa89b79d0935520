//! Bad input as one shape for every command, so that a program driving
//! `leasesim … --json` reads errors the way it reads results: on stdout, one
//! JSON object a line, `{"verdict":"error","file","line","column",
//! "message","fix"}` (line and column are null for a problem with the whole
//! file), and exit code 2. Without `--json` the text stays what it was:
//! `FILE:LINE:COL: message` on stderr.
//!
//! `check-history`, `check`, `run` and `sweep` report through here. It lives
//! outside `cli` (which exists only under `--cfg madsim`) because the
//! history checker's CLI is plain code.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use leasesim_scenario::{self as scenario, Scenario, ScenarioError};

/// The exit code for bad input.
pub const EXIT_BAD_INPUT: i32 = 2;

/// One problem with an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    /// 1-based; `None` when the file as a whole is the problem.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// How to fix it, when there is more to say than the message.
    pub fix: Option<String>,
}

impl InputError {
    pub fn at(file: &str, line: usize, column: Option<usize>, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: Some(line), column, message: message.into(), fix: None }
    }

    pub fn whole_file(file: &str, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: None, column: None, message: message.into(), fix: None }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "verdict": "error",
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        });
        if let Some(fix) = &self.fix {
            v["fix"] = json!(fix);
        }
        v
    }

    /// Every diagnostic of a scenario (or study spec) error.
    pub fn from_scenario(error: &ScenarioError) -> Vec<InputError> {
        error
            .diagnostics
            .iter()
            .map(|d| InputError {
                file: error.file.clone(),
                line: d.location.map(|l| l.line),
                column: d.location.map(|l| l.col),
                message: d.message.clone(),
                fix: Some(d.fix.clone()).filter(|f| !f.is_empty()),
            })
            .collect()
    }
}

/// `FILE:LINE:COL: message` (as much of the position as is known).
impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                write!(f, "{}:{line}:{column}: {}", self.file, self.message)
            }
            (Some(line), None) => write!(f, "{}:{line}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Prints errors (JSON lines on stdout, or `error: …` lines on stderr) and
/// returns the bad-input exit code.
pub fn report(errors: &[InputError], json: bool) -> i32 {
    for e in errors {
        if json {
            println!("{}", e.to_json());
        } else {
            eprintln!("error: {e}");
            if let Some(fix) = &e.fix {
                eprintln!("  fix: {fix}");
            }
        }
    }
    EXIT_BAD_INPUT
}

/// Prints an error that is not about a place in a file (a results file that
/// cannot be written, a directory that cannot be made): a JSON line with
/// null `file`, `line` and `column` under `--json`, else the text on stderr.
/// Returns exit code 2.
pub fn report_message(message: &str, json: bool) -> i32 {
    if json {
        println!("{}", json!({ "verdict": "error", "file": null, "line": null, "column": null, "message": message }));
    } else {
        eprintln!("{message}");
    }
    EXIT_BAD_INPUT
}

/// Prints scenario errors: as JSON lines with `--json`, else in their full
/// text form (source line, caret and fix) on stderr. Returns exit code 2.
pub fn report_scenario_errors(errors: &[ScenarioError], json: bool) -> i32 {
    for e in errors {
        if json {
            for one in InputError::from_scenario(e) {
                println!("{}", one.to_json());
            }
        } else {
            eprintln!("{e}");
        }
    }
    EXIT_BAD_INPUT
}

/// Loads one scenario, or reports why not (exit code 2).
pub fn load_scenario(path: &Path, json: bool) -> Result<Scenario, i32> {
    scenario::load(path).map_err(|e| report_scenario_errors(&[e], json))
}

/// `leasesim check --json`: one JSON line per valid file
/// (`{"verdict":"ok","file","scenario"}`) and per problem; exit 0 or 2.
pub fn check_command_json(paths: &[PathBuf], out: &mut dyn Write) -> i32 {
    let mut code = 0;
    for (path, result) in scenario::load_each(paths) {
        // Output errors (a closed pipe) must not change the verdict.
        match result {
            Ok(s) => {
                let _ = writeln!(out, "{}", json!({"verdict": "ok", "file": path.display().to_string(), "scenario": s.name}));
            }
            Err(e) => {
                code = EXIT_BAD_INPUT;
                for one in InputError::from_scenario(&e) {
                    let _ = writeln!(out, "{}", one.to_json());
                }
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_contract_fields() {
        let e = InputError::at("h.edn", 3, Some(7), "`:type` must be :invoke");
        let v = e.to_json();
        assert_eq!(v["verdict"], "error");
        assert_eq!((v["file"].as_str(), v["line"].as_u64(), v["column"].as_u64()), (Some("h.edn"), Some(3), Some(7)));
        assert_eq!(v["message"], "`:type` must be :invoke");
        assert!(v.get("fix").is_none());
        assert_eq!(e.to_string(), "h.edn:3:7: `:type` must be :invoke");
        let whole = InputError::whole_file("gone.log", "cannot read");
        assert!(whole.to_json()["line"].is_null() && whole.to_json()["column"].is_null());
        assert_eq!(whole.to_string(), "gone.log: cannot read");
    }

    #[test]
    fn scenario_diagnostics_keep_position_and_fix() {
        let error = scenario::parse("name = \"x\"\nduration = \"5s\"\nlaetncy = 1\n", "s.toml").unwrap_err();
        let all = InputError::from_scenario(&error);
        assert!(!all.is_empty());
        assert_eq!((all[0].line, all[0].column), (Some(3), Some(1)), "{all:?}");
        assert!(all[0].fix.is_some());
    }
}
