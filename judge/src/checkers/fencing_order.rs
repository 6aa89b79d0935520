//! `fencing-order`: the data store's accepted writes per key are in
//! non-decreasing token order (the Raft lock-service design; Kleppmann, "How to
//! do distributed locking"). Fires when an unfenced store takes a stale
//! holder's late write.

use std::collections::{BTreeMap, VecDeque};

use super::{RunRecord, Violation};
use crate::observe::Event;

/// One key's accepted writes: the highest token among those accepted
/// certainly before the write being judged, and the later ones that might
/// still have been accepted after it (within the stamping error).
#[derive(Default)]
struct Accepted {
    /// (token, client) of the highest settled write.
    highest: Option<(u64, u64)>,
    /// (at_ns, token, client), in log order.
    unsettled: VecDeque<(u64, u64, u64)>,
}

impl Accepted {
    /// Settles every write stamped at least `error_ns` before `at_ns`: it
    /// was accepted before a write stamped `at_ns`, whatever the placement.
    fn settle(&mut self, at_ns: u64, error_ns: u64) {
        while let Some(&(at, token, client)) = self.unsettled.front() {
            if at + error_ns > at_ns {
                break;
            }
            self.unsettled.pop_front();
            if self.highest.is_none_or(|(top, _)| token >= top) {
                self.highest = Some((token, client));
            }
        }
    }
}

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // Conservative about stamping: a write counts as accepted after another
    // only if it is stamped at least `stamp_error_ns` later (with error 0,
    // log order decides, as the simulator records it).
    let error_ns = run.obs.stamp_error_ns();
    let mut keys: BTreeMap<String, Accepted> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs {
        let Event::StoreAccepted { client, key, token } = &o.event else { continue };
        let accepted = keys.entry(key.clone()).or_default();
        accepted.settle(o.at_ns, error_ns);
        if let Some((top, by)) = accepted.highest {
            if *token < top {
                violations.push(run.violation(
                    "fencing-order",
                    o.at_ns,
                    format!("the store accepted c{client}'s write to {key} with token {token} after c{by}'s with token {top}"),
                ));
                continue;
            }
        }
        accepted.unsettled.push_back((o.at_ns, *token, *client));
    }
    violations
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    fn accepted(run: &mut Fixture, at_ns: u64, client: u64, token: u64) {
        run.push(at_ns, Proc::Store, Event::StoreAccepted { client, key: "orders".into(), token });
    }

    #[test]
    fn a_stale_token_accepted_after_a_newer_one_fires() {
        let mut run = Fixture::new();
        accepted(&mut run, S, 1, 5);
        accepted(&mut run, 2 * S, 2, 5);
        accepted(&mut run, 3 * S, 2, 9);
        assert!(run.fired().is_empty(), "equal and growing tokens are fine");
        accepted(&mut run, 4 * S, 1, 5);
        assert_eq!(run.fired(), vec!["fencing-order"]);
    }

    #[test]
    fn a_stale_write_within_the_stamping_error_of_the_newer_one_is_not_reported() {
        let stale_after = |gap_ns: u64, stamp_error_ns: u64| {
            let mut run = Fixture::new();
            accepted(&mut run, S, 2, 9);
            accepted(&mut run, S + gap_ns, 1, 5);
            run.obs = std::mem::take(&mut run.obs).with_stamp_error(stamp_error_ns);
            run.fired()
        };
        assert_eq!(stale_after(5 * MS, 0), vec!["fencing-order"]);
        assert!(stale_after(5 * MS, 10 * MS).is_empty(), "the two writes may have been accepted the other way round");
        assert_eq!(stale_after(10 * MS, 10 * MS), vec!["fencing-order"]);
    }
}
