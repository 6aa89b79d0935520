//! Planted bugs: each switch breaks one rule on purpose, so that tests can
//! prove the checkers catch what they claim to catch. All are off by default;
//! only a test, a scenario's top-level `bugs = [..]` list or a CLI flag turns one on.

use serde::{Deserialize, Serialize};

/// Declares [`Bugs`] from one list: each switch's field, with its doc, and
/// its name as scenarios and flags spell it (kebab-case), written once; the
/// struct, [`Bugs::NAMES`] and the lookups by name all come from it.
macro_rules! planted_bugs {
    ($($(#[doc = $doc:literal])* $field:ident = $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Bugs {
            $($(#[doc = $doc])* pub $field: bool,)*
        }

        impl Bugs {
            /// Every switch's name as scenarios and flags spell it (kebab-case).
            pub const NAMES: [&'static str; [$($name),*].len()] = [$($name),*];

            /// Each switch's name and state.
            fn switches(&self) -> [(&'static str, bool); Self::NAMES.len()] {
                [$(($name, self.$field)),*]
            }

            /// Each switch with its name, to turn one on by name.
            fn switches_mut(&mut self) -> [(&'static str, &mut bool); Self::NAMES.len()] {
                [$(($name, &mut self.$field)),*]
            }
        }
    };
}

planted_bugs! {
    /// Raft §5.4.1: grant votes without checking the candidate's log is at
    /// least as up to date.
    vote_without_log_check = "vote-without-log-check",
    /// Raft §5.4.2 / Figure 8: commit entries of earlier terms by counting.
    commit_old_term_by_counting = "commit-old-term-by-counting",
    /// Raft §5.2 / durability: reply to votes before persisting term and vote.
    reply_before_persist = "reply-before-persist",
    /// Raft §5.3: append without truncating a conflicting suffix.
    no_truncate_conflict = "no-truncate-conflict",
    /// Raft §5.1: a leader does not step down on seeing a higher term.
    leader_ignores_higher_term = "leader-ignores-higher-term",
    /// Raft thesis §4.1: propose a membership change before the leader has
    /// committed an entry of its term (and while another is in flight).
    unsafe_membership_change = "unsafe-membership-change",
    /// Followers expire leases by their own clock (not the leader's decision):
    /// a non-leader arms TTL deadlines when it applies grants (keep-alives
    /// never reach it) and ends leases locally, outside the log.
    follower_expires_leases = "follower-expires-leases",
    /// A new leader re-arms inherited leases at now + TTL, without etcd's
    /// Promote extension (nor the extension for older-term grants it applies).
    no_promote_extension = "no-promote-extension",
    /// Fencing token from a process-local counter of grants (restarting at
    /// zero with the process, missing grants covered by a snapshot) instead
    /// of the log index of the granting entry.
    token_from_local_counter = "token-from-local-counter",
    /// Release a lock without checking the releaser is the holder (any token
    /// releases the current holder).
    release_without_owner_check = "release-without-owner-check",
    /// Client trusts the full TTL from the reply's receipt with no margin.
    client_trusts_full_ttl = "client-trusts-full-ttl",
    /// Keep-alive answered live after the lease was revoked: the leader keeps
    /// a revoked lease's deadline and judges keep-alives by its deadlines
    /// alone; a stamped-wall refresh of a missing lease is answered live.
    keepalive_after_revoke = "keepalive-after-revoke",
    /// Grant a lock to the next waiter without re-checking its lease is alive
    /// (etcd #11456); a lease's end then leaves its waiters queued.
    grant_without_lease_check = "grant-without-lease-check",
    /// A follower answers reads from its local state (stale reads).
    stale_follower_reads = "stale-follower-reads",
    /// The data store accepts a task's completion without checking the claim's
    /// fencing token (the multi-instance lease design's task workers): a worker
    /// whose claim was superseded completes the task anyway. Lives in the
    /// simulator's data store, which is not part of the core.
    completion_without_token_check = "completion-without-token-check",
    /// A server drops the first key change it applies after a new term
    /// began from the change stream it hands its host (`ServerOutput::
    /// changes`), so every watcher served live by it misses that event on a
    /// leader change; the history (a watch that starts or resumes in the
    /// past) still has it.
    watch_skips_event_on_leader_change = "watch-skips-event-on-leader-change",
    /// The leader proposes a txn whose branch has several operations as two
    /// log entries: the compares with the branch's first operation, then the
    /// rest of the branch it predicted from its own state, so a reader (or
    /// a watcher) between the two sees half the txn.
    txn_in_two_entries = "txn-in-two-entries",
    /// Raft §5.2: a candidate counts a vote granted in an earlier term of
    /// its own as a vote in its current term (a late reply from its last
    /// campaign is tallied instead of dropped), so a voter that has since
    /// voted for another candidate in the current term is counted twice.
    count_older_term_votes = "count-older-term-votes",
}

impl Bugs {
    /// Turns on the named bug. Errors with the list of valid names.
    pub fn enable(&mut self, name: &str) -> Result<(), String> {
        match self.switches_mut().into_iter().find(|(n, _)| *n == name) {
            Some((_, flag)) => {
                *flag = true;
                Ok(())
            }
            None => Err(format!("unknown bug `{name}`; known bugs: {}", Self::NAMES.join(", "))),
        }
    }

    /// Whether the named bug is on (`None` for an unknown name).
    pub fn is_enabled(&self, name: &str) -> Option<bool> {
        self.switches().into_iter().find(|(n, _)| *n == name).map(|(_, on)| on)
    }

    /// Names of the bugs that are on.
    pub fn enabled(&self) -> Vec<&'static str> {
        self.switches().into_iter().filter(|(_, on)| *on).map(|(name, _)| name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips() {
        for name in Bugs::NAMES {
            let mut bugs = Bugs::default();
            bugs.enable(name).unwrap();
            assert_eq!(bugs.enabled(), vec![name]);
        }
        assert!(Bugs::default().enable("no-such-bug").unwrap_err().contains("known bugs"));
        assert_eq!(Bugs::default().is_enabled("no-such-bug"), None);
    }

    #[test]
    fn each_name_turns_on_its_own_field() {
        let mut bugs = Bugs::default();
        bugs.enable("no-truncate-conflict").unwrap();
        assert_eq!(bugs, Bugs { no_truncate_conflict: true, ..Bugs::default() });
        bugs.enable("stale-follower-reads").unwrap();
        assert!(bugs.stale_follower_reads && bugs.no_truncate_conflict);
        assert_eq!(bugs.is_enabled("stale-follower-reads"), Some(true));
        assert_eq!(bugs.is_enabled("vote-without-log-check"), Some(false));
        assert_eq!(Bugs::NAMES.len(), 18);
    }
}
