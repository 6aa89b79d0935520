//! Writes a scenario back as a readable file (for `shrink`, and for bug
//! reports that attach the exact scenario a run used).
//!
//! Every value is written explicitly, defaults included, so the file means
//! the same thing even if a default changes later; parsing the output gives
//! a `Scenario` equal to the input. Durations use the largest exact unit,
//! floats Rust's shortest round-trip form, strings TOML's own escaping.

use std::fmt::Write as _;

use super::message_fault::MessageEffect;
use super::model::{Chaos, FaultAction, Scenario, Selector, Verdict, WorkloadKind};
use super::selector::name_range;
use super::validate::expiry_name;
use leasesim_core::duration::{format_duration, format_signed_duration};

/// The scenario as TOML text that parses back to an equal scenario.
pub fn to_toml(s: &Scenario) -> String {
    let mut out = String::new();
    // `write!` into a String cannot fail; the results are ignored.
    // Scenario files start with what they show and the verdict to expect.
    for line in s.description.as_deref().unwrap_or(&s.name).lines() {
        let _ = writeln!(out, "# {}", comment(line));
    }
    let verdict = match &s.expect.verdict {
        Verdict::Safe => "safe".to_string(),
        Verdict::Violation { ids } => format!("violation of {}", ids.join(" or ")),
    };
    let _ = writeln!(out, "# Expect: {verdict}. Written by leasesim from {}.", comment(&s.path.display().to_string()));
    top(&mut out, s);
    let c = &s.cluster;
    let _ = writeln!(out, "\n[cluster]");
    let _ = writeln!(out, "servers = {}", c.servers);
    let _ = writeln!(out, "election_timeout = {}", range(c.election_timeout_ns));
    let _ = writeln!(out, "heartbeat = {}", dur(c.heartbeat_ns));
    let _ = writeln!(out, "lease_expiry = {}", string(expiry_name(c.lease_expiry)));
    let _ = writeln!(out, "spares = {}", c.spares);
    let _ = writeln!(out, "drift_bound = {}", float(c.drift_bound));
    let _ = writeln!(out, "max_append_entries = {}", c.max_append_entries);
    let _ = writeln!(out, "max_in_flight_appends = {}", c.max_in_flight_appends);
    let _ = writeln!(out, "snapshot_every = {}", c.snapshot_every);
    let _ = writeln!(out, "keepalive_read_index = {}", c.keepalive_read_index);
    let _ = writeln!(out, "client_timeout = {}", dur(c.client_timeout_ns));
    // Written only when on: files without it read back unchanged.
    if let Some(every) = c.checkpoint_interval_ns {
        let _ = writeln!(out, "checkpoint_interval = {}", dur(every));
    }
    if c.lease_reads {
        let _ = writeln!(out, "lease_reads = true");
    }
    let n = &s.network;
    let _ = writeln!(out, "\n[network]");
    let _ = writeln!(out, "latency = {}", range(n.latency_ns));
    let _ = writeln!(out, "loss = {}", float(n.loss));
    let _ = writeln!(out, "duplicate = {}", float(n.duplicate));
    for (process, clock) in &s.clocks {
        let _ = writeln!(out, "\n[clocks.{process}]");
        let _ = writeln!(out, "drift = {}", float(clock.drift));
        let _ = writeln!(out, "offset = {}", string(&format_signed_duration(clock.offset_ns)));
    }
    workloads(&mut out, s);
    faults(&mut out, s);
    if let Some(chaos) = &s.chaos {
        write_chaos(&mut out, chaos);
    }
    let _ = writeln!(out, "\n[expect]");
    match &s.expect.verdict {
        Verdict::Safe => {
            let _ = writeln!(out, "verdict = \"safe\"");
        }
        Verdict::Violation { ids } => {
            let _ = writeln!(out, "verdict = \"violation\"");
            let _ = writeln!(out, "violations = {}", list(ids.iter().map(String::as_str)));
        }
    }
    out
}

fn top(out: &mut String, s: &Scenario) {
    let _ = writeln!(out, "name = {}", string(&s.name));
    if let Some(description) = &s.description {
        let _ = writeln!(out, "description = {}", string(description));
    }
    let _ = writeln!(out, "duration = {}", dur(s.duration_ns));
    let _ = writeln!(out, "settle = {}", dur(s.settle_ns));
    let _ = writeln!(out, "seeds = \"{}..{}\"", s.seeds.start, s.seeds.end);
    let bugs = s.bugs.enabled();
    if !bugs.is_empty() {
        let _ = writeln!(out, "bugs = {}", list(bugs));
    }
}

