//! The TOML document as a tree in which every key and value knows its byte
//! span.
//!
//! Validation walks this tree by hand rather than deserializing straight
//! into structs with `deny_unknown_fields`: serde stops at the first error,
//! cannot say "did you mean", and reports unknown keys without the list a
//! user needs. `toml::Spanned<T>` alone does not work either: in toml 0.8,
//! tables implied by dotted keys (`[clocks.s3]` implies `clocks`) carry no
//! span, and `Spanned` then fails on them. So this module speaks the span
//! protocol of `serde_spanned` itself and accepts values without a span.

use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The struct name and fields through which the toml deserializer hands out
/// spans (the protocol behind `toml::Spanned`). The unit test
/// `spans_reach_keys_and_values` fails loudly if a toml upgrade changes them.
const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
static SPANNED_FIELDS: [&str; 3] = [SPANNED_START, SPANNED_END, SPANNED_VALUE];
/// The one key of the table by which toml deserializes a date-time.
const DATETIME_KEY: &str = "$__toml_private_datetime";

/// A value and where it is in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// `None` only for tables implied by dotted keys.
    pub span: Option<Range<usize>>,
    pub value: Value,
}

/// One `key = value` of a table, in document order.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_span: Option<Range<usize>>,
    pub node: Node,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Datetime(String),
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

impl Value {
    /// The kind of value, with its article, for "found …" in messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime(_) => "a date-time",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }
}

impl Entry {
    /// Where to point for a problem with this entry as a whole: the key.
    pub fn span(&self) -> Option<Range<usize>> {
        self.key_span.clone().or_else(|| self.node.span.clone())
    }
}

impl Node {
    /// Where to point for a problem with this value: the value, or its key
    /// when the value has no span of its own.
    pub fn span_or(&self, fallback: &Option<Range<usize>>) -> Option<Range<usize>> {
        self.span.clone().or_else(|| fallback.clone())
    }
}

/// A TOML syntax error: the parser's message and where it points.
pub struct SyntaxError {
    pub message: String,
    pub span: Option<Range<usize>>,
}

/// Parses a whole document into a spanned tree.
pub fn parse_document(text: &str) -> Result<Node, SyntaxError> {
    NodeSeed.deserialize(toml::de::Deserializer::new(text)).map_err(|error| SyntaxError {
        message: error.message().trim().lines().map(str::trim).collect::<Vec<_>>().join("; "),
        span: error.span(),
    })
}

struct NodeSeed;

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, &SPANNED_FIELDS, NodeVisitor)
    }
}

/// The value inside a span wrapper: never itself wrapped.
struct BareSeed;

impl<'de> DeserializeSeed<'de> for BareSeed {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

fn bare(value: Value) -> Node {
    Node { span: None, value }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(bare(Value::String(v.to_string())))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(bare(Value::Integer(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        i64::try_from(v).map(|v| bare(Value::Integer(v))).map_err(|_| E::custom("integer too large"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(bare(Value::Float(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(bare(Value::Boolean(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(NodeSeed)? {
            items.push(item);
        }
        Ok(bare(Value::Array(items)))
    }

    /// Either the span wrapper (first key is the start field) or a table
    /// handed over without one.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        let (mut start, mut end, mut inner) = (None, None, None);
        let mut wrapped = false;
        let mut first = true;
        while let Some((key, key_span)) = map.next_key_seed(KeySeed)? {
            if first && key_span.is_none() && key == SPANNED_START {
                wrapped = true;
            }
            first = false;
            if wrapped {
                match key.as_str() {
                    SPANNED_START => start = Some(map.next_value::<usize>()?),
                    SPANNED_END => end = Some(map.next_value::<usize>()?),
                    SPANNED_VALUE => inner = Some(map.next_value_seed(BareSeed)?),
                    other => return Err(de::Error::custom(format!("unexpected span field `{other}`"))),
                }
                continue;
            }
            let node = map.next_value_seed(NodeSeed)?;
            entries.push(Entry { key, key_span, node });
        }
        if !wrapped {
            return Ok(bare(datetime_or_table(entries)));
        }
        match (start, end, inner) {
            (Some(start), Some(end), Some(inner)) => Ok(Node { span: Some(start..end), value: inner.value }),
            _ => Err(de::Error::custom("incomplete span from the TOML parser")),
        }
    }
}

fn datetime_or_table(mut entries: Vec<Entry>) -> Value {
    if entries.len() == 1 && entries[0].key == DATETIME_KEY {
        if let Value::String(text) = &mut entries[0].node.value {
            return Value::Datetime(std::mem::take(text));
        }
    }
    Value::Table(entries)
}

/// A table key, with its span when the parser has one.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (String, Option<Range<usize>>);
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, &SPANNED_FIELDS, KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = (String, Option<Range<usize>>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((v.to_string(), None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut start, mut end, mut key) = (None, None, None);
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                SPANNED_START => start = Some(map.next_value::<usize>()?),
                SPANNED_END => end = Some(map.next_value::<usize>()?),
                SPANNED_VALUE => key = Some(map.next_value::<String>()?),
                other => return Err(de::Error::custom(format!("unexpected span field `{other}`"))),
            }
        }
        match (start, end, key) {
            (Some(start), Some(end), Some(key)) => Ok((key, Some(start..end))),
            _ => Err(de::Error::custom("incomplete key span from the TOML parser")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(node: &Node) -> &[Entry] {
        match &node.value {
            Value::Table(entries) => entries,
            other => panic!("expected a table, got {other:?}"),
        }
    }

    #[test]
    fn spans_reach_keys_and_values() {
        let text = "name = \"x\"\n[clocks.s3]\ndrift = 0.04\n[[fault]]\nat = \"8s\"\n";
        let root = parse_document(text).unwrap_or_else(|e| panic!("{}", e.message));
        let top = entries(&root);
        assert_eq!(top[0].key, "name");
        assert_eq!(top[0].key_span, Some(0..4));
        assert_eq!(top[0].node.span, Some(7..10));
        // `clocks` is implied by the dotted header: no span of its own.
        assert_eq!(top[1].key, "clocks");
        assert!(top[1].key_span.is_some());
        assert_eq!(top[1].node.span, None);
        let s3 = &entries(&top[1].node)[0];
        assert_eq!(s3.key, "s3");
        let drift = &entries(&s3.node)[0];
        assert_eq!(&text[drift.node.span.clone().unwrap()], "0.04");
        assert_eq!(drift.node.value, Value::Float(0.04));
        let Value::Array(faults) = &top[2].node.value else { panic!("fault is not an array") };
        let at = &entries(&faults[0])[0];
        assert_eq!(&text[at.node.span.clone().unwrap()], "\"8s\"");
    }

    #[test]
    fn datetimes_and_dotted_keys_parse() {
        let root = parse_document("when = 1979-05-27\na.b.c = 1\n").unwrap_or_else(|e| panic!("{}", e.message));
        let top = entries(&root);
        assert_eq!(top[0].node.value, Value::Datetime("1979-05-27".to_string()));
        assert_eq!(top[1].key, "a");
    }

    #[test]
    fn syntax_errors_keep_their_span() {
        let Err(error) = parse_document("a = 1\nb = \n") else { panic!("parsed a bad document") };
        assert_eq!(error.span, Some(10..11));
        assert!(!error.message.is_empty());
    }
}
