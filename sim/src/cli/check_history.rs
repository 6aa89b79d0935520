//! `leasesim check-history`: the linearizability checker (Wing & Gong 1993,
//! Lowe 2017, porcupine) on a history file, for histories from a run or from
//! Jepsen.
//!
//! Exit codes follow the CLI's convention (DESIGN.md) with one addition:
//! 0 linearizable, 1 not linearizable, 2 bad input (the message names the
//! file, line and column; with `--json` it is a JSON object), 3 the step
//! budget ran out (unknown: the checker never guesses). The formats are
//! described in docs/HISTORY-FORMATS.md.

use std::fmt::Display;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use crate::json_error::{self, InputError};
use leasesim_history::check::{
    check_keyed, check_kv, check_register, CheckOptions, CheckReport, Verdict, DEFAULT_BUDGET_STEPS, DEFAULT_SHRINK_BUDGET_STEPS,
};
use leasesim_history::history::Operation;
use leasesim_history::jepsen::{looks_like_jepsen_log, parse_jepsen_log, ParseError};
use leasesim_history::jepsen_edn::{looks_like_edn, parse_edn_history};
use leasesim_history::leasesim_format::parse_leasesim;

pub const EXIT_LINEARIZABLE: i32 = 0;
pub const EXIT_NOT_LINEARIZABLE: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_UNKNOWN: i32 = 3;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    /// Jepsen's log of register operations (`INFO  jepsen.util - P :invoke :read nil`, any whitespace).
    Jepsen,
    /// Jepsen's EDN history (`{:process 0, :type :invoke, :f :write, :value 3}`), one register,
    /// keyed registers or porcupine's key-value maps.
    Edn,
    /// leasesim's KV history: one JSON document `{"ops": [...]}` or JSON lines.
    Leasesim,
}

/// Check a history file for linearizability.
#[derive(clap::Args, Clone, Debug)]
pub struct CheckHistoryArgs {
    /// The history file.
    pub file: PathBuf,
    /// The file's format; detected from its start when absent.
    #[arg(long, value_enum)]
    pub format: Option<HistoryFormat>,
    /// Print one JSON object instead of text (errors too).
    #[arg(long)]
    pub json: bool,
    /// Model steps the check may take before answering "unknown" (exit 3).
    #[arg(long, value_name = "STEPS", default_value_t = DEFAULT_BUDGET_STEPS)]
    pub budget: u64,
    /// Model steps for shrinking a failure to its smallest window, on top of
    /// --budget; when they run out the window printed still fails but is
    /// marked partial (the verdict stands either way).
    #[arg(long, value_name = "STEPS", default_value_t = DEFAULT_SHRINK_BUDGET_STEPS)]
    pub shrink_budget: u64,
}

/// Runs the command; returns the process exit code.
pub fn check_history_command(args: &CheckHistoryArgs) -> i32 {
    match check_history(args) {
        Ok(code) => code,
        Err(error) => json_error::report(&[error], args.json),
    }
}

/// How a format's times read: Jepsen's logs have line numbers, EDN without
/// `:time` the events' positions.
#[derive(Clone, Copy)]
enum TimeUnit {
    Line,
    Event,
    Nanos,
}

/// The rule for empty histories, the same in every format and whether or
/// not the format is given: a file without a single client operation is
/// bad input (exit 2). There is nothing to check, and an empty file is far
/// more often a wrong path or a recorder that wrote nothing than a test
/// that ran no operation.
const NO_OPERATIONS: &str = "the file holds no client operation, so there is nothing to check; give a history with at \
                             least one invocation";

/// Reads, checks and prints; returns the exit code, or what is wrong with
/// the input (file, line, column).
pub fn check_history(args: &CheckHistoryArgs) -> Result<i32, InputError> {
    let name = args.file.display().to_string();
    let bytes = std::fs::read(&args.file).map_err(|e| InputError::whole_file(&name, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = String::from_utf8_lossy(valid).rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        InputError::at(&name, line, Some(column), "not UTF-8 text; save the history as UTF-8")
    })?;
    let located = |e: ParseError| InputError::at(&name, e.line, e.column, e.message);
    let empty = || InputError::at(&name, 1, Some(1), NO_OPERATIONS);
    if text.trim().is_empty() {
        return Err(empty());
    }
    let format = match args.format {
        Some(format) => format,
        None => detect(&text).map_err(located)?,
    };
    let options = CheckOptions { budget_steps: args.budget, shrink_budget_steps: args.shrink_budget };
    let started = Instant::now();
    match format {
        HistoryFormat::Jepsen => {
            let log = parse_jepsen_log(&text).map_err(located)?;
            if log.invocations == 0 {
                return Err(empty());
            }
            let history = log.history;
            // A log's times are line numbers: an operation's is its invocation's.
            let report = check_register(&history, &options)
                .map_err(|e| InputError::at(&name, history.ops[e.op_index].call_ns as usize, None, e.to_string()))?;
            Ok(render(args, &name, "jepsen", TimeUnit::Line, &history.ops, &report, started))
        }
        HistoryFormat::Edn => {
            let parsed = parse_edn_history(&text).map_err(located)?;
            if parsed.invocations == 0 {
                return Err(empty());
            }
            let report = check_keyed(&parsed.history, &parsed.model, &options)
                .map_err(|e| InputError::at(&name, parsed.op_lines[e.op_index], None, e.to_string()))?;
            let unit = if parsed.timed { TimeUnit::Nanos } else { TimeUnit::Event };
            Ok(render(args, &name, "edn", unit, &parsed.history.ops, &report, started))
        }
        HistoryFormat::Leasesim => {
            let parsed = parse_leasesim(&text).map_err(located)?;
            if parsed.history.ops.is_empty() {
                return Err(empty());
            }
            let report = check_kv(&parsed.history, &options).map_err(|e| match &parsed.op_lines {
                Some(lines) => InputError::at(&name, lines[e.op_index], None, e.to_string()),
                None => InputError::whole_file(&name, e.to_string()),
            })?;
            Ok(render(args, &name, "leasesim", TimeUnit::Nanos, &parsed.history.ops, &report, started))
        }
    }
}

