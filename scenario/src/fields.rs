//! Typed reading of table entries, each reporting its own errors.
//!
//! A `TableReader` hands out entries by key and remembers which were read,
//! so that whatever is left at `finish` is an unknown key (reported with the
//! valid keys and the closest one). A `Val` is one value with its key, and
//! its methods check type and range and say how to fix a bad value. Every
//! method returns `None` after reporting, so callers just skip checks that
//! depend on a bad value instead of cascading errors.

use std::ops::Range;

use super::error::Diags;
use super::raw::{Entry, Node, Value};
use super::suggest;
use leasesim_core::duration::{self, DurationError};

/// The outcome of reading an optional key.
pub enum Field<T> {
    Missing,
    /// Present but bad; already reported.
    Bad,
    Ok(T),
}

impl<T> Field<T> {
    /// The value, or `default` when absent; `None` when bad.
    pub fn or(self, default: T) -> Option<T> {
        self.or_else(|| default)
    }

    pub fn or_else(self, default: impl FnOnce() -> T) -> Option<T> {
        match self {
            Field::Missing => Some(default()),
            Field::Bad => None,
            Field::Ok(value) => Some(value),
        }
    }

    /// `Some(None)` when absent, `None` when bad.
    pub fn optional(self) -> Option<Option<T>> {
        match self {
            Field::Missing => Some(None),
            Field::Bad => None,
            Field::Ok(value) => Some(Some(value)),
        }
    }
}

/// Reads one table's entries by key.
pub struct TableReader<'a> {
    /// `[network]`, `[[fault]] #2`, or empty for the top level.
    pub title: String,
    /// Where the table starts (its header), for "missing key" errors.
    pub span: Option<Range<usize>>,
    entries: &'a [Entry],
    taken: Vec<bool>,
}

impl<'a> TableReader<'a> {
    /// The document's top level.
    pub fn root(node: &'a Node) -> Self {
        let entries = match &node.value {
            Value::Table(entries) => entries.as_slice(),
            _ => &[],
        };
        TableReader { title: String::new(), span: Some(0..0), entries, taken: vec![false; entries.len()] }
    }

    /// "in [network]" or "at the top level".
    pub fn place(&self) -> String {
        if self.title.is_empty() {
            "at the top level".to_string()
        } else {
            format!("in {}", self.title)
        }
    }

