//! Parser for Jepsen's logs of register operations (the etcd test), so the
//! checker can be proven on histories from a real system with known answers.
//!
//! The histories (collected by the linearizability-checker project and
//! shipped with porcupine) are one event a line:
//! `INFO  jepsen.util - P<TAB>TYPE<TAB>:F<TAB>VALUE`. As porcupine does, any
//! whitespace separates the fields, and the prefix may be any of the shapes
//! Jepsen's loggers write: `INFO  jepsen.util - `, a logback line with a
//! date, level and thread (`… INFO [jepsen worker 3] jepsen.util: `), or
//! none (a bare `3 :invoke :read nil`). The value is one EDN form (`nil`,
//! `3`, `[1 2]`, `:timed-out`); anything after it (Jepsen's `:error`) is
//! ignored. Log messages of other loggers (`INFO jepsen.core - Run
//! complete`) are skipped; any other line is an error at its line and
//! column.
//!
//! We read events as porcupine's etcd test does: `:fail :cas` is an
//! observed failed compare; `:info` (and an invocation never completed) is
//! an unknown outcome that stays open to the end; `:fail :read` constrains
//! nothing. A `:fail` of a write means, in Jepsen's terms, that it did not
//! happen, so it is left out. Nemesis lines are not register operations and
//! are skipped.
//!
//! Jepsen's logs carry no clock: the line number orders the events, so a
//! parsed history's `call_ns` / `return_ns` are line numbers.

use std::collections::BTreeMap;
use std::fmt;

use super::edn::{Edn, Node, Pos, Reader};
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

/// What a line holds.
enum LineShape<'a> {
    /// An event: its fields start at this byte offset.
    Event(usize),
    /// A log message of another logger, or nothing.
    Skip,
    /// None of the shapes above.
    Unknown(&'a str),
}

const LEVELS: [&str; 7] = ["TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL"];

fn shape(line: &str) -> LineShape<'_> {
    if line.trim().is_empty() {
        return LineShape::Skip;
    }
    if let Some(at) = find_word(line, "jepsen.util") {
        // `jepsen.util - 3 …`, `jepsen.util: 3 …` or `jepsen.util 3 …`
        let mut rest = at + "jepsen.util".len();
        if line[rest..].starts_with(':') {
            rest += 1;
        }
        rest = skip_space(line, rest);
        if line[rest..].starts_with('-') && line[rest + 1..].starts_with(char::is_whitespace) {
            rest = skip_space(line, rest + 1);
        }
        return LineShape::Event(rest);
    }
    // A log line: a level among its first words, and a logger.
    let words: Vec<&str> = line.split_whitespace().take(5).collect();
    let has_level = words.iter().any(|w| LEVELS.contains(&w.trim_matches(['[', ']'])));
    if has_level && line.contains("jepsen.") {
        return LineShape::Skip;
    }
    let first = words.first().copied().unwrap_or("");
    if first.parse::<u64>().is_ok() || first.starts_with(':') {
        return LineShape::Event(line.len() - line.trim_start().len());
    }
    LineShape::Unknown(first)
}

fn skip_space(line: &str, at: usize) -> usize {
    at + (line[at..].len() - line[at..].trim_start().len())
}

/// `word` in `line` as a whole word (not part of `myjepsen.utils`).
fn find_word(line: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = line[from..].find(word) {
        let at = from + i;
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '.' || c == '_'));
        if boundary(before) && boundary(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Whether `line` looks like a Jepsen event (for format detection).
pub fn looks_like_jepsen(line: &str) -> bool {
    match shape(line) {
        LineShape::Event(at) => {
            let words: Vec<&str> = line[at..].split_whitespace().take(3).collect();
            words.len() == 3 && matches!(words[1], ":invoke" | ":ok" | ":fail" | ":info")
        }
        _ => false,
    }
}

/// Whether `text` reads as a Jepsen log (for format detection): its first
/// line that is not blank or another logger's message is an event (a log
/// of nothing but such lines is one too, with no operations).
pub fn looks_like_jepsen_log(text: &str) -> bool {
    for line in text.lines() {
        match shape(line) {
            LineShape::Skip => continue,
            LineShape::Event(_) => return looks_like_jepsen(line),
            LineShape::Unknown(_) => return false,
        }
    }
    true
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

/// A whitespace-separated field and its 1-based column.
#[derive(Clone, Copy)]
struct Field<'a> {
    text: &'a str,
    column: usize,
}

/// A parsed log and what parsing it cost.
pub struct JepsenLog {
    pub history: RegisterHistory,
    /// Client invocations read (a failed write is read, then left out).
    pub invocations: usize,
    /// Characters looked at (a measure of work, for tests).
    pub steps: u64,
}

/// Parses a Jepsen register log.
pub fn parse_jepsen(text: &str) -> Result<RegisterHistory, ParseError> {
    parse_jepsen_log(text).map(|log| log.history)
}

/// [`parse_jepsen`], with counts.
pub fn parse_jepsen_log(text: &str) -> Result<JepsenLog, ParseError> {
    let mut log = LogBuilder::default();
    for (index, raw) in text.lines().enumerate() {
        log.steps += raw.len() as u64 + 1;
        if let Some(event) = event(raw, index + 1)? {
            log.apply(&event)?;
        }
    }
    Ok(log.finish())
}

/// One event line's fields, read and checked; its value is read only
/// where it matters ([`Event::value`]).
struct Event<'a> {
    raw: &'a str,
    line: usize,
    process: u64,
    process_column: usize,
    kind: Kind,
    kind_column: usize,
    function: &'static str,
    function_column: usize,
    /// Byte offset of the value in `raw`.
    value_start: usize,
}

