//! Jepsen's EDN histories (`history.edn`): one map per event,
//! `{:process 0, :type :invoke, :f :write, :value 3, :time 1234}`, read into
//! a history of registers by key (`super::model::keyed`), because that is
//! the file Jepsen itself keeps and the one people have.
//!
//! Three shapes are read, one per file:
//! - a single register: `:f` is `:read`, `:write` or `:cas` and `:value` is
//!   `nil`, an integer or `[A B]` (compare-and-set);
//! - many registers (Jepsen's `independent` tests): every value is a
//!   `[key value]` tuple, e.g. `:value [3 [1 2]]` for a cas on key 3;
//! - porcupine's key-value store: a `:key` field and `:f` one of `:get`,
//!   `:put`, `:append` (a key never written reads as `""`).
//!
//! `:read`/`:get` and `:write`/`:put` are synonyms. The events mean what
//! they mean in the Jepsen log reader (`super::jepsen`): `:info` is an
//! unknown outcome open to the end, `:fail` of a write did not happen, a
//! failed read constrains nothing, a failed cas is an observation. Nemesis
//! events are skipped. When every client event has a `:time` (Jepsen's
//! nanoseconds) those are the operations' instants; when none has, events
//! are ordered by their position in the file; a mix is an error. The file
//! is either a sequence of maps or one vector of them; comments and commas
//! are allowed, unknown keys are not.

use std::collections::BTreeMap;

use super::edn::{Edn, Node, Reader};
use super::history::Operation;
use super::jepsen::ParseError;
use super::model::keyed::{KeyedHistory, KeyedInput, KeyedModel, KeyedOutput};

/// The keys an event may have.
const KEYS: [&str; 8] = ["process", "type", "f", "value", "time", "index", "error", "key"];

/// A parsed EDN history.
#[derive(Debug)]
pub struct EdnHistory {
    pub history: KeyedHistory,
    pub model: KeyedModel,
    /// The line of each operation's invocation.
    pub op_lines: Vec<usize>,
    /// Client invocations read (a failed write is read, then left out).
    pub invocations: usize,
    /// Whether `call_ns`/`return_ns` are Jepsen's `:time`s (else the
    /// 1-based position of the event in the file).
    pub timed: bool,
    /// Characters the EDN reader looked at plus events read (a measure of
    /// work, for tests).
    pub steps: u64,
}

/// Whether `text` starts like EDN rather than JSON or a log: a vector, or a
/// map whose first key is a keyword (a comment may come first).
pub fn looks_like_edn(text: &str) -> bool {
    let mut rest = text.trim_start();
    while let Some(comment) = rest.strip_prefix(';') {
        rest = comment.find('\n').map_or("", |i| &comment[i..]).trim_start();
    }
    match rest.strip_prefix('{') {
        Some(map) => map.trim_start_matches(|c: char| c.is_whitespace() || c == ',').starts_with([':', '}']),
        None => rest.starts_with('[') || (rest.is_empty() && text.trim_start().starts_with(';')),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Single,
    Tuple,
    Kv,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Single => "a single register's (no key)",
            Shape::Tuple => "a keyed register's (`[key value]` values)",
            Shape::Kv => "a key-value store's (a `:key` field)",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Function {
    Read,
    Write,
    Cas,
    Append,
}

impl Function {
    fn name(self) -> &'static str {
        match self {
            Function::Read => "read",
            Function::Write => "write",
            Function::Cas => "cas",
            Function::Append => "append",
        }
    }
}

/// One event's fields.
struct Event<'n> {
    map: &'n Node,
    process: u64,
    kind: Kind,
    function: Function,
    f_node: &'n Node,
    value: Option<&'n Node>,
    key: Option<&'n Node>,
    time: Option<u64>,
}

struct Pending {
    op: usize,
    line: usize,
    function: Function,
}

/// An operation's instants before the time base is chosen: (event ordinal,
/// `:time`).
type Instant = (u64, Option<u64>);

/// Parses an EDN history.
pub fn parse_edn_history(text: &str) -> Result<EdnHistory, ParseError> {
    let mut reader = Reader::new(text);
    let mut forms = Vec::new();
    while let Some(form) = reader.next_form()? {
        forms.push(form);
    }
    let events: Vec<&Node> = match forms.as_slice() {
        [Node { value: Edn::Vector(items), .. }] => items.iter().collect(),
        _ => forms.iter().collect(),
    };
    let mut history = EdnBuilder { steps: reader.steps(), ..EdnBuilder::default() };
    for (ordinal, node) in events.iter().enumerate() {
        history.steps += 1;
        let Some(event) = event(node)? else { continue };
        history.check_timing(node, &event)?;
        let shape = history.check_shape(node, &event)?;
        let instant = (ordinal as u64 + 1, event.time);
        if event.kind == Kind::Invoke {
            history.invoke(node, &event, shape, instant)?;
        } else {
            history.complete(node, &event, shape, instant)?;
        }
    }
    Ok(history.finish())
}