fn workloads(out: &mut String, s: &Scenario) {
    for w in &s.workloads {
        let ids = w.client_ids();
        let _ = writeln!(out, "\n[[workload]]  # clients {}", name_range("c", ids.start, ids.end.saturating_sub(1)));
        let _ = writeln!(out, "kind = {}", string(w.kind.name()));
        let _ = writeln!(out, "clients = {}", w.clients);
        match &w.kind {
            WorkloadKind::Lock(l) => {
                let _ = writeln!(out, "keys = {}", list(l.keys.iter().map(String::as_str)));
                let _ = writeln!(out, "ttl = {}", dur(l.ttl_ns));
                let _ = writeln!(out, "keepalive = {}", dur(l.keepalive_ns));
                let _ = writeln!(out, "hold = {}", range(l.hold_ns));
                let _ = writeln!(out, "think = {}", range(l.think_ns));
                let _ = writeln!(out, "margin = {}", float(l.margin));
                let _ = writeln!(out, "belief_from = {}", string(l.belief_from.name()));
                let _ = writeln!(out, "fenced = {}", l.fenced);
            }
            WorkloadKind::Registry(r) => {
                let _ = writeln!(out, "ttl = {}", dur(r.ttl_ns));
                let _ = writeln!(out, "keepalive = {}", dur(r.keepalive_ns));
            }
            WorkloadKind::Kv(k) => {
                let _ = writeln!(out, "keys = {}", k.keys);
                let _ = writeln!(out, "interval = {}", range(k.interval_ns));
                let _ = writeln!(out, "in_flight = {}", k.in_flight);
            }
            WorkloadKind::Task(t) => {
                let _ = writeln!(out, "ttl = {}", dur(t.ttl_ns));
                let _ = writeln!(out, "keepalive = {}", dur(t.keepalive_ns));
                let _ = writeln!(out, "tasks = {}", t.tasks);
                let _ = writeln!(out, "task_every = {}", range(t.task_every_ns));
                let _ = writeln!(out, "work = {}", range(t.work_ns));
                let _ = writeln!(out, "poll = {}", range(t.poll_ns));
                let _ = writeln!(out, "margin = {}", float(t.margin));
                let _ = writeln!(out, "belief_from = {}", string(t.belief_from.name()));
            }
            WorkloadKind::Watch(w) => {
                let _ = writeln!(out, "prefix = {}", string(&w.prefix));
                let _ = writeln!(out, "start = {}", string(w.start.name()));
                let _ = writeln!(out, "prev_kv = {}", w.prev_kv);
                let _ = writeln!(out, "check_every = {}", dur(w.check_every_ns));
            }
            WorkloadKind::Txn(x) => {
                let _ = writeln!(out, "keys = {}", x.keys);
                let _ = writeln!(out, "interval = {}", range(x.interval_ns));
            }
            WorkloadKind::Singleton(s) => {
                let _ = writeln!(out, "role = {}", string(&s.role));
                let _ = writeln!(out, "ttl = {}", dur(s.ttl_ns));
                let _ = writeln!(out, "keepalive = {}", dur(s.keepalive_ns));
                let _ = writeln!(out, "interval = {}", range(s.interval_ns));
                let _ = writeln!(out, "poll = {}", range(s.poll_ns));
                let _ = writeln!(out, "margin = {}", float(s.margin));
                let _ = writeln!(out, "belief_from = {}", string(s.belief_from.name()));
            }
        }
    }
}

fn faults(out: &mut String, s: &Scenario) {
    for f in &s.faults {
        let _ = writeln!(out, "\n[[fault]]");
        let _ = writeln!(out, "at = {}", dur(f.at_ns));
        match &f.action {
            FaultAction::Partition(groups) => {
                let groups: Vec<String> = groups.iter().map(|g| selectors(g)).collect();
                let _ = writeln!(out, "partition = [{}]", groups.join(", "));
            }
            FaultAction::Isolate(sel) | FaultAction::Crash(sel) | FaultAction::Pause(sel) | FaultAction::Remove(sel) => {
                let _ = writeln!(out, "{} = {}", f.action.name(), selector(sel));
            }
            FaultAction::Block { from, to } => {
                let _ = writeln!(out, "block = {{ from = {}, to = {} }}", selector(from), selectors(to));
            }
            FaultAction::Delay { from, to, by_ns } => {
                let _ = writeln!(out, "delay = {{ from = {}, to = {}, by = {} }}", selector(from), selectors(to), dur(*by_ns));
            }
            FaultAction::Clock { target, drift, jump_ns } => {
                let _ = writeln!(out, "clock = {}", selector(target));
                if let Some(drift) = drift {
                    let _ = writeln!(out, "drift = {}", float(*drift));
                }
                if let Some(jump_ns) = jump_ns {
                    let _ = writeln!(out, "jump = {}", string(&format_signed_duration(*jump_ns)));
                }
            }
            FaultAction::Loss(p) => {
                let _ = writeln!(out, "loss = {}", float(*p));
            }
            FaultAction::Add(n) => {
                let _ = writeln!(out, "add = \"s{n}\"");
            }
            FaultAction::Messages(m) => {
                let effect = match m.effect {
                    MessageEffect::Delay(ns) | MessageEffect::Reorder(ns) | MessageEffect::Duplicate(ns) => dur(ns),
                    MessageEffect::Drop(p) => float(p),
                };
                let _ = writeln!(out, "messages = {{ kind = \"{}\", {} = {effect} }}", m.kind, m.effect.key());
            }
        }
        if let Some(for_ns) = f.for_ns {
            let _ = writeln!(out, "for = {}", dur(for_ns));
        }
        if let Some(point) = f.when {
            let _ = writeln!(out, "when = \"{point}\"");
        }
    }
}