    /// Takes an entry; later lookups of the same key see nothing.
    pub fn take(&mut self, key: &str) -> Option<Val<'a>> {
        let index = self.entries.iter().position(|entry| entry.key == key)?;
        self.taken[index] = true;
        let entry = &self.entries[index];
        Some(Val { key: &entry.key, node: &entry.node, span: entry.node.span_or(&entry.key_span), key_span: entry.span() })
    }

    /// Where an entry is written, without taking it (for problems found
    /// after reading it, such as a kind with nothing to act on).
    pub fn key_span(&self, key: &str) -> Option<Range<usize>> {
        self.entries.iter().find(|entry| entry.key == key).and_then(|entry| entry.span())
    }

    /// The keys present, in document order.
    pub fn keys(&self) -> impl Iterator<Item = &'a str> {
        self.entries.iter().map(|entry| entry.key.as_str())
    }

    /// Takes every entry, in document order (for tables keyed by name, such
    /// as `[clocks]`).
    pub fn take_all(&mut self) -> Vec<Val<'a>> {
        let keys: Vec<&'a str> = self.keys().collect();
        keys.into_iter().filter_map(|key| self.take(key)).collect()
    }

    /// An empty table, read when a section is absent so that its defaults
    /// come from the same code as a present one.
    pub fn empty(title: &str) -> Self {
        TableReader { title: title.to_string(), span: Some(0..0), entries: &[], taken: Vec::new() }
    }

    /// Reads an optional key with `read`.
    pub fn get<T>(&mut self, key: &str, d: &mut Diags, read: impl FnOnce(&Val<'a>, &mut Diags) -> Option<T>) -> Field<T> {
        match self.take(key) {
            None => Field::Missing,
            Some(val) => read(&val, d).map_or(Field::Bad, Field::Ok),
        }
    }

    /// Reads a required key; its absence is reported with an example.
    pub fn require<T>(
        &mut self,
        key: &str,
        example: &str,
        d: &mut Diags,
        read: impl FnOnce(&Val<'a>, &mut Diags) -> Option<T>,
    ) -> Option<T> {
        match self.get(key, d, read) {
            Field::Ok(value) => Some(value),
            Field::Bad => None,
            Field::Missing => {
                self.missing(key, example, d);
                None
            }
        }
    }

    /// Reports that a required key is absent, at the table's header.
    pub fn missing(&self, key: &str, example: &str, d: &mut Diags) {
        d.error(self.span.clone(), format!("missing key `{key}` {}", self.place()), format!("add `{key} = {example}`"));
    }

    /// Reports every entry nobody took as an unknown key.
    pub fn finish(self, d: &mut Diags, valid: &[&str]) {
        for (entry, taken) in self.entries.iter().zip(&self.taken) {
            if !taken {
                let place = self.place();
                d.error(
                    entry.span(),
                    format!("unknown key `{}` {place}{}", entry.key, suggest::did_you_mean(&entry.key, valid.iter().copied())),
                    format!("valid keys {place}: {}", valid.join(", ")),
                );
            }
        }
    }
}

/// One value and the key it belongs to.
#[derive(Clone)]
pub struct Val<'a> {
    pub key: &'a str,
    pub node: &'a Node,
    /// The value's span (its key's when the value has none).
    pub span: Option<Range<usize>>,
    /// The key's span, for problems with the entry as a whole.
    pub key_span: Option<Range<usize>>,
}

impl<'a> Val<'a> {
    /// An element of this array value, reported under the same key.
    pub fn element(&self, node: &'a Node) -> Val<'a> {
        Val { key: self.key, node, span: node.span_or(&self.span), key_span: self.key_span.clone() }
    }

    /// Reports a problem with this value.
    pub fn error(&self, d: &mut Diags, message: impl Into<String>, fix: impl Into<String>) {
        d.error(self.span.clone(), message, fix);
    }

    /// The value as written in the file.
    pub fn source(&self, d: &Diags) -> String {
        d.source(&self.span).to_string()
    }

    fn type_error(&self, d: &mut Diags, expected: &str, example: &str) {
        let message = format!("`{}` must be {expected}, found {}", self.key, self.node.value.kind());
        self.error(d, message, format!("write e.g. `{} = {example}`", self.key));
    }

    pub fn string(&self, d: &mut Diags, example: &str) -> Option<&'a str> {
        match &self.node.value {
            Value::String(text) => Some(text),
            _ => {
                self.type_error(d, "a string", example);
                None
            }
        }
    }

    pub fn boolean(&self, d: &mut Diags) -> Option<bool> {
        match self.node.value {
            Value::Boolean(value) => Some(value),
            _ => {
                self.type_error(d, "true or false", "true");
                None
            }
        }
    }

    /// An integer within `min..=max`; `fix` says what the bounds mean.
    pub fn integer(&self, d: &mut Diags, min: u64, max: u64, fix: &str) -> Option<u64> {
        let Value::Integer(value) = self.node.value else {
            self.type_error(d, "an integer", &min.max(1).to_string());
            return None;
        };
        match u64::try_from(value) {
            Ok(value) if (min..=max).contains(&value) => Some(value),
            _ => {
                self.error(d, format!("`{}` = {value} is outside {min}..={max}", self.key), fix);
                None
            }
        }
    }

    /// A finite number; integers are accepted (`loss = 0`).
    pub fn number(&self, d: &mut Diags, example: &str) -> Option<f64> {
        let value = match self.node.value {
            Value::Float(value) => value,
            Value::Integer(value) => value as f64,
            _ => {
                self.type_error(d, "a number", example);
                return None;
            }
        };
        if value.is_finite() {
            Some(value)
        } else {
            self.error(
                d,
                format!("`{}` = {} is not a finite number", self.key, self.source(d)),
                format!("write e.g. `{} = {example}`", self.key),
            );
            None
        }
    }

