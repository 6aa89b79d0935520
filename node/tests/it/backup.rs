//! Backup and restore in etcd's style: `etcdctl snapshot save` from one
//! member under a write load, `leasesim-node snapshot restore` into a fresh
//! 3-member cluster, and every key compared; a lease survives the restore
//! with its keys and its full TTL, as it does on etcd 3.4 (checked side by
//! side with real etcd: etcd's restore keeps leases, and its new leader
//! renews them to their whole TTL).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, have_etcd, have_etcdctl, ProcessCluster};
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};

/// Processes this test started, killed when dropped (a failed assertion
/// included).
struct Procs(Vec<std::process::Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// (value, mod_revision) of every key, read from `url`.
fn all_keys(url: &str) -> BTreeMap<String, (String, i64)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut client = KvClient::new(common::channel(url).await);
        let all = client.range(RangeRequest { key: vec![0], range_end: vec![0], ..Default::default() }).await.expect("range").into_inner();
        all.kvs
            .into_iter()
            .map(|kv| (String::from_utf8(kv.key).unwrap(), (String::from_utf8(kv.value).unwrap(), kv.mod_revision)))
            .collect()
    })
}

/// Writes `load-{n}` keys through `url` until stopped.
async fn load(url: String, stop: Arc<AtomicBool>) -> usize {
    let mut client = KvClient::new(common::channel(&url).await);
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let put = PutRequest { key: format!("load-{n:06}").into(), value: n.to_string().into(), ..Default::default() };
        if client.put(put).await.is_ok() {
            n += 1;
        }
    }
    n
}

/// Restores `file` into three new data directories under `dir` and starts
/// them; returns the processes, their client URLs and the restore's output.
fn restore_cluster(file: &Path, dir: &Path) -> (Procs, Vec<String>, String) {
    let peers: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let initial = (0..3).map(|i| format!("r{}=http://127.0.0.1:{}", i + 1, peers[i])).collect::<Vec<_>>().join(",");
    let mut said = String::new();
    let (mut children, mut urls) = (Procs(Vec::new()), Vec::new());
    for (i, peer) in peers.iter().enumerate() {
        let name = format!("r{}", i + 1);
        let out = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
            .args(["snapshot", "restore"])
            .arg(file)
            .args(["--name", &name, "--data-dir"])
            .arg(dir.join(&name))
            .args(["--initial-cluster", &initial, "--initial-cluster-token", "restored"])
            .output()
            .unwrap();
        assert!(out.status.success(), "restore: {}", String::from_utf8_lossy(&out.stderr));
        said = String::from_utf8_lossy(&out.stdout).into_owned();
        let client = free_port();
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
            .args(["--name", &name, "--data-dir"])
            .arg(dir.join(&name))
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args(["--listen-client-urls", &format!("http://127.0.0.1:{client}")])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        children.0.push(child);
        urls.push(format!("http://127.0.0.1:{client}"));
    }
    (children, urls, said)
}

