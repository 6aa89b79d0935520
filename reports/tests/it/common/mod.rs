//! A small run built by hand — three servers, two clients and the store,
//! one lock — holding one of everything the timeline draws: a leader
//! change, a crash, a pause, a partition, a clock jump and a drift change,
//! overlapping beliefs, a backwards and a rejected store write, and two
//! violations (a bug and an assumption broken). The golden, browser and
//! page tests all render this one run.

#![allow(dead_code)] // each test file uses its own part of this module

use leasesim_reports::model::*;

pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;

fn span(start_ns: u64, end_ns: u64, role: Role) -> RoleSpan {
    RoleSpan { start_ns, end_ns, role }
}

fn exact_clock(end_ns: u64) -> ClockTrace {
    let zero = |at_ns| ClockPoint { at_ns, wall_error_ns: 0, mono_error_ns: 0 };
    ClockTrace { points: vec![zero(0), zero(end_ns)], max_abs_drift: 0.0 }
}

fn lane(name: &str, kind: LaneKind, roles: Vec<RoleSpan>, end_ns: u64) -> Lane {
    Lane { name: name.into(), kind, roles, paused: vec![], clock: exact_clock(end_ns), marks: vec![] }
}

pub fn small_run() -> RunView {
    let end_ns = 12 * S;
    RunView {
        scenario: "small-lock".into(),
        file: "scenarios/small-lock.toml".into(),
        seed: 7,
        verdict: "violation".into(),
        expected: false,
        trace_digest: "00c0ffee00c0ffee".into(),
        replay: "leasesim replay scenarios/small-lock.toml --seed 7".into(),
        sim_seconds: 12.0,
        wall_seconds: 0.05,
        events: 1234,
        real_facts: None,
        end_ns,
        settle_at_ns: 10 * S,
        drift_bound: 0.01,
        lanes: lanes(end_ns),
        link_faults: vec![LinkFault {
            start_ns: 2 * S,
            end_ns: 3500 * MS,
            label: "partition [s3] | [s1,s2]".into(),
            procs: vec!["s3".into()],
        }],
        fault_notes: vec![FaultNote {
            at_ns: 9 * S,
            label: "skipped crash holder:orders: the selector matched no process".into(),
            skipped: true,
        }],
        locks: vec![orders()],
        violations: violations(),
        trace: trace(),
        notes: vec![],
    }
}

/// s1 leads, crashes and comes back; s2 leads after it; s3's clock jumps
/// and drifts; c1 pauses.
fn lanes(end_ns: u64) -> Vec<Lane> {
    let s1 = lane(
        "s1",
        LaneKind::Server,
        vec![
            span(0, 200 * MS, Role::Follower),
            span(200 * MS, 4 * S, Role::Leader { term: 1 }),
            span(4 * S, 6 * S, Role::Down),
            span(6 * S, end_ns, Role::Follower),
        ],
        end_ns,
    );
    let s2 =
        lane("s2", LaneKind::Server, vec![span(0, 4300 * MS, Role::Follower), span(4300 * MS, end_ns, Role::Leader { term: 2 })], end_ns);
    let mut s3 = lane("s3", LaneKind::Server, vec![span(0, end_ns, Role::Follower)], end_ns);
    // Wall clock stepped +2 s at 3 s; from 5 s it runs 5% fast.
    let p = |at_ns: u64, wall_error_ns: i64, mono_error_ns: i64| ClockPoint { at_ns, wall_error_ns, mono_error_ns };
    s3.clock = ClockTrace {
        points: vec![
            p(0, 0, 0),
            p(3 * S, 0, 0),
            p(3 * S, 2 * S as i64, 0),
            p(5 * S, 2 * S as i64, 0),
            p(end_ns, 2 * S as i64 + 350 * MS as i64, 350 * MS as i64),
        ],
        max_abs_drift: 0.05,
    };
    s3.marks = vec![
        LaneMark { at_ns: 3 * S, kind: "jump".into(), label: "wall clock stepped +2.00s".into() },
        LaneMark { at_ns: 5 * S, kind: "drift".into(), label: "clock rate now +5% (was 0%)".into() },
    ];
    let mut c1 = lane("c1", LaneKind::Client, vec![span(0, end_ns, Role::Up)], end_ns);
    c1.paused = vec![Span { start_ns: 5 * S, end_ns: 8 * S }];
    let c2 = lane("c2", LaneKind::Client, vec![span(0, end_ns, Role::Up)], end_ns);
    let store = lane("store", LaneKind::Store, vec![span(0, end_ns, Role::Up)], end_ns);
    vec![s1, s2, s3, c1, c2, store]
}