    /// A probability in [0, 1].
    pub fn probability(&self, d: &mut Diags) -> Option<f64> {
        let value = self.number(d, "0.01")?;
        if (0.0..=1.0).contains(&value) {
            return Some(value);
        }
        let message = format!("`{}` = {} is not a probability: it must be within [0, 1]", self.key, self.source(d));
        self.error(d, message, format!("write a number from 0 to 1, e.g. `{} = 0.01` for 1%", self.key));
        None
    }

    /// A clock-rate error in (-1, 1).
    pub fn drift(&self, d: &mut Diags) -> Option<f64> {
        let value = self.number(d, "0.05")?;
        if value > -1.0 && value < 1.0 {
            return Some(value);
        }
        let message = format!("`{}` = {} is outside (-1, 1)", self.key, self.source(d));
        self.error(d, message, "drift is a rate error: 0.05 runs 5% fast, -0.02 runs 2% slow; -1 would stop the clock");
        None
    }

    /// A fraction in [0, 1) (margins, bounds on drift).
    pub fn fraction(&self, d: &mut Diags, example: &str) -> Option<f64> {
        let value = self.number(d, example)?;
        if (0.0..1.0).contains(&value) {
            return Some(value);
        }
        let message = format!("`{}` = {} is outside [0, 1)", self.key, self.source(d));
        self.error(d, message, format!("write a fraction at least 0 and below 1, e.g. `{} = {example}`", self.key));
        None
    }

    /// An unsigned duration string.
    pub fn duration(&self, d: &mut Diags) -> Option<u64> {
        let text = self.duration_text(d)?;
        match duration::parse_duration(text) {
            Ok(ns) => Some(ns),
            Err(error) => {
                self.duration_error(d, text, error);
                None
            }
        }
    }

    /// A duration string that may carry a sign.
    pub fn signed_duration(&self, d: &mut Diags) -> Option<i64> {
        let text = self.duration_text(d)?;
        match duration::parse_signed_duration(text) {
            Ok(ns) => Some(ns),
            Err(error) => {
                self.duration_error(d, text, error);
                None
            }
        }
    }

    /// A duration that must be above zero.
    pub fn positive_duration(&self, d: &mut Diags) -> Option<u64> {
        let ns = self.duration(d)?;
        if ns > 0 {
            return Some(ns);
        }
        self.error(d, format!("`{}` must be longer than zero", self.key), format!("write e.g. `{} = \"1s\"`", self.key));
        None
    }

