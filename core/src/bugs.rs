//! Planted bugs: each switch breaks one rule on purpose, so that tests can
//! prove the checkers catch what they claim to catch. All are off by default;
//! only a test, a scenario's top-level `bugs = [..]` list or a CLI flag turns one on.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bugs {
    /// Raft §5.4.1: grant votes without checking the candidate's log is at
    /// least as up to date.
    pub vote_without_log_check: bool,
    /// Raft §5.4.2 / Figure 8: commit entries of earlier terms by counting.
    pub commit_old_term_by_counting: bool,
    /// Raft §5.2 / durability: reply to votes before persisting term and vote.
    pub reply_before_persist: bool,
    /// Raft §5.3: append without truncating a conflicting suffix.
    pub no_truncate_conflict: bool,
    /// Raft §5.1: a leader does not step down on seeing a higher term.
    pub leader_ignores_higher_term: bool,
    /// Raft thesis §4.1: propose a membership change before the leader has
    /// committed an entry of its term (and while another is in flight).
    pub unsafe_membership_change: bool,
    /// Followers expire leases by their own clock (not the leader's decision):
    /// a non-leader arms TTL deadlines when it applies grants (keep-alives
    /// never reach it) and ends leases locally, outside the log.
    pub follower_expires_leases: bool,
    /// A new leader re-arms inherited leases at now + TTL, without etcd's
    /// Promote extension (nor the extension for older-term grants it applies).
    pub no_promote_extension: bool,
    /// Fencing token from a process-local counter of grants (restarting at
    /// zero with the process, missing grants covered by a snapshot) instead
    /// of the log index of the granting entry.
    pub token_from_local_counter: bool,
    /// Release a lock without checking the releaser is the holder (any token
    /// releases the current holder).
    pub release_without_owner_check: bool,
    /// Client trusts the full TTL from the reply's receipt with no margin.
    pub client_trusts_full_ttl: bool,
    /// Keep-alive answered live after the lease was revoked: the leader keeps
    /// a revoked lease's deadline and judges keep-alives by its deadlines
    /// alone; a stamped-wall refresh of a missing lease is answered live.
    pub keepalive_after_revoke: bool,
    /// Grant a lock to the next waiter without re-checking its lease is alive
    /// (etcd #11456); a lease's end then leaves its waiters queued.
    pub grant_without_lease_check: bool,
    /// A follower answers reads from its local state (stale reads).
    pub stale_follower_reads: bool,
    /// The data store accepts a task's completion without checking the claim's
    /// fencing token (the multi-instance lease design's task workers): a worker
    /// whose claim was superseded completes the task anyway. Lives in the
    /// simulator's data store, which is not part of the core.
    pub completion_without_token_check: bool,
}

impl Bugs {
    /// Every switch's name as scenarios and flags spell it (kebab-case).
    pub const NAMES: [&'static str; 15] = [
        "vote-without-log-check",
        "commit-old-term-by-counting",
        "reply-before-persist",
        "no-truncate-conflict",
        "leader-ignores-higher-term",
        "unsafe-membership-change",
        "follower-expires-leases",
        "no-promote-extension",
        "token-from-local-counter",
        "release-without-owner-check",
        "client-trusts-full-ttl",
        "keepalive-after-revoke",
        "grant-without-lease-check",
        "stale-follower-reads",
        "completion-without-token-check",
    ];

    /// Turns on the named bug. Errors with the list of valid names.
    pub fn enable(&mut self, name: &str) -> Result<(), String> {
        let flag = match name {
            "vote-without-log-check" => &mut self.vote_without_log_check,
            "commit-old-term-by-counting" => &mut self.commit_old_term_by_counting,
            "reply-before-persist" => &mut self.reply_before_persist,
            "no-truncate-conflict" => &mut self.no_truncate_conflict,
            "leader-ignores-higher-term" => &mut self.leader_ignores_higher_term,
            "unsafe-membership-change" => &mut self.unsafe_membership_change,
            "follower-expires-leases" => &mut self.follower_expires_leases,
            "no-promote-extension" => &mut self.no_promote_extension,
            "token-from-local-counter" => &mut self.token_from_local_counter,
            "release-without-owner-check" => &mut self.release_without_owner_check,
            "client-trusts-full-ttl" => &mut self.client_trusts_full_ttl,
            "keepalive-after-revoke" => &mut self.keepalive_after_revoke,
            "grant-without-lease-check" => &mut self.grant_without_lease_check,
            "stale-follower-reads" => &mut self.stale_follower_reads,
            "completion-without-token-check" => &mut self.completion_without_token_check,
            _ => {
                return Err(format!("unknown bug `{name}`; known bugs: {}", Self::NAMES.join(", ")));
            }
        };
        *flag = true;
        Ok(())
    }

    /// Whether the named bug is on (`None` for an unknown name).
    pub fn is_enabled(&self, name: &str) -> Option<bool> {
        Some(match name {
            "vote-without-log-check" => self.vote_without_log_check,
            "commit-old-term-by-counting" => self.commit_old_term_by_counting,
            "reply-before-persist" => self.reply_before_persist,
            "no-truncate-conflict" => self.no_truncate_conflict,
            "leader-ignores-higher-term" => self.leader_ignores_higher_term,
            "unsafe-membership-change" => self.unsafe_membership_change,
            "follower-expires-leases" => self.follower_expires_leases,
            "no-promote-extension" => self.no_promote_extension,
            "token-from-local-counter" => self.token_from_local_counter,
            "release-without-owner-check" => self.release_without_owner_check,
            "client-trusts-full-ttl" => self.client_trusts_full_ttl,
            "keepalive-after-revoke" => self.keepalive_after_revoke,
            "grant-without-lease-check" => self.grant_without_lease_check,
            "stale-follower-reads" => self.stale_follower_reads,
            "completion-without-token-check" => self.completion_without_token_check,
            _ => return None,
        })
    }

    /// Names of the bugs that are on.
    pub fn enabled(&self) -> Vec<&'static str> {
        Self::NAMES.iter().copied().filter(|n| self.is_enabled(n) == Some(true)).collect()
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
    }
}
