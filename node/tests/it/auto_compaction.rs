//! etcd's auto-compaction flags on leasesim-node: `revision` mode keeps
//! the history to the last R revisions, counted in writes (no clock);
//! `periodic` mode compacts at the revision of one period ago, driven
//! through the member's own monotonic clock, run 60 times fast through the
//! test control endpoint so a one-minute period passes in about a second;
//! bad flag values are refused at start with etcd's errors.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, http_when_up, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};
use tonic::transport::Channel;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

async fn put(kv: &mut KvClient<Channel>, key: &str, value: &str) -> i64 {
    let req = PutRequest { key: key.into(), value: value.into(), ..Default::default() };
    kv.put(req).await.expect("put").into_inner().header.expect("header").revision
}

/// A read of every key at `revision`: Ok, or the gRPC error's message.
async fn read_at(kv: &mut KvClient<Channel>, revision: i64) -> Result<(), String> {
    let req = RangeRequest { key: vec![0], range_end: vec![0], revision, ..Default::default() };
    kv.range(req).await.map(|_| ()).map_err(|s| s.message().to_string())
}

const COMPACTED: &str = "etcdserver: mvcc: required revision has been compacted";

/// Polls until a read at `revision` is refused as compacted (the leader
/// proposes compactions on its own; this waits for one to apply).
async fn wait_compacted(kv: &mut KvClient<Channel>, revision: i64) {
    let give_up = Instant::now() + Duration::from_secs(30);
    while read_at(kv, revision).await.is_ok() {
        assert!(Instant::now() < give_up, "revision {revision} still readable after 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn revision_mode_keeps_the_last_r_revisions_after_n_writes() {
    const RETENTION: i64 = 10;
    let mut cluster = ProcessCluster::start_with(1, &["--auto-compaction-mode", "revision", "--auto-compaction-retention", "10"]);
    cluster.wait_for_leader();
    runtime().block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        let first = put(&mut kv, "k", "0").await;
        let mut last = first;
        for i in 1..200 {
            last = put(&mut kv, &format!("k{}", i % 7), &i.to_string()).await;
        }
        // Retention R: the leader compacts at (revision - R) as writes go
        // by; once idle the store is compacted at exactly last - R.
        wait_compacted(&mut kv, last - RETENTION - 1).await;
        let error = read_at(&mut kv, first).await.expect_err("the first write's revision is compacted");
        assert_eq!(error, COMPACTED);
        read_at(&mut kv, last - RETENTION).await.expect("the last R revisions stay readable");
        read_at(&mut kv, last).await.expect("the current revision is readable");
    });
}

#[test]
fn periodic_mode_compacts_at_the_revision_of_one_period_ago_on_the_members_clock() {
    let control = free_port();
    let control_url = format!("http://127.0.0.1:{control}");
    let mut cluster = ProcessCluster::start_with(1, &["--auto-compaction-retention", "1m", "--unsafe-test-control-url", &control_url]);
    cluster.wait_for_leader();
    runtime().block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        let first = put(&mut kv, "k", "1").await;
        let last = put(&mut kv, "k", "2").await;
        // One minute of the member's clock has not passed: nothing compacted.
        read_at(&mut kv, first).await.expect("no compaction within the first period");
        let (code, body) = http_when_up(control, "POST", "/clock", r#"{"monotonic": {"rate": 60.0}}"#);
        assert_eq!(code, 200, "{body}");
        // The compactor samples the revision every 6 s of the member's
        // clock and, a period after it started, compacts at the sample
        // taken a period before: `last`, once no write came since.
        wait_compacted(&mut kv, last - 1).await;
        assert_eq!(read_at(&mut kv, first).await, Err(COMPACTED.to_string()));
        read_at(&mut kv, last).await.expect("the sampled revision itself stays readable");
    });
}

/// Starts leasesim-node with `flags` and returns (exit code, stderr).
fn refused(flags: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
        .arg("--data-dir")
        .arg(dir.path().join("d"))
        .args(["--listen-client-urls", &format!("http://127.0.0.1:{}", free_port())])
        .args(["--listen-peer-urls", &format!("http://127.0.0.1:{}", free_port())])
        .args(flags)
        .output()
        .expect("run leasesim-node");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_auto_compaction_flags_are_refused_with_etcds_errors() {
    let (code, err) = refused(&["--auto-compaction-mode", "hourly", "--auto-compaction-retention", "1"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("unknown auto-compaction-mode \"hourly\""), "{err}");
    for (mode, retention) in [("periodic", "abc"), ("periodic", "-1"), ("revision", "5m")] {
        let (code, err) = refused(&["--auto-compaction-mode", mode, "--auto-compaction-retention", retention]);
        assert_ne!(code, Some(0), "{mode} {retention}");
        assert!(err.contains("error parsing CompactionRetention"), "{mode} {retention}: {err}");
    }
}
