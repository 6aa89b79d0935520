//! A small EDN reader (extensible data notation, the format Jepsen writes
//! its `history.edn` in), because the checker must read Jepsen histories and
//! report every problem at a `line:column`.
//!
//! The EDN crates on crates.io report positions only for syntax errors (not
//! for each value, which the history reader needs to say *which* `:value`
//! is wrong), read nesting by recursion without a limit (so a fuzzed
//! `[[[[…` overflows the stack), and bring dependencies for types a history
//! never holds. This reader keeps every value's position, limits nesting to
//! [`MAX_DEPTH`], and counts its steps (one per character looked at, see
//! [`Reader::steps`]) so that tests can prove its work is linear in its
//! input.
//!
//! It reads all of EDN that a history can hold: nil, booleans, integers
//! (64-bit; `N` suffix allowed), floats (kept as text), strings, characters,
//! keywords, symbols, lists, vectors, maps, sets, tagged values (`#inst
//! "…"`), comments and `#_` discards. Ratios and big integers beyond 64 bits
//! are refused with their position.

use super::jepsen::ParseError;

/// How deep collections may nest: Jepsen's values nest a few levels; more
/// is a broken or hostile file, refused rather than read by deep recursion.
pub const MAX_DEPTH: usize = 64;

/// A 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Edn {
    Nil,
    Bool(bool),
    Int(i64),
    /// A float (or `M` decimal) as written.
    Float(String),
    Str(String),
    Char(char),
    /// Without its leading colon.
    Keyword(String),
    Symbol(String),
    List(Vec<Node>),
    Vector(Vec<Node>),
    /// Pairs in file order (duplicate keys are the caller's to judge).
    Map(Vec<(Node, Node)>),
    Set(Vec<Node>),
    Tagged(String, Box<Node>),
}

/// A value and where it starts; `start..end` are byte offsets into the text
/// the reader was given.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Edn,
    pub pos: Pos,
    pub start: usize,
    pub end: usize,
}

impl Node {
    pub fn keyword(&self) -> Option<&str> {
        match &self.value {
            Edn::Keyword(k) => Some(k),
            _ => None,
        }
    }

    /// An error at this value.
    pub fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError { line: self.pos.line, column: Some(self.pos.column), message: message.into() }
    }
}