/// The number after `word` in `text` ("revision 812" → 812).
fn number_after(text: &str, word: &str) -> i64 {
    let at = text.find(word).unwrap_or_else(|| panic!("`{word}` in {text}")) + word.len();
    text[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn a_backup_taken_under_load_restores_every_key_into_a_new_cluster() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    let lease = cluster.ctl_ok(&["lease", "grant", "600"]);
    let lease = lease.split_whitespace().nth(1).unwrap().to_string();
    cluster.ctl_ok(&["put", "leased", "v", &format!("--lease={lease}")]);

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = runtime.spawn(load(cluster.url(0), stop.clone()));
    std::thread::sleep(Duration::from_secs(2));
    let file = cluster.dir.path().join("backup.db");
    let saved = cluster.etcdctl(&cluster.endpoint(1), &["snapshot", "save", file.to_str().unwrap()]);
    assert!(saved.status.success(), "snapshot save: {}", String::from_utf8_lossy(&saved.stderr));
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let written = runtime.block_on(writer).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let source = all_keys(&cluster.url(1));

    let restored_dir = tempfile::tempdir().unwrap();
    let (children, urls, said) = restore_cluster(&file, restored_dir.path());
    let revision = number_after(&said, "revision");
    let restored = all_keys(&urls[2]);
    drop(children);

    // Exactly the keys the source held at the backup's revision.
    let expected: BTreeMap<_, _> = source.into_iter().filter(|(_, (_, rev))| *rev <= revision).collect();
    eprintln!("{written} writes during the backup; {} keys restored at revision {revision}", restored.len());
    assert!(expected.len() > 10 && expected.len() < written, "the backup was taken in the middle of the load");
    assert_eq!(restored, expected, "every key, value and revision restored as of the backup");
    assert!(restored.contains_key("leased"));
}

/// `lease timetolive ID --keys` output, the remaining seconds masked.
fn lease_line(out: &str) -> String {
    let line = out.lines().next().unwrap_or_default().to_string();
    match (line.find("remaining("), line.find("s), attached")) {
        (Some(a), Some(b)) => format!("{}remaining(_{}", &line[..a], &line[b..]),
        _ => line,
    }
}

fn etcd_restore_and_start(file: &Path, dir: &Path) -> (std::process::Child, String) {
    let (peer, client) = (free_port(), free_port());
    let peer_url = format!("http://127.0.0.1:{peer}");
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["snapshot", "restore"])
        .arg(file)
        .args(["--name", "r1", "--data-dir"])
        .arg(dir.join("r1"))
        .args(["--initial-cluster", &format!("r1={peer_url}"), "--initial-advertise-peer-urls", &peer_url])
        .output()
        .unwrap();
    assert!(out.status.success(), "etcdctl snapshot restore: {}", String::from_utf8_lossy(&out.stderr));
    let client_url = format!("http://127.0.0.1:{client}");
    let child = Command::new("etcd")
        .args(["--name", "r1", "--data-dir"])
        .arg(dir.join("r1"))
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args(["--listen-client-urls", &client_url, "--advertise-client-urls", &client_url])
        .args(["--initial-cluster", &format!("r1={peer_url}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("etcd.log")).unwrap())
        .spawn()
        .unwrap();
    (child, format!("127.0.0.1:{client}"))
}

#[test]
fn a_lease_survives_a_restore_with_its_keys_as_on_etcd() {
    if !have_etcdctl() || !have_etcd() {
        return;
    }
    let mut seen = Vec::new();
    for kind in [common::Kind::Leasesim, common::Kind::Etcd] {
        let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
        cluster.wait_for_leader();
        let granted = cluster.ctl_ok(&["lease", "grant", "600"]);
        let lease = granted.split_whitespace().nth(1).unwrap().to_string();
        cluster.ctl_ok(&["put", "held", "v", &format!("--lease={lease}")]);
        let file = cluster.dir.path().join("backup.db");
        cluster.ctl_ok(&["snapshot", "save", file.to_str().unwrap()]);
        cluster.kill(0);

        let dir = tempfile::tempdir().unwrap();
        let (children, endpoint) = match kind {
            common::Kind::Leasesim => {
                let (children, urls, _) = restore_cluster(&file, dir.path());
                (children, urls[0].trim_start_matches("http://").to_string())
            }
            common::Kind::Etcd => {
                let (child, endpoint) = etcd_restore_and_start(&file, dir.path());
                (Procs(vec![child]), endpoint)
            }
        };
        let started = Instant::now();
        let answer = loop {
            let out = cluster.etcdctl(&endpoint, &["lease", "timetolive", &lease, "--keys"]);
            if out.status.success() {
                break String::from_utf8_lossy(&out.stdout).replace(&lease, "ID");
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{kind:?}: the restored cluster does not answer");
            std::thread::sleep(Duration::from_millis(200));
        };
        drop(children);
        seen.push(lease_line(&answer));
    }
    eprintln!("after a restore: leasesim-node `{}`, etcd `{}`", seen[0], seen[1]);
    assert_eq!(seen[0], seen[1]);
    assert!(seen[0].contains("attached keys([held])"), "{}", seen[0]);
}
