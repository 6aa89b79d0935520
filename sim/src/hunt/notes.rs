//! Why some planted bugs cannot show as a violation in a simulated run,
//! whatever the chaos: what each would need, and what the engine or the
//! checkers rule out. A hunt prints the note of every bug it did not find,
//! so its report says "cannot show, because …" rather than only "not found".

/// The note for `bug`, if the bug is known to be out of the checkers' reach.
pub fn why_not_observable(bug: &str) -> Option<&'static str> {
    NOTES.iter().find(|(name, _)| *name == bug).map(|(_, note)| *note)
}

const NOTES: &[(&str, &str)] = &[(
    "commit-old-term-by-counting",
    "Committing an older-term entry by counting replicas (Raft Figure 8) is harmful only if an \
         acknowledgement covers old-term entries but not the new leader's own Noop, and those entries \
         are later overwritten. A new leader appends its Noop at once and sends up to 64 entries per \
         append, so an acknowledgement without the Noop needs a follower more than 64 entries behind \
         on an uncommitted suffix; a deposed leader gathers far fewer (each client has one request in \
         flight, and check-quorum deposes it within an election timeout). Then the Figure 8 leader \
         sequence (crash of each new leader before its Noop replicates) must follow. chaos-nemesis \
         now draws batches down to one entry and crashes aimed at appends, and 100 seeds still found \
         nothing. The core's own test (core/tests/raft_safety.rs) forces it with one entry per append.",
)];