fn write_chaos(out: &mut String, c: &Chaos) {
    let _ = writeln!(out, "\n[chaos]");
    let kinds = [
        ("partitions", "partition_for", c.partitions),
        ("crashes", "crash_for", c.crashes),
        ("pauses", "pause_for", c.pauses),
        ("leader_crashes", "leader_crash_for", c.leader_crashes),
        ("holder_pauses", "holder_pause_for", c.holder_pauses),
        ("leader_isolations", "leader_isolation_for", c.leader_isolations),
        ("crash_points", "crash_point_for", c.crash_points),
        ("pause_points", "pause_point_for", c.pause_points),
    ];
    for (every_key, for_key, rate) in kinds {
        if let Some(rate) = rate {
            let _ = writeln!(out, "{every_key} = {}", dur(rate.mean_interval_ns));
            let _ = writeln!(out, "{for_key} = {}", range(rate.for_ns));
        }
    }
    if let Some(jumps) = c.clock_jumps {
        let _ = writeln!(out, "clock_jumps = {}", dur(jumps.mean_interval_ns));
        let (low, high) = jumps.jump_ns;
        let _ = writeln!(out, "jump = [{}, {}]", string(&format_signed_duration(low)), string(&format_signed_duration(high)));
    }
    if let Some((rate, by_ns)) = c.slow_links {
        let _ = writeln!(out, "slow_links = {}", dur(rate.mean_interval_ns));
        let _ = writeln!(out, "slow_link_for = {}", range(rate.for_ns));
        let _ = writeln!(out, "slow_link_by = {}", range(by_ns));
    }
    if let Some(jumps) = c.timer_jumps {
        let _ = writeln!(out, "timer_jumps = {}", dur(jumps.mean_interval_ns));
        let (low, high) = jumps.jump_ns;
        let _ = writeln!(out, "timer_jump = [{}, {}]", string(&format_signed_duration(low)), string(&format_signed_duration(high)));
    }
    if let Some(every_ns) = c.membership_ns {
        let _ = writeln!(out, "membership = {}", dur(every_ns));
    }
    if c.partition_clients > 0.0 {
        let _ = writeln!(out, "partition_clients = {}", float(c.partition_clients));
    }
    if c.leader_isolation_clients > 0.0 {
        let _ = writeln!(out, "leader_isolation_clients = {}", float(c.leader_isolation_clients));
    }
    if c.partition_replacements > 0.0 {
        let _ = writeln!(out, "partition_replacements = {}", float(c.partition_replacements));
    }
    let _ = writeln!(out, "drift = {}", float(c.drift));
    let _ = writeln!(out, "swarm = {}", c.swarm);
    if c.swarm_off > 0.0 {
        let _ = writeln!(out, "swarm_off = {}", float(c.swarm_off));
    }
    let _ = writeln!(out, "knobs = {}", c.knobs);
}

/// Text safe inside a TOML comment, which may hold no control characters
/// but tab.
fn comment(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\t' { ' ' } else { c }).collect()
}

/// A TOML basic string with every needed escape.
fn string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn dur(ns: u64) -> String {
    string(&format_duration(ns))
}

fn range((low, high): (u64, u64)) -> String {
    format!("[{}, {}]", dur(low), dur(high))
}

/// Shortest text that reads back as the same `f64`; TOML needs a `.0` or an
/// exponent to see a float, which `{:?}` always gives for finite values.
fn float(value: f64) -> String {
    format!("{value:?}")
}

fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.into_iter().map(string).collect();
    format!("[{}]", items.join(", "))
}

fn selector(sel: &Selector) -> String {
    string(&sel.to_string())
}

fn selectors(sels: &[Selector]) -> String {
    let items: Vec<String> = sels.iter().map(selector).collect();
    format!("[{}]", items.join(", "))
}
