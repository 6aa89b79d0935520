//! Which `messages` fault kinds (`scenario::WireKind`) a message on the
//! simulated wire belongs to. A message may belong to several: a keep-alive
//! answer is also a client reply, so a fault on either catches it.

use leasesim_core::raft::Message;
use leasesim_core::service::{Op, Response};
use leasesim_scenario::WireKind;

use super::wire::Wire;

/// Whether `wire` is a message of `kind`.
pub fn is_of_kind(wire: &Wire, kind: WireKind) -> bool {
    match (kind, wire) {
        (WireKind::VoteRequest, Wire::Peer(Message::RequestVote { pre_vote, .. })) => !pre_vote,
        (WireKind::PreVoteRequest, Wire::Peer(Message::RequestVote { pre_vote, .. })) => *pre_vote,
        (WireKind::VoteReply, Wire::Peer(Message::VoteResponse { pre_vote, .. })) => !pre_vote,
        (WireKind::PreVoteReply, Wire::Peer(Message::VoteResponse { pre_vote, .. })) => *pre_vote,
        (WireKind::Append, Wire::Peer(Message::AppendEntries { .. }))
        | (WireKind::AppendReply, Wire::Peer(Message::AppendResponse { .. }))
        | (WireKind::Snapshot, Wire::Peer(Message::InstallSnapshot { .. }))
        | (WireKind::SnapshotReply, Wire::Peer(Message::InstallSnapshotResponse { .. }))
        | (WireKind::TimeoutNow, Wire::Peer(Message::TimeoutNow { .. }))
        | (WireKind::Request, Wire::Request(_))
        | (WireKind::ClientReply, Wire::Response(_))
        | (WireKind::StoreWrite, Wire::StoreWrite(_) | Wire::TaskWrite(_))
        | (WireKind::StoreReply, Wire::StoreReply(_) | Wire::TaskReply(_))
        | (WireKind::WatchReply, Wire::WatchReply(_)) => true,
        (WireKind::KeepAlive, Wire::Request(r)) => matches!(r.op, Op::LeaseKeepAlive { .. }),
        (WireKind::KeepAliveReply, Wire::Response(r)) => matches!(r.body, Response::KeepAlive { .. }),
        (WireKind::GrantReply, Wire::Response(r)) => matches!(r.body, Response::LeaseGranted { .. }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::service::{ClientRequest, ClientResponse};

    #[test]
    fn votes_and_pre_votes_are_told_apart_and_a_keepalive_answer_is_a_client_reply() {
        let vote = Wire::Peer(Message::VoteResponse { term: 3, pre_vote: false, granted: true });
        let pre = Wire::Peer(Message::VoteResponse { term: 3, pre_vote: true, granted: true });
        assert!(is_of_kind(&vote, WireKind::VoteReply) && !is_of_kind(&vote, WireKind::PreVoteReply));
        assert!(is_of_kind(&pre, WireKind::PreVoteReply) && !is_of_kind(&pre, WireKind::VoteReply));
        let answer = Wire::Response(ClientResponse { client: 1, seq: 2, from: 1, body: Response::KeepAlive { lease: 4, ttl_ns: 5 } });
        let kinds: Vec<WireKind> = WireKind::ALL.into_iter().filter(|k| is_of_kind(&answer, *k)).collect();
        assert_eq!(kinds, vec![WireKind::ClientReply, WireKind::KeepAliveReply]);
        let renew = Wire::Request(ClientRequest { client: 1, seq: 3, op: Op::LeaseKeepAlive { lease: 4 } });
        let kinds: Vec<WireKind> = WireKind::ALL.into_iter().filter(|k| is_of_kind(&renew, *k)).collect();
        assert_eq!(kinds, vec![WireKind::Request, WireKind::KeepAlive]);
    }
}
