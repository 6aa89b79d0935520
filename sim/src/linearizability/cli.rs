//! `leasesim check-history`: the linearizability checker (Wing & Gong 1993,
//! Lowe 2017, porcupine) on a history file, for histories from a run or from
//! Jepsen.
//!
//! Exit codes follow the CLI's convention (DESIGN.md) with one addition:
//! 0 linearizable, 1 not linearizable, 2 bad input (the message names the
//! file and line), 3 the step budget ran out (unknown: the checker never
//! guesses).

use std::fmt::Display;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use super::check::{check_kv, check_register, CheckOptions, CheckReport, Verdict, DEFAULT_BUDGET_STEPS};
use super::history::Operation;
use super::jepsen::{looks_like_jepsen, parse_jepsen};
use super::leasesim_format::parse_leasesim;

pub const EXIT_LINEARIZABLE: i32 = 0;
pub const EXIT_NOT_LINEARIZABLE: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_UNKNOWN: i32 = 3;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    /// Jepsen's etcd register log (`INFO  jepsen.util - P\t:invoke\t:read\tnil`).
    Jepsen,
    /// leasesim's KV history: one JSON document `{"ops": [...]}` or JSON lines.
    Leasesim,
}

/// Check a history file for linearizability.
#[derive(clap::Args, Clone, Debug)]
pub struct CheckHistoryArgs {
    /// The history file.
    pub file: PathBuf,
    /// The file's format; detected from its first line when absent.
    #[arg(long, value_enum)]
    pub format: Option<HistoryFormat>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Model steps the check may take before answering "unknown" (exit 3);
    /// shrinking a failure to its smallest window may take as many again.
    #[arg(long, value_name = "STEPS", default_value_t = DEFAULT_BUDGET_STEPS)]
    pub budget: u64,
}

/// Runs the command; returns the process exit code.
pub fn check_history_command(args: &CheckHistoryArgs) -> i32 {
    match check_history(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_BAD_INPUT
        }
    }
}

/// How a format's times read: Jepsen's are line numbers.
#[derive(Clone, Copy)]
enum TimeUnit {
    Line,
    Nanos,
}

/// Reads, checks and prints; returns the exit code, or the message for bad
/// input (`FILE:LINE: what is wrong`).
pub fn check_history(args: &CheckHistoryArgs) -> Result<i32, String> {
    let name = args.file.display().to_string();
    let bytes = std::fs::read(&args.file).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        format!("{name}:{line}: not UTF-8 text")
    })?;
    let format = match args.format {
        Some(format) => format,
        None => detect(&text).map_err(|m| format!("{name}:{m}"))?,
    };
    let options = CheckOptions { budget_steps: args.budget, shrink_budget_steps: args.budget };
    let started = Instant::now();
    match format {
        HistoryFormat::Jepsen => {
            let history = parse_jepsen(&text).map_err(|e| e.in_file(&name))?;
            let report = check_register(&history, &options).map_err(|e| format!("{name}: {e}"))?;
            Ok(render(args, &name, "jepsen", TimeUnit::Line, &history.ops, &report, started))
        }
        HistoryFormat::Leasesim => {
            let parsed = parse_leasesim(&text).map_err(|e| e.in_file(&name))?;
            let report = check_kv(&parsed.history, &options).map_err(|e| match &parsed.op_lines {
                Some(lines) => format!("{name}:{}: {e}", lines[e.op_index]),
                None => format!("{name}: {e}"),
            })?;
            Ok(render(args, &name, "leasesim", TimeUnit::Nanos, &parsed.history.ops, &report, started))
        }
    }
}

/// The format of `text`, from its first non-blank line; the error starts
/// with that line's number.
fn detect(text: &str) -> Result<HistoryFormat, String> {
    let Some((index, first)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        return Err(" the file is empty, so its format cannot be detected (pass --format)".to_string());
    };
    if first.trim_start().starts_with('{') {
        Ok(HistoryFormat::Leasesim)
    } else if looks_like_jepsen(first.trim_end()) {
        Ok(HistoryFormat::Jepsen)
    } else {
        Err(format!(
            "{}: cannot detect the format: expected a Jepsen event (P<TAB>:invoke<TAB>:read<TAB>nil) or a JSON \
             leasesim history; pass --format jepsen|leasesim",
            index + 1
        ))
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
            out["shrink_steps"] = json!(report.shrink_steps);
        }
        println!("{out}");
        return code;
    }
    let partitions = if report.partitions == 1 { "partition" } else { "partitions" };
    let summary = format!(
        "{} operations, {} {partitions}, {} steps, {wall_seconds:.3}s",
        report.operations, report.partitions, report.steps
    );
    match &report.verdict {
        Verdict::Linearizable => println!("{name}: linearizable ({summary})"),
        Verdict::Unknown => println!(
            "{name}: unknown: the budget of {} steps ran out before an answer ({summary}); raise --budget",
            args.budget
        ),
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
                println!("(the shrink budget ran out: this window fails, but may not be the smallest)");
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
