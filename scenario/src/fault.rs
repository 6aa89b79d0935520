//! `[[fault]]` tables: one timed action each, optionally undone after `for`.
//!
//! A fault is checked against the rest of the file: its selectors must be
//! able to match something (`s7` needs seven servers), `add` needs a spare,
//! `remove` a server, and `at` must fall within the fault phase. A fault
//! with no action or two is refused rather than guessed at.

use super::error::Diags;
use super::fields::{TableReader, Val};
use super::model::{FaultAction, ScheduledFault};
use super::point::Point;
use super::raw::Value;
use super::selector::{name_range, Process, ScenarioFacts, Selector};
use leasesim_core::duration::format_duration;

pub(crate) const ACTIONS: [&str; 11] =
    ["partition", "isolate", "block", "delay", "crash", "pause", "clock", "loss", "add", "remove", "messages"];
const KEYS: [&str; 16] = [
    "at",
    "for",
    "when",
    "partition",
    "isolate",
    "block",
    "delay",
    "crash",
    "pause",
    "clock",
    "drift",
    "jump",
    "loss",
    "add",
    "remove",
    "messages",
];
const SELECTORS: &str = "s1…, c1…, store, leader, holder:KEY, follower, random-server, random-client";

pub(crate) fn fault(mut t: TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts, duration_ns: Option<u64>) -> Option<ScheduledFault> {
    let line = d.locate(&t.span).line;
    let at_ns = t.require("at", "\"5s\"", d, |v, d| {
        let at_ns = v.duration(d)?;
        match duration_ns {
            Some(duration_ns) if at_ns > duration_ns => {
                let message = format!("`at` = {} is beyond `duration` = {}", format_duration(at_ns), format_duration(duration_ns));
                let fix =
                    format!("faults fire in the fault phase: use an `at` of at most {}, or raise `duration`", format_duration(duration_ns));
                v.error(d, message, fix);
                None
            }
            _ => Some(at_ns),
        }
    });
    let present: Vec<&str> = t.keys().filter(|key| ACTIONS.contains(key)).collect();
    let action = match present.as_slice() {
        [] => {
            let message = format!("{} has no action", t.title);
            d.error(t.span.clone(), message, format!("add exactly one of: {}", ACTIONS.join(", ")));
            None
        }
        [name] => t.take(name).and_then(|v| action(&v, &mut t, d, facts)),
        [first, second, ..] => {
            let message = format!(
                "{} has {} actions, `{first}` and `{second}`",
                t.title,
                if present.len() == 2 { "two".to_string() } else { present.len().to_string() }
            );
            if let Some(v) = t.take(second) {
                d.error(
                    v.key_span.clone(),
                    message,
                    "a fault does one thing: split it into one [[fault]] per action (they may share `at`)",
                );
            }
            for name in &present {
                t.take(name);
            }
            None
        }
    };
    let undoable = matches!(present.as_slice(), [name] if !["clock", "add", "remove"].contains(name));
    let for_ns = t.get("for", d, |v, d| {
        let for_ns = v.positive_duration(d)?;
        match present.as_slice() {
            [name] if !undoable => {
                let why = if *name == "clock" {
                    "clock changes are part of the world and are not undone"
                } else {
                    "a membership change is not undone; add another [[fault]] to reverse it"
                };
                d.error(v.key_span.clone(), format!("`for` has no meaning with `{name}`: {why}"), "remove `for`");
                None
            }
            _ => Some(for_ns),
        }
    });
    if !present.contains(&"clock") {
        for key in ["drift", "jump"] {
            if let Some(v) = t.take(key) {
                let message = format!("`{key}` belongs to a clock fault, and {} has no `clock`", t.title);
                d.error(v.key_span.clone(), message, format!("add `clock = \"s1\"` (the process whose clock changes), or remove `{key}`"));
            }
        }
    }
    let when = t.get("when", d, |v, d| when(v, d, present.as_slice(), action.as_ref())).optional();
    t.finish(d, &KEYS);
    Some(ScheduledFault { at_ns: at_ns?, action: action?, for_ns: for_ns.optional()?, line, when: when? })
}

