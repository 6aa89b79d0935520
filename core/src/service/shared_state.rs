//! The state machine as a snapshot holds it: shared, not copied. Taking a
//! snapshot copied the whole state twice on the apply thread (once into
//! the snapshot, then the snapshot once more: one copy kept for followers
//! that fall behind, one handed to the host to persist), and a real member
//! held the second copy until its data directory had written it. Shared,
//! the snapshot is copied once; the host's copy and Raft's are the same
//! one. It serializes, compares and prints as the state itself, so disks,
//! messages and traces see no difference.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::StateMachine;

/// A snapshot's state machine, shared between its holders.
#[derive(Clone, PartialEq, Eq)]
pub struct SharedState(Arc<StateMachine>);

impl SharedState {
    pub fn new(state: StateMachine) -> Self {
        SharedState(Arc::new(state))
    }

    /// The state itself: taken if this is the last holder, else copied.
    pub fn into_state(self) -> StateMachine {
        Arc::unwrap_or_clone(self.0)
    }
}

impl Deref for SharedState {
    type Target = StateMachine;
    fn deref(&self) -> &StateMachine {
        &self.0
    }
}

impl fmt::Debug for SharedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for SharedState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StateMachine::deserialize(deserializer).map(SharedState::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::MachineSettings;
    use crate::ExpiryStrategy;

    /// Copies of a snapshot share one state, which prints as itself.
    #[test]
    fn clones_share_the_state_and_print_as_it() {
        let state = StateMachine::new(MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 1_000, Default::default()));
        let shared = SharedState::new(state.clone());
        let copy = shared.clone();
        assert!(std::ptr::eq(&*shared, &*copy), "a clone shares, not copies");
        assert_eq!(format!("{shared:?}"), format!("{state:?}"));
        drop(copy);
        assert_eq!(shared.into_state(), state, "the last holder takes the state");
    }
}