/// Two holds whose beliefs overlap, and four store writes (one backwards,
/// one rejected).
fn orders() -> LockTrack {
    LockTrack {
        key: "orders".into(),
        holds: vec![
            Hold { client: 1, token: 5, lease: 3, start_ns: S, end_ns: 6500 * MS, end: "lease 3 expired".into() },
            Hold { client: 2, token: 9, lease: 4, start_ns: 6600 * MS, end_ns: 9 * S, end: "released by c2".into() },
        ],
        beliefs: vec![
            Belief { client: 1, token: 5, start_ns: 1010 * MS, end_ns: 8200 * MS, end: "its own clock reached the belief's end".into() },
            Belief { client: 2, token: 9, start_ns: 6700 * MS, end_ns: 9 * S, end: "released".into() },
        ],
        writes: vec![
            StoreWrite { at_ns: 3 * S, client: 1, token: 5, accepted: true, highest: None },
            StoreWrite { at_ns: 8 * S, client: 2, token: 9, accepted: true, highest: None },
            StoreWrite { at_ns: 8300 * MS, client: 1, token: 5, accepted: true, highest: None },
            StoreWrite { at_ns: 9500 * MS, client: 1, token: 5, accepted: false, highest: Some(9) },
        ],
    }
}

/// A bug (the beliefs overlap) and an assumption broken (fencing order).
fn violations() -> Vec<ViolationMark> {
    vec![
        ViolationMark {
            invariant: "lock-belief-overlap".into(),
            at_ns: 6700 * MS,
            detail: "c1 (token 5) and c2 (token 9) both believe they hold orders from 6.700s to 8.200s".into(),
            assumptions_held: true,
            procs: vec!["c1".into(), "c2".into()],
            keys: vec!["orders".into()],
        },
        ViolationMark {
            invariant: "fencing-order".into(),
            at_ns: 8300 * MS,
            detail: "the store accepted c1's write to orders with token 5 after c2's with token 9".into(),
            assumptions_held: false,
            procs: vec!["c1".into(), "c2".into(), "store".into()],
            keys: vec!["orders".into()],
        },
    ]
}

/// Sixty lines of text to escape, and the lines the violations point at.
fn trace() -> Vec<TraceLine> {
    let mut trace = Vec::new();
    for i in 0..60u64 {
        let at_ns = i * 200 * MS + 7 * MS;
        let proc = ["s1", "s2", "s3", "c1", "c2", "store"][(i % 6) as usize];
        trace.push(TraceLine { at_ns, proc: proc.into(), text: format!("Applied {{ index: {i}, term: 1 }} <&> \"quoted\"") });
    }
    trace.push(TraceLine { at_ns: 6700 * MS, proc: "c2".into(), text: "BeliefStarted { key: \"orders\", lease: 4, token: 9 }".into() });
    trace.push(TraceLine { at_ns: 8300 * MS, proc: "store".into(), text: "StoreAccepted { client: 1, key: \"orders\", token: 5 }".into() });
    trace.sort_by_key(|t| t.at_ns);
    trace
}

/// The structure of an SVG/XML document, one element per line, indented by
/// depth: tag, `#id`, `.classes` and `data-*` attributes, plus text and
/// titles — never geometry (x, y, width, d, …), which may move by a pixel
/// without anything being wrong. Panics if the tags do not balance.
pub fn outline(svg: &str) -> String {
    let mut out = String::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(lt) = rest.find('<') {
        let text = rest[..lt].trim();
        if !text.is_empty() && stack.last().is_none_or(|t| t != "style") {
            out.push_str(&format!("{}\"{}\"\n", "  ".repeat(stack.len()), text));
        }
        let gt = rest[lt..].find('>').expect("every tag closes") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(open, name, "</{name}> closes <{open}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag.split_whitespace().next().expect("a tag has a name").to_string();
        let mut line = format!("{}{name}", "  ".repeat(stack.len()));
        let mut attrs = attributes(tag);
        // id, then class, then data attributes by name.
        attrs.sort_by_key(|(a, _)| (a != "id", a != "class", a.clone()));
        for (attr, value) in attrs {
            match attr.as_str() {
                "id" => line.push_str(&format!(" #{value}")),
                "class" => line.push_str(&format!(" .{}", value.split_whitespace().collect::<Vec<_>>().join("."))),
                a if a.starts_with("data-") => line.push_str(&format!(" {a}={value}")),
                _ => {}
            }
        }
        out.push_str(&line);
        out.push('\n');
        if !self_closing {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    out
}

fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut attrs = Vec::new();
    let mut rest = tag.split_once(char::is_whitespace).map_or("", |(_, r)| r);
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim().to_string();
        let after = &rest[eq + 2..];
        let close = after.find('"').expect("attribute values are quoted");
        attrs.push((name, after[..close].to_string()));
        rest = &after[close + 1..];
    }
    attrs
}