/// The history as the events build it.
#[derive(Default)]
struct EdnBuilder<'n> {
    ops: Vec<Operation<KeyedInput, KeyedOutput>>,
    /// Per op: its invocation and, once completed, its completion.
    instants: Vec<(Instant, Option<Instant>)>,
    op_lines: Vec<usize>,
    /// Per op: left out (a failed write or append).
    dropped: Vec<bool>,
    pending: BTreeMap<u64, Pending>,
    /// The first read value's shape, and its line.
    shape: Option<(Shape, usize)>,
    /// The first client event with and without a :time.
    timed_at: Option<&'n Node>,
    untimed_at: Option<&'n Node>,
    steps: u64,
}

impl<'n> EdnBuilder<'n> {
    /// Every event has a :time, or none does.
    fn check_timing(&mut self, node: &'n Node, event: &Event<'_>) -> Result<(), ParseError> {
        match event.time {
            Some(_) => self.timed_at = self.timed_at.or(Some(node)),
            None => self.untimed_at = self.untimed_at.or(Some(node)),
        }
        if let (Some(with), Some(without)) = (self.timed_at, self.untimed_at) {
            return Err(without
                .error(format!("this event has no `:time` but the one at line {} has; give every event a :time or none", with.pos.line)));
        }
        Ok(())
    }

    /// The event's shape, which must be the history's. Only values that
    /// are read decide the shape (an :info's value is whatever the client
    /// had, e.g. `:timed-out`).
    fn check_shape(&mut self, node: &Node, event: &Event<'_>) -> Result<Shape, ParseError> {
        let this_shape = shape_of(event);
        let value_read = match event.kind {
            Kind::Invoke | Kind::Ok => true,
            Kind::Fail => event.function == Function::Cas,
            Kind::Info => false,
        };
        match self.shape {
            _ if !value_read => {}
            None => self.shape = Some((this_shape, node.pos.line)),
            Some((first, first_line)) if first != this_shape => {
                return Err(node.error(format!(
                    "this event has {} shape but the one at line {first_line} has {} shape; a history has one shape",
                    this_shape.name(),
                    first.name()
                )))
            }
            Some(_) => {}
        }
        Ok(this_shape)
    }

    fn invoke(&mut self, node: &Node, event: &Event<'_>, shape: Shape, instant: Instant) -> Result<(), ParseError> {
        let line = node.pos.line;
        if let Some(p) = self.pending.get(&event.process) {
            return Err(
                node.error(format!("process {} invokes again while its invocation at line {} has not completed", event.process, p.line))
            );
        }
        let input = input_of(event, shape)?;
        self.pending.insert(event.process, Pending { op: self.ops.len(), line, function: event.function });
        self.ops.push(Operation { client: event.process, call_ns: 0, return_ns: None, input, output: None });
        self.instants.push((instant, None));
        self.op_lines.push(line);
        self.dropped.push(false);
        Ok(())
    }

    fn complete(&mut self, node: &Node, event: &Event<'_>, shape: Shape, instant: Instant) -> Result<(), ParseError> {
        let Some(p) = self.pending.remove(&event.process) else {
            return Err(node.error(format!("process {} completes an operation it never invoked", event.process)));
        };
        if p.function != event.function {
            return Err(event.f_node.error(format!(
                "process {} completes :{} but its invocation at line {} is :{}",
                event.process,
                event.function.name(),
                p.line,
                p.function.name()
            )));
        }
        let input = self.ops[p.op].input.clone();
        match event.kind {
            Kind::Invoke | Kind::Info => {}
            Kind::Ok => {
                self.ops[p.op].output = Some(output_of(event, shape, &input, p.line)?);
                self.instants[p.op].1 = Some(instant);
            }
            Kind::Fail => match input {
                // A failed read returned nothing: it constrains nothing.
                KeyedInput::Read { .. } => self.instants[p.op].1 = Some(instant),
                KeyedInput::Write { .. } | KeyedInput::Append { .. } => self.dropped[p.op] = true,
                KeyedInput::Cas { .. } => {
                    failed_cas(event, shape, &input, p.line)?;
                    self.ops[p.op].output = Some(KeyedOutput::Cas { succeeded: false });
                    self.instants[p.op].1 = Some(instant);
                }
            },
        }
        Ok(())
    }