    fn duration_text(&self, d: &mut Diags) -> Option<&'a str> {
        match &self.node.value {
            Value::String(text) => Some(text),
            Value::Integer(n) => {
                let message = format!("`{}` must be a duration string with a unit, found an integer", self.key);
                self.error(d, message, format!("write the unit: e.g. `{} = \"{n}ms\"` or `\"{n}s\"`", self.key));
                None
            }
            _ => {
                self.type_error(d, "a duration string with a unit", "\"250ms\"");
                None
            }
        }
    }

    fn duration_error(&self, d: &mut Diags, text: &str, error: DurationError) {
        let (message, fix) = match error {
            DurationError::Syntax => {
                let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
                let fix = if squeezed != text && duration::parse_signed_duration(&squeezed).is_ok() {
                    format!("write `\"{squeezed}\"`")
                } else {
                    "write a number directly followed by its unit, e.g. \"250ms\", \"2s\", \"1m\"".to_string()
                };
                (format!("`{text}`: a duration is a number with a unit: ms, s, m (or ns, us, h), e.g. \"250ms\""), fix)
            }
            DurationError::Negative => (
                format!("`{text}`: `{}` cannot be negative", self.key),
                format!("write a duration of zero or more, e.g. \"{}\"", text.trim_start_matches('-')),
            ),
            DurationError::TooLong => (format!("`{text}`: too long for 64-bit nanoseconds"), "write a shorter duration".to_string()),
            DurationError::TooFine => (format!("`{text}`: finer than one nanosecond"), "round it to whole nanoseconds".to_string()),
        };
        self.error(d, message, fix);
    }

    /// The two elements of a `[low, high]` array.
    fn range_parts(&self, d: &mut Diags, example: &str) -> Option<(Val<'a>, Val<'a>)> {
        match &self.node.value {
            Value::Array(items) if items.len() == 2 => Some((self.element(&items[0]), self.element(&items[1]))),
            Value::Array(items) => {
                let message = format!("`{}` has {} values; a range is two values [low, high]", self.key, items.len());
                self.error(d, message, format!("write e.g. `{} = {example}`", self.key));
                None
            }
            _ => {
                self.type_error(d, "a range [low, high]", example);
                None
            }
        }
    }

    fn check_order<T: PartialOrd>(&self, d: &mut Diags, low: T, high: T, swapped: String) -> Option<(T, T)> {
        if low <= high {
            return Some((low, high));
        }
        self.error(d, format!("{}: low is above high", self.source(d)), format!("write the low end first: `{} = {swapped}`", self.key));
        None
    }

    /// A range of unsigned durations, `low <= high`; one duration written
    /// alone means a fixed value (low = high).
    pub fn duration_range(&self, d: &mut Diags) -> Option<(u64, u64)> {
        if let Value::String(_) = self.node.value {
            return self.duration(d).map(|ns| (ns, ns));
        }
        let (low, high) = self.range_parts(d, "[\"150ms\", \"300ms\"]")?;
        let (low, high) = (low.duration(d), high.duration(d));
        let (low, high) = (low?, high?);
        let swapped = format!("[\"{}\", \"{}\"]", duration::format_duration(high), duration::format_duration(low));
        self.check_order(d, low, high, swapped)
    }

    /// A range of signed durations, `low <= high`.
    pub fn signed_range(&self, d: &mut Diags) -> Option<(i64, i64)> {
        if let Value::String(_) = self.node.value {
            return self.signed_duration(d).map(|ns| (ns, ns));
        }
        let (low, high) = self.range_parts(d, "[\"-1s\", \"1s\"]")?;
        let (low, high) = (low.signed_duration(d), high.signed_duration(d));
        let (low, high) = (low?, high?);
        let swapped = format!("[\"{}\", \"{}\"]", duration::format_signed_duration(high), duration::format_signed_duration(low));
        self.check_order(d, low, high, swapped)
    }

    pub fn array(&self, d: &mut Diags, example: &str) -> Option<&'a [Node]> {
        match &self.node.value {
            Value::Array(items) => Some(items),
            _ => {
                self.type_error(d, "an array", example);
                None
            }
        }
    }

    /// A list of strings, each with its own `Val` for precise errors.
    pub fn strings(&self, d: &mut Diags, example: &str) -> Option<Vec<(&'a str, Val<'a>)>> {
        let items = self.array(d, example)?;
        let mut out = Some(Vec::with_capacity(items.len()));
        for item in items {
            let element = self.element(item);
            match (element.string(d, example), out.as_mut()) {
                (Some(text), Some(list)) => list.push((text, element)),
                _ => out = None,
            }
        }
        out
    }

    /// This value as a table titled `title` (e.g. `[network]`); `fix` says
    /// how to write it when it is not one.
    pub fn table(&self, d: &mut Diags, title: &str, fix: &str) -> Option<TableReader<'a>> {
        match &self.node.value {
            Value::Table(entries) => {
                Some(TableReader { title: title.to_string(), span: self.span.clone(), entries, taken: vec![false; entries.len()] })
            }
            other => {
                self.error(d, format!("`{}` must be a table, found {}", self.key, other.kind()), fix);
                None
            }
        }
    }
}
