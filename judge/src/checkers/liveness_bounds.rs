//! Liveness deadlines, each derived from the configuration by one stated
//! formula, and the slack a run must meet them by.
//!
//! `liveness` (and `liveness_margin`, which measures how closely a run met
//! them) read every deadline from here, so the formula a document states is
//! the one the checker enforces. Every deadline counts from the instant the
//! faults stopped (`settle_at_ns`: the settle phase's start, or later when
//! a fault outlasted it — a crashed server back, a slow link ended), or
//! from the event that started the wait if that is later:
//!
//! | deadline | due |
//! |---|---|
//! | an acquire is granted | max(sent, healed) + lock wait bound + recovery |
//! | a lease abandoned by a client's crash ends | max(crash, healed) + its TTL + recovery |
//! | a crashed registry client's key is gone | max(crash, healed) + its TTL + recovery (the key goes with that lease, so it is met when the lease is) |
//! | a leader is in office with a majority on its term | the run's end |
//!
//! where the lock wait bound is (clients + 1) × (hold max + TTL + think
//! max) per lock workload (`Scenario::lock_wait_bound_ns`), and
//!
//! recovery = 9 × E (elections) + 1 × E (Promote) + 1 s (client resends) + backlog,
//!
//! E being the maximum election timeout (see [`Recovery`] for each term).
//! The heartbeat does not appear: every bundled file and every knob draw
//! sets it below E, so a follower's news of a commit (one heartbeat at
//! most) fits inside the rounds.
//!
//! The **stated slack** ([`slack_ns`]) is 2 × E + 100 ms: one more election
//! round lost to a split vote, the round that wins, and its messages. A run
//! that meets a deadline by less than it met it by luck — one more unlucky
//! round and the oracle fires on a healthy run — so the sweep counts such
//! runs and the nightly range must have none.

use super::RunRecord;

/// Election timeouts allowed for electing a leader that keeps office once
/// the faults end: a restarted server's stale term can depose the first
/// leader, and randomized timeouts can split votes several times running.
pub const ELECTION_ROUNDS: u64 = 9;
/// A new leader extends every lease by one election timeout before it
/// expires any (core's Promote): a lease's end waits that long more.
pub const PROMOTE_ROUNDS: u64 = 1;
/// The clients' own part: a request whose server stays silent is resent to
/// the next server after `client_timeout` (500 ms unless the file or a knob
/// draws 50 or 150 ms), a lock's store write after 500 ms: two such resends.
pub const CLIENT_RESEND_NS: u64 = 1_000_000_000;

/// What the cluster may spend recovering once the faults end, term by
/// term. The counts are those `liveness` was written with (so no verdict
/// moved when they were named); `reports/liveness-slack.md` measures what
/// they leave over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// [`ELECTION_ROUNDS`] maximum election timeouts.
    pub elections_ns: u64,
    /// [`PROMOTE_ROUNDS`] maximum election timeout.
    pub promote_ns: u64,
    /// [`CLIENT_RESEND_NS`].
    pub client_resend_ns: u64,
    /// Committing every request the clients can have outstanding ahead of
    /// the one that ends the wait (`RunRecord::commit_backlog_ns`: that many
    /// entries, `max_append_entries` × `max_in_flight_appends` per round
    /// trip at the latency's maximum); 0 where it is not derived (real runs).
    pub backlog_ns: u64,
}

impl Recovery {
    pub fn of(run: &RunRecord<'_>) -> Recovery {
        let e = run.election_timeout_max_ns;
        Recovery {
            elections_ns: ELECTION_ROUNDS * e,
            promote_ns: PROMOTE_ROUNDS * e,
            client_resend_ns: CLIENT_RESEND_NS,
            backlog_ns: run.commit_backlog_ns,
        }
    }

    /// Every term but the backlog (`task-lost` adds its own pace instead).
    pub fn without_backlog_ns(&self) -> u64 {
        self.elections_ns + self.promote_ns + self.client_resend_ns
    }

    pub fn total_ns(&self) -> u64 {
        self.without_backlog_ns() + self.backlog_ns
    }
}

/// When an acquire sent at `sent_ns` must have been granted.
pub fn acquire_due_ns(run: &RunRecord<'_>, sent_ns: u64) -> u64 {
    sent_ns.max(run.settle_at_ns) + run.lock_wait_bound_ns + Recovery::of(run).total_ns()
}

/// When a lease of `ttl_ns` abandoned by a crash at `crashed_ns` must have
/// ended; a crashed registry client's key goes with it.
pub fn abandoned_lease_due_ns(run: &RunRecord<'_>, crashed_ns: u64, ttl_ns: u64) -> u64 {
    crashed_ns.max(run.settle_at_ns) + ttl_ns + Recovery::of(run).total_ns()
}

/// When a leader must be in office (checked at that instant only).
pub fn leader_due_ns(run: &RunRecord<'_>) -> u64 {
    run.end_ns
}

/// The margin every liveness deadline should be met by: two maximum
/// election timeouts (one more election round, lost to a split vote, and
/// the one that wins) plus 100 ms for the messages of the round.
pub fn slack_ns(run: &RunRecord<'_>) -> u64 {
    2 * run.election_timeout_max_ns + 100_000_000
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, S};

    /// The formulas as the documents state them, on numbers worked by hand:
    /// the fixture's election timeout and backlog, a lock wait bound of 7 s.
    #[test]
    fn each_deadline_is_its_stated_formula() {
        let run = Fixture::new();
        let mut record = run.record();
        record.lock_wait_bound_ns = 7 * S;
        record.commit_backlog_ns = 300_000_000;
        let e = record.election_timeout_max_ns;
        assert!(e > 0, "the fixture has an election timeout");
        let recovery = super::Recovery::of(&record);
        assert_eq!(recovery.total_ns(), 10 * e + S + 300_000_000);
        assert_eq!(recovery.without_backlog_ns(), 10 * e + S);
        let healed = record.settle_at_ns;
        // Sent before the faults ended: counted from the heal.
        assert_eq!(super::acquire_due_ns(&record, healed - S), healed + 7 * S + recovery.total_ns());
        assert_eq!(super::acquire_due_ns(&record, healed + S), healed + S + 7 * S + recovery.total_ns());
        assert_eq!(super::abandoned_lease_due_ns(&record, healed + 2 * S, 3 * S), healed + 5 * S + recovery.total_ns());
        assert_eq!(super::leader_due_ns(&record), record.end_ns);
        assert_eq!(super::slack_ns(&record), 2 * e + 100_000_000);
    }
}
