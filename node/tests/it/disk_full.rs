//! A full disk, for real: one member of a 3-member cluster is moved onto a
//! small tmpfs whose space a ballast file takes, and puts go on until its
//! log write fails with ENOSPC. It must then give up its reserve, raise
//! etcd's NOSPACE alarm through the log, and every member must refuse
//! writes with etcd's error while serving reads. Disarming while the disk
//! is still full raises the alarm again; once the ballast is gone, `alarm
//! disarm` clears it for good and writes work on every member.
//!
//! Mounting needs root (as in CI). Elsewhere the test says why and passes;
//! under CI it must run. The quota path is tested in `disk_quota.rs`.

use crate::common;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{have_etcdctl, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::PutRequest;
use leasesim_node::storage::space::RESERVE_BYTES;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).output().ok()?;
        if out.status.success() {
            return Some(Mount(dir.to_path_buf()));
        }
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "cannot mount a tmpfs under CI (it runs as root): {why}");
        eprintln!("skipping the full-disk test: mounting a tmpfs needs root ({why})");
        None
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills `dir`'s filesystem with a ballast file, then gives back `leave`
/// bytes of it.
fn ballast(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("ballast");
    let mut file = File::create(&path).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    let mut written = 0u64;
    while file.write_all(&chunk).is_ok() {
        written += chunk.len() as u64;
    }
    let _ = file.flush();
    file.set_len(written.saturating_sub(leave)).unwrap();
    path
}

fn last_line(out: &std::process::Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string()
}

/// Polls `alarm list` on member `i` until it answers `want`.
fn wait_for_alarms(cluster: &ProcessCluster, i: usize, want: &str) {
    let started = Instant::now();
    loop {
        let got = last_line(&cluster.etcdctl(&cluster.endpoint(i), &["alarm", "list"]));
        if got == want {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "member {i}'s alarm list stayed `{got}`, not `{want}`");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until member `i` answers and has written its whole 1 MiB reserve
/// in `dir`.
fn wait_until_serving(cluster: &ProcessCluster, i: usize, dir: &Path) {
    let started = Instant::now();
    let reserve = dir.join("space.reserve");
    loop {
        let written = fs::metadata(&reserve).map_or(0, |m| m.len());
        if cluster.status(i).is_some() && written == RESERVE_BYTES {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "member {i} did not answer with its reserve written ({written} bytes)");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_full_disk_raises_nospace_cluster_wide_until_space_returns_and_it_is_disarmed() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    // Member s2 moves, with its data, onto an 8 MiB tmpfs.
    let full = 1;
    cluster.kill(full);
    let dir = cluster.data_dir(full);
    let aside = cluster.dir.path().join("aside");
    fs::rename(&dir, &aside).unwrap();
    fs::create_dir(&dir).unwrap();
    let Some(_mount) = Mount::tmpfs(&dir, "8m") else {
        return;
    };
    for entry in fs::read_dir(&aside).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    cluster.launch(full);
    cluster.wait_for_leader();
    // The ballast must not race the member's start: a disk filling while it
    // writes its reserve raises the alarm at once, and the ballast's trim
    // then clears it before any put (seen in CI).
    wait_until_serving(&cluster, full, &dir);
    let ballast = ballast(&dir, 1_500_000);

    // 100 kB puts until the cluster refuses one.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let refused = runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(0)).await);
        for n in 0..60 {
            let put = PutRequest { key: format!("k{n:02}").into(), value: vec![b'a'; 100_000], ..Default::default() };
            if let Err(status) = kv.put(put).await {
                return Some(format!("{:?}: {}", status.code(), status.message()));
            }
        }
        None
    });
    assert_eq!(refused.as_deref(), Some("ResourceExhausted: etcdserver: mvcc: database space exceeded"));
    let alarm = "memberID:2 alarm:NOSPACE";
    for i in 0..3 {
        wait_for_alarms(&cluster, i, alarm);
        let ep = cluster.endpoint(i);
        assert_eq!(last_line(&cluster.etcdctl(&ep, &["put", "small", "v"])), "Error: etcdserver: mvcc: database space exceeded");
        assert_eq!(last_line(&cluster.etcdctl(&ep, &["get", "k00", "--keys-only"])), "k00", "reads go on at member {i}");
    }
    assert!(cluster.running(full), "the member whose disk filled died; see {}", cluster.log_path(full).display());

    // Disarmed while the disk is still full: raised again.
    assert_eq!(last_line(&cluster.etcdctl(&cluster.endpoint(0), &["alarm", "disarm"])), alarm);
    wait_for_alarms(&cluster, 2, alarm);

    // Space returns; disarm clears it for good.
    fs::remove_file(ballast).unwrap();
    assert_eq!(last_line(&cluster.etcdctl(&cluster.endpoint(0), &["alarm", "disarm"])), alarm);
    std::thread::sleep(Duration::from_secs(2));
    for i in 0..3 {
        wait_for_alarms(&cluster, i, "");
        assert_eq!(last_line(&cluster.etcdctl(&cluster.endpoint(i), &["put", "small", &format!("v{i}")])), "OK");
    }
    assert!(dir.join("space.reserve").exists(), "the member took its reserve back");
    assert!(cluster.running(full));
}
