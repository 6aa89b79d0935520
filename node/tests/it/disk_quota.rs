//! etcd's NOSPACE alarm from `--quota-backend-bytes`, side by side: the
//! same etcdctl session against real etcd 3.4 and against leasesim-node,
//! each a single member started with `--quota-backend-bytes 300000`. Large
//! puts fill the backend until one is refused; then both must answer the
//! same: `alarm list` shows the member's NOSPACE alarm, a put and a lease
//! grant are refused with etcd's error, reads and deletes still work, and
//! after deleting the keys, compacting, defragmenting and `alarm disarm`
//! writes work again. Member ids differ between the two (etcd's are
//! random), so they are compared as `<id>`; ports likewise.

use crate::common;

use std::process::Output;

use common::{have_etcd, have_etcdctl, Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::PutRequest;

const QUOTA: &str = "300000";
const VALUE_BYTES: usize = 100_000;

/// etcdctl's answer: its last line (the client logs retries as JSON lines
/// before an error), member ids and ports masked.
fn answer(o: &Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string();
    mask(&last)
}

fn mask(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, digits) = rest.split_at(at);
        let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
        out.push_str(before);
        let masked = out.ends_with("memberID:") || out.ends_with("127.0.0.1:");
        out.push_str(if masked { "<id>" } else { &digits[..end] });
        rest = &digits[end..];
    }
    out.push_str(rest);
    out
}

/// One session; returns each command with its (masked) answer.
fn session(kind: Kind) -> Vec<(String, String)> {
    let mut cluster = ProcessCluster::start_kind_with(kind, 1, &["--quota-backend-bytes", QUOTA, "--snapshot-count", "4"]);
    cluster.wait_for_leader();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Fill: 100 kB puts until the quota refuses one.
    let refused = runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        for n in 0..40 {
            let put = PutRequest { key: format!("k{n:02}").into(), value: vec![b'a'; VALUE_BYTES], ..Default::default() };
            if let Err(status) = kv.put(put).await {
                return Some(format!("{:?}: {}", status.code(), status.message()));
            }
        }
        None
    });
    let mut log = vec![("(100 kB puts until one is refused)".to_string(), refused.unwrap_or_else(|| "never refused".into()))];
    let endpoint = cluster.endpoint(0);
    let mut ctl = |args: &[&str]| {
        let out = cluster.etcdctl(&endpoint, args);
        log.push((format!("etcdctl {}", args.join(" ")), answer(&out)));
    };
    ctl(&["alarm", "list"]);
    ctl(&["put", "small", "v"]);
    ctl(&["lease", "grant", "10"]);
    ctl(&["get", "k00", "--keys-only"]);
    ctl(&["del", "k00"]);
    // Make room: delete the rest, compact, defragment, disarm.
    let _ = cluster.etcdctl(&endpoint, &["del", "--prefix", "k"]);
    let status = cluster.etcdctl(&endpoint, &["get", "small", "-w", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("get -w json");
    let revision = json["header"]["revision"].as_i64().expect("a revision").to_string();
    let _ = cluster.etcdctl(&endpoint, &["compact", &revision]);
    let mut ctl = |args: &[&str]| {
        let out = cluster.etcdctl(&endpoint, args);
        log.push((format!("etcdctl {}", args.join(" ")), answer(&out)));
    };
    ctl(&["defrag"]);
    ctl(&["alarm", "disarm"]);
    ctl(&["alarm", "list"]);
    ctl(&["put", "small", "v"]);
    ctl(&["get", "small", "--print-value-only"]);
    log
}

#[test]
fn quota_exhaustion_raises_nospace_as_etcd_does() {
    if !have_etcdctl() {
        return;
    }
    let ours = session(Kind::Leasesim);
    let theirs = if have_etcd() { Some(session(Kind::Etcd)) } else { None };
    for (i, (command, answer)) in ours.iter().enumerate() {
        let etcd = theirs.as_ref().map_or("(etcd not run)", |t| t[i].1.as_str());
        eprintln!("{command}\n    leasesim-node: {answer}\n    etcd 3.4:      {etcd}");
    }
    let expected = [
        "ResourceExhausted: etcdserver: mvcc: database space exceeded",
        "memberID:<id> alarm:NOSPACE",
        "Error: etcdserver: mvcc: database space exceeded",
        "Error: failed to grant lease (etcdserver: mvcc: database space exceeded)",
        "k00",
        "1",
        "Finished defragmenting etcd member[127.0.0.1:<id>]",
        "memberID:<id> alarm:NOSPACE",
        "",
        "OK",
        "v",
    ];
    let answers: Vec<&str> = ours.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(answers, expected, "leasesim-node's session: {ours:#?}");
    if let Some(theirs) = theirs {
        assert_eq!(ours, theirs, "leasesim-node and etcd answered differently");
    }
}

#[test]
fn masking_keeps_what_is_compared() {
    assert_eq!(mask("memberID:1234 alarm:NOSPACE"), "memberID:<id> alarm:NOSPACE");
    assert_eq!(mask("member[127.0.0.1:2379] 12"), "member[127.0.0.1:<id>] 12");
}
