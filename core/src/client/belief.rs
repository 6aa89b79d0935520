//! A client's belief that it holds its lease (SCENARIO-FORMAT.md, "belief").
//!
//! The belief runs from the grant reply until the client's own monotonic
//! clock reaches `timer start + TTL × (1 − margin)`, renewed by each
//! acknowledged keep-alive and ended at once by a release or a refused
//! keep-alive. The timer starts when the request was *sent* (safe: the
//! server's TTL cannot have started earlier) or when the reply was
//! *received* (unsafe by the network delay; Gray & Cheriton 1989 discuss
//! why the send time is the conservative choice).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BeliefFrom {
    /// At the request's send (safe: the server's TTL starts later).
    #[default]
    Send,
    /// At the reply's receipt (unsafe under delays: a deliberate hazard).
    Receipt,
}

impl BeliefFrom {
    /// The name scenario files and results use.
    pub fn name(self) -> &'static str {
        match self {
            BeliefFrom::Send => "send",
            BeliefFrom::Receipt => "receipt",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Belief {
    margin: f64,
    from: BeliefFrom,
    /// Planted bug `client-trusts-full-ttl`: start at receipt, no margin.
    trust_full_ttl: bool,
    /// End of the belief on the client's own monotonic clock; `None` when the
    /// client holds no belief.
    until_ns: Option<u64>,
}

impl Belief {
    pub fn new(margin: f64, from: BeliefFrom, trust_full_ttl: bool) -> Self {
        assert!((0.0..1.0).contains(&margin), "margin must be in [0, 1)");
        Belief { margin, from, trust_full_ttl, until_ns: None }
    }

    /// A grant or keep-alive for `ttl_ns` was acknowledged: the request was
    /// sent at `sent_ns`, the reply received at `received_ns` (own clock).
    /// Returns the new end of the belief.
    pub fn acknowledge(&mut self, sent_ns: u64, received_ns: u64, ttl_ns: u64) -> u64 {
        assert!(sent_ns <= received_ns, "a reply cannot arrive before its request left");
        let (start_ns, margin) = if self.trust_full_ttl {
            (received_ns, 0.0)
        } else {
            let start_ns = match self.from {
                BeliefFrom::Send => sent_ns,
                BeliefFrom::Receipt => received_ns,
            };
            (start_ns, self.margin)
        };
        let trusted_ns = (ttl_ns as f64 * (1.0 - margin)) as u64;
        let until_ns = start_ns + trusted_ns;
        // An extension never shortens a belief (the Juju lease design's
        // guarantee): a late reply to an old keep-alive must not cut a newer
        // one short.
        let until_ns = self.until_ns.map_or(until_ns, |old| old.max(until_ns));
        self.until_ns = Some(until_ns);
        until_ns
    }

    /// A release, a refused keep-alive or a lost lease ends the belief now.
    pub fn end(&mut self) {
        self.until_ns = None;
    }

    pub fn holds(&self, now_ns: u64) -> bool {
        self.until_ns.is_some_and(|until_ns| now_ns < until_ns)
    }

    pub fn until_ns(&self) -> Option<u64> {
        self.until_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_send_starts_at_the_send() {
        let mut belief = Belief::new(0.1, BeliefFrom::Send, false);
        assert_eq!(belief.acknowledge(1_000, 5_000, 10_000), 10_000);
        assert!(belief.holds(9_999));
        assert!(!belief.holds(10_000));
    }

    #[test]
    fn from_receipt_starts_at_the_reply() {
        let mut belief = Belief::new(0.1, BeliefFrom::Receipt, false);
        assert_eq!(belief.acknowledge(1_000, 5_000, 10_000), 14_000);
    }

    /// The workloads read the belief's end to stamp what a holder believes
    /// (no acknowledgement: no belief; then exactly the end acknowledge
    /// returned, and a later acknowledge's end).
    #[test]
    fn until_ns_is_the_end_the_last_acknowledge_returned() {
        let mut belief = Belief::new(0.1, BeliefFrom::Send, false);
        assert_eq!(belief.until_ns(), None);
        let first_ns = belief.acknowledge(1_000, 5_000, 10_000);
        assert_eq!(belief.until_ns(), Some(first_ns));
        assert_eq!(belief.until_ns(), Some(10_000));
        belief.acknowledge(4_000, 6_000, 10_000);
        assert_eq!(belief.until_ns(), Some(13_000));
    }

    /// Study results name the belief's start with the spelling scenario
    /// files use (`belief_from = "send"` or `"receipt"`).
    #[test]
    fn names_are_the_scenario_spellings() {
        assert_eq!(BeliefFrom::Send.name(), "send");
        assert_eq!(BeliefFrom::Receipt.name(), "receipt");
    }

    #[test]
    fn extensions_never_shorten() {
        let mut belief = Belief::new(0.0, BeliefFrom::Send, false);
        belief.acknowledge(5_000, 6_000, 10_000);
        assert_eq!(belief.acknowledge(1_000, 7_000, 10_000), 15_000);
    }

    #[test]
    fn end_drops_the_belief_at_once() {
        let mut belief = Belief::new(0.0, BeliefFrom::Send, false);
        belief.acknowledge(0, 1, 100);
        belief.end();
        assert!(!belief.holds(2));
        assert_eq!(belief.until_ns(), None);
    }

    #[test]
    fn planted_bug_trusts_full_ttl_from_receipt() {
        let mut belief = Belief::new(0.2, BeliefFrom::Send, true);
        assert_eq!(belief.acknowledge(1_000, 5_000, 10_000), 15_000);
    }
}
