//! Parser for Jepsen's etcd register logs, so the checker can be proven on
//! histories from a real system with known answers.
//!
//! The histories (collected by the linearizability-checker project and
//! shipped with porcupine) are one event a line:
//! `INFO  jepsen.util - P<TAB>TYPE<TAB>:F<TAB>VALUE`. We read them as
//! porcupine's etcd test does: `:fail :cas` is an observed failed compare;
//! `:info` (and an invocation never completed) is an unknown outcome that
//! stays open to the end; `:fail :read` constrains nothing. A `:fail` of a
//! write means, in Jepsen's terms, that it did not happen, so it is left
//! out. Nemesis lines are not register operations and are skipped.
//!
//! Jepsen's logs carry no clock: the line number orders the events, so a
//! parsed history's `call_ns` / `return_ns` are line numbers.

use std::collections::BTreeMap;
use std::fmt;

use super::history::{Operation, RegisterHistory, RegisterInput, RegisterOutput};

/// What is wrong, and where (1-based line, and column when known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: Option<usize>,
    pub message: String,
}

impl ParseError {
    /// `FILE:LINE[:COL]: message`, the CLI's convention for bad input.
    pub fn in_file(&self, file: &str) -> String {
        match self.column {
            Some(column) => format!("{file}:{}:{column}: {}", self.line, self.message),
            None => format!("{file}:{}: {}", self.line, self.message),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// An invocation waiting for its completion.
struct Pending {
    op: usize,
    line: usize,
    function: &'static str,
}

/// Whether `line` looks like a Jepsen event (for format detection).
pub fn looks_like_jepsen(line: &str) -> bool {
    let fields: Vec<&str> = line.split('\t').collect();
    fields.len() >= 3 && matches!(fields[1], ":invoke" | ":ok" | ":fail" | ":info")
}

/// Parses a Jepsen etcd register log.
pub fn parse_jepsen(text: &str) -> Result<RegisterHistory, ParseError> {
    let mut ops: Vec<Operation<RegisterInput, RegisterOutput>> = Vec::new();
    let mut dropped: Vec<bool> = Vec::new();
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let at = |message: String| ParseError { line, column: None, message };
        let text = raw.trim_end();
        if text.is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split('\t').collect();
        if fields.len() != 4 {
            return Err(at(format!(
                "expected 4 tab-separated fields (process, type, function, value), found {}",
                fields.len()
            )));
        }
        // "INFO  jepsen.util - 3": the process is what follows the logger.
        let process_text = fields[0].rsplit(" - ").next().unwrap_or(fields[0]).trim();
        if process_text == ":nemesis" {
            continue;
        }
        let Ok(process) = process_text.parse::<u64>() else {
            return Err(at(format!("process `{process_text}` is not a number")));
        };
        let kind = match fields[1] {
            ":invoke" => Kind::Invoke,
            ":ok" => Kind::Ok,
            ":fail" => Kind::Fail,
            ":info" => Kind::Info,
            other => return Err(at(format!("type `{other}` is not :invoke, :ok, :fail or :info"))),
        };
        let function: &'static str = match fields[2] {
            ":read" => "read",
            ":write" => "write",
            ":cas" => "cas",
            other => return Err(at(format!("function `{other}` is not :read, :write or :cas"))),
        };
        let value = fields[3].trim();

        if kind == Kind::Invoke {
            if let Some(p) = pending.get(&process) {
                return Err(at(format!(
                    "process {process} invokes :{function} while its :{} from line {} has not completed",
                    p.function, p.line
                )));
            }
            let input = match function {
                "read" => match value {
                    "nil" => RegisterInput::Read,
                    other => return Err(at(format!("a read is invoked with `nil`, not `{other}`"))),
                },
                "write" => RegisterInput::Write { value: parse_int(value).map_err(at)? },
                _ => {
                    let (expected, new) = parse_cas(value).map_err(at)?;
                    RegisterInput::Cas { expected, new }
                }
            };
            pending.insert(process, Pending { op: ops.len(), line, function });
            ops.push(Operation { client: process, call_ns: line as u64, return_ns: None, input, output: None });
            dropped.push(false);
            continue;
        }

        let Some(p) = pending.remove(&process) else {
            return Err(at(format!("process {process} completes :{function} but has no pending invocation")));
        };
        if p.function != function {
            return Err(at(format!(
                "process {process} completes :{function} but its pending invocation (line {}) is :{}",
                p.line, p.function
            )));
        }
        let op = &mut ops[p.op];
        match kind {
            // Info: an unknown outcome, open to the end of the history.
            // (Invocations were handled above.)
            Kind::Info | Kind::Invoke => {}
            Kind::Ok => {
                op.return_ns = Some(line as u64);
                op.output = Some(match &op.input {
                    RegisterInput::Read => RegisterOutput::Read { value: parse_value(value).map_err(at)? },
                    RegisterInput::Write { value: asked } => {
                        echoes(parse_int(value).map_err(at)?, *asked, p.line).map_err(at)?;
                        RegisterOutput::Write
                    }
                    RegisterInput::Cas { expected, new } => {
                        echoes(parse_cas(value).map_err(at)?, (*expected, *new), p.line).map_err(at)?;
                        RegisterOutput::Cas { succeeded: true }
                    }
                });
            }
            Kind::Fail => match &op.input {
                // A failed read returned nothing: unknown, constrains nothing.
                RegisterInput::Read => op.return_ns = Some(line as u64),
                RegisterInput::Write { .. } => dropped[p.op] = true,
                RegisterInput::Cas { expected, new } => {
                    echoes(parse_cas(value).map_err(at)?, (*expected, *new), p.line).map_err(at)?;
                    op.return_ns = Some(line as u64);
                    op.output = Some(RegisterOutput::Cas { succeeded: false });
                }
            },
        }
    }
    let ops = ops.into_iter().zip(dropped).filter(|(_, d)| !d).map(|(op, _)| op).collect();
    Ok(RegisterHistory { ops })
}

fn echoes<T: PartialEq + fmt::Debug>(seen: T, asked: T, invoke_line: usize) -> Result<(), String> {
    if seen == asked {
        Ok(())
    } else {
        Err(format!("completion value {seen:?} differs from the invocation's {asked:?} (line {invoke_line})"))
    }
}

fn parse_int(text: &str) -> Result<i64, String> {
    text.parse::<i64>().map_err(|_| format!("value `{text}` is not an integer"))
}

fn parse_value(text: &str) -> Result<Option<i64>, String> {
    match text {
        "nil" => Ok(None),
        other => parse_int(other).map(Some).map_err(|_| format!("value `{other}` is neither an integer nor nil")),
    }
}

/// `[A B]`: compare against A (an integer or nil), set to B.
fn parse_cas(text: &str) -> Result<(Option<i64>, i64), String> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("cas value `{text}` is not of the form [A B]"))?;
    let parts: Vec<&str> = inner.split_whitespace().collect();
    match parts.as_slice() {
        [a, b] => Ok((parse_value(a)?, parse_int(b)?)),
        _ => Err(format!("cas value `{text}` is not of the form [A B]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(p: &str, kind: &str, f: &str, v: &str) -> String {
        format!("INFO  jepsen.util - {p}\t:{kind}\t:{f}\t{v}\n")
    }

    fn parse_err(text: &str) -> ParseError {
        parse_jepsen(text).expect_err("should be rejected")
    }

    #[test]
    fn parses_every_kind_of_event() {
        let text = [
            line("0", "invoke", "read", "nil"),
            line("1", "invoke", "write", "3"),
            line("2", "invoke", "cas", "[nil 4]"),
            line("3", "invoke", "cas", "[1 2]"),
            line("4", "invoke", "write", "9"),
            line("0", "ok", "read", "nil"),
            line("1", "info", "write", ":timed-out"),
            line("2", "ok", "cas", "[nil 4]"),
            line("3", "fail", "cas", "[1 2]"),
            line("4", "fail", "write", "9"),
            "\n".to_string(),
            line(":nemesis", "info", "start", "nil"),
            line("5", "invoke", "read", "nil"),
            line("5", "fail", "read", ":timed-out"),
            line("6", "invoke", "write", "1"),
        ]
        .concat();
        let h = parse_jepsen(&text).unwrap();
        let summary: Vec<(u64, u64, Option<u64>, Option<RegisterOutput>)> =
            h.ops.iter().map(|o| (o.client, o.call_ns, o.return_ns, o.output.clone())).collect();
        assert_eq!(
            summary,
            vec![
                (0, 1, Some(6), Some(RegisterOutput::Read { value: None })),
                (1, 2, None, None),
                (2, 3, Some(8), Some(RegisterOutput::Cas { succeeded: true })),
                (3, 4, Some(9), Some(RegisterOutput::Cas { succeeded: false })),
                // process 4's failed write is left out
                (5, 13, Some(14), None),
                (6, 15, None, None),
            ]
        );
        assert_eq!(h.ops[2].input, RegisterInput::Cas { expected: None, new: 4 });
    }

    #[test]
    fn rejects_wrong_field_count() {
        let e = parse_err("INFO  jepsen.util - 0\t:invoke\t:read\n");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("4 tab-separated fields"), "{e}");
    }

    #[test]
    fn rejects_unknown_type_function_and_process() {
        assert!(parse_err(&line("0", "started", "read", "nil")).message.contains("type `:started`"));
        assert!(parse_err(&line("0", "invoke", "append", "nil")).message.contains("function `:append`"));
        assert!(parse_err(&line("zero", "invoke", "read", "nil")).message.contains("process `zero`"));
    }

    #[test]
    fn rejects_bad_values() {
        assert!(parse_err(&line("0", "invoke", "write", "x")).message.contains("not an integer"));
        assert!(parse_err(&line("0", "invoke", "cas", "[1]")).message.contains("[A B]"));
        assert!(parse_err(&line("0", "invoke", "cas", "1 2")).message.contains("[A B]"));
        assert!(parse_err(&line("0", "invoke", "read", "3")).message.contains("invoked with `nil`"));
        let text = [line("0", "invoke", "read", "nil"), line("0", "ok", "read", "three")].concat();
        let e = parse_err(&text);
        assert_eq!(e.line, 2);
        assert!(e.message.contains("neither an integer nor nil"), "{e}");
    }

    #[test]
    fn rejects_completion_without_invocation_or_of_another_function() {
        let e = parse_err(&line("7", "ok", "read", "nil"));
        assert!(e.message.contains("no pending invocation"), "{e}");
        let text = [line("0", "invoke", "write", "1"), line("0", "ok", "read", "1")].concat();
        let e = parse_err(&text);
        assert_eq!(e.line, 2);
        assert!(e.message.contains("pending invocation (line 1) is :write"), "{e}");
    }

    #[test]
    fn rejects_double_invocation_and_changed_echo() {
        let text = [line("0", "invoke", "write", "1"), line("0", "invoke", "write", "2")].concat();
        assert!(parse_err(&text).message.contains("has not completed"));
        let text = [line("0", "invoke", "cas", "[1 2]"), line("0", "ok", "cas", "[1 3]")].concat();
        assert!(parse_err(&text).message.contains("differs from the invocation"));
    }

    #[test]
    fn detects_jepsen_lines() {
        assert!(looks_like_jepsen(line("0", "invoke", "read", "nil").trim_end()));
        assert!(!looks_like_jepsen(r#"{"client":1}"#));
    }
}
