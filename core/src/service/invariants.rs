//! Structural invariants of the state machine, checked after every apply in
//! debug builds and available to test harnesses.
//!
//! They are the rules the rest of the service leans on: an attached key's lease
//! exists (so revoking the lease finds it, the consistent-core lease design), a
//! holder's lease exists (etcd #11456: a lock held under a dead lease is held
//! by nobody), a queue holds each lease once, and every waiter is owed an
//! answer by its session. A planted bug that breaks one of them on purpose
//! switches off exactly that check.

use std::collections::BTreeSet;

use crate::service::session::Record;
use crate::service::StateMachine;

impl StateMachine {
    /// Checks the invariants; the error names the first one broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_attachments()?;
        self.check_locks()
    }

    fn check_attachments(&self) -> Result<(), String> {
        let mut attached = 0usize;
        for (key, value) in self.kv.iter() {
            if let Some(id) = value.lease {
                attached += 1;
                let lease =
                    self.leases.get(id).ok_or_else(|| format!("key {} attached to missing lease {id}", String::from_utf8_lossy(key)))?;
                if !lease.keys.contains(key) {
                    return Err(format!("key {} says lease {id}, lease does not list it", String::from_utf8_lossy(key)));
                }
            }
        }
        // Each attached key is now one (key, lease) pair of some lease's
        // list, and a key names one lease, so the lists hold exactly the
        // attached keys if they hold as many pairs: the walk naming the
        // pair that breaks it is needed only if they hold more (this check
        // runs after every apply).
        if self.leases.iter().map(|lease| lease.keys.len()).sum::<usize>() == attached {
            return Ok(());
        }
        for lease in self.leases.iter() {
            for key in &lease.keys {
                if self.kv.get(key).and_then(|v| v.lease) != Some(lease.id) {
                    return Err(format!("lease {} lists key {}, which is not attached to it", lease.id, String::from_utf8_lossy(key)));
                }
            }
        }
        Ok(())
    }

    fn check_locks(&self) -> Result<(), String> {
        let dead_leases_allowed = self.settings.bugs.grant_without_lease_check;
        // A vector sorted at the end, not a set: this runs after every apply,
        // and building B-tree sets here was most of the check's cost.
        let mut waiting = Vec::new();
        for (key, queue) in self.locks.iter() {
            if let Some(holder) = &queue.holder {
                if !dead_leases_allowed && !self.leases.contains(holder.lease) {
                    return Err(format!("{key} held under missing lease {}", holder.lease));
                }
                if holder.token > queue.last_token {
                    return Err(format!("{key} holder token {} above last token {}", holder.token, queue.last_token));
                }
            }
            let mut last_index = 0;
            for (at, waiter) in queue.waiters.iter().enumerate() {
                // Queues are as long as the clients contending: a scan of the
                // waiters before is cheaper than a set.
                if queue.waiters.iter().take(at).any(|earlier| earlier.lease == waiter.lease) {
                    return Err(format!("{key} queues lease {} twice", waiter.lease));
                }
                if queue.holder.as_ref().is_some_and(|h| h.lease == waiter.lease) {
                    return Err(format!("{key} queues its holder's lease {}", waiter.lease));
                }
                if !dead_leases_allowed && !self.leases.contains(waiter.lease) {
                    return Err(format!("{key} queues missing lease {}", waiter.lease));
                }
                if waiter.queued_index <= last_index {
                    return Err(format!("{key} queue out of commit order at index {}", waiter.queued_index));
                }
                last_index = waiter.queued_index;
                waiting.push((waiter.client, waiter.seq));
            }
        }
        waiting.sort_unstable();
        waiting.dedup();
        // Every waiter's acquire is pending in its session, and nothing else
        // is (the first of each difference, in order, is named). The sessions
        // index their pending records; debug builds also check that index
        // against the records themselves.
        let pending = self.sessions.pending();
        if let Some((client, seq)) = waiting.iter().find(|w| !pending.contains(w)) {
            return Err(format!("waiter (client {client}, seq {seq}) not pending in its session"));
        }
        // Every waiter is pending, so the sets differ only if more are pending.
        if pending.len() != waiting.len() {
            let (client, seq) = pending.iter().find(|p| waiting.binary_search(p).is_err()).expect("one more pending than waiting");
            return Err(format!("acquire (client {client}, seq {seq}) pending in its session but queued nowhere"));
        }
        if cfg!(debug_assertions) {
            let mut scanned = BTreeSet::new();
            for client in self.session_clients() {
                let session = self.sessions.get(client).expect("listed");
                scanned.extend(session.records().filter(|(_, r)| **r == Record::Pending).map(|(seq, _)| (client, *seq)));
            }
            if &scanned != pending {
                return Err(format!("session pending index {pending:?} disagrees with the records {scanned:?}"));
            }
        }
        Ok(())
    }

    fn session_clients(&self) -> Vec<u64> {
        self.sessions.clients()
    }
}

