//! What a leader knows about each follower's log (Raft Figure 2 `nextIndex`
//! and `matchIndex`), plus the flow-control state that decides when to send.
//!
//! Separate from replication so the send/ack rules read as a small state
//! machine: probe one message at a time until the follower's log position is
//! found, then stream (pipeline) entries, or ship a snapshot when the entries
//! it needs are compacted away.

use crate::types::LogIndex;

/// How the leader currently talks to one follower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProgressState {
    /// Position unknown: at most one AppendEntries in flight, resent at each
    /// heartbeat until answered.
    Probe,
    /// Position known: send entries as they come, optimistically advancing
    /// `next_index` (pipelining), bounded by an in-flight window.
    Replicate,
    /// The follower needs entries already compacted: a snapshot up to this
    /// index is in flight, sent at the leader's clock `sent_ns`. Heartbeats
    /// go on meanwhile; the snapshot itself is sent again only after half
    /// the shortest election timeout without an answer (it may be large: resending it at
    /// every heartbeat or read round floods the link and the follower).
    Snapshot { index: LogIndex, sent_ns: u64 },
}

#[derive(Clone, Debug)]
pub(crate) struct Progress {
    pub(crate) next_index: LogIndex,
    pub(crate) match_index: LogIndex,
    pub(crate) state: ProgressState,
    /// In Probe: a probe is outstanding; cleared by a reply or a heartbeat.
    pub(crate) probe_sent: bool,
    /// Leader's clock when it last heard from this follower in its term
    /// (check-quorum, thesis §6.2).
    pub(crate) last_heard_ns: u64,
    /// Highest read-index round this follower acknowledged (thesis §6.4).
    pub(crate) read_round_acked: u64,
}

impl Progress {
    pub(crate) fn new(next_index: LogIndex, now_ns: u64) -> Self {
        Progress { next_index, match_index: 0, state: ProgressState::Probe, probe_sent: false, last_heard_ns: now_ns, read_round_acked: 0 }
    }

    /// Records a successful append up to `index`. Returns whether it told the
    /// leader something new.
    pub(crate) fn on_ack(&mut self, index: LogIndex) -> bool {
        let advanced = index > self.match_index;
        if advanced {
            self.match_index = index;
        }
        match self.state {
            // The probe point is confirmed: stream from here on.
            ProgressState::Probe if self.match_index + 1 >= self.next_index => {
                self.state = ProgressState::Replicate;
            }
            ProgressState::Probe => self.probe_sent = false,
            ProgressState::Replicate => {}
            ProgressState::Snapshot { index: snap, .. } if self.match_index >= snap => {
                self.state = ProgressState::Probe;
                self.probe_sent = false;
                self.next_index = self.match_index + 1;
            }
            ProgressState::Snapshot { .. } => {}
        }
        self.next_index = self.next_index.max(self.match_index + 1);
        advanced
    }

    /// Records a rejection of an append whose previous entry was at
    /// `rejected_prev`, moving `next_index` back to `hint_next` (fast
    /// backtracking). Returns false if the rejection is stale (answers an
    /// older message than the one the leader is waiting for).
    pub(crate) fn on_reject(&mut self, rejected_prev: LogIndex, hint_next: LogIndex) -> bool {
        let stale = match self.state {
            ProgressState::Replicate => rejected_prev <= self.match_index,
            ProgressState::Probe => rejected_prev + 1 != self.next_index,
            ProgressState::Snapshot { .. } => true,
        };
        if stale {
            return false;
        }
        let low = self.match_index + 1;
        // Step back at least one entry, but never below what is known to match.
        self.next_index = hint_next.min(rejected_prev).max(low);
        self.state = ProgressState::Probe;
        self.probe_sent = false;
        true
    }

    /// Entries sent but not yet acknowledged (a bound on pipelining).
    pub(crate) fn in_flight(&self) -> u64 {
        self.next_index.saturating_sub(self.match_index + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A follower being sent a snapshot leaves Snapshot state once an ack
    /// reaches the snapshot (the snapshot response may be lost), and only
    /// then: below it, the leader would probe entries it has compacted.
    #[test]
    fn an_ack_at_the_snapshot_ends_snapshot_state_and_one_below_it_does_not() {
        let mut p = Progress::new(1, 0);
        p.state = ProgressState::Snapshot { index: 10, sent_ns: 0 };
        p.on_ack(9);
        assert_eq!(p.state, ProgressState::Snapshot { index: 10, sent_ns: 0 }, "an ack below the snapshot");
        p.on_ack(10);
        assert_eq!((p.state, p.next_index, p.probe_sent), (ProgressState::Probe, 11, false));
    }
}

/// The send/ack rules one call at a time: what each answer does to the
/// follower's position and to the flow-control window.
#[cfg(test)]
mod rule_tests {
    use super::*;

    fn replicating(match_index: LogIndex, next_index: LogIndex) -> Progress {
        let mut p = Progress::new(next_index, 0);
        p.match_index = match_index;
        p.state = ProgressState::Replicate;
        p
    }

    #[test]
    fn only_an_ack_past_the_match_tells_the_leader_something_new() {
        let mut p = replicating(3, 10);
        assert!(p.on_ack(5));
        assert!(!p.on_ack(5), "the same ack again");
        assert!(!p.on_ack(4), "an older ack");
        assert_eq!((p.match_index, p.next_index), (5, 10));
    }

    #[test]
    fn an_ack_at_the_probe_point_starts_streaming() {
        let mut p = Progress::new(6, 0);
        p.probe_sent = true;
        p.on_ack(4);
        assert_eq!((p.state, p.probe_sent, p.next_index), (ProgressState::Probe, false, 6), "below the probe point: probe again");
        p.on_ack(5);
        assert_eq!((p.state, p.match_index, p.next_index), (ProgressState::Replicate, 5, 6));
    }

    #[test]
    fn a_rejection_rewinds_to_the_hint_but_never_below_what_is_known_to_match() {
        let mut p = replicating(3, 10);
        assert!(p.on_reject(8, 1));
        assert_eq!((p.state, p.next_index, p.probe_sent), (ProgressState::Probe, 4, false));
        let mut p = replicating(3, 10);
        assert!(p.on_reject(8, 6));
        assert_eq!(p.next_index, 6, "the hint, above the match");
        let mut p = replicating(3, 10);
        assert!(p.on_reject(8, 9));
        assert_eq!(p.next_index, 8, "at least one entry back from the rejected one");
    }

    #[test]
    fn a_rejection_of_an_older_message_is_stale() {
        let mut p = replicating(3, 10);
        assert!(!p.on_reject(3, 1), "at or below the match");
        assert_eq!((p.state, p.next_index), (ProgressState::Replicate, 10));
        let mut p = Progress::new(6, 0);
        assert!(!p.on_reject(4, 1), "not the probe in flight");
        assert_eq!(p.next_index, 6);
    }

    #[test]
    fn in_flight_counts_the_entries_sent_past_the_match() {
        assert_eq!(replicating(3, 10).in_flight(), 6);
        assert_eq!(replicating(3, 4).in_flight(), 0);
    }
}
