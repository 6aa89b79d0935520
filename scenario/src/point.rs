//! Fault points: instants inside a process's own step where a crash, a
//! pause or a clock jump does the most damage — FoundationDB's BUGGIFY and
//! TigerBeetle's crash points, aimed rather than random.
//!
//! A crash at a random instant almost never lands in the few hundred
//! microseconds between a vote reply leaving and the vote reaching the disk,
//! or between a write and its sync; a fault with `when = "after-send:vote-reply"`
//! lands there every time. The process the fault's selector names is
//! matched when it reaches the point (`leader` is whoever leads then), so a
//! fault point reads as a sentence: "crash the leader right after it sends
//! an append".

use std::fmt;

/// A kind of message, as fault points name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    VoteRequest,
    VoteReply,
    Append,
    AppendReply,
    Snapshot,
    SnapshotReply,
    /// A server's answer to a client.
    ClientReply,
    /// A client's request to a server.
    Request,
}

impl MessageKind {
    pub const ALL: [MessageKind; 8] = [
        MessageKind::VoteRequest,
        MessageKind::VoteReply,
        MessageKind::Append,
        MessageKind::AppendReply,
        MessageKind::Snapshot,
        MessageKind::SnapshotReply,
        MessageKind::ClientReply,
        MessageKind::Request,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MessageKind::VoteRequest => "vote-request",
            MessageKind::VoteReply => "vote-reply",
            MessageKind::Append => "append",
            MessageKind::AppendReply => "append-reply",
            MessageKind::Snapshot => "snapshot",
            MessageKind::SnapshotReply => "snapshot-reply",
            MessageKind::ClientReply => "client-reply",
            MessageKind::Request => "request",
        }
    }
}

/// Where in a step a fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    /// Right after the process sent a message of this kind (the rest of the
    /// step's messages not yet sent).
    AfterSend(MessageKind),
    /// A server wrote its step's state but has not synced it: a crash here
    /// loses the write.
    AfterWrite,
    /// A server's write is synced; none of the step's messages is sent yet.
    AfterSync,
    /// A server wrote a snapshot it received (or took), not yet synced.
    SnapshotInstall,
    /// A server wrote a configuration entry to its log, not yet synced.
    MembershipChange,
    /// The process's timer is due (a deadline is being decided): the fault
    /// acts before the process reads its clock for the step.
    Timer,
}

impl Point {
    /// Every point, in the order `--help` and error messages list them.
    pub fn all() -> Vec<Point> {
        let mut all: Vec<Point> = MessageKind::ALL.into_iter().map(Point::AfterSend).collect();
        all.extend([Point::AfterWrite, Point::AfterSync, Point::SnapshotInstall, Point::MembershipChange, Point::Timer]);
        all
    }

    /// Only servers write to disk.
    pub fn servers_only(self) -> bool {
        matches!(self, Point::AfterWrite | Point::AfterSync | Point::SnapshotInstall | Point::MembershipChange)
            || matches!(
                self,
                Point::AfterSend(
                    MessageKind::VoteRequest
                        | MessageKind::VoteReply
                        | MessageKind::Append
                        | MessageKind::AppendReply
                        | MessageKind::Snapshot
                        | MessageKind::SnapshotReply
                        | MessageKind::ClientReply
                )
            )
    }

    pub fn parse(text: &str) -> Result<Point, String> {
        Point::all().into_iter().find(|p| p.to_string() == text).ok_or_else(|| format!("unknown fault point `{text}`"))
    }

    /// The valid spellings, for a `fix:` line.
    pub fn spellings() -> String {
        Point::all().iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Point::AfterSend(kind) => write!(f, "after-send:{}", kind.name()),
            Point::AfterWrite => f.write_str("after-write"),
            Point::AfterSync => f.write_str("after-sync"),
            Point::SnapshotInstall => f.write_str("snapshot-install"),
            Point::MembershipChange => f.write_str("membership-change"),
            Point::Timer => f.write_str("timer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_reads_back_as_written() {
        for p in Point::all() {
            assert_eq!(Point::parse(&p.to_string()), Ok(p));
        }
        assert!(Point::parse("after-send:vote").is_err());
    }
}