#[cfg(test)]
mod tests {
    use crate::bugs::Bugs;
    use crate::service::{MachineSettings, StateMachine};
    use crate::types::{ExpiryStrategy, NS_PER_MS};

    /// The lock checks, each broken once: a waiter not pending in its
    /// session, an acquire pending but queued nowhere, a lease queued twice.
    #[test]
    fn lock_queues_and_pending_acquires_must_agree() {
        use crate::service::lock::Waiter;
        // Leases are not the point here: a planted bug lets queues name
        // leases that do not exist.
        let bugs = Bugs { grant_without_lease_check: true, ..Bugs::default() };
        let mut sm = StateMachine::new(MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 300 * NS_PER_MS, bugs));
        let waiter = |client, seq, lease, queued_index| Waiter { client, seq, lease, queued_index };
        sm.locks.queue_mut("/a").waiters.extend([waiter(2, 1, 20, 5), waiter(1, 1, 10, 6)]);
        sm.sessions.record_pending(2, 1);
        let err = sm.check_invariants().expect_err("client 1's acquire waits but is not pending");
        assert!(err.contains("waiter (client 1, seq 1) not pending in its session"), "{err}");
        sm.sessions.record_pending(1, 1);
        assert_eq!(sm.check_invariants(), Ok(()));
        sm.sessions.record_pending(3, 7);
        sm.sessions.record_pending(3, 9);
        let err = sm.check_invariants().expect_err("client 3's acquires wait nowhere");
        assert!(err.contains("acquire (client 3, seq 7) pending in its session but queued nowhere"), "{err}");
        sm.locks.queue_mut("/b").waiters.extend([waiter(3, 7, 30, 2), waiter(3, 9, 31, 3)]);
        assert_eq!(sm.check_invariants(), Ok(()));
        sm.locks.queue_mut("/a").waiters.push_back(waiter(4, 1, 20, 9));
        sm.sessions.record_pending(4, 1);
        let err = sm.check_invariants().expect_err("lease 20 waits twice on /a");
        assert!(err.contains("/a queues lease 20 twice"), "{err}");
    }

    /// The check runs after every apply but a healthy engine only ever shows
    /// it success; pin that it reports a broken machine, or it checks nothing.
    #[test]
    fn a_key_attached_to_a_missing_lease_fails_the_invariant_check() {
        let mut sm = StateMachine::new(MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 300 * NS_PER_MS, Bugs::default()));
        assert_eq!(sm.check_invariants(), Ok(()));
        sm.kv.put(b"k", b"v", Some(7), 1);
        let err = sm.check_invariants().expect_err("a key attached to lease 7, which does not exist");
        assert!(err.contains("missing lease 7"), "{err}");
    }

    /// The attachments both ways: a lease listing a key not attached to it
    /// (whether the key is absent or attached elsewhere) is caught even
    /// when every attached key is listed, which the pair count decides.
    #[test]
    fn a_lease_listing_a_key_not_attached_to_it_fails_the_invariant_check() {
        use crate::service::lease::Lease;
        let mut sm = StateMachine::new(MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 300 * NS_PER_MS, Bugs::default()));
        let lease = |id, keys: &[&[u8]]| Lease {
            id,
            ttl_ns: 1,
            granted_index: 1,
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            expiry_wall_ns: None,
            checkpoint_remaining_ns: None,
            writer: None,
            expiry_writer_ns: None,
            renewed_index: 1,
        };
        sm.leases.insert(lease(7, &[b"k"]));
        sm.kv.put(b"k", b"v", Some(7), 1);
        assert_eq!(sm.check_invariants(), Ok(()));
        sm.leases.insert(lease(8, &[b"gone"]));
        let err = sm.check_invariants().expect_err("lease 8 lists a key that does not exist");
        assert!(err.contains("lease 8 lists key gone, which is not attached to it"), "{err}");
        sm.leases.remove(8);
        sm.leases.insert(lease(8, &[b"k"]));
        let err = sm.check_invariants().expect_err("lease 8 lists a key attached to lease 7");
        assert!(err.contains("lease 8 lists key k, which is not attached to it"), "{err}");
        sm.leases.remove(8);
        sm.leases.remove(7);
        sm.leases.insert(lease(7, &[]));
        let err = sm.check_invariants().expect_err("k says lease 7, which no longer lists it");
        assert!(err.contains("key k says lease 7, lease does not list it"), "{err}");
    }
}
