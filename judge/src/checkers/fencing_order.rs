//! `fencing-order`: the data store's accepted writes per key are in
//! non-decreasing token order (the Raft lock-service design; Kleppmann, "How to
//! do distributed locking"). Fires when an unfenced store takes a stale
//! holder's late write.

use std::collections::BTreeMap;

use super::{RunRecord, Violation};
use crate::observe::Event;

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let mut highest: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut violations = Vec::new();
    for o in run.obs {
        let Event::StoreAccepted { client, key, token } = &o.event else { continue };
        if let Some((top, by)) = highest.get(key.as_str()) {
            if token < top {
                violations.push(run.violation(
                    "fencing-order",
                    o.at_ns,
                    format!("the store accepted c{client}'s write to {key} with token {token} after c{by}'s with token {top}"),
                ));
                continue;
            }
        }
        highest.insert(key.clone(), (*token, *client));
    }
    violations
}

#[cfg(test)]
mod tests {
    use crate::checkers::testing::{Fixture, S};
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
}
