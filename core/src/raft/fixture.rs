//! Test fixtures for the handler-level tests beside each Raft handler: a
//! node of a three-voter cluster brought to leadership through its public
//! inputs alone (a timeout, then one granted pre-vote and one granted
//! vote), its Ready drained, so that a test can feed it exactly one more
//! input and assert exactly what comes out.

use std::collections::BTreeSet;

use super::node::RaftNode;
use super::types::*;
use crate::types::{LogIndex, Term};

/// The fixtures' node: commands are numbers, snapshots carry nothing.
pub(super) type Node = RaftNode<u64, ()>;

/// The fixture clock when the election timeout fires (past the largest
/// randomized election timeout, 300 ms by default).
pub(super) const ELECTED_AT_NS: u64 = 1_000_000_000;

/// Node 1's settings in a cluster of voters {1, 2, 3}.
pub(super) fn config() -> RaftConfig {
    RaftConfig::new(1, BTreeSet::from([1, 2, 3]))
}

/// An entry of `term` at `index` holding command `index`.
pub(super) fn entry(index: LogIndex, term: Term) -> Entry<u64> {
    Entry { term, index, payload: Payload::Command(index) }
}

/// Node 1 restored from a disk holding `entries` (and a term of the last
/// one's), then elected by node 2's votes: it leads the next term with its
/// Noop appended, and its Ready is drained.
pub(super) fn leader_with(config: RaftConfig, entries: Vec<Entry<u64>>) -> Node {
    let term = entries.last().map_or(0, |e| e.term);
    let disk = Persisted { hard_state: HardState { term, voted_for: None }, snapshot: None, entries };
    let mut node = Node::restore(config, disk, 7, 0);
    node.tick(ELECTED_AT_NS);
    node.step(ELECTED_AT_NS, 2, Message::VoteResponse { term: term + 1, pre_vote: true, granted: true });
    node.step(ELECTED_AT_NS, 2, Message::VoteResponse { term: term + 1, pre_vote: false, granted: true });
    assert_eq!((node.role(), node.term()), (Role::Leader, term + 1), "the fixture elects node 1");
    node.take_ready();
    node
}

/// The AppendEntries messages of a Ready, as (to, prev_log_index,
/// prev_log_term, indexes of the entries carried).
pub(super) fn appends(ready: &Ready<u64, ()>) -> Vec<(u64, LogIndex, Term, Vec<LogIndex>)> {
    ready
        .messages
        .iter()
        .filter_map(|(to, msg)| match msg {
            Message::AppendEntries { prev_log_index, prev_log_term, entries, .. } => {
                Some((*to, *prev_log_index, *prev_log_term, entries.iter().map(|e| e.index).collect()))
            }
            _ => None,
        })
        .collect()
}