/// Reads EDN forms one at a time from a text.
pub struct Reader<'a> {
    text: &'a str,
    at: usize,
    line: usize,
    column: usize,
    depth: usize,
    steps: u64,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Reader::at_position(text, Pos { line: 1, column: 1 })
    }

    /// A reader whose positions start at `pos` (for text cut out of a line).
    pub fn at_position(text: &'a str, pos: Pos) -> Self {
        Reader { text, at: 0, line: pos.line, column: pos.column, depth: 0, steps: 0 }
    }

    /// Characters looked at so far (each at most a small constant number of
    /// times), the measure of the reader's work.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Byte offset of the next unread character.
    pub fn offset(&self) -> usize {
        self.at
    }

    pub fn pos(&self) -> Pos {
        Pos { line: self.line, column: self.column }
    }

    /// The next form, or `None` at the end of the text.
    pub fn next_form(&mut self) -> Result<Option<Node>, ParseError> {
        self.skip_blank()?;
        if self.peek().is_none() {
            return Ok(None);
        }
        self.form().map(Some)
    }

    fn peek(&mut self) -> Option<char> {
        self.steps += 1;
        self.text[self.at..].chars().next()
    }

    fn peek2(&self) -> Option<char> {
        let mut chars = self.text[self.at..].chars();
        chars.next();
        chars.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error_at(&self, pos: Pos, message: impl Into<String>) -> ParseError {
        ParseError { line: pos.line, column: Some(pos.column), message: message.into() }
    }

    /// Skips whitespace, commas, `;` comments and `#_` discarded forms.
    fn skip_blank(&mut self) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() || c == ',' => {
                    self.bump();
                }
                Some(';') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                Some('#') if self.peek2() == Some('_') => {
                    let pos = self.pos();
                    self.bump();
                    self.bump();
                    // `#_ #_ a b` discards two forms: the recursion nests.
                    if self.depth >= MAX_DEPTH {
                        return Err(self.error_at(pos, format!("discards nest deeper than {MAX_DEPTH} levels")));
                    }
                    self.depth += 1;
                    self.skip_blank()?;
                    if self.peek().is_none() {
                        return Err(self.error_at(pos, "`#_` discards nothing: the text ends"));
                    }
                    self.form()?;
                    self.depth -= 1;
                }
                _ => return Ok(()),
            }
        }
    }

    fn form(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        let start = self.at;
        let c = self.peek().expect("callers check for the end");
        let value = match c {
            '(' | '[' | '{' => {
                self.bump();
                let close = match c {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                let items = self.items(close, pos, c)?;
                match c {
                    '(' => Edn::List(items),
                    '[' => Edn::Vector(items),
                    _ => Edn::Map(pairs(items, pos)?),
                }
            }
            ')' | ']' | '}' => return Err(self.error_at(pos, format!("`{c}` closes nothing"))),
            '"' => Edn::Str(self.string()?),
            '\\' => Edn::Char(self.character()?),
            '#' => self.dispatch(pos)?,
            ':' => {
                self.bump();
                let name = self.token();
                if name.is_empty() {
                    return Err(self.error_at(pos, "a keyword needs a name after `:`"));
                }
                Edn::Keyword(name.to_string())
            }
            _ => {
                let token = self.token();
                if token.is_empty() {
                    // Only a character no token may hold gets here.
                    self.bump();
                    return Err(self.error_at(pos, format!("`{c}` cannot start a value")));
                }
                atom(token).map_err(|m| self.error_at(pos, m))?
            }
        };
        Ok(Node { value, pos, start, end: self.at })
    }

    /// Forms up to `close`; the opener was at `pos`.
    fn items(&mut self, close: char, pos: Pos, open: char) -> Result<Vec<Node>, ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error_at(pos, format!("collections nest deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                None => return Err(self.error_at(pos, format!("`{open}` is never closed (expected `{close}` before the end)"))),
                Some(c) if c == close => {
                    self.bump();
                    break;
                }
                Some(c @ (')' | ']' | '}')) => {
                    let at = self.pos();
                    return Err(self.error_at(at, format!("`{c}` does not close the `{open}` at {}:{}", pos.line, pos.column)));
                }
                Some(_) => items.push(self.form()?),
            }
        }
        self.depth -= 1;
        Ok(items)
    }

    /// `#{…}`, `#"…"`, `#tag value` (`#_` is handled as blank).
    fn dispatch(&mut self, pos: Pos) -> Result<Edn, ParseError> {
        self.bump();
        match self.peek() {
            Some('{') => {
                self.bump();
                Ok(Edn::Set(self.items('}', pos, '{')?))
            }
            Some('"') => Ok(Edn::Str(self.string()?)),
            Some(c) if c.is_alphabetic() => {
                let tag = self.token().to_string();
                self.skip_blank()?;
                if self.peek().is_none() {
                    return Err(self.error_at(pos, format!("tag `#{tag}` has no value")));
                }
                if self.depth >= MAX_DEPTH {
                    return Err(self.error_at(pos, format!("values nest deeper than {MAX_DEPTH} levels")));
                }
                self.depth += 1;
                let inner = self.form()?;
                self.depth -= 1;
                Ok(Edn::Tagged(tag, Box::new(inner)))
            }
            _ => Err(self.error_at(pos, "`#` must start a set `#{…}`, a tag `#inst …` or a discard `#_`")),
        }
    }

    /// A token: everything up to whitespace or a delimiter.
    fn token(&mut self) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(|c| !c.is_whitespace() && !"()[]{}\",;".contains(c)) {
            self.bump();
        }
        &self.text[start..self.at]
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let pos = self.pos();
        self.bump();
        let mut out = String::new();
        loop {
            let here = self.pos();
            match self.bump() {
                None => return Err(self.error_at(pos, "string is never closed (no `\"` before the end)")),
                Some('"') => return Ok(out),
                Some('\\') => out.push(match self.bump() {
                    Some('"') => '"',
                    Some('\\') => '\\',
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('b') => '\u{8}',
                    Some('f') => '\u{c}',
                    Some('u') => self.unicode(here)?,
                    other => {
                        let shown = other.map_or("the end".to_string(), |c| format!("`\\{c}`"));
                        return Err(self.error_at(here, format!("unknown escape {shown} in a string")));
                    }
                }),
                Some(c) => out.push(c),
            }
        }
    }

    /// Four hex digits after `\u`.
    fn unicode(&mut self, pos: Pos) -> Result<char, ParseError> {
        let mut code = 0u32;
        for _ in 0..4 {
            let digit = self.bump().and_then(|c| c.to_digit(16));
            code = code * 16 + digit.ok_or_else(|| self.error_at(pos, "`\\u` needs four hex digits"))?;
        }
        char::from_u32(code).ok_or_else(|| self.error_at(pos, format!("`\\u{code:04x}` is not a character")))
    }

    fn character(&mut self) -> Result<char, ParseError> {
        let pos = self.pos();
        self.bump();
        let Some(first) = self.bump() else {
            return Err(self.error_at(pos, "`\\` ends the text: a character needs a name"));
        };
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_alphanumeric()) {
            self.bump();
        }
        let rest = &self.text[start..self.at];
        if rest.is_empty() {
            return Ok(first);
        }
        let name = format!("{first}{rest}");
        match name.as_str() {
            "newline" => Ok('\n'),
            "space" => Ok(' '),
            "tab" => Ok('\t'),
            "return" => Ok('\r'),
            _ if first == 'u' && rest.len() == 4 => u32::from_str_radix(rest, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| self.error_at(pos, format!("`\\{name}` is not a character"))),
            _ => Err(self.error_at(pos, format!("`\\{name}` is not a character"))),
        }
    }
}