/// `when = "after-send:vote-reply"`: a fault point (see `scenario::point`),
/// for crash, pause and clock faults, on a selector that can reach it.
fn when(v: &Val<'_>, d: &mut Diags, present: &[&str], action: Option<&FaultAction>) -> Option<Point> {
    let text = v.string(d, "\"after-send:vote-reply\"")?;
    let point = match Point::parse(text) {
        Ok(point) => point,
        Err(message) => {
            let names: Vec<String> = Point::all().iter().map(|p| p.to_string()).collect();
            let fix = match super::suggest::closest(text, names.iter().map(String::as_str)) {
                Some(near) => format!("did you mean `{near}`? fault points: {}", Point::spellings()),
                None => format!("fault points: {}", Point::spellings()),
            };
            v.error(d, message, fix);
            return None;
        }
    };
    if !matches!(present, ["crash" | "pause" | "clock"]) {
        let message = format!("`when` applies to crash, pause and clock faults, not to `{}`", present.first().unwrap_or(&"nothing"));
        v.error(d, message, "remove `when`, or make the fault a crash, pause or clock change");
        return None;
    }
    let selector = match action? {
        FaultAction::Crash(s) | FaultAction::Pause(s) => s,
        FaultAction::Clock { target, .. } => target,
        _ => return None,
    };
    let client_side = matches!(selector, Selector::Client(_) | Selector::RandomClient | Selector::Holder(_) | Selector::Store);
    if point.servers_only() && client_side {
        let message = format!("`{selector}` never reaches `{point}`: only servers do");
        v.error(d, message, "aim it at a server (s1…, leader, follower, random-server), or use `timer` or `after-send:request`");
        return None;
    }
    if point == Point::AfterSend(crate::MessageKind::Request) && selector.is_server() {
        let message = format!("`{selector}` never reaches `{point}`: only clients send requests");
        v.error(d, message, "aim it at a client (c1…, random-client, holder:KEY), or use a server's point");
        return None;
    }
    Some(point)
}

fn action(v: &Val<'_>, t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<FaultAction> {
    match v.key {
        "partition" => partition(v, d, facts).map(FaultAction::Partition),
        "isolate" => selector(v, d, facts).map(FaultAction::Isolate),
        "crash" => selector(v, d, facts).map(FaultAction::Crash),
        "pause" => selector(v, d, facts).map(FaultAction::Pause),
        "block" => block(v, d, facts),
        "delay" => delay(v, d, facts),
        "clock" => clock(v, t, d, facts),
        "loss" => v.probability(d).map(FaultAction::Loss),
        "add" => add(v, d, facts).map(FaultAction::Add),
        "messages" => super::message_fault::messages(v, d).map(FaultAction::Messages),
        _ => remove(v, d, facts).map(FaultAction::Remove),
    }
}

