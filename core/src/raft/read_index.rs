//! Linearizable reads without writing to the log: the read-index protocol
//! (thesis §6.4).
//!
//! 1. The leader waits until it has committed an entry of its term, so its
//!    commit index is at least that of any earlier leader.
//! 2. It records its commit index as the read index.
//! 3. It confirms it is still leader: a majority of voters must answer a
//!    heartbeat sent after the request (rounds ride on `read_ctx`).
//! 4. The host serves the read once its state machine has applied the read
//!    index.
//!
//! Reads still pending when leadership is lost fail, for the client to retry.
//! In lease mode (lease_read.rs, thesis §6.4.1) a read that arrives while the
//! leader's lease holds skips steps 3 and 4's wait for a round.

use std::collections::VecDeque;
use std::fmt::Debug;

use super::lease_read::{lease_length_ns, LeaseState};
use super::node::RaftNode;
use super::types::*;
use crate::types::LogIndex;

#[derive(Clone, Debug)]
pub(super) struct PendingRead {
    ctx: u64,
    /// Confirmed by any heartbeat round >= this one.
    round: u64,
    /// `None` until the leader has committed an entry of its term.
    index: Option<LogIndex>,
}

/// The leader's read-index bookkeeping (reset on each election).
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadState {
    /// Latest round started; every AppendEntries carries it as `read_ctx`, so
    /// any reply to a message sent after a request confirms that request.
    pub(super) round: u64,
    /// In request order, which is also round order.
    pub(super) pending: VecDeque<PendingRead>,
    /// Lease mode only (lease_read.rs).
    pub(super) lease: LeaseState,
}

impl ReadState {
    /// Step 2 for requests that arrived before the term's first commit.
    pub(super) fn on_term_committed(&mut self, commit_index: LogIndex) {
        assert!(commit_index >= 1, "a term's first commit is an entry");
        for read in self.pending.iter_mut().filter(|r| r.index.is_none()) {
            read.index = Some(commit_index);
        }
    }
}

impl<C: Clone + Debug + PartialEq, S: Clone + Debug> RaftNode<C, S> {
    pub(super) fn read_index_inner(&mut self, ctx: u64) -> Result<(), ProposeError> {
        if self.role != Role::Leader {
            return Err(ProposeError::NotLeader { leader_hint: self.leader_id });
        }
        if let Some(index) = self.lease_read_index() {
            self.ready.reads.push(ReadReady { ctx, index });
            return Ok(());
        }
        let round = self.start_read_round();
        let index = self.has_committed_in_term().then_some(self.log.commit_index);
        self.reads.pending.push_back(PendingRead { ctx, round, index });
        self.broadcast_heartbeat();
        self.advance_reads();
        Ok(())
    }

    /// Releases every pending read whose round a majority of voters has
    /// answered (the leader answers its own rounds at once), and in lease
    /// mode dates the lease from the latest such round.
    pub(super) fn advance_reads(&mut self) {
        let lease_mode = lease_length_ns(&self.config).is_some();
        if self.role != Role::Leader || (self.reads.pending.is_empty() && !lease_mode) {
            return;
        }
        let confirmed_round = self.confirmed_round();
        self.extend_lease(confirmed_round);
        while let Some(read) = self.reads.pending.front() {
            match read.index {
                Some(index) if read.round <= confirmed_round => {
                    // Step 2 took the commit index, which only grows: a read
                    // index is never beyond what this leader committed.
                    assert!(index <= self.log.commit_index, "read index {index} beyond the commit index");
                    self.ready.reads.push(ReadReady { ctx: read.ctx, index });
                    self.reads.pending.pop_front();
                }
                _ => break,
            }
        }
    }

    /// The latest round a majority of voters has answered.
    fn confirmed_round(&self) -> u64 {
        let mut acked: Vec<u64> = self
            .voters
            .iter()
            .map(|v| if *v == self.id() { self.reads.round } else { self.progress.get(v).map_or(0, |p| p.read_round_acked) })
            .collect();
        acked.sort_unstable_by(|a, b| b.cmp(a));
        let confirmed_round = acked.get(self.quorum() - 1).copied().unwrap_or(0);
        assert!(confirmed_round <= self.reads.round, "a round confirmed before it was started");
        confirmed_round
    }

    /// Leadership lost (or never held): every pending read fails.
    pub(super) fn fail_reads(&mut self) {
        let failed = std::mem::take(&mut self.reads.pending);
        self.ready.reads_failed.extend(failed.into_iter().map(|r| r.ctx));
    }
}