/// The format of `text`, from how it starts. A text with nothing but blank
/// lines is refused by the empty-history rule, as it would be with
/// `--format`.
fn detect(text: &str) -> Result<HistoryFormat, ParseError> {
    let Some((index, first)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        return Err(ParseError { line: 1, column: Some(1), message: NO_OPERATIONS.to_string() });
    };
    if looks_like_edn(text) {
        Ok(HistoryFormat::Edn)
    } else if first.trim_start().starts_with('{') {
        Ok(HistoryFormat::Leasesim)
    } else if looks_like_jepsen_log(text) {
        Ok(HistoryFormat::Jepsen)
    } else {
        Err(ParseError {
            line: index + 1,
            column: Some(first.len() - first.trim_start().len() + 1),
            message: "cannot detect the format: expected a Jepsen log event (INFO  jepsen.util - 0 :invoke :read nil), \
                      a Jepsen EDN map ({:process 0, :type :invoke, …}) or a JSON leasesim history; pass --format \
                      jepsen|edn|leasesim"
                .to_string(),
        })
    }
}

fn render<I: Display + Serialize, O: Display + Serialize>(
    args: &CheckHistoryArgs,
    name: &str,
    format: &str,
    unit: TimeUnit,
    ops: &[Operation<I, O>],
    report: &CheckReport,
    started: Instant,
) -> i32 {
    let wall_seconds = started.elapsed().as_secs_f64();
    let code = match report.verdict {
        Verdict::Linearizable => EXIT_LINEARIZABLE,
        Verdict::NotLinearizable { .. } => EXIT_NOT_LINEARIZABLE,
        Verdict::Unknown => EXIT_UNKNOWN,
    };
    if args.json {
        let mut out = json!({
            "verdict": report.verdict.name(),
            "operations": report.operations,
            "steps": report.steps,
            "wall_seconds": wall_seconds,
            "format": format,
            "partitions": report.partitions,
            "budget_steps": args.budget,
        });
        if let Verdict::NotLinearizable { window } = &report.verdict {
            out["window"] = Value::Array(window.iter().map(|&i| op_json(i, &ops[i], unit)).collect());
            out["window_minimal"] = json!(report.window_minimal);
            out["window_partial"] = json!(!report.window_minimal);
            out["shrink_steps"] = json!(report.shrink_steps);
            out["shrink_budget_steps"] = json!(args.shrink_budget);
        }
        println!("{out}");
        return code;
    }
    let partitions = if report.partitions == 1 { "partition" } else { "partitions" };
    let summary =
        format!("{} operations, {} {partitions}, {} steps, {wall_seconds:.3}s", report.operations, report.partitions, report.steps);
    match &report.verdict {
        Verdict::Linearizable => println!("{name}: linearizable ({summary})"),
        Verdict::Unknown => {
            println!("{name}: unknown: the budget of {} steps ran out before an answer ({summary}); raise --budget", args.budget)
        }
        Verdict::NotLinearizable { window } => {
            println!("{name}: NOT linearizable ({summary})");
            println!(
                "smallest failing window: these {} operations cannot all have happened as recorded, whichever of \
                 the others took effect (each as recorded or not at all; an unknown outcome at any time after its \
                 call)",
                window.len()
            );
            if report.window_minimal {
                println!("(1-minimal: allow any one of them not to have happened, and the history is linearizable)");
            } else {
                println!(
                    "(partial: shrinking was cut short, its budget or a re-check's ran out ({} of --shrink-budget {} \
                     steps spent); this window fails, but may not be the smallest)",
                    report.shrink_steps, args.shrink_budget
                );
            }
            for &i in window {
                let op = &ops[i];
                let output = op.output.as_ref().map_or("unknown".to_string(), |o| o.to_string());
                println!("  #{i:<5} client {:<4} {:<28} {} -> {output}", op.client, span(op, unit), op.input);
            }
        }
    }
    code
}

fn span<I, O>(op: &Operation<I, O>, unit: TimeUnit) -> String {
    let ret = |f: &dyn Fn(u64) -> String| op.return_ns.map_or("?".to_string(), f);
    match unit {
        TimeUnit::Line => format!("lines {}..{}", op.call_ns, ret(&|l| l.to_string())),
        TimeUnit::Event => format!("events {}..{}", op.call_ns, ret(&|l| l.to_string())),
        TimeUnit::Nanos => format!("{}..{}", secs(op.call_ns), ret(&secs)),
    }
}

/// Nanoseconds as seconds, exact (`12.481000007s`): windows are about
/// orderings a rounded time could hide.
fn secs(ns: u64) -> String {
    format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn op_json<I: Serialize, O: Serialize>(index: usize, op: &Operation<I, O>, unit: TimeUnit) -> Value {
    let (call, ret) = match unit {
        TimeUnit::Line => ("call_line", "return_line"),
        TimeUnit::Event => ("call_event", "return_event"),
        TimeUnit::Nanos => ("call_ns", "return_ns"),
    };
    let mut v = json!({
        "index": index,
        "client": op.client,
        "input": op.input,
        "output": op.output,
    });
    v[call] = json!(op.call_ns);
    v[ret] = json!(op.return_ns);
    v
}
