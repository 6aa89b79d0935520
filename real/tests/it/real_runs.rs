//! `leasesim-real run` end to end, on real processes: short scenarios from
//! `tests/data/` (each a few seconds of real time) against leasesim-node
//! and etcd, a violation found for real both ways (an unfenced holder
//! paused past its lease; a planted bug, caught from the clients' view and
//! from the members' own events), crash points played as failpoints (two
//! waiting in one member, each recorded under the entry that fired, and
//! a random-server one armed in all three that only the first to reach
//! it fires), pauses at a member's point (the member stops itself there
//! and the runner resumes it after `for`) with kv clients keeping several
//! operations open,
//! message-kind faults that really happen (on peer links and on the
//! runner's side of its clients), a client crashed and started afresh,
//! and bad input refused with its reason before anything starts.

use serde_json::Value;

use crate::common;
use common::{bundled, data, invariants, json, not_judged, real};

#[test]
fn a_short_scenario_with_crash_pause_and_partition_passes_on_leasesim_node() {
    let out = real(&["run", &data("short-mixed.toml"), "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!((v["verdict"].as_str(), v["target"].as_str(), v["expected"].as_bool()), (Some("ok"), Some("node"), Some(true)));
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(faults.len(), 3, "crash, pause and partition were all played: {faults:?}");
    assert!(faults[0].contains("crash leader=s") && faults[2].contains("partition s1 s2 s3"), "{faults:?}");
    assert!(v["observations"].as_u64().unwrap() > 100, "the clients saw something: {v}");
    // The members' own event logs feed the server-side invariants, their
    // end state (asked after the run) liveness, their final logs
    // durability and log matching, and the lock clients' own ids
    // release-by-owner: nothing is left unjudged.
    assert!(not_judged(&v).is_empty(), "{v}");
}

#[test]
fn an_unfenced_holder_paused_past_its_lease_is_found_for_real_and_drawn() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report_dir = dir.path().to_string_lossy().into_owned();
    let out = real(&["run", &data("holder-pause-unfenced-short.toml"), "--report", &report_dir]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The scenario expects fencing-order: finding it is the expected verdict.
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains(": violation —") && stdout.contains("fencing-order at"), "{stdout}");
    assert!(stdout.contains("pause holder:orders=c"), "the holder was paused: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let page_path = dir.path().join("real-holder-pause-unfenced-real-node-seed0.html");
    assert!(stderr.contains(&format!("report: {}", page_path.display())), "{stderr}");
    let page = std::fs::read_to_string(&page_path).expect("the timeline was written");
    // The timeline shows the run's violation, its fault and what it did.
    assert!(page.contains("<h2>Violations (") && page.contains("<b>fencing-order</b>"), "the violation is listed");
    assert!(page.contains("(its clock kept running)"), "the paused holder's lane shows the pause");
    assert!(page.contains("played for real on node members"), "the header says it was a real run");
    assert!(page.contains("leasesim-real run ") && page.contains("--seed 0"), "the page gives the command that plays it again");
}

#[test]
fn a_planted_bug_fails_a_safe_scenario_and_names_the_invariant() {
    let clean = real(&["run", &data("registry-leader-crash.toml"), "--json"]);
    let v = json(&clean);
    assert_eq!((clean.status.code(), invariants(&v)), (Some(0), vec![]), "{v}");
    let planted = real(&["run", &data("registry-leader-crash.toml"), "--json", "--bug", "follower-expires-leases"]);
    let v = json(&planted);
    assert_eq!(planted.status.code(), Some(1), "a safe scenario that fires an invariant fails: {v}");
    let fired = invariants(&v);
    assert!(fired.contains(&"lease-early-expiry"), "seen by the clients: {v}");
    // Followers end leases outside the log, and the leader still answers
    // keep-alives of them: only the members' own events show that.
    assert!(fired.contains(&"keepalive-after-revoke"), "seen in the members' event logs: {v}");
    // Not liveness: the restarted leader replays the log as a follower and
    // ends a lease on its own after the put that moved its key to a new
    // lease, which the judge once took for a kept key (`liveness.rs`).
    let allowed = ["lease-early-expiry", "replica-divergence", "keepalive-after-revoke"];
    assert!(fired.iter().all(|i| allowed.contains(i)), "{v}");
    assert_eq!(v["bugs"], serde_json::json!(["follower-expires-leases"]));
}

/// A crash point's entry in the run's fault list: (its number, the
/// member, the point), from "… crash leader=s2 armed at P (#0)",
/// "… crash random-server armed at P (#2)" (member `random-server`) or
/// "… crash s2 at P for 1s (failpoint #0)".
fn crash_entry(fault: &str) -> (u64, String, String) {
    let words: Vec<&str> = fault.split_whitespace().collect();
    let after = |w: &str| words[words.iter().position(|x| *x == w).unwrap() + 1];
    let member = after("crash").rsplit('=').next().unwrap().to_string();
    let point = if fault.contains(" armed at ") { words[words.iter().position(|x| *x == "armed").unwrap() + 2] } else { after("at") };
    let id = fault.rsplit('#').next().unwrap().trim_end_matches(')').parse().unwrap();
    (id, member, point.to_string())
}

#[test]
fn crash_points_wait_together_and_each_fires_under_its_own_entry() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace = dir.path().join("trace.jsonl");
    let keep = dir.path().join("run");
    let args = ["run", &data("crash-point-append-reply.toml"), "--json", "--trace", trace.to_str().unwrap(), "--keep-dir"];
    let out = real(&[&args[..], &[keep.to_str().unwrap()]].concat());
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let armed: Vec<_> = faults.iter().filter(|f| f.contains(" armed at ")).map(|f| crash_entry(f)).collect();
    let fired: Vec<_> = faults.iter().filter(|f| f.contains("(failpoint #")).map(|f| crash_entry(f)).collect();
    assert_eq!((armed.len(), fired.len()), (3, 3), "all armed, all reached: {faults:?}");
    // Each death is recorded under the entry that fired: its own point
    // and member (any member for random-server), never another entry's.
    for entry in &fired {
        let any = (entry.0, "random-server".to_string(), entry.2.clone());
        assert!(armed.contains(entry) || armed.contains(&any), "{entry:?} was not armed so: {faults:?}");
    }
    let ids: std::collections::BTreeSet<u64> = fired.iter().map(|e| e.0).collect();
    assert_eq!(ids.len(), 3, "each entry fired once: {faults:?}");
    if armed[0].1 == armed[1].1 {
        // Both in the leader (the usual case): the second, reached within a
        // heartbeat, fired alone; the first waited through the restart.
        let first_two: Vec<u64> = fired.iter().map(|e| e.0).filter(|id| *id < 2).collect();
        assert_eq!(first_two, [1, 0], "{faults:?}");
        assert!(faults.iter().any(|f| f.contains("after-send:append for 1s (failpoint #1)")), "{faults:?}");
    }
    let trace = std::fs::read_to_string(&trace).unwrap();
    let events: Vec<Value> = trace.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The random-server entry was armed in every member and fired in one
    // alone, though both followers reach it at once: no other named it.
    let shared = fired.iter().find(|e| e.0 == 2).expect("#2 fired");
    let mut named_2 = 0;
    for n in 1..=3 {
        let own = std::fs::read_to_string(keep.join(format!("s{n}.events.jsonl"))).unwrap();
        named_2 += own.lines().filter(|l| serde_json::from_str::<Value>(l).ok().is_some_and(|v| v["failpoint"]["id"] == 2)).count();
    }
    assert_eq!(named_2, 1, "one member died at the shared entry ({}): {faults:?}", shared.1);
    for n in 1..=3u64 {
        let member = &format!("s{n}");
        let ids = |of: &[(u64, String, String)]| of.iter().filter(|e| &e.1 == member).map(|e| e.0).collect::<Vec<_>>();
        // The member itself named each entry as it died, in its log and as
        // the last line of its event log, and the runner restarted it.
        let log = std::fs::read_to_string(keep.join(format!("{member}.log"))).unwrap();
        for id in ids(&fired) {
            assert!(log.contains(&format!("reached (armed entry {id}): SIGKILL")), "{log}");
        }
        let own = std::fs::read_to_string(keep.join(format!("{member}.events.jsonl"))).unwrap();
        let named: Vec<u64> = own.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()?["failpoint"]["id"].as_u64()).collect();
        assert_eq!(named, ids(&fired), "the runner recorded the entries {member} named, in order");
        let of_member = |kind: &str| events.iter().filter(|o| o["proc"]["Server"] == n && o["event"]["kind"] == kind).count();
        assert_eq!((of_member("crashed"), of_member("restarted")), (named.len(), named.len()), "{member}");
    }
}

