//! A server's disk, owned by the simulator so it survives a kill.
//!
//! Writes land in a volatile buffer; `sync` makes them durable. A crash
//! drops whatever was written but not synced — the reason the host must
//! sync a `Ready`'s persist operations before sending its messages. What a
//! write does to the disk is core's rule (`Persisted::apply`), shared with
//! core's test harnesses.

use leasesim_core::raft::{PersistOp, Persisted};
use leasesim_core::service::SharedState;

pub type Op = PersistOp<leasesim_core::service::Command, SharedState>;
pub type Image = Persisted<leasesim_core::service::Command, SharedState>;

#[derive(Debug, Default)]
pub struct Disk {
    durable: Image,
    unsynced: Vec<Op>,
    /// Totals for the run's figures.
    pub syncs: u64,
    pub ops_written: u64,
}

impl Disk {
    /// Writes (without syncing) and empties `ops`, whose buffer the
    /// caller keeps for its next step.
    pub fn write(&mut self, ops: &mut Vec<Op>) {
        self.ops_written += ops.len() as u64;
        self.unsynced.append(ops);
    }

    pub fn has_unsynced(&self) -> bool {
        !self.unsynced.is_empty()
    }

    pub fn sync(&mut self) {
        self.syncs += 1;
        for op in std::mem::take(&mut self.unsynced) {
            self.durable.apply(op);
        }
    }

    /// The process died: unsynced writes are gone.
    pub fn crash(&mut self) -> usize {
        let lost = self.unsynced.len();
        self.unsynced.clear();
        lost
    }

    /// What a restarting server reads back.
    pub fn image(&self) -> Image {
        assert!(self.unsynced.is_empty(), "read the disk only after a crash or a sync");
        self.durable.clone()
    }

    pub fn entries_len(&self) -> usize {
        self.durable.entries.len()
    }
}