    /// The history on its time base (`:time` when events carry one, else
    /// the events' order), without the dropped operations.
    fn finish(self) -> EdnHistory {
        let timed = self.timed_at.is_some();
        let invocations = self.ops.len();
        let pick = |(ordinal, time): Instant| if timed { time.unwrap_or(0) } else { ordinal };
        let mut kept = Vec::with_capacity(self.ops.len());
        let mut kept_lines = Vec::with_capacity(self.ops.len());
        for (((mut op, (call, ret)), line), drop) in self.ops.into_iter().zip(self.instants).zip(self.op_lines).zip(self.dropped) {
            if drop {
                continue;
            }
            op.call_ns = pick(call);
            op.return_ns = ret.map(pick);
            kept.push(op);
            kept_lines.push(line);
        }
        let initial = (self.shape.map(|(s, _)| s) == Some(Shape::Kv)).then(String::new);
        let history = KeyedHistory { ops: kept };
        EdnHistory { history, model: KeyedModel { initial }, op_lines: kept_lines, invocations, timed, steps: self.steps }
    }
}

/// A :fail of a :cas names the invocation's key and `[A B]` value.
fn failed_cas(event: &Event<'_>, shape: Shape, input: &KeyedInput, invoke_line: usize) -> Result<(), ParseError> {
    let (key, seen) = keyed_value(event, shape)?;
    check_key(input, key, event)?;
    let Some(seen) = seen else {
        return Err(event.map.error("a :fail of :cas needs its [A B] value"));
    };
    let (expected, new) = cas_value(seen)?;
    if !matches!(input, KeyedInput::Cas { expected: e, new: n, .. } if *e == expected && *n == new) {
        return Err(seen.error(format!("completion value differs from the invocation's (line {invoke_line})")));
    }
    Ok(())
}

/// An event's fields; `None` for a nemesis event.
fn event(node: &Node) -> Result<Option<Event<'_>>, ParseError> {
    let Edn::Map(pairs) = &node.value else {
        return Err(node.error("expected an event map, e.g. `{:process 0, :type :invoke, :f :read, :value nil}`"));
    };
    let mut fields: BTreeMap<&str, &Node> = BTreeMap::new();
    for (k, v) in pairs {
        let Some(name) = k.keyword().filter(|name| KEYS.contains(name)) else {
            return Err(k.error(format!("unknown event key; the keys are :{}", KEYS.join(", :"))));
        };
        if fields.insert(name, v).is_some() {
            return Err(k.error(format!("key `:{name}` appears twice in this event")));
        }
    }
    let need = |name: &str| fields.get(name).copied().ok_or_else(|| node.error(format!("this event has no `:{name}`")));
    let process_node = need("process")?;
    let process = match &process_node.value {
        Edn::Keyword(k) if k == "nemesis" => return Ok(None),
        Edn::Int(p) if *p >= 0 => *p as u64,
        _ => return Err(process_node.error("`:process` must be a non-negative integer or :nemesis")),
    };
    let type_node = need("type")?;
    let kind = match type_node.keyword() {
        Some("invoke") => Kind::Invoke,
        Some("ok") => Kind::Ok,
        Some("fail") => Kind::Fail,
        Some("info") => Kind::Info,
        _ => return Err(type_node.error("`:type` must be :invoke, :ok, :fail or :info")),
    };
    let f_node = need("f")?;
    let function = match f_node.keyword() {
        Some("read" | "get") => Function::Read,
        Some("write" | "put") => Function::Write,
        Some("cas") => Function::Cas,
        Some("append") => Function::Append,
        _ => return Err(f_node.error("`:f` must be :read, :write, :cas (a register) or :get, :put, :append (a key-value store)")),
    };
    let time = match fields.get("time") {
        None => None,
        Some(Node { value: Edn::Int(t), .. }) if *t >= 0 => Some(*t as u64),
        Some(t) => return Err(t.error("`:time` must be a non-negative integer (nanoseconds)")),
    };
    Ok(Some(Event {
        map: node,
        process,
        kind,
        function,
        f_node,
        value: fields.get("value").copied(),
        key: fields.get("key").copied(),
        time,
    }))
}

fn shape_of(event: &Event) -> Shape {
    if event.key.is_some() {
        return Shape::Kv;
    }
    match event.value.map(|v| &v.value) {
        Some(Edn::Vector(items)) if items.len() == 2 => match event.function {
            // `[A B]` is a plain cas; `[key [A B]]` a keyed one.
            Function::Cas => {
                if matches!(items[1].value, Edn::Vector(_)) {
                    Shape::Tuple
                } else {
                    Shape::Single
                }
            }
            _ => Shape::Tuple,
        },
        _ => Shape::Single,
    }
}