#[test]
fn a_member_stops_itself_at_a_pause_point_and_is_resumed_under_its_entry() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace = dir.path().join("trace.jsonl");
    let keep = dir.path().join("run");
    let args = ["run", &data("pause-point.toml"), "--json", "--trace", trace.to_str().unwrap(), "--keep-dir"];
    let out = real(&[&args[..], &[keep.to_str().unwrap()]].concat());
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(not_judged(&v).is_empty() && invariants(&v).is_empty(), "{v}");
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let armed = faults.iter().filter(|f| f.contains(": pause ") && f.contains(" armed at ")).count();
    // "line 34: pause s2 at after-send:append for 1s (failpoint #0)"
    let fired: Vec<(String, u64)> = faults
        .iter()
        .filter(|f| f.contains(": pause s") && f.contains("(failpoint #"))
        .map(|f| {
            let member = f.split(": pause ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
            (member, f.rsplit('#').next().unwrap().trim_end_matches(')').parse().unwrap())
        })
        .collect();
    assert_eq!((armed, fired.len()), (2, 2), "both armed, both reached: {faults:?}");
    assert!(faults.iter().any(|f| f.contains("at after-send:append for 1s (failpoint #0)")), "{faults:?}");
    assert!(faults.iter().any(|f| f.contains("at after-sync for 500ms (failpoint #1)")), "{faults:?}");
    // The leader changed its own clock at its next timer, and said so.
    let armed_at = faults.iter().find(|f| f.contains(": clock leader=s") && f.contains(" armed at timer (#2)")).expect("armed");
    let leader = armed_at.split("leader=").nth(1).unwrap().split_whitespace().next().unwrap();
    assert!(faults.iter().any(|f| f.contains(&format!(": clock {leader} at timer (failpoint #2)"))), "{faults:?}");
    let own = std::fs::read_to_string(keep.join(format!("{leader}.events.jsonl"))).unwrap();
    let changed = own.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|l| l["failpoint"]["id"] == 2).count();
    assert_eq!(changed, 1, "one clock line, naming entry 2");
    let trace = std::fs::read_to_string(&trace).unwrap();
    let events: Vec<Value> = trace.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for n in 1..=3u64 {
        let member = format!("s{n}");
        let ids: Vec<u64> = fired.iter().filter(|(m, _)| *m == member).map(|(_, id)| *id).collect();
        // The member named each entry in its event log as it stopped, and
        // said in its log that it stopped and went on.
        let own = std::fs::read_to_string(keep.join(format!("{member}.events.jsonl"))).unwrap();
        let lines = own.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok());
        let named: Vec<u64> = lines.filter(|l| l["event"]["kind"] == "paused").map(|l| l["failpoint"]["id"].as_u64().unwrap()).collect();
        assert_eq!(named, ids, "the runner recorded the entries {member} named, in order");
        let log = std::fs::read_to_string(keep.join(format!("{member}.log"))).unwrap();
        for id in &ids {
            assert!(log.contains(&format!("reached (armed entry {id}): SIGSTOP")), "{log}");
            assert!(log.contains(&format!("(armed entry {id}): resumed")), "{log}");
        }
        let of_member = |kind: &str| events.iter().filter(|o| o["proc"]["Server"] == n && o["event"]["kind"] == kind).count();
        assert_eq!((of_member("paused"), of_member("resumed"), of_member("crashed")), (ids.len(), ids.len(), 0), "{member}");
    }
    // Several operations were open at once in some client: a call made
    // while an earlier one of that client had no return yet.
    let mut open: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    let mut overlapped = 0;
    for o in &events {
        let Some(client) = o["proc"]["Client"].as_u64() else { continue };
        match o["event"]["kind"].as_str() {
            Some("kv-call") => {
                let now = open.entry(client).or_default();
                overlapped += usize::from(*now > 0);
                *now += 1;
            }
            Some("kv-return") => {
                let now = open.entry(client).or_default();
                *now = now.saturating_sub(1);
            }
            _ => {}
        }
    }
    assert!(overlapped > 0, "no call was made with another open");
}

