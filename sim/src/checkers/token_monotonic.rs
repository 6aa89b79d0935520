//! `token-monotonic`: each grant of a key carries a larger fencing token
//! than every earlier grant of it (seed 001: the token is the revision of
//! the grant, so it grows across leader changes and restarts).

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;

use super::facts::server_events;
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    // Grants in log order (deduplicated: every server applies each one).
    let mut grants: BTreeMap<(u64, &str), (u64, u64, u64)> = BTreeMap::new();
    for (at_ns, _, event) in server_events(run.obs) {
        if let ServerEvent::LockGranted { key, client, token, index, .. } = event {
            grants.entry((*index, key.as_str())).or_insert((at_ns, *client, *token));
        }
    }
    let mut highest: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut violations = Vec::new();
    for ((index, key), (at_ns, client, token)) in grants {
        if let Some((top, top_index)) = highest.get(key) {
            if token <= *top {
                violations.push(run.violation(
                    "token-monotonic",
                    at_ns,
                    format!("{key} granted to c{client} at index {index} with token {token}, not above token {top} granted at index {top_index}"),
                ));
            }
        }
        let entry = highest.entry(key).or_insert((token, index));
        if token > entry.0 {
            *entry = (token, index);
        }
    }
    violations
}
