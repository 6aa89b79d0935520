//! The leader's lease deadlines: a priority queue on its monotonic clock.
//!
//! Only the leader keeps these (the consistent-core lease design: "only the
//! leader tracks the lease timeouts ... using its own monotonic clock"); they
//! are volatile, rebuilt by `Promote` on each election, and never replicated.
//! Ordered by deadline like Xline's `LeaseQueue` (the Xline lease design), with
//! an index by lease so a keep-alive can move one deadline.

use std::collections::{BTreeMap, BTreeSet};

use crate::types::LeaseId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseDeadlines {
    by_time: BTreeSet<(u64, LeaseId)>,
    by_lease: BTreeMap<LeaseId, u64>,
}

impl LeaseDeadlines {
    /// Sets (or moves) `lease`'s deadline.
    pub fn arm(&mut self, lease: LeaseId, deadline_ns: u64) {
        if let Some(old) = self.by_lease.insert(lease, deadline_ns) {
            self.by_time.remove(&(old, lease));
        }
        self.by_time.insert((deadline_ns, lease));
    }

    pub fn disarm(&mut self, lease: LeaseId) -> Option<u64> {
        let old = self.by_lease.remove(&lease)?;
        self.by_time.remove(&(old, lease));
        Some(old)
    }

    pub fn deadline(&self, lease: LeaseId) -> Option<u64> {
        self.by_lease.get(&lease).copied()
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<u64> {
        self.by_time.first().map(|(t, _)| *t)
    }

    /// Removes and returns every lease whose deadline is at or before
    /// `now_ns`, earliest first.
    pub fn pop_due(&mut self, now_ns: u64) -> Vec<LeaseId> {
        let mut due = Vec::new();
        while let Some(&(t, lease)) = self.by_time.first() {
            if t > now_ns {
                break;
            }
            self.by_time.pop_first();
            self.by_lease.remove(&lease);
            due.push(lease);
        }
        due
    }

    pub fn clear(&mut self) {
        self.by_time.clear();
        self.by_lease.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.by_lease.is_empty()
    }

    /// (lease, deadline) in lease order.
    pub fn iter(&self) -> impl Iterator<Item = (LeaseId, u64)> + '_ {
        self.by_lease.iter().map(|(l, t)| (*l, *t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_deadline_order_and_moves_on_rearm() {
        let mut d = LeaseDeadlines::default();
        d.arm(1, 30);
        d.arm(2, 10);
        d.arm(3, 20);
        d.arm(2, 40); // a keep-alive moved lease 2 out
        assert_eq!(d.next(), Some(20));
        assert_eq!(d.pop_due(30), vec![3, 1]);
        assert_eq!(d.deadline(2), Some(40));
        assert_eq!(d.disarm(2), Some(40));
        assert!(d.is_empty() && d.next().is_none());
    }
}