/// The event on line `line`; `None` for a line that holds none (blank,
/// another logger's, the nemesis's).
fn event(raw: &str, line: usize) -> Result<Option<Event<'_>>, ParseError> {
    let column_of = |offset: usize| raw[..offset].chars().count() + 1;
    let at_col = |column: usize, message: String| ParseError { line, column: Some(column), message };
    let start = match shape(raw) {
        LineShape::Skip => return Ok(None),
        LineShape::Event(start) => start,
        LineShape::Unknown(first) => {
            return Err(at_col(
                column_of(raw.len() - raw.trim_start().len()),
                format!(
                    "`{}` does not start a Jepsen event; expected `INFO  jepsen.util - P :TYPE :F VALUE` or `P :TYPE :F VALUE`",
                    clip(first)
                ),
            ))
        }
    };
    let (fields, offset) = leading_fields(raw, start);
    let [process_f, type_f, function_f] = fields[..] else {
        return Err(at_col(
            column_of(offset),
            format!(
                "expected an event's fields (process, type, function, value), found {}; write e.g. `0 :invoke :read nil`",
                fields.len()
            ),
        ));
    };
    if process_f.text == ":nemesis" {
        return Ok(None);
    }
    let Ok(process) = process_f.text.parse::<u64>() else {
        return Err(at_col(process_f.column, format!("process `{}` is not a number or :nemesis", clip(process_f.text))));
    };
    let kind = match type_f.text {
        ":invoke" => Kind::Invoke,
        ":ok" => Kind::Ok,
        ":fail" => Kind::Fail,
        ":info" => Kind::Info,
        other => return Err(at_col(type_f.column, format!("type `{}` is not :invoke, :ok, :fail or :info", clip(other)))),
    };
    let function: &'static str = match function_f.text {
        ":read" => "read",
        ":write" => "write",
        ":cas" => "cas",
        other => return Err(at_col(function_f.column, format!("function `{}` is not :read, :write or :cas", clip(other)))),
    };
    let value_start = skip_space(raw, offset);
    Ok(Some(Event {
        raw,
        line,
        process,
        process_column: process_f.column,
        kind,
        kind_column: type_f.column,
        function,
        function_column: function_f.column,
        value_start,
    }))
}

/// Up to the first three whitespace-separated fields from `start`, and the
/// offset where reading stopped (the value follows).
fn leading_fields(raw: &str, start: usize) -> (Vec<Field<'_>>, usize) {
    let mut fields: Vec<Field> = Vec::with_capacity(3);
    let mut offset = start;
    while fields.len() < 3 {
        offset = skip_space(raw, offset);
        let len = raw[offset..].find(char::is_whitespace).unwrap_or(raw.len() - offset);
        if len == 0 {
            break;
        }
        fields.push(Field { text: &raw[offset..offset + len], column: raw[..offset].chars().count() + 1 });
        offset += len;
    }
    (fields, offset)
}

impl Event<'_> {
    fn error(&self, column: usize, message: String) -> ParseError {
        ParseError { line: self.line, column: Some(column), message }
    }

    /// The event's value (one EDN form), counting the reader's work in
    /// `steps`. An :info's value is whatever the client had, often not a
    /// register value: it is never read.
    fn value(&self, steps: &mut u64) -> Result<Node, ParseError> {
        let column = self.raw[..self.value_start].chars().count() + 1;
        let mut reader = Reader::at_position(&self.raw[self.value_start..], Pos { line: self.line, column });
        let node = reader.next_form();
        *steps += reader.steps();
        node?.ok_or_else(|| self.error(column, format!("the :{} has no value", self.function)))
    }
}