/// A token that is not a keyword: nil, a boolean, a number or a symbol.
fn atom(token: &str) -> Result<Edn, String> {
    match token {
        "nil" => return Ok(Edn::Nil),
        "true" => return Ok(Edn::Bool(true)),
        "false" => return Ok(Edn::Bool(false)),
        _ => {}
    }
    let unsigned = token.strip_prefix(['+', '-']).unwrap_or(token);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok(Edn::Symbol(token.to_string()));
    }
    if token.contains('/') {
        return Err(format!("`{token}`: ratios are not supported; write an integer or a decimal"));
    }
    if let Some(digits) = token.strip_suffix('N').or(Some(token)).filter(|t| !t.contains(['.', 'e', 'E', 'M'])) {
        return digits.parse::<i64>().map(Edn::Int).map_err(|_| {
            if digits.strip_prefix(['+', '-']).unwrap_or(digits).chars().all(|c| c.is_ascii_digit()) {
                format!("`{token}` does not fit a 64-bit integer")
            } else {
                format!("`{token}` is not a number")
            }
        });
    }
    match token.strip_suffix('M').unwrap_or(token).parse::<f64>() {
        Ok(_) => Ok(Edn::Float(token.to_string())),
        Err(_) => Err(format!("`{token}` is not a number")),
    }
}

