//! Why some planted bugs cannot show as a violation in a simulated run,
//! whatever the chaos: what each would need, and what the engine or the
//! checkers rule out. A hunt prints the note of every bug it did not find,
//! so its report says "cannot show, because …" rather than only "not found".

/// The note for `bug`, if the bug is known to be out of the checkers' reach.
pub fn why_not_observable(bug: &str) -> Option<&'static str> {
    NOTES.iter().find(|(name, _)| *name == bug).map(|(_, note)| *note)
}

const NOTES: &[(&str, &str)] = &[
    (
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
    ),
    (
        "no-promote-extension",
        "Keep-alives are answered only after a read-index round confirms leadership with a majority \
         (core/src/server/requests.rs), and a new leader can be elected only after a majority stopped \
         hearing from the old one. So every keep-alive the old leader can acknowledge was sent before \
         the new leader promotes, and the new leader's `now + TTL` already ends after `send + TTL`: \
         neither `lease-early-expiry` nor `lock-belief-overlap` can fire without the extension. The \
         extension matters for designs that answer keep-alives from the leader's local state (etcd's \
         lessor), which chaos-nemesis now draws in half its seeds (`keepalive_read_index = false`); \
         even so the old leader's check-quorum usually deposes it before the new leader promotes, and \
         100 seeds found nothing. The core harness checks the rule itself (core/tests/service_bugs.rs).",
    ),
];
