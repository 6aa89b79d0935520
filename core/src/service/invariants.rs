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
        for (key, value) in self.kv.iter() {
            if let Some(id) = value.lease {
                let lease =
                    self.leases.get(id).ok_or_else(|| format!("key {} attached to missing lease {id}", String::from_utf8_lossy(key)))?;
                if !lease.keys.contains(key) {
                    return Err(format!("key {} says lease {id}, lease does not list it", String::from_utf8_lossy(key)));
                }
            }
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
        let mut waiting = BTreeSet::new();
        for (key, queue) in self.locks.iter() {
            if let Some(holder) = &queue.holder {
                if !dead_leases_allowed && !self.leases.contains(holder.lease) {
                    return Err(format!("{key} held under missing lease {}", holder.lease));
                }
                if holder.token > queue.last_token {
                    return Err(format!("{key} holder token {} above last token {}", holder.token, queue.last_token));
                }
            }
            let mut leases = BTreeSet::new();
            let mut last_index = 0;
            for waiter in &queue.waiters {
                if !leases.insert(waiter.lease) {
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
                waiting.insert((waiter.client, waiter.seq));
            }
        }
        // Every waiter's acquire is pending in its session, and nothing else
        // is. The sessions index their pending records; debug builds also
        // check that index against the records themselves.
        let pending = self.sessions.pending();
        if let Some((client, seq)) = waiting.difference(pending).next() {
            return Err(format!("waiter (client {client}, seq {seq}) not pending in its session"));
        }
        if let Some((client, seq)) = pending.difference(&waiting).next() {
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
}
