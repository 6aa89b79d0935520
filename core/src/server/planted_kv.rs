//! The two planted bugs of the KV data model that live in the server (not
//! the state machine): both break what watchers and txn readers rely on,
//! and the simulator's `watch-delivery` and `linearizable` checkers must
//! catch them (`leasesim hunt`). Kept apart so that the correct paths in
//! `process` and `requests` read as they are without them.
//!
//! - `watch_skips_event_on_leader_change`: the change stream a host fans
//!   out to its watchers loses the first change applied in a new term.
//! - `txn_in_two_entries`: a txn with a multi-operation branch is proposed
//!   as two entries, so it is not atomic.

use crate::server::Server;
use crate::service::txn::{TxnOp, TxnRequest};
use crate::service::{ClientRequest, Command, Op};
use crate::types::{ClientId, Term};

/// Client ids at and above this one name the tail entry of a split txn
/// (planted bug `txn_in_two_entries`): its own session, never answered.
pub(crate) const SPLIT_TAIL_CLIENT: ClientId = 1 << 62;

impl Server {
    /// Hands the host the key changes the entry at `index` made (the
    /// change stream watchers are served from).
    pub(super) fn forward_changes(&mut self, index: crate::types::LogIndex) {
        let first = self.output.changes.len();
        self.output.changes.extend(self.sm.kv().changes_at(index).cloned());
        if !self.config.bugs.watch_skips_event_on_leader_change || self.output.changes.len() == first {
            return;
        }
        let term: Term = self.raft.term();
        let before = std::mem::replace(&mut self.changes_term, term);
        if before != 0 && before != term {
            self.output.changes.remove(first);
        }
    }

    /// Whether a reply to `client` is to be dropped: the tail of a split
    /// txn has no one waiting for it.
    pub(super) fn is_split_tail(&self, client: ClientId) -> bool {
        self.config.bugs.txn_in_two_entries && client >= SPLIT_TAIL_CLIENT
    }

    /// Planted bug `txn_in_two_entries`: proposes `req`'s txn as two
    /// entries when the branch the leader predicts from its own applied
    /// state writes more than once (a read-only branch is left whole).
    /// Returns false (nothing proposed) otherwise.
    pub(super) fn propose_split_txn(&mut self, req: &ClientRequest) -> bool {
        let Op::Txn(txn) = &req.op else { return false };
        if !self.config.bugs.txn_in_two_entries || req.client >= SPLIT_TAIL_CLIENT {
            return false;
        }
        let predicted = txn.compares.iter().all(|c| c.holds(self.sm.kv()));
        let branch = if predicted { &txn.success } else { &txn.failure };
        if branch.iter().filter(|op| !matches!(op, TxnOp::Range(_))).count() < 2 {
            return false;
        }
        let head = TxnRequest { compares: txn.compares.clone(), success: first(&txn.success), failure: first(&txn.failure) };
        let tail = TxnRequest { compares: Vec::new(), success: branch[1..].to_vec(), failure: Vec::new() };
        let stamp_wall_ns = self.clocks.wall_ns;
        let head_req = ClientRequest { op: Op::Txn(head), ..req.clone() };
        let tail_req = ClientRequest { client: SPLIT_TAIL_CLIENT + req.client, seq: req.seq, op: Op::Txn(tail) };
        let (term, mono_ns) = (self.raft.term(), self.clocks.mono_ns);
        match self.raft.propose(mono_ns, Command::Request { req: head_req, stamp_wall_ns }) {
            Ok(index) => {
                self.proposed.insert((req.client, req.seq), (term, index));
                // The tail may be refused or lost; the head answers alone.
                let _ = self.raft.propose(mono_ns, Command::Request { req: tail_req, stamp_wall_ns });
            }
            Err(error) => {
                let body = self.refused(error);
                self.reply_to(req, body);
            }
        }
        true
    }
}

fn first(ops: &[TxnOp]) -> Vec<TxnOp> {
    ops.iter().take(1).cloned().collect()
}
