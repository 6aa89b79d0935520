//! A node's simulated disk: what survives a crash. It carries out the
//! node's PersistOps in order (the disk format's rule, `raft::persist`) and
//! refuses ones that break the format or go backwards (a term decreasing, a
//! second vote in one term), which is how durability mistakes surface as
//! readable violations.

use leasesim_core::raft::{PersistOp, Persisted};
use leasesim_core::types::LogIndex;

use crate::toy::ToyState;

#[derive(Clone, Debug, Default)]
pub struct TestDisk {
    pub persisted: Persisted<u64, ToyState>,
    /// PersistOps carried out so far (for statistics).
    pub writes: u64,
}

impl TestDisk {
    pub fn snapshot_index(&self) -> LogIndex {
        self.persisted.snapshot_index()
    }

    pub fn last_index(&self) -> LogIndex {
        self.persisted.last_index()
    }

    pub fn last_term(&self) -> u64 {
        self.persisted.last_term()
    }

    /// Carries out one write, or says why the node should never have asked.
    pub fn apply(&mut self, op: PersistOp<u64, ToyState>) -> Result<(), String> {
        self.writes += 1;
        if let Some(refusal) = self.persisted.refusal(&op) {
            return Err(refusal);
        }
        self.persisted.apply(op);
        Ok(())
    }
}
