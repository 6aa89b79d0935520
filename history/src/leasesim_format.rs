//! Reading the simulator's own history files: a [`History`] as one JSON
//! document, or one [`Operation`] per line (JSON lines, which a recorder can
//! append to as it goes and a reader can cut at any line).
//!
//! Errors name the line (and column) so that a hand-edited or truncated
//! history is fixed in one look; the same file then goes through the checker
//! of Wing & Gong / Lowe / porcupine in `super::check`.

use serde_json::Value;

use super::history::{History, Operation};
use super::jepsen::ParseError;

/// A parsed history and, in JSON-lines form, the line of each operation
/// (for error messages about a particular operation).
#[derive(Debug)]
pub struct Parsed {
    pub history: History,
    pub op_lines: Option<Vec<usize>>,
}

/// Parses either form: a document whose first line is a JSON object on its
/// own, without an `ops` field, is JSON lines; anything else is one document.
pub fn parse_leasesim(text: &str) -> Result<Parsed, ParseError> {
    let json_lines = match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        None => false,
        Some(first) => match serde_json::from_str::<Value>(first) {
            Ok(value) => value.get("ops").is_none(),
            // A broken first operation still reads as JSON lines, so the
            // error names its line rather than the document's tail.
            Err(_) => first.starts_with('{') && first.ends_with('}') && !first.contains("\"ops\""),
        },
    };
    if json_lines {
        parse_lines(text)
    } else {
        let history: History = serde_json::from_str(text).map_err(|e| json_error(e, 0))?;
        Ok(Parsed { history, op_lines: None })
    }
}

fn parse_lines(text: &str) -> Result<Parsed, ParseError> {
    let mut ops = Vec::new();
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let op: Operation = serde_json::from_str(line).map_err(|e| json_error(e, index))?;
        ops.push(op);
        lines.push(index + 1);
    }
    Ok(Parsed { history: History { ops }, op_lines: Some(lines) })
}

/// serde_json's message at its position; `line_offset` is the line the
/// parsed text started on (0-based).
fn json_error(e: serde_json::Error, line_offset: usize) -> ParseError {
    let line = line_offset + e.line().max(1);
    // The position goes in front (FILE:LINE:COL), not repeated at the end.
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&position).unwrap_or(&text).to_string();
    // serde_json says column 0 for "before the first character".
    ParseError { line, column: Some(e.column().max(1)), message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{KvInput, KvOutput};

    const GET: &str = r#"{"client":1,"call_ns":10,"return_ns":20,"input":{"get":{"key":"a"}},"output":{"value":null}}"#;
    const PUT: &str = r#"{"client":2,"call_ns":5,"input":{"put":{"key":"a","value":"1","lease":7}}}"#;

    #[test]
    fn reads_json_lines_with_line_numbers() {
        let parsed = parse_leasesim(&format!("{GET}\n\n{PUT}\n")).unwrap();
        assert_eq!(parsed.op_lines, Some(vec![1, 3]));
        assert_eq!(parsed.history.ops[0].output, Some(KvOutput::Value(None)));
        assert_eq!(parsed.history.ops[1].input, KvInput::Put { key: "a".into(), value: "1".into(), lease: Some(7) });
        assert_eq!(parsed.history.ops[1].output, None);
    }

    #[test]
    fn reads_a_whole_document_compact_or_pretty() {
        let compact = format!(r#"{{"ops":[{GET},{PUT}]}}"#);
        assert_eq!(parse_leasesim(&compact).unwrap().history.ops.len(), 2);
        let pretty = serde_json::to_string_pretty(&parse_leasesim(&compact).unwrap().history).unwrap();
        let parsed = parse_leasesim(&pretty).unwrap();
        assert_eq!(parsed.history.ops.len(), 2);
        assert!(parsed.op_lines.is_none());
    }

    #[test]
    fn json_lines_error_names_the_line() {
        let bad = GET.replace("\"get\"", "\"fetch\"");
        let e = parse_leasesim(&format!("{GET}\n{bad}\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("fetch"), "{e}");
    }

    #[test]
    fn document_error_names_the_line() {
        let text = "{\n  \"ops\": [\n    {\"client\": 1, \"call_ns\": \"soon\"}\n  ]\n}\n";
        let e = parse_leasesim(text).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn broken_first_line_is_reported_as_a_json_line() {
        let broken = GET.replace("\"call_ns\":10", "\"call_ns\":x");
        let e = parse_leasesim(&format!("{broken}\n{GET}\n")).unwrap_err();
        assert_eq!((e.line, e.column), (1, Some(23)), "at the x");
        assert!(!e.message.contains("column"), "position not repeated: {e}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let e = parse_leasesim(&GET.replace("\"client\"", "\"clinet\"")).unwrap_err();
        assert!(e.message.contains("clinet"), "{e}");
    }
}