/// The history as the events build it.
#[derive(Default)]
struct LogBuilder {
    ops: Vec<Operation<RegisterInput, RegisterOutput>>,
    /// Per op: left out (a failed write).
    dropped: Vec<bool>,
    pending: BTreeMap<u64, Pending>,
    steps: u64,
}

impl LogBuilder {
    fn apply(&mut self, e: &Event<'_>) -> Result<(), ParseError> {
        if e.kind == Kind::Invoke {
            self.invoke(e)
        } else {
            self.complete(e)
        }
    }

    fn invoke(&mut self, e: &Event<'_>) -> Result<(), ParseError> {
        let (process, function) = (e.process, e.function);
        if let Some(p) = self.pending.get(&process) {
            return Err(e.error(
                e.kind_column,
                format!("process {process} invokes :{function} while its :{} from line {} has not completed", p.function, p.line),
            ));
        }
        let v = e.value(&mut self.steps)?;
        let (raw, value_start) = (e.raw, e.value_start);
        let input = match function {
            "read" => match v.value {
                Edn::Nil => RegisterInput::Read,
                _ => return Err(v.error(format!("a read is invoked with `nil`, not `{}`", source(raw, value_start, &v)))),
            },
            "write" => RegisterInput::Write { value: int(&v, raw, value_start)? },
            _ => {
                let (expected, new) = cas(&v, raw, value_start)?;
                RegisterInput::Cas { expected, new }
            }
        };
        self.pending.insert(process, Pending { op: self.ops.len(), line: e.line, function });
        self.ops.push(Operation { client: process, call_ns: e.line as u64, return_ns: None, input, output: None });
        self.dropped.push(false);
        Ok(())
    }

    fn complete(&mut self, e: &Event<'_>) -> Result<(), ParseError> {
        let (process, function, line) = (e.process, e.function, e.line);
        let Some(p) = self.pending.remove(&process) else {
            return Err(e.error(e.process_column, format!("process {process} completes :{function} but has no pending invocation")));
        };
        if p.function != function {
            return Err(e.error(
                e.function_column,
                format!("process {process} completes :{function} but its pending invocation (line {}) is :{}", p.line, p.function),
            ));
        }
        let (raw, value_start) = (e.raw, e.value_start);
        let op = &mut self.ops[p.op];
        match e.kind {
            // Info: an unknown outcome, open to the end of the history.
            // (Invocations are not completions.)
            Kind::Info | Kind::Invoke => {}
            Kind::Ok => {
                let v = e.value(&mut self.steps)?;
                op.return_ns = Some(line as u64);
                op.output = Some(match &op.input {
                    RegisterInput::Read => RegisterOutput::Read { value: int_or_nil(&v, raw, value_start)? },
                    RegisterInput::Write { value: asked } => {
                        echoes(&v, int(&v, raw, value_start)?, *asked, p.line)?;
                        RegisterOutput::Write
                    }
                    RegisterInput::Cas { expected, new } => {
                        echoes(&v, cas(&v, raw, value_start)?, (*expected, *new), p.line)?;
                        RegisterOutput::Cas { succeeded: true }
                    }
                });
            }
            Kind::Fail => match &op.input {
                // A failed read returned nothing: unknown, constrains nothing.
                RegisterInput::Read => op.return_ns = Some(line as u64),
                RegisterInput::Write { .. } => self.dropped[p.op] = true,
                RegisterInput::Cas { expected, new } => {
                    let (expected, new) = (*expected, *new);
                    let v = e.value(&mut self.steps)?;
                    echoes(&v, cas(&v, raw, value_start)?, (expected, new), p.line)?;
                    op.return_ns = Some(line as u64);
                    op.output = Some(RegisterOutput::Cas { succeeded: false });
                }
            },
        }
        Ok(())
    }

    fn finish(self) -> JepsenLog {
        let invocations = self.ops.len();
        let ops = self.ops.into_iter().zip(self.dropped).filter(|(_, d)| !d).map(|(op, _)| op).collect();
        JepsenLog { history: RegisterHistory { ops }, invocations, steps: self.steps }
    }
}

/// The value's text as written.
fn source<'a>(raw: &'a str, base: usize, v: &Node) -> &'a str {
    clip(&raw[base + v.start..base + v.end])
}

