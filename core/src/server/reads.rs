//! Requests answered without writing the log, waiting for the read index
//! (thesis §6.4): first for the leader to confirm its leadership, then for
//! the state machine to apply up to the confirmed index.
//!
//! Besides `Get`, `LeaseTimeToLive` and `LeaseList`, `leader-monotonic`
//! keep-alives go this way: a leader must not answer a keep-alive live after
//! a newer leader revoked the lease, and confirming leadership after the
//! request arrived is what rules that out.

use std::collections::BTreeMap;

use crate::service::ClientRequest;
use crate::types::LogIndex;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingReads {
    next_ctx: u64,
    /// Waiting for Raft to confirm, by context.
    unconfirmed: BTreeMap<u64, ClientRequest>,
    /// Confirmed, waiting for the apply of the read index, in (index, ctx)
    /// order.
    confirmed: BTreeMap<(LogIndex, u64), ClientRequest>,
}

impl PendingReads {
    /// Registers a read; returns the context to pass to `read_index`.
    pub fn start(&mut self, req: ClientRequest) -> u64 {
        self.next_ctx += 1;
        self.unconfirmed.insert(self.next_ctx, req);
        self.next_ctx
    }

    /// Raft refused the read at once: forget it and hand it back.
    pub fn abandon(&mut self, ctx: u64) -> Option<ClientRequest> {
        self.unconfirmed.remove(&ctx)
    }

    pub fn confirm(&mut self, ctx: u64, index: LogIndex) {
        if let Some(req) = self.unconfirmed.remove(&ctx) {
            self.confirmed.insert((index, ctx), req);
        }
    }

    /// Raft failed the read (leadership lost).
    pub fn fail(&mut self, ctx: u64) -> Option<ClientRequest> {
        self.unconfirmed.remove(&ctx)
    }

    /// Confirmed reads whose index is applied, in order.
    pub fn take_servable(&mut self, applied: LogIndex) -> Vec<ClientRequest> {
        let mut out = Vec::new();
        while let Some(entry) = self.confirmed.first_entry() {
            if entry.key().0 > applied {
                break;
            }
            out.push(entry.remove());
        }
        out
    }

    /// Removes confirmed reads matching `pred` (those that need leadership
    /// when served, on step-down).
    pub fn take_confirmed_where(&mut self, pred: impl Fn(&ClientRequest) -> bool) -> Vec<ClientRequest> {
        let keys: Vec<_> = self.confirmed.iter().filter(|(_, r)| pred(r)).map(|(k, _)| *k).collect();
        keys.into_iter().filter_map(|k| self.confirmed.remove(&k)).collect()
    }

    pub fn len(&self) -> usize {
        self.unconfirmed.len() + self.confirmed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::Op;

    fn req(seq: u64, op: Op) -> ClientRequest {
        ClientRequest { client: 1, seq, op }
    }

    /// A confirmed read is served only once its read index is applied
    /// (thesis §6.4 step 4): served earlier it could miss a write committed
    /// before the read arrived. Reads come out in index order, and one whose
    /// index is not yet applied holds back none below it.
    #[test]
    fn take_servable_serves_exactly_the_reads_whose_index_is_applied_in_index_order() {
        let mut reads = PendingReads::default();
        let late = reads.start(req(1, Op::Get { key: "late".into() }));
        let early = reads.start(req(2, Op::Get { key: "early".into() }));
        let exact = reads.start(req(3, Op::Get { key: "exact".into() }));
        reads.confirm(late, 9);
        reads.confirm(early, 4);
        reads.confirm(exact, 6);
        assert_eq!(reads.take_servable(3), vec![], "nothing is applied far enough");
        assert_eq!(
            reads.take_servable(6),
            vec![req(2, Op::Get { key: "early".into() }), req(3, Op::Get { key: "exact".into() })],
            "index 4 and index 6 (= applied) are servable, index 9 is not"
        );
        assert_eq!(reads.len(), 1);
        assert_eq!(reads.take_servable(8), vec![]);
        assert_eq!(reads.take_servable(9), vec![req(1, Op::Get { key: "late".into() })]);
        assert_eq!(reads.len(), 0);
    }

    /// On step-down the server answers `NotLeader` to exactly the confirmed
    /// reads this returns; an empty answer would leave a `LeaseTimeToLive`
    /// to be served later from the deposed leader's cleared deadlines.
    #[test]
    fn take_confirmed_where_removes_and_returns_only_the_matching_confirmed_reads() {
        let mut reads = PendingReads::default();
        let ttl = reads.start(req(1, Op::LeaseTimeToLive { lease: 7 }));
        let get = reads.start(req(2, Op::Get { key: "k".into() }));
        let unconfirmed = reads.start(req(3, Op::LeaseTimeToLive { lease: 8 }));
        reads.confirm(ttl, 5);
        reads.confirm(get, 5);
        let taken = reads.take_confirmed_where(|r| matches!(r.op, Op::LeaseTimeToLive { .. }));
        assert_eq!(taken, vec![req(1, Op::LeaseTimeToLive { lease: 7 })]);
        assert_eq!(reads.take_servable(5), vec![req(2, Op::Get { key: "k".into() })], "the Get stays");
        assert_eq!(reads.abandon(unconfirmed), Some(req(3, Op::LeaseTimeToLive { lease: 8 })), "unconfirmed untouched");
    }
}