#[test]
fn message_kind_faults_really_happen_on_peer_links_and_on_the_clients_side() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace = dir.path().join("trace.jsonl");
    let out = real(&["run", &data("aimed-messages-short.toml"), "--json", "--trace", trace.to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    let faults: Vec<&str> = v["faults"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(faults.len() == 2 && faults[0].contains("messages append=drop") && faults[1].contains("keepalive-reply=drop"), "{faults:?}");
    let trace = std::fs::read_to_string(&trace).unwrap();
    let events: Vec<Value> = trace.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let within = |o: &&Value, lo_ms: u64, hi_ms: u64| (lo_ms * 1_000_000..hi_ms * 1_000_000).contains(&o["at_ns"].as_u64().unwrap());
    // Appends (heartbeats included) dropped from 1.5 s to 3.5 s: the
    // followers stop hearing their leader and elect others.
    let elected = events.iter().filter(|o| within(o, 1_500, 3_600) && o["event"]["event"]["Raft"]["BecameLeader"].is_object()).count();
    assert!(elected >= 1, "no election while every append was dropped: {trace}");
    // Keep-alive answers lost on the clients' side from 4 s to 6 s: the
    // members answered, no client acknowledged.
    let answered = events.iter().filter(|o| within(o, 4_050, 5_950) && o["event"]["event"]["KeepAliveAnswered"].is_object()).count();
    let acked = events.iter().filter(|o| within(o, 4_050, 5_950) && o["event"]["kind"] == "lease-acked").count();
    assert!(answered >= 1 && acked == 0, "{answered} keep-alives answered and {acked} acknowledged while answers were lost");
    assert!(v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("keepalive-reply drop is played on the runner's side")));
}

#[test]
fn a_crashed_client_goes_silent_and_restarts_with_a_fresh_lease() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace = dir.path().join("trace.jsonl");
    let out = real(&["run", &data("client-crash.toml"), "--json", "--trace", trace.to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    let trace = std::fs::read_to_string(&trace).unwrap();
    let c1: Vec<Value> = trace.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|o| o["proc"]["Client"] == 1).collect();
    let at = |kind: &str| c1.iter().filter(|o| o["event"]["kind"] == kind).map(|o| o["at_ns"].as_u64().unwrap()).collect::<Vec<_>>();
    let (crashed, restarted) = (at("crashed"), at("restarted"));
    assert!(crashed.len() == 1 && restarted.len() == 1 && restarted[0] >= crashed[0] + 900_000_000, "{crashed:?} {restarted:?}");
    // Dead in between: neither its worker nor its lease keeper did anything
    // (its belief ended with the crash, as the simulator records it).
    let between: Vec<&Value> = c1.iter().filter(|o| (crashed[0] + 1..restarted[0]).contains(&o["at_ns"].as_u64().unwrap())).collect();
    assert!(between.iter().all(|o| o["event"]["kind"] == "belief-ended" && o["event"]["why"] == "crashed"), "{between:?}");
    // Its memory is gone: the fresh client grants itself a new lease.
    let lease = |o: &&Value| o["event"]["kind"] == "lease-acked" && o["event"]["keepalive"] == false;
    let grants: Vec<&Value> = c1.iter().filter(lease).collect();
    let before = grants.iter().rev().find(|o| o["at_ns"].as_u64() < Some(crashed[0])).expect("a lease before the crash");
    let after = grants.iter().find(|o| o["at_ns"].as_u64() > Some(restarted[0])).expect("a lease after the restart");
    assert_ne!(before["event"]["lease"], after["event"]["lease"], "{grants:?}");
}

#[test]
fn a_short_scenario_passes_on_etcd() {
    let out = real(&["run", &data("etcd-short.toml"), "--target", "etcd", "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!((v["verdict"].as_str(), v["target"].as_str()), (Some("ok"), Some("etcd")));
    assert_eq!(v["faults"].as_array().unwrap().len(), 2, "{v}");
    let needs = v["not_judged"][0]["needs"].as_str().unwrap();
    assert!(needs.contains("etcd members do not report"), "{needs}");
    assert_eq!(not_judged(&v).len(), 14, "etcd reports no events of its own: {v}");
}

fn refused(args: &[&str]) -> String {
    let out = real(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?} must be refused; stderr: {stderr}");
    assert!(out.stdout.is_empty(), "nothing ran: {}", String::from_utf8_lossy(&out.stdout));
    stderr
}

#[test]
fn bad_input_is_refused_with_its_reason() {
    let node = refused(&["run", &data("short-mixed.toml"), "--node-bin", "/no/such/leasesim-node"]);
    assert!(node.contains("--node-bin /no/such/leasesim-node: no such file"), "{node}");
    let missing = refused(&["run", "no-such-file.toml"]);
    assert!(missing.contains("no-such-file.toml"), "{missing}");
    let target = refused(&["run", &data("etcd-short.toml"), "--target", "zookeeper"]);
    assert!(target.contains("zookeeper") && target.contains("etcd"), "{target}");
    let partition = refused(&["run", &data("short-mixed.toml"), "--target", "etcd"]);
    assert!(partition.contains("short-mixed.toml:43:1:") && partition.contains("`partition`: etcd dials"), "{partition}");
    let clock = refused(&["run", &bundled("leader-clock-too-fast.toml"), "--target", "etcd"]);
    assert!(clock.contains("leader-clock-too-fast.toml:23:1:") && clock.contains("etcd (Go) reads the kernel's clock"), "{clock}");
    // On leasesim-node every seed of 0..20 plays (pauses at a client's
    // point too); on etcd seed 1's server points and link faults do not.
    let chaos = refused(&["run", &bundled("chaos-failover.toml"), "--seed", "1", "--target", "etcd"]);
    // A [chaos] draw is played for real; what the seed drew that a real
    // cluster cannot play is refused at the [chaos] table's line.
    let chaos_line = std::fs::read_to_string(bundled("chaos-failover.toml")).unwrap().lines().position(|l| l == "[chaos]").unwrap() + 1;
    assert!(chaos.contains(&format!("chaos-failover.toml:{chaos_line}:1:")) && chaos.contains("(drawn for seed 1)"), "{chaos}");
    let bug = refused(&["run", &data("etcd-short.toml"), "--bug", "no-such-bug"]);
    assert!(bug.contains("--bug no-such-bug"), "{bug}");
    let point = refused(&["run", &data("crash-point-append-reply.toml"), "--target", "etcd"]);
    assert!(point.contains("crash-point-append-reply.toml:35:1:") && point.contains("without gofail failpoints"), "{point}");
}
