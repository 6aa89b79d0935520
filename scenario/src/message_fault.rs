//! `messages = { kind = "vote-reply", delay = "400ms" }`: a fault aimed at
//! one kind of message rather than at a link or a process.
//!
//! Random delays and losses hit every message alike, so a vote reply that
//! lands after its candidate has moved to the next term is rare: the same
//! delay slows the heartbeats and appends around it, and the run's timing
//! shifts with it. Aimed at one kind, a delay holds back exactly the
//! messages whose late arrival tests a rule about terms and leases (a vote
//! counted across terms, an append reply acknowledging an older log, a
//! keep-alive answer read after the lease moved on) while everything else
//! flows. The kinds are finer than fault points' (`scenario::point`): pre-
//! votes apart from votes, keep-alive and grant answers apart from other
//! client replies, and the data store's and watch streams' messages.

use std::fmt;

use super::error::Diags;
use super::fields::Val;

/// A kind of message that a `messages` fault aims at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WireKind {
    VoteRequest,
    VoteReply,
    PreVoteRequest,
    PreVoteReply,
    Append,
    AppendReply,
    Snapshot,
    SnapshotReply,
    /// A leader's hand-over order to its successor (thesis §3.10).
    TimeoutNow,
    /// Any client request to a server.
    Request,
    /// A client's keep-alive request.
    KeepAlive,
    /// Any server answer to a client.
    ClientReply,
    /// The answer to a keep-alive (a renewal or a refusal).
    KeepAliveReply,
    /// The answer to a lease grant.
    GrantReply,
    /// A fenced write to the data store, and its answer.
    StoreWrite,
    StoreReply,
    /// A server's message on a watch stream.
    WatchReply,
}

impl WireKind {
    pub const ALL: [WireKind; 17] = [
        WireKind::VoteRequest,
        WireKind::VoteReply,
        WireKind::PreVoteRequest,
        WireKind::PreVoteReply,
        WireKind::Append,
        WireKind::AppendReply,
        WireKind::Snapshot,
        WireKind::SnapshotReply,
        WireKind::TimeoutNow,
        WireKind::Request,
        WireKind::KeepAlive,
        WireKind::ClientReply,
        WireKind::KeepAliveReply,
        WireKind::GrantReply,
        WireKind::StoreWrite,
        WireKind::StoreReply,
        WireKind::WatchReply,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WireKind::VoteRequest => "vote-request",
            WireKind::VoteReply => "vote-reply",
            WireKind::PreVoteRequest => "pre-vote-request",
            WireKind::PreVoteReply => "pre-vote-reply",
            WireKind::Append => "append",
            WireKind::AppendReply => "append-reply",
            WireKind::Snapshot => "snapshot",
            WireKind::SnapshotReply => "snapshot-reply",
            WireKind::TimeoutNow => "timeout-now",
            WireKind::Request => "request",
            WireKind::KeepAlive => "keepalive",
            WireKind::ClientReply => "client-reply",
            WireKind::KeepAliveReply => "keepalive-reply",
            WireKind::GrantReply => "grant-reply",
            WireKind::StoreWrite => "store-write",
            WireKind::StoreReply => "store-reply",
            WireKind::WatchReply => "watch-reply",
        }
    }

    pub fn parse(text: &str) -> Option<WireKind> {
        WireKind::ALL.into_iter().find(|k| k.name() == text)
    }

    /// The valid spellings, for a `fix:` line.
    pub fn spellings() -> String {
        WireKind::ALL.map(WireKind::name).join(", ")
    }
}

impl fmt::Display for WireKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens to each message of the kind while the fault lasts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MessageEffect {
    /// Arrives exactly this much later than its drawn latency: every such
    /// message lands after what was sent with it.
    Delay(u64),
    /// Arrives up to this much later, drawn per message: messages of the
    /// kind overtake each other.
    Reorder(u64),
    /// Lost with this probability.
    Drop(f64),
    /// Arrives, and a copy arrives this much later again.
    Duplicate(u64),
}

impl MessageEffect {
    /// The effect's key in the file.
    pub fn key(self) -> &'static str {
        match self {
            MessageEffect::Delay(_) => "delay",
            MessageEffect::Reorder(_) => "reorder",
            MessageEffect::Drop(_) => "drop",
            MessageEffect::Duplicate(_) => "duplicate",
        }
    }
}

/// A `messages` fault: every message of `kind`, on every link, suffers
/// `effect` while the fault lasts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageFault {
    pub kind: WireKind,
    pub effect: MessageEffect,
}

const EXAMPLE: &str = "{ kind = \"vote-reply\", delay = \"400ms\" }";
const EFFECTS: [&str; 4] = ["delay", "reorder", "drop", "duplicate"];

/// Reads `messages = { kind = …, <one effect> }`.
pub(crate) fn messages(v: &Val<'_>, d: &mut Diags) -> Option<MessageFault> {
    let mut t = v.table(d, "`messages`", &format!("write e.g. `messages = {EXAMPLE}`"))?;
    let kind = t.require("kind", "\"vote-reply\"", d, |v, d| {
        let text = v.string(d, "\"vote-reply\"")?;
        let kind = WireKind::parse(text);
        if kind.is_none() {
            let near = super::suggest::closest(text, WireKind::ALL.map(WireKind::name));
            let fix = match near {
                Some(near) => format!("did you mean `{near}`? message kinds: {}", WireKind::spellings()),
                None => format!("message kinds: {}", WireKind::spellings()),
            };
            v.error(d, format!("unknown message kind `{text}`"), fix);
        }
        kind
    });
    let present: Vec<&str> = t.keys().filter(|key| EFFECTS.contains(key)).collect();
    let effect = match present.as_slice() {
        [] => {
            let fix = format!("add one of {}, e.g. `messages = {EXAMPLE}`", EFFECTS.join(", "));
            d.error(v.span.clone(), "`messages` says which messages but not what happens to them", fix);
            None
        }
        [key] => t.take(key).and_then(|v| effect(&v, d)),
        [first, second, ..] => {
            if let Some(v) = t.take(second) {
                let message = format!("`messages` has two effects, `{first}` and `{second}`");
                v.error(d, message, "a fault does one thing: split it into one [[fault]] per effect (they may share `at`)");
            }
            for key in &present {
                t.take(key);
            }
            None
        }
    };
    t.finish(d, &["kind", "delay", "reorder", "drop", "duplicate"]);
    Some(MessageFault { kind: kind?, effect: effect? })
}

fn effect(v: &Val<'_>, d: &mut Diags) -> Option<MessageEffect> {
    match v.key {
        "delay" => v.positive_duration(d).map(MessageEffect::Delay),
        "reorder" => v.positive_duration(d).map(MessageEffect::Reorder),
        "duplicate" => v.positive_duration(d).map(MessageEffect::Duplicate),
        _ => v.probability(d).map(MessageEffect::Drop),
    }
}