fn clip(text: &str) -> &str {
    match text.char_indices().nth(40) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

fn echoes<T: PartialEq + fmt::Debug>(v: &Node, seen: T, asked: T, invoke_line: usize) -> Result<(), ParseError> {
    if seen == asked {
        Ok(())
    } else {
        Err(v.error(format!("completion value {seen:?} differs from the invocation's {asked:?} (line {invoke_line})")))
    }
}

fn int(v: &Node, raw: &str, base: usize) -> Result<i64, ParseError> {
    match v.value {
        Edn::Int(i) => Ok(i),
        _ => Err(v.error(format!("value `{}` is not an integer", source(raw, base, v)))),
    }
}

fn int_or_nil(v: &Node, raw: &str, base: usize) -> Result<Option<i64>, ParseError> {
    match v.value {
        Edn::Int(i) => Ok(Some(i)),
        Edn::Nil => Ok(None),
        _ => Err(v.error(format!("value `{}` is neither an integer nor nil", source(raw, base, v)))),
    }
}

/// `[A B]`: compare against A (an integer or nil), set to B.
fn cas(v: &Node, raw: &str, base: usize) -> Result<(Option<i64>, i64), ParseError> {
    match &v.value {
        Edn::Vector(items) if items.len() == 2 => Ok((int_or_nil(&items[0], raw, base)?, int(&items[1], raw, base)?)),
        _ => Err(v.error(format!("cas value `{}` is not of the form [A B]", source(raw, base, v)))),
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
    fn rejects_missing_fields_with_a_column() {
        let e = parse_err("INFO  jepsen.util - 0\t:invoke\n");
        assert_eq!((e.line, e.column), (1, Some(30)));
        assert!(e.message.contains("found 2"), "{e:?}");
        let e = parse_err("INFO  jepsen.util - 0\t:invoke\t:read\n");
        assert!(e.message.contains("has no value"), "{e:?}");
    }

    #[test]
    fn any_whitespace_separates_the_fields() {
        let tabs = [line("0", "invoke", "cas", "[1 2]"), line("0", "fail", "cas", "[1 2]")].concat();
        let spaces = tabs.replace('\t', "   ");
        let mixed = tabs.replace('\t', " \t ");
        let want = parse_jepsen(&tabs).unwrap();
        assert_eq!(want.ops.len(), 1);
        assert_eq!(parse_jepsen(&spaces).unwrap(), want);
        assert_eq!(parse_jepsen(&mixed).unwrap(), want);
    }

    #[test]
    fn reads_the_common_line_shapes_and_skips_other_loggers() {
        let text = "\
2017-01-01 10:00:00,001{GMT}\tINFO\t[main] jepsen.core: Running test\n\
2017-01-01 10:00:00,002{GMT}\tINFO\t[jepsen worker 0] jepsen.util: 0\t:invoke\t:write\t1\n\
INFO [2017-01-01 10:00:00,003] jepsen worker 0 - jepsen.util 0 :ok :write 1\n\
INFO  jepsen.core - Run complete, writing\n\
INFO  jepsen.util :nemesis :info :start nil\n\
1 :invoke :read nil\n\
1  :ok  :read  1  :some-error-field\n\
WARN  jepsen.os.debian - Installing packages\n";
        let h = parse_jepsen(text).unwrap();
        let summary: Vec<(u64, u64, Option<u64>)> = h.ops.iter().map(|o| (o.client, o.call_ns, o.return_ns)).collect();
        assert_eq!(summary, vec![(0, 2, Some(3)), (1, 6, Some(7))]);
        assert_eq!(h.ops[1].output, Some(RegisterOutput::Read { value: Some(1) }));
    }

    #[test]
    fn other_lines_are_errors_at_their_column() {
        let e = parse_err("  java.lang.Exception: boom\n");
        assert_eq!((e.line, e.column), (1, Some(3)));
        assert!(e.message.contains("does not start a Jepsen event"), "{e:?}");
        let e = parse_err("0 :invoke :write [1\n");
        assert_eq!((e.line, e.column), (1, Some(18)));
        assert!(e.message.contains("never closed"), "{e:?}");
    }

    #[test]
    fn rejects_unknown_type_function_and_process() {
        assert!(parse_err(&line("0", "started", "read", "nil")).message.contains("type `:started`"));
        assert!(parse_err(&line("0", "invoke", "append", "nil")).message.contains("function `:append`"));
        let e = parse_err(&line("zero", "invoke", "read", "nil"));
        assert!(e.message.contains("process `zero`"), "{e:?}");
        assert_eq!(e.column, Some(21));
    }

    #[test]
    fn rejects_bad_values() {
        assert!(parse_err(&line("0", "invoke", "write", "x")).message.contains("not an integer"));
        assert!(parse_err(&line("0", "invoke", "cas", "[1]")).message.contains("[A B]"));
        assert!(parse_err(&line("0", "invoke", "cas", "1 2")).message.contains("[A B]"));
        assert!(parse_err(&line("0", "invoke", "read", "3")).message.contains("invoked with `nil`"));
        let text = [line("0", "invoke", "read", "nil"), line("0", "ok", "read", "three")].concat();
        let e = parse_err(&text);
        assert_eq!((e.line, e.column), (2, Some(33)));
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
