//! The toy replicated state machine the harness applies: it folds every
//! applied entry into a running hash. Two nodes that applied the same entries
//! in the same order hold equal values, so comparing them (and snapshots)
//! checks State Machine Safety cheaply and keeps snapshots small.

use leasesim_core::raft::{Entry, Payload};
use leasesim_core::types::LogIndex;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToyState {
    /// Index of the last entry applied (or covered by a snapshot).
    pub applied_index: LogIndex,
    /// Number of commands applied.
    pub commands: u64,
    /// Order-sensitive hash of every entry applied.
    pub hash: u64,
}

impl ToyState {
    pub fn apply(&mut self, entry: &Entry<u64>) {
        let (tag, value) = match &entry.payload {
            Payload::Noop => (1, 0),
            Payload::Config(change) => (2, format!("{change:?}").len() as u64),
            Payload::Command(c) => {
                self.commands += 1;
                (3, *c)
            }
        };
        self.applied_index = entry.index;
        self.hash = mix(mix(mix(self.hash, entry.index), tag), value);
    }
}

/// SplitMix64's finaliser over `acc ^ value`: cheap and order-sensitive.
fn mix(acc: u64, value: u64) -> u64 {
    let mut z = acc.rotate_left(5) ^ value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
