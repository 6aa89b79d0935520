//! Faults aimed at one kind of peer message (a scenario's `messages = {
//! kind = "vote-reply", delay = "400ms" }`), played by the link proxies.
//!
//! A peer link carries length-prefixed frames, each one Raft message, a
//! forwarded client request or its answer, or the opening hello
//! (`frame.rs`). To aim at vote replies the proxy must know which frame is
//! one: [`classify`] reads the few leading bytes bincode writes for the
//! frame's variant and the Raft message's variant (and `pre_vote`, which
//! splits votes from pre-votes), without decoding the rest, so that a
//! snapshot or a long append costs nothing to look at. The round-trip test
//! below breaks if `PeerFrame` or `Message` change shape.
//!
//! The kinds and effects mirror the simulator's (`scenario::message_fault`,
//! `sim/src/world/network.rs`): delay (every such frame exactly this much
//! later, so it lands after what was sent with it), reorder (up to this
//! much later, drawn per frame, so frames of the kind overtake each other
//! and the frames behind them), drop (with a probability) and duplicate (a
//! copy arrives this much later again). This crate does not depend on the
//! scenario crate: a runner maps its kinds here by name
//! ([`FrameKind::parse`]); the kinds that travel between clients and
//! members have no frame and are not in the list.

use serde::{Deserialize, Serialize};

/// The kinds of peer frame a fault can aim at, named as the scenario
/// format names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameKind {
    VoteRequest,
    VoteReply,
    PreVoteRequest,
    PreVoteReply,
    Append,
    AppendReply,
    Snapshot,
    SnapshotReply,
    TimeoutNow,
}

impl FrameKind {
    pub const ALL: [FrameKind; 9] = [
        FrameKind::VoteRequest,
        FrameKind::VoteReply,
        FrameKind::PreVoteRequest,
        FrameKind::PreVoteReply,
        FrameKind::Append,
        FrameKind::AppendReply,
        FrameKind::Snapshot,
        FrameKind::SnapshotReply,
        FrameKind::TimeoutNow,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FrameKind::VoteRequest => "vote-request",
            FrameKind::VoteReply => "vote-reply",
            FrameKind::PreVoteRequest => "pre-vote-request",
            FrameKind::PreVoteReply => "pre-vote-reply",
            FrameKind::Append => "append",
            FrameKind::AppendReply => "append-reply",
            FrameKind::Snapshot => "snapshot",
            FrameKind::SnapshotReply => "snapshot-reply",
            FrameKind::TimeoutNow => "timeout-now",
        }
    }

    /// The peer kind of this name (`None`: not a peer message's kind).
    pub fn parse(name: &str) -> Option<FrameKind> {
        FrameKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// What happens to each frame of the kind while the fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameEffect {
    DelayMs(u64),
    ReorderMs(u64),
    /// Lost with this probability, in [0, 1].
    Drop(f64),
    DuplicateMs(u64),
}

/// One aimed fault on a link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AimedFault {
    pub kind: FrameKind,
    pub effect: FrameEffect,
}

/// What the aimed faults in force do to one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aim {
    pub dropped: bool,
    /// Held this much longer than the link's own delay.
    pub extra_ms: u64,
    /// A copy follows this much later than the frame.
    pub again_ms: Option<u64>,
}

/// Each matching fault in turn, as the simulator does: a drop ends it,
/// delays and reorderings add up, the longest duplicate gap wins.
/// `draw(n)` draws uniformly in `[0, n]`; `chance(p)` is true with
/// probability `p`.
pub fn aim(faults: &[AimedFault], kind: FrameKind, mut draw: impl FnMut(u64) -> u64, mut chance: impl FnMut(f64) -> bool) -> Aim {
    let mut aim = Aim::default();
    for fault in faults.iter().filter(|f| f.kind == kind) {
        match fault.effect {
            FrameEffect::Drop(p) => {
                if chance(p) {
                    aim.dropped = true;
                    return aim;
                }
            }
            FrameEffect::DelayMs(ms) => aim.extra_ms += ms,
            FrameEffect::ReorderMs(ms) => aim.extra_ms += draw(ms),
            FrameEffect::DuplicateMs(ms) => aim.again_ms = Some(aim.again_ms.unwrap_or(0).max(ms)),
        }
    }
    aim
}