/// The key (empty for a single register) and the value node (`None`: no
/// `:value`, read as nil).
fn keyed_value<'n>(event: &Event<'n>, shape: Shape) -> Result<(String, Option<&'n Node>), ParseError> {
    match shape {
        Shape::Single => Ok((String::new(), event.value)),
        Shape::Kv => Ok((text(event.key.expect("Kv shape has a key"), "key")?, event.value)),
        Shape::Tuple => match event.value.map(|v| (&v.value, v)) {
            Some((Edn::Vector(items), _)) if items.len() == 2 => Ok((text(&items[0], "key")?, Some(&items[1]))),
            Some((_, v)) => Err(v.error("expected a `[key value]` tuple, as every other event of this history has")),
            None => Err(event.map.error("this event has no `:value`; a keyed register's events need `[key value]`")),
        },
    }
}

/// A key or value as text: an integer or a string.
fn text(node: &Node, what: &str) -> Result<String, ParseError> {
    match &node.value {
        Edn::Int(i) => Ok(i.to_string()),
        Edn::Str(s) => Ok(s.clone()),
        _ => Err(node.error(format!("a {what} must be an integer or a string"))),
    }
}

fn text_or_nil(node: Option<&Node>, what: &str) -> Result<Option<String>, ParseError> {
    match node {
        None | Some(Node { value: Edn::Nil, .. }) => Ok(None),
        Some(node) => text(node, what).map(Some),
    }
}

fn cas_value(node: &Node) -> Result<(Option<String>, String), ParseError> {
    match &node.value {
        Edn::Vector(items) if items.len() == 2 => Ok((text_or_nil(Some(&items[0]), "value")?, text(&items[1], "value")?)),
        _ => Err(node.error("a cas value must be `[A B]` (compare with A, set to B)")),
    }
}

fn input_of(event: &Event, shape: Shape) -> Result<KeyedInput, ParseError> {
    let (key, value) = keyed_value(event, shape)?;
    let required = || value.ok_or_else(|| event.map.error(format!("a :{} needs a `:value`", event.function.name())));
    Ok(match event.function {
        Function::Read => match value.map(|v| &v.value) {
            None | Some(Edn::Nil) => KeyedInput::Read { key },
            Some(_) => return Err(value.expect("some").error("a read is invoked with the value nil")),
        },
        Function::Write => KeyedInput::Write { key, value: text(required()?, "value")? },
        Function::Append => KeyedInput::Append { key, value: text(required()?, "value")? },
        Function::Cas => {
            let (expected, new) = cas_value(required()?)?;
            KeyedInput::Cas { key, expected, new }
        }
    })
}

fn check_key(input: &KeyedInput, key: String, event: &Event) -> Result<(), ParseError> {
    if input.key() == key {
        return Ok(());
    }
    let at = event.key.or(event.value).unwrap_or(event.map);
    Err(at.error(format!("completion names key {key:?} but its invocation key {:?}", input.key())))
}

fn output_of(event: &Event, shape: Shape, input: &KeyedInput, invoke_line: usize) -> Result<KeyedOutput, ParseError> {
    let (key, value) = keyed_value(event, shape)?;
    check_key(input, key, event)?;
    let differs = |node: &Node| node.error(format!("completion value differs from the invocation's (line {invoke_line})"));
    Ok(match input {
        KeyedInput::Read { .. } => {
            let read = text_or_nil(value, "value")?;
            // A key-value store's absent key reads as "" (porcupine's model).
            let read = if shape == Shape::Kv { Some(read.unwrap_or_default()) } else { read };
            KeyedOutput::Read { value: read }
        }
        KeyedInput::Write { value: asked, .. } | KeyedInput::Append { value: asked, .. } => {
            // Jepsen echoes the written value; an absent one echoes nothing.
            if let Some(node) = value.filter(|v| v.value != Edn::Nil) {
                if text(node, "value")? != *asked {
                    return Err(differs(node));
                }
            }
            KeyedOutput::Ok
        }
        KeyedInput::Cas { expected, new, .. } => {
            if let Some(node) = value.filter(|v| v.value != Edn::Nil) {
                if cas_value(node)? != (expected.clone(), new.clone()) {
                    return Err(differs(node));
                }
            }
            KeyedOutput::Cas { succeeded: true }
        }
    })
}