/// A selector string that can match something in this scenario.
pub(crate) fn selector(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<Selector> {
    let text = v.string(d, "\"s1\"")?;
    let selector = match Selector::parse(text) {
        Ok(selector) => selector,
        Err(message) => {
            v.error(d, message, format!("selectors: {SELECTORS}"));
            return None;
        }
    };
    match facts.check_selector(&selector) {
        Ok(()) => Some(selector),
        Err((message, fix)) => {
            v.error(d, message, fix);
            None
        }
    }
}

fn selector_list(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts, example: &str) -> Option<Vec<Selector>> {
    let items = v.array(d, example)?;
    let mut out = Some(Vec::with_capacity(items.len()));
    for item in items {
        match (selector(&v.element(item), d, facts), out.as_mut()) {
            (Some(selector), Some(list)) => list.push(selector),
            _ => out = None,
        }
    }
    out
}

fn partition(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<Vec<Vec<Selector>>> {
    const EXAMPLE: &str = "[[\"s1\", \"s2\"], [\"s3\", \"s4\", \"s5\"]]";
    let groups = v.array(d, EXAMPLE)?;
    if groups.len() < 2 {
        v.error(
            d,
            format!("`partition` has {} group(s); it needs at least two", groups.len()),
            format!("write the sides that cannot reach each other, e.g. `partition = {EXAMPLE}`"),
        );
        return None;
    }
    let mut out = Some(Vec::with_capacity(groups.len()));
    let mut seen: Vec<Process> = Vec::new();
    for group in groups {
        let group_val = v.element(group);
        let Value::Array(items) = &group.value else {
            group_val.error(
                d,
                format!("each group of `partition` must be an array of processes, found {}", group.value.kind()),
                format!("write e.g. `partition = {EXAMPLE}`"),
            );
            out = None;
            continue;
        };
        let Some(members) = selector_list(&group_val, d, facts, EXAMPLE) else {
            out = None;
            continue;
        };
        if members.is_empty() {
            group_val.error(d, "a group of `partition` is empty", "list at least one process in each group");
            out = None;
            continue;
        }
        for (member, node) in members.iter().zip(items) {
            if let Some(process) = member.process() {
                if seen.contains(&process) {
                    group_val.element(node).error(
                        d,
                        format!("`{process}` is in `partition` twice"),
                        "a process belongs to one group at most",
                    );
                    out = None;
                }
                seen.push(process);
            }
        }
        if let Some(list) = out.as_mut() {
            list.push(members);
        }
    }
    out
}

fn block(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<FaultAction> {
    const EXAMPLE: &str = "{ from = \"s1\", to = [\"s2\", \"s3\"] }";
    let mut t = v.table(d, "`block`", &format!("write e.g. `block = {EXAMPLE}`"))?;
    let (from, to) = one_way(&mut t, d, facts, "block");
    t.finish(d, &["from", "to"]);
    Some(FaultAction::Block { from: from?, to: to? })
}

fn delay(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<FaultAction> {
    const EXAMPLE: &str = "{ from = \"s1\", to = [\"s2\"], by = \"500ms\" }";
    let mut t = v.table(d, "`delay`", &format!("write e.g. `delay = {EXAMPLE}`"))?;
    let (from, to) = one_way(&mut t, d, facts, "delay");
    let by_ns = t.require("by", "\"500ms\"", d, |v, d| v.positive_duration(d));
    t.finish(d, &["from", "to", "by"]);
    Some(FaultAction::Delay { from: from?, to: to?, by_ns: by_ns? })
}

/// The `from` and non-empty `to` of a one-way fault (`block`, `delay`).
fn one_way(t: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts, what: &str) -> (Option<Selector>, Option<Vec<Selector>>) {
    let from = t.require("from", "\"s1\"", d, |v, d| selector(v, d, facts));
    let to = t.require("to", "[\"s2\"]", d, |v, d| {
        let to = selector_list(v, d, facts, "[\"s2\", \"s3\"]")?;
        if to.is_empty() {
            v.error(d, format!("`to` is empty: a {what} needs at least one receiver"), "write e.g. `to = [\"s2\"]`");
            return None;
        }
        Some(to)
    });
    (from, to)
}

fn clock(v: &Val<'_>, fault: &mut TableReader<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<FaultAction> {
    let target = selector(v, d, facts);
    let drift = fault.get("drift", d, |v, d| v.drift(d)).optional();
    let jump_ns = fault.get("jump", d, |v, d| v.signed_duration(d)).optional();
    if drift == Some(None) && jump_ns == Some(None) {
        d.error(
            v.key_span.clone(),
            "a clock fault needs `drift` and/or `jump`",
            "add `drift = 0.05` (new rate error) and/or `jump = \"-2s\"` (step the wall clock)",
        );
        return None;
    }
    Some(FaultAction::Clock { target: target?, drift: drift?, jump_ns: jump_ns? })
}

fn spares_text(facts: &ScenarioFacts) -> String {
    match (facts.servers, facts.spares) {
        (Some(servers), Some(spares)) if spares > 0 => format!("spares here: {}", name_range("s", servers + 1, servers + spares)),
        _ => "there are no spares: set `spares` in [cluster] (spares are numbered after the voters)".to_string(),
    }
}

fn add(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<u64> {
    let selector = selector(v, d, facts)?;
    let Selector::Server(n) = selector else {
        v.error(d, format!("`add = \"{selector}\"`: `add` takes a spare server by name"), spares_text(facts));
        return None;
    };
    match facts.servers {
        Some(servers) if n <= servers => {
            v.error(
                d,
                format!("`add = \"s{n}\"`: s{n} is already a voter (servers = {servers})"),
                format!("`add` takes a spare; {}", spares_text(facts)),
            );
            None
        }
        _ => Some(n),
    }
}

fn remove(v: &Val<'_>, d: &mut Diags, facts: &ScenarioFacts) -> Option<Selector> {
    let selector = selector(v, d, facts)?;
    if selector.is_server() {
        return Some(selector);
    }
    let servers = facts.servers.map_or_else(|| "s1…".to_string(), |n| name_range("s", 1, n + facts.spares.unwrap_or(0)));
    v.error(
        d,
        format!("`remove = \"{selector}\"`: only a server can be removed"),
        format!("name a server ({servers}), or use leader, follower or random-server"),
    );
    None
}