fn pairs(items: Vec<Node>, pos: Pos) -> Result<Vec<(Node, Node)>, ParseError> {
    if items.len() % 2 == 1 {
        let last = &items[items.len() - 1];
        return Err(ParseError {
            line: last.pos.line,
            column: Some(last.pos.column),
            message: format!("the map opened at {}:{} has a key without a value here", pos.line, pos.column),
        });
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}

/// Every form of a text, in order.
pub fn read_all(text: &str) -> Result<Vec<Node>, ParseError> {
    let mut reader = Reader::new(text);
    let mut forms = Vec::new();
    while let Some(form) = reader.next_form()? {
        forms.push(form);
    }
    Ok(forms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Edn {
        let forms = read_all(text).unwrap();
        assert_eq!(forms.len(), 1, "{text}");
        forms.into_iter().next().unwrap().value
    }

    fn err(text: &str) -> ParseError {
        read_all(text).expect_err(text)
    }

    #[test]
    fn reads_scalars() {
        assert_eq!(one("nil"), Edn::Nil);
        assert_eq!(one("true"), Edn::Bool(true));
        assert_eq!(one("-42"), Edn::Int(-42));
        assert_eq!(one("+7N"), Edn::Int(7));
        assert_eq!(one("1.5e3"), Edn::Float("1.5e3".into()));
        assert_eq!(one("2.50M"), Edn::Float("2.50M".into()));
        assert_eq!(one(r#""a\"b\n\u00e9""#), Edn::Str("a\"b\né".into()));
        assert_eq!(one(":timed-out"), Edn::Keyword("timed-out".into()));
        assert_eq!(one("jepsen.util/foo"), Edn::Symbol("jepsen.util/foo".into()));
        assert_eq!(one(r"\newline"), Edn::Char('\n'));
        assert_eq!(one(r"\x"), Edn::Char('x'));
        assert_eq!(one(r"\u0041"), Edn::Char('A'));
    }

    #[test]
    fn reads_a_jepsen_op_with_positions() {
        let text = "; a history\n{:process 0, :type :invoke,\n :f :cas, :value [nil 4], #_ #_ :ignored 1 :time 12}";
        let forms = read_all(text).unwrap();
        assert_eq!(forms.len(), 1);
        assert_eq!(forms[0].pos, Pos { line: 2, column: 1 });
        let Edn::Map(pairs) = &forms[0].value else { panic!("{:?}", forms[0].value) };
        let keys: Vec<&str> = pairs.iter().filter_map(|(k, _)| k.keyword()).collect();
        assert_eq!(keys, ["process", "type", "f", "value", "time"]);
        let (_, value) = &pairs[3];
        assert_eq!(value.pos, Pos { line: 3, column: 18 });
        assert_eq!(&text[value.start..value.end], "[nil 4]");
        assert_eq!(pairs[4].1.value, Edn::Int(12));
    }

    #[test]
    fn reads_sets_tags_lists_and_several_forms() {
        let forms = read_all("#{1 2} #inst \"2020-01-01\" (a b) [] {}").unwrap();
        assert_eq!(forms.len(), 5);
        assert!(matches!(&forms[0].value, Edn::Set(v) if v.len() == 2));
        assert!(matches!(&forms[1].value, Edn::Tagged(t, _) if t == "inst"));
        assert!(matches!(&forms[2].value, Edn::List(v) if v.len() == 2));
        assert_eq!(forms[3].value, Edn::Vector(vec![]));
        assert_eq!(forms[4].value, Edn::Map(vec![]));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = err("{:a 1}\n[1 2");
        assert_eq!((e.line, e.column), (2, Some(1)));
        assert!(e.message.contains("never closed"), "{e:?}");
        let e = err("{:a 1\n :b}");
        assert_eq!((e.line, e.column), (2, Some(2)));
        assert!(e.message.contains("key without a value"), "{e:?}");
        let e = err("[1 2)");
        assert_eq!((e.line, e.column), (1, Some(5)));
        let e = err("  \"abc");
        assert_eq!((e.line, e.column), (1, Some(3)));
        assert!(err("99999999999999999999").message.contains("64-bit"));
        assert!(err("1/2").message.contains("ratios"));
        assert!(err("1.2.3").message.contains("not a number"));
        assert!(err("#").message.contains("`#` must start"));
        assert!(err(r#""\q""#).message.contains("unknown escape"));
        assert!(err(":").message.contains("keyword needs a name"));
        assert!(err("\\").message.contains("character needs a name"));
        assert!(err("#_").message.contains("discards nothing"));
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let deep = "[".repeat(10_000);
        let e = err(&deep);
        assert!(e.message.contains("deeper than 64"), "{e:?}");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(read_all(&ok).is_ok());
        let tags = "#a ".repeat(10_000) + "1";
        assert!(err(&tags).message.contains("deeper than 64"));
        let discards = "#_".repeat(10_000) + "1";
        assert!(err(&discards).message.contains("deeper than 64"));
    }

    #[test]
    fn steps_are_linear_in_the_input() {
        let text = "{:process 0, :type :invoke, :f :write, :value \"x y\", :time 1}\n".repeat(50);
        let mut reader = Reader::new(&text);
        while reader.next_form().unwrap().is_some() {}
        let chars = text.chars().count() as u64;
        assert!(reader.steps() >= chars && reader.steps() <= 4 * chars + 8, "{} steps for {chars} chars", reader.steps());
    }
}
