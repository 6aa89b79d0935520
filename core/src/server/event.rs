//! Observations every server emits as it applies entries and decides things,
//! for the simulator's checkers (which stamp them with true time) and for
//! the trace.
//!
//! Events carry the log index of the entry that caused them, so checkers can
//! compare servers entry by entry ("attached keys removed at the same index
//! everywhere", "tokens grow with the grant index"). The service's own
//! facts are [`ServiceEvent`]s, defined once in `service/` and wrapped here
//! with that index. Nothing in the server depends on them.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::raft::{Entry, RaftEvent};
use crate::service::event_digest::hash_in_server_event;
use crate::service::{Command, ServiceEvent};
use crate::types::{ClientId, LeaseId, LogIndex, NodeId, Term};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerEvent {
    /// Raft's own observations (elections, step-downs, configurations).
    Raft(#[serde(serialize_with = "serialize_raft_event", deserialize_with = "deserialize_raft_event")] RaftEvent),
    /// An entry was applied; `fingerprint` is [`fingerprint`] of it, for the
    /// state-machine-safety checker; `state` is the state machine's
    /// [`applied_digest`](crate::service::StateMachine::applied_digest)
    /// after it, for the replica-divergence checker.
    Applied { index: LogIndex, term: Term, fingerprint: u64, state: u64 },
    /// The state machine was replaced by a snapshot as of `index` (from the
    /// leader, or from this server's disk on restart).
    SnapshotInstalled { index: LogIndex },
    /// The service did something in applying the entry at `index` (a
    /// `LeaseRevoked` of the planted bug `follower_expires_leases`: the last
    /// applied index when the server expired the lease on its own).
    Service { index: LogIndex, event: ServiceEvent },
    /// The leader answered a keep-alive live (the lease renewed for `ttl_ns`):
    /// from its own deadlines (`index: None`, `leader-monotonic`), or by
    /// applying the logged renewal at `index` (the other strategies).
    KeepAliveAnswered { lease: LeaseId, client: ClientId, seq: u64, ttl_ns: u64, index: Option<LogIndex> },
    /// The leader decided a lease expired and proposed `Expire`.
    ExpiryProposed { lease: LeaseId },
    /// The leader proposed a checkpoint of `leases` remaining TTLs.
    CheckpointProposed { leases: usize },
}

/// By hand, for the simulator's trace digest: the bytes derived `Hash` fed
/// when the service's events were inlined here as nine variants with an
/// `index` field (`event_digest` says why that must not change), so every
/// recorded run keeps its digest.
impl Hash for ServerEvent {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            ServerEvent::Raft(event) => {
                state.write_isize(0);
                event.hash(state);
            }
            ServerEvent::Applied { index, term, fingerprint, state: applied } => {
                state.write_isize(1);
                (index, term, fingerprint, applied).hash(state);
            }
            ServerEvent::SnapshotInstalled { index } => {
                state.write_isize(2);
                index.hash(state);
            }
            ServerEvent::Service { index, event } => hash_in_server_event(event, *index, state),
            ServerEvent::KeepAliveAnswered { lease, client, seq, ttl_ns, index } => {
                state.write_isize(12);
                (lease, client, seq, ttl_ns, index).hash(state);
            }
            ServerEvent::ExpiryProposed { lease } => {
                state.write_isize(13);
                lease.hash(state);
            }
            ServerEvent::CheckpointProposed { leases } => {
                state.write_isize(14);
                leases.hash(state);
            }
        }
    }
}

/// A stable digest of an entry: XXH3 (64 bit) over its fields as `Hash`
/// feeds them (no text is formatted: this runs for every applied entry).
/// Stable for one build, which is what comparing servers within one run
/// needs.
pub fn fingerprint(entry: &Entry<Command>) -> u64 {
    let mut hasher = crate::byte_hash::ByteHasher::new();
    entry.hash(&mut hasher);
    hasher.finish()
}

/// Raft's event types stay free of serde (Raft is generic and knows nothing
/// of traces); this mirror gives them a stable serialized form, both ways
/// (a long run spills its observations to disk and reads them back). The
/// conversions are exhaustive: a new `RaftEvent` variant fails this build
/// until it has a serialized form.
#[derive(Serialize, Deserialize)]
enum RaftEventRepr {
    BecameLeader { term: Term },
    SteppedDown { term: Term },
    ConfigChanged { voters: BTreeSet<NodeId> },
}

fn serialize_raft_event<S: Serializer>(event: &RaftEvent, serializer: S) -> Result<S::Ok, S::Error> {
    let repr = match event {
        RaftEvent::BecameLeader { term } => RaftEventRepr::BecameLeader { term: *term },
        RaftEvent::SteppedDown { term } => RaftEventRepr::SteppedDown { term: *term },
        RaftEvent::ConfigChanged { voters } => RaftEventRepr::ConfigChanged { voters: voters.clone() },
    };
    repr.serialize(serializer)
}

fn deserialize_raft_event<'de, D: Deserializer<'de>>(deserializer: D) -> Result<RaftEvent, D::Error> {
    Ok(match RaftEventRepr::deserialize(deserializer)? {
        RaftEventRepr::BecameLeader { term } => RaftEvent::BecameLeader { term },
        RaftEventRepr::SteppedDown { term } => RaftEvent::SteppedDown { term },
        RaftEventRepr::ConfigChanged { voters } => RaftEvent::ConfigChanged { voters },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::Payload;

    /// The simulator's log-matching, state-machine-safety and durability
    /// checkers compare servers by this value; a constant would make them
    /// blind to two servers applying different entries at one index.
    #[test]
    fn entries_that_differ_in_term_index_or_payload_get_different_fingerprints() {
        let put = |v: &str| Command::Request {
            req: crate::service::ClientRequest {
                client: 1,
                seq: 1,
                op: crate::service::Op::Put { key: "k".into(), value: v.into(), lease: None },
            },
            stamp_wall_ns: 0,
        };
        let entry = |term, index, payload| Entry { term, index, payload };
        let base = fingerprint(&entry(2, 5, Payload::Command(put("a"))));
        assert_eq!(base, fingerprint(&entry(2, 5, Payload::Command(put("a")))), "stable");
        for other in [
            entry(2, 5, Payload::Command(put("b"))),
            entry(3, 5, Payload::Command(put("a"))),
            entry(2, 6, Payload::Command(put("a"))),
            entry(2, 5, Payload::Noop),
        ] {
            assert_ne!(fingerprint(&other), base, "{other:?}");
        }
    }
}
