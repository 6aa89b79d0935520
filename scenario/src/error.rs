//! Errors a person can act on: `file:line:col: message`, the offending line
//! with a caret under the key or value, and a line saying how to fix it.
//!
//! Validation collects every problem it finds instead of stopping at the
//! first, so one `leasesim check` run shows all of them.

use std::fmt;
use std::ops::Range;

use super::span::LineIndex;

/// Everything wrong with one scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file as the user named it (or the `file_name` given to `parse`).
    pub file: String,
    /// At least one; in the order they occur in the file.
    pub diagnostics: Vec<Diagnostic>,
}

/// One problem: where, what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// `None` for problems with the whole file (it cannot be read).
    pub location: Option<Location>,
    /// What is wrong, naming the key or value, e.g. "unknown key `laetncy`
    /// in [network]; did you mean `latency`?".
    pub message: String,
    /// How to fix it, e.g. "valid keys in [network]: latency, loss, duplicate".
    pub fix: String,
    /// The offending source line and the caret under the span, for display.
    pub snippet: Option<Snippet>,
}

/// A 1-based line and character column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub line: usize,
    pub col: usize,
}

/// The source line a diagnostic points into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    pub text: String,
    /// How many characters the caret underlines, starting at the column.
    pub width: usize,
}

impl ScenarioError {
    /// An error about the whole file (unreadable, no scenarios in a folder…).
    pub fn whole_file(file: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        ScenarioError {
            file: file.into(),
            diagnostics: vec![Diagnostic { location: None, message: message.into(), fix: fix.into(), snippet: None }],
        }
    }

    /// The first line of the first diagnostic: `file:line:col: message`.
    pub fn headline(&self) -> String {
        self.diagnostics.first().map_or_else(|| self.file.clone(), |d| d.headline(&self.file))
    }
}

impl Diagnostic {
    /// `file:line:col: message` (or `file: message` without a location).
    pub fn headline(&self, file: &str) -> String {
        match self.location {
            Some(Location { line, col }) => format!("{file}:{line}:{col}: {}", self.message),
            None => format!("{file}: {}", self.message),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, diagnostic) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "{}", diagnostic.headline(&self.file))?;
            if let (Some(snippet), Some(location)) = (&diagnostic.snippet, diagnostic.location) {
                let number = location.line.to_string();
                let gutter = " ".repeat(number.len());
                writeln!(f, " {number} | {}", snippet.text)?;
                writeln!(f, " {gutter} | {}{}", " ".repeat(location.col - 1), "^".repeat(snippet.width.max(1)))?;
            }
            write!(f, "  fix: {}", diagnostic.fix)?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// Collects diagnostics for one file while validation walks it.
pub struct Diags<'a> {
    index: LineIndex<'a>,
    list: Vec<Diagnostic>,
}

impl<'a> Diags<'a> {
    pub fn new(text: &'a str) -> Self {
        Diags { index: LineIndex::new(text), list: Vec::new() }
    }

    /// Records a problem at a span (or at the top of the file if the parser
    /// gave no span, which only happens for tables implied by dotted keys).
    pub fn error(&mut self, span: Option<Range<usize>>, message: impl Into<String>, fix: impl Into<String>) {
        let diagnostic = self.diagnostic(span, message, fix);
        self.list.push(diagnostic);
    }

    /// The source text under a span, for quoting a value back to the user.
    pub fn source(&self, span: &Option<Range<usize>>) -> &'a str {
        span.as_ref().map_or("", |span| self.index.slice(span))
    }

    /// A diagnostic at a span without recording it (for problems found
    /// later, such as a scenario name another file already uses).
    pub fn diagnostic(&self, span: Option<Range<usize>>, message: impl Into<String>, fix: impl Into<String>) -> Diagnostic {
        let span = span.unwrap_or(0..0);
        let (line, col) = self.index.locate(span.start);
        let text = self.index.line_text(line);
        let width = self.index.slice(&span).lines().next().unwrap_or("").chars().count();
        let width = width.min(text.chars().count().saturating_sub(col - 1)).max(1);
        Diagnostic {
            location: Some(Location { line, col }),
            message: message.into(),
            fix: fix.into(),
            snippet: Some(Snippet { text: text.to_string(), width }),
        }
    }

    /// The location a span starts at.
    pub fn locate(&self, span: &Option<Range<usize>>) -> Location {
        let (line, col) = self.index.locate(span.as_ref().map_or(0, |s| s.start));
        Location { line, col }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// All diagnostics in file order (a stable sort keeps the order in which
    /// checks ran for problems at the same place).
    pub fn into_error(mut self, file: &str) -> ScenarioError {
        self.list.sort_by_key(|d| d.location);
        ScenarioError { file: file.to_string(), diagnostics: self.list }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_position_source_caret_and_fix() {
        let text = "name = \"x\"\n[network]\nlaetncy = 3\n";
        let mut diags = Diags::new(text);
        let start = text.find("laetncy").unwrap();
        diags.error(Some(start..start + 7), "unknown key `laetncy` in [network]", "use `latency`");
        let shown = diags.into_error("a.toml").to_string();
        assert_eq!(shown, "a.toml:3:1: unknown key `laetncy` in [network]\n 3 | laetncy = 3\n   | ^^^^^^^\n  fix: use `latency`");
    }

    #[test]
    fn whole_file_errors_have_no_position() {
        let error = ScenarioError::whole_file("gone.toml", "cannot read the file: not found", "check the path");
        assert_eq!(error.to_string(), "gone.toml: cannot read the file: not found\n  fix: check the path");
        assert_eq!(error.headline(), "gone.toml: cannot read the file: not found");
    }
}
