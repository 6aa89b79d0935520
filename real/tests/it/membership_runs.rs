//! Spares and membership changes played for real on leasesim-node: a spare
//! that starts passive, is added through the leader and then holds the log;
//! a voter that is removed and is asked for no vote after; and the same
//! file refused against etcd, with the reason, before anything starts.

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_judge::observe::{Event, Obs};
use leasesim_judge::vocab::Proc;
use serde_json::Value;

use crate::common;
use common::{data, real};

/// The index a server's state machine reached by this observation, if it
/// moved it (an applied entry, or a snapshot installed).
fn applied(o: &Obs) -> Option<u64> {
    match &o.event {
        Event::Server { event: ServerEvent::Applied { index, .. } | ServerEvent::SnapshotInstalled { index } } => Some(*index),
        _ => None,
    }
}

/// When the admin's answer whose action starts with `change` and ends
/// with `done` was recorded.
fn answered(obs: &[Obs], change: &str, done: &str) -> Option<u64> {
    obs.iter().find_map(|o| match &o.event {
        Event::Fault { action } if action.starts_with(change) && action.ends_with(done) => Some(o.at_ns),
        _ => None,
    })
}

#[test]
fn a_spare_added_for_real_holds_the_log_and_a_removed_voter_is_asked_for_no_vote() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let trace = dir.path().join("trace.jsonl");
    let out = real(&["run", &data("membership-short.toml"), "--json", "--trace", trace.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "the scenario expects safe: {v}");
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(faults.iter().any(|f| f.contains("add s4 (ask s")), "{faults:?}");
    let obs: Vec<Obs> = std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let added_at = answered(&obs, "AddServer(4) via s", "committed").unwrap_or_else(|| panic!("s4 was added: {faults:?}"));
    let removed_at = answered(&obs, "RemoveServer(1) via s", "in force").unwrap_or_else(|| panic!("s1 was removed: {faults:?}"));

    // The spare was passive until added: it neither led nor voted.
    let s4 = |o: &&Obs| o.proc == Proc::Server(4);
    let campaigned = |o: &&Obs| {
        matches!(o.event, Event::VoteGranted { .. } | Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { .. }) })
    };
    assert!(!obs.iter().filter(s4).filter(|o| o.at_ns < added_at).any(|o| campaigned(&o)), "s4 took part before it was added");
    // Then it holds the log: it applied every entry any member had applied
    // when s1's removal was answered (counted by index, not timed).
    let then = obs.iter().filter(|o| o.at_ns <= removed_at).filter_map(applied).max().expect("entries were applied");
    let s4_reached = obs.iter().filter(s4).filter_map(applied).max().unwrap_or(0);
    assert!(s4_reached >= then, "s4 reached index {s4_reached}, the cluster had applied {then} by s1's removal");

    // The leader crash after the removal forces an election in the new
    // configuration: votes are asked and granted, none of them by s1.
    let leaders_after: Vec<u64> = obs
        .iter()
        .filter(|o| o.at_ns > removed_at)
        .filter_map(|o| match o.event {
            Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term }) } => Some(term),
            _ => None,
        })
        .collect();
    assert!(!leaders_after.is_empty(), "no election after the removal");
    let votes_after = |server: u64| {
        obs.iter()
            .filter(|o| o.at_ns > removed_at && o.proc == Proc::Server(server))
            .filter(|o| matches!(o.event, Event::VoteGranted { term, .. } if leaders_after.contains(&term)))
            .count()
    };
    assert!(votes_after(2) + votes_after(3) + votes_after(4) > 0, "the remaining voters voted in terms {leaders_after:?}");
    assert_eq!(votes_after(1), 0, "s1 was removed, yet it voted in one of terms {leaders_after:?}");
    assert!(
        obs.iter().any(|o| matches!(&o.event, Event::Server { event: ServerEvent::Raft(RaftEvent::ConfigChanged { voters }) }
            if voters.iter().copied().eq([2, 3, 4]))),
        "the members logged the configuration s2, s3, s4"
    );
}

#[test]
fn spares_and_membership_changes_are_refused_against_etcd_with_the_reason() {
    let out = real(&["run", &data("membership-short.toml"), "--target", "etcd"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("membership-short.toml:9:1: leasesim-real --target etcd cannot play this: spare servers:"), "{stderr}");
    assert!(stderr.contains("`max_append_entries` / `max_in_flight_appends`"), "{stderr}");
    for line in [21, 25] {
        let at = format!("membership-short.toml:{line}:1: leasesim-real --target etcd cannot play this: a membership change:");
        assert!(stderr.contains(&at), "{at}\n{stderr}");
    }
    assert!(stderr.contains("a removed one stops for good"), "{stderr}");
}
