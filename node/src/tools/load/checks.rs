//! What `leasesim-node load` judges after a run, with the simulator's own
//! rules, so a real cluster (leasesim-node or etcd) is held to what the
//! simulator holds the engine to:
//!
//! - `linearizable`: the `kv` history, by leasesim's checker
//!   (`leasesim-history`, the one behind `leasesim check-history` and the
//!   simulator's invariant of that name);
//! - `token-monotonic` / `fencing-order`: no fencing token handed to two
//!   lock grants, and none accepted by the data store from two holders;
//! - `lease-early-expiry`: no registry lease seen gone before its last
//!   renewal's send time plus its TTL (`registry.rs`).
//!
//! Each check returns the lines it prints and whether it failed.

use std::collections::BTreeMap;

use leasesim_history::{check_kv, CheckOptions, History, Verdict};

use super::registry::Episode;

/// A check's outcome: what to print, and the violation if there is one.
pub struct Judged {
    pub lines: Vec<String>,
    pub violation: Option<String>,
}

pub fn linearizable(history: &History) -> Judged {
    let report = match check_kv(history, &CheckOptions::default()) {
        Ok(report) => report,
        Err(e) => return Judged { lines: Vec::new(), violation: Some(format!("linearizable: the recorded history is malformed: {e}")) },
    };
    let what = format!("{} operations, {} independent parts", report.operations, report.partitions);
    match report.verdict {
        Verdict::Linearizable => Judged { lines: vec![format!("check linearizable: ok ({what})")], violation: None },
        Verdict::Unknown => Judged {
            lines: vec![format!(
                "check linearizable: unknown, the step budget ran out ({what}); check the --history file with `leasesim check-history`"
            )],
            violation: None,
        },
        Verdict::NotLinearizable { window } => {
            let ops: Vec<String> = window.iter().map(|i| format!("{:?}", history.ops[*i])).collect();
            Judged {
                lines: Vec::new(),
                violation: Some(format!(
                    "linearizable: these {} operations cannot all have happened as recorded:\n  {}",
                    ops.len(),
                    ops.join("\n  ")
                )),
            }
        }
    }
}

/// `grants`: (worker, token) of every successful Lock; `accepted`: (worker,
/// token) of every write the data store accepted.
pub fn fencing(grants: &[(u64, u64)], accepted: &[(u64, u64)]) -> Judged {
    let mut lines = Vec::new();
    let mut violation = None;
    let mut granted_to: BTreeMap<u64, u64> = BTreeMap::new();
    let mut twice = 0;
    for (worker, token) in grants {
        if granted_to.insert(*token, *worker).is_some() {
            twice += 1;
            violation.get_or_insert(format!("token-monotonic: token {token} was handed to two lock grants"));
        }
    }
    lines.push(format!("check token-monotonic: {} grants, {} distinct tokens, {twice} handed out twice", grants.len(), granted_to.len()));
    if !accepted.is_empty() {
        let mut holder: BTreeMap<u64, u64> = BTreeMap::new();
        let mut shared_tokens = 0;
        for (worker, token) in accepted {
            if holder.insert(*token, *worker).is_some_and(|other| other != *worker) {
                shared_tokens += 1;
                violation.get_or_insert(format!("fencing-order: the data store accepted token {token} from two holders"));
            }
        }
        lines.push(format!(
            "check fencing-order: {} accepted writes, {shared_tokens} with a token another holder also wrote with",
            accepted.len()
        ));
    }
    Judged { lines, violation }
}

pub fn lease_lifetimes(episodes: &[Episode]) -> Judged {
    let early: Vec<&Episode> = episodes.iter().filter(|e| e.ended_early()).collect();
    let mut after_renewal_ms: Vec<f64> =
        episodes.iter().filter_map(|e| e.ended_seen_ns.map(|seen| (seen - e.renewed_send_ns.min(seen)) as f64 / 1e6)).collect();
    after_renewal_ms.sort_by(f64::total_cmp);
    let unseen = episodes.len() - after_renewal_ms.len();
    let ttl_s = episodes.first().map_or(0.0, |e| e.ttl_ns as f64 / 1e9);
    let figure = match (after_renewal_ms.first(), after_renewal_ms.last()) {
        (Some(min), Some(max)) => {
            let p50 = after_renewal_ms[after_renewal_ms.len() / 2];
            format!("removed {min:.0} / {p50:.0} / {max:.0} ms (min / p50 / max) after the last renewal was sent, TTL {ttl_s} s")
        }
        _ => "no removal seen".to_string(),
    };
    let lines = vec![format!(
        "check lease-early-expiry: {} leases outlived their holder; {figure}; {} never seen removed; {} ended early",
        episodes.len(),
        unseen,
        early.len()
    )];
    let violation = early.first().map(|e| {
        format!(
            "lease-early-expiry: lease {} of registry worker {} was seen gone {} ms after its last renewal was sent, before its TTL of {ttl_s} s",
            e.lease,
            e.worker,
            (e.ended_seen_ns.unwrap_or_default() - e.renewed_send_ns) / 1_000_000
        )
    });
    Judged { lines, violation }
}

#[cfg(test)]
mod tests {
    use leasesim_history::{KvInput, KvOutput, Operation};

    use super::*;

    fn op(client: u64, call_ns: u64, return_ns: u64, input: KvInput, output: KvOutput) -> Operation {
        Operation { client, call_ns, return_ns: Some(return_ns), input, output: Some(output) }
    }

    #[test]
    fn a_stale_read_after_a_write_returned_is_not_linearizable() {
        let put = KvInput::Put { key: "k".into(), value: "1".into(), lease: None };
        let get = KvInput::Get { key: "k".into() };
        let good =
            History { ops: vec![op(1, 0, 10, put.clone(), KvOutput::Ok), op(2, 20, 30, get.clone(), KvOutput::Value(Some("1".into())))] };
        assert!(linearizable(&good).violation.is_none());
        let stale = History { ops: vec![op(1, 0, 10, put, KvOutput::Ok), op(2, 20, 30, get, KvOutput::Value(None))] };
        let judged = linearizable(&stale);
        assert!(judged.violation.as_deref().is_some_and(|v| v.starts_with("linearizable:")), "{:?}", judged.violation);
    }

    #[test]
    fn a_token_given_twice_or_accepted_from_two_holders_is_a_violation() {
        assert!(fencing(&[(1, 10), (2, 11)], &[(1, 10), (1, 10), (2, 11)]).violation.is_none());
        let twice = fencing(&[(1, 10), (2, 10)], &[]);
        assert!(twice.violation.as_deref().is_some_and(|v| v.starts_with("token-monotonic")), "{:?}", twice.violation);
        let shared = fencing(&[(1, 10), (2, 11)], &[(1, 11), (2, 11)]);
        assert!(shared.violation.as_deref().is_some_and(|v| v.starts_with("fencing-order")), "{:?}", shared.violation);
    }

    #[test]
    fn a_lease_seen_gone_early_fails_the_lifetime_check() {
        let episode =
            |seen| Episode { worker: 1, lease: 7, renewed_send_ns: 1_000_000_000, ended_seen_ns: Some(seen), ttl_ns: 5_000_000_000 };
        assert!(lease_lifetimes(&[episode(6_200_000_000)]).violation.is_none());
        let early = lease_lifetimes(&[episode(6_200_000_000), episode(5_900_000_000)]);
        assert!(early.violation.as_deref().is_some_and(|v| v.contains("seen gone 4900 ms after")), "{:?}", early.violation);
    }
}