/// bincode's tag of `PeerFrame::Raft` and of each `Message` variant, in
/// declaration order (fixed-width little-endian u32).
const RAFT_FRAME_TAG: u32 = 1;

/// The kind of a Raft frame's message, from the frame's body (without its
/// length prefix); `None` for every other frame (hello, forwarded
/// requests and answers, join calls) and for a body too short to tell.
pub fn classify(body: &[u8]) -> Option<FrameKind> {
    let tag = |at: usize| body.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    if tag(0)? != RAFT_FRAME_TAG {
        return None;
    }
    // After the two tags: the term (u64), then `pre_vote` for votes.
    let pre_vote = || body.get(16).map(|b| *b == 1);
    Some(match tag(4)? {
        0 if pre_vote()? => FrameKind::PreVoteRequest,
        0 => FrameKind::VoteRequest,
        1 if pre_vote()? => FrameKind::PreVoteReply,
        1 => FrameKind::VoteReply,
        2 => FrameKind::Append,
        3 => FrameKind::AppendReply,
        4 => FrameKind::Snapshot,
        5 => FrameKind::SnapshotReply,
        6 => FrameKind::TimeoutNow,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PeerFrame;
    use leasesim_core::raft::Message;
    use leasesim_core::server::PeerMessage;

    fn body(frame: &PeerFrame) -> Vec<u8> {
        bincode::serialize(frame).expect("serialize")
    }

    #[test]
    fn every_raft_message_is_classified_from_its_encoding() {
        let vote = |pre_vote| Message::RequestVote { term: 7, pre_vote, last_log_index: 3, last_log_term: 2, transfer: false };
        let reply = |pre_vote| Message::VoteResponse { term: 7, pre_vote, granted: true };
        let cases: Vec<(PeerMessage, FrameKind)> = vec![
            (vote(false), FrameKind::VoteRequest),
            (vote(true), FrameKind::PreVoteRequest),
            (reply(false), FrameKind::VoteReply),
            (reply(true), FrameKind::PreVoteReply),
            (
                Message::AppendEntries { term: 1, prev_log_index: 0, prev_log_term: 0, entries: vec![], leader_commit: 0, read_ctx: 0 },
                FrameKind::Append,
            ),
            (
                Message::AppendResponse { term: 1, success: true, match_index: 4, conflict_index: 0, conflict_term: None, read_ctx: 0 },
                FrameKind::AppendReply,
            ),
            (Message::InstallSnapshotResponse { term: 1, last_index: 9 }, FrameKind::SnapshotReply),
            (Message::TimeoutNow { term: 1 }, FrameKind::TimeoutNow),
        ];
        for (message, kind) in cases {
            assert_eq!(classify(&body(&PeerFrame::Raft(message.clone()))), Some(kind), "{message:?}");
        }
        let hello =
            PeerFrame::Hello { from: 1, name: "s1".into(), peer_url: String::new(), client_url: String::new(), lock_url: String::new() };
        assert_eq!(classify(&body(&hello)), None, "a hello is no Raft message");
        assert_eq!(classify(&[1, 0, 0]), None, "too short to tell");
    }

    #[test]
    fn aims_add_delays_and_a_drop_ends_them() {
        let faults = [
            AimedFault { kind: FrameKind::VoteReply, effect: FrameEffect::DelayMs(100) },
            AimedFault { kind: FrameKind::VoteReply, effect: FrameEffect::ReorderMs(50) },
            AimedFault { kind: FrameKind::VoteReply, effect: FrameEffect::DuplicateMs(30) },
            AimedFault { kind: FrameKind::AppendReply, effect: FrameEffect::Drop(1.0) },
        ];
        let got = aim(&faults, FrameKind::VoteReply, |n| n / 2, |_| true);
        assert_eq!(got, Aim { dropped: false, extra_ms: 125, again_ms: Some(30) });
        assert!(aim(&faults, FrameKind::AppendReply, |n| n, |p| p >= 1.0).dropped);
        assert_eq!(aim(&faults, FrameKind::Append, |n| n, |_| true), Aim::default(), "other kinds pass untouched");
        for kind in FrameKind::ALL {
            assert_eq!(FrameKind::parse(kind.name()), Some(kind));
        }
        assert_eq!(FrameKind::parse("keepalive-reply"), None, "a client's kind has no frame");
    }
}
