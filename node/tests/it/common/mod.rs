//! A real 3-member cluster of `leasesim-node` processes on loopback
//! ports, for the integration tests: start, SIGKILL, restart,
//! and run `etcdctl` against it. Waits poll with generous bounds; tests
//! assert outcomes, never durations.

#![allow(dead_code)]

pub mod acked;

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use leasesim_node::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use leasesim_node::pb::etcdserverpb::{StatusRequest, StatusResponse};

pub struct Member {
    pub name: String,
    pub peer_port: u16,
    pub client_port: u16,
    pub lock_port: u16,
    /// Added to a running cluster (`--initial-cluster-state existing`).
    pub joined: bool,
    /// Joins by hopping (`--join`) from the member with this peer port.
    pub join_via: Option<u16>,
    pub child: Option<Child>,
}

/// Which server the cluster runs: leasesim-node, or real etcd (for the
/// conformance suite).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Leasesim,
    Etcd,
}

/// A cluster of real server processes (leasesim-node or etcd) on this
/// machine, with their data in one temporary directory; dropping it kills
/// them. (Named apart from the simulator's and core's clusters, which are
/// in-memory.)
pub struct ProcessCluster {
    pub dir: tempfile::TempDir,
    pub members: Vec<Member>,
    pub kind: Kind,
    /// Raft timing, milliseconds (the same flags for both kinds).
    pub heartbeat_ms: u64,
    pub election_ms: u64,
    /// Flags every leasesim-node member gets besides the usual ones.
    pub extra_args: Vec<String>,
    /// Flags for one member only (by index), after `extra_args`.
    pub member_args: Vec<Vec<String>>,
    /// `--initial-cluster-state` for every (re)start from now on, instead
    /// of `new` (or `existing` for members added later).
    pub cluster_state: Option<&'static str>,
    pub initial_cluster: String,
}

/// A free port on 127.0.0.1, never the same twice in one test process:
/// `leasesim-node local`'s own picker (see there for why it is below the
/// kernel's ephemeral range; picking from that range itself lost the race
/// once in CI, "Address already in use" for a member's lock URL).
///
/// Every low port this process binds on 127.0.0.1 comes from here, through
/// one counter, so two tests side by side never get the same one; `local`
/// picks in a process of its own, hence only ever on an address of its own
/// ([`own_host`]).
pub fn free_port() -> u16 {
    leasesim_node::tools::local::free_port(Ipv4Addr::LOCALHOST).expect("a free loopback port")
}

/// A loopback address (127.0.0.0/8 is all loopback on Linux) held for one
/// cluster whose ports another process picks: `leasesim-node local
/// --host`. Its ports are then bound by that cluster alone, whatever runs
/// beside it. Held while this value lives: a listener on [`CLAIM_PORT`] of
/// the address, which another test process trying the same address fails
/// to bind, and moves on.
pub struct OwnHost {
    pub ip: Ipv4Addr,
    _claim: TcpListener,
}

/// The port that marks a loopback address as taken (the lowest a user may
/// bind; `local`'s picker finds it bound and skips it).
const CLAIM_PORT: u16 = 1024;

/// An address of 127.1.0.0-127.254.255.255 no other [`OwnHost`] holds,
/// this process's or another's: the walk starts at a place of this
/// process's own (its pid), so test processes side by side rarely even try
/// the same address.
pub fn own_host() -> OwnHost {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let span = 254 * 65536;
    let start = u64::from(std::process::id()) * 7919;
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(n < span, "no loopback address left to claim");
        let v = (start + n) % span;
        if matches!(v & 0xff, 0 | 255) {
            continue;
        }
        let ip = Ipv4Addr::new(127, 1 + (v >> 16) as u8, (v >> 8) as u8, v as u8);
        if let Ok(claim) = TcpListener::bind((ip, CLAIM_PORT)) {
            return OwnHost { ip, _claim: claim };
        }
    }
}

/// Held by the tests whose verdict rests on a time margin on a loaded
/// machine (clock_skew's lease lifetimes, planted's 10 s election window,
/// crash_loop's 90 s bound on a load stall) and by the heaviest CPU loads
/// (local_load's nemesis run, crash_loop's SIGKILL loops), so that none of
/// them runs beside another. Before all suites shared one binary, each ran
/// only beside its own file's tests; this keeps them from meeting the
/// others they now could. Poisoning is ignored: a failed test has already
/// reported, and the next one should still run.
pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TIMING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ProcessCluster {
    pub fn start(n: usize) -> ProcessCluster {
        ProcessCluster::start_kind(Kind::Leasesim, n, 50, 500)
    }

    pub fn start_kind(kind: Kind, n: usize, heartbeat_ms: u64, election_ms: u64) -> ProcessCluster {
        ProcessCluster::start_full(kind, n, heartbeat_ms, election_ms, &[])
    }

    fn start_full(kind: Kind, n: usize, heartbeat_ms: u64, election_ms: u64, extra_args: &[&str]) -> ProcessCluster {
        ProcessCluster::start_each(n, heartbeat_ms, election_ms, kind, extra_args, |_, _| Vec::new())
    }

    /// A cluster whose member `i` also gets `member_args(i, members)` (e.g.
    /// its own test control port, or routes through fault proxies).
    pub fn start_each(
        n: usize,
        heartbeat_ms: u64,
        election_ms: u64,
        kind: Kind,
        extra_args: &[&str],
        member_args: impl Fn(usize, &[Member]) -> Vec<String>,
    ) -> ProcessCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let members: Vec<Member> = (1..=n)
            .map(|i| Member {
                name: format!("s{i}"),
                peer_port: free_port(),
                client_port: free_port(),
                lock_port: free_port(),
                joined: false,
                join_via: None,
                child: None,
            })
            .collect();
        let initial_cluster = members.iter().map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port)).collect::<Vec<_>>().join(",");
        let extra_args = extra_args.iter().map(ToString::to_string).collect();
        let member_args = (0..n).map(|i| member_args(i, &members)).collect();
        let mut cluster =
            ProcessCluster { dir, members, kind, heartbeat_ms, election_ms, extra_args, member_args, cluster_state: None, initial_cluster };
        for i in 0..n {
            cluster.launch(i);
        }
        cluster
    }

    /// A leasesim-node cluster whose members all get `extra_args` (e.g. a
    /// planted bug).
    pub fn start_with(n: usize, extra_args: &[&str]) -> ProcessCluster {
        ProcessCluster::start_full(Kind::Leasesim, n, 50, 500, extra_args)
    }

    /// A cluster of either kind whose members all get `extra_args` (flags
    /// both servers share, e.g. `--quota-backend-bytes`).
    pub fn start_kind_with(kind: Kind, n: usize, extra_args: &[&str]) -> ProcessCluster {
        ProcessCluster::start_full(kind, n, 50, 500, extra_args)
    }

    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(&self.members[i].name)
    }

    pub fn log_path(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("{}.log", self.members[i].name))
    }

    /// Starts (or restarts) member `i` with the same flags and directory.
    pub fn launch(&mut self, i: usize) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path(i)).expect("log file");
        let m = &self.members[i];
        let (heartbeat, election) = (self.heartbeat_ms.to_string(), self.election_ms.to_string());
        if self.kind == Kind::Etcd {
            let (peer, client) = (format!("http://127.0.0.1:{}", m.peer_port), format!("http://127.0.0.1:{}", m.client_port));
            let child = Command::new("etcd")
                .args(["--name", &m.name])
                .arg("--data-dir")
                .arg(self.dir.path().join(&m.name))
                .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
                .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
                .args(["--initial-cluster", &self.initial_cluster, "--initial-cluster-state", "new"])
                .args(["--heartbeat-interval", &heartbeat, "--election-timeout", &election])
                .args(&self.extra_args)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start etcd");
            self.members[i].child = Some(child);
            return;
        }
        let child = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
            .args(["--name", &m.name])
            .arg("--data-dir")
            .arg(self.dir.path().join(&m.name))
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{}", m.peer_port)])
            .args(["--listen-client-urls", &format!("http://127.0.0.1:{}", m.client_port)])
            .args(["--listen-lock-urls", &format!("http://127.0.0.1:{}", m.lock_port)])
            .args(match m.join_via {
                Some(contact) => vec!["--join".to_string(), format!("http://127.0.0.1:{contact}")],
                None => vec![
                    "--initial-cluster".to_string(),
                    self.initial_cluster.clone(),
                    "--initial-cluster-state".to_string(),
                    self.cluster_state.unwrap_or(if m.joined { "existing" } else { "new" }).to_string(),
                ],
            })
            .args(["--heartbeat-interval", &heartbeat, "--election-timeout", &election])
            .args(["--snapshot-count", "200"])
            .args(&self.extra_args)
            .args(self.member_args.get(i).into_iter().flatten())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start leasesim-node");
        self.members[i].child = Some(child);
    }

    /// Starts a new member that joins the running cluster (after `member
    /// add`): its peer URL is added to `--initial-cluster`. Returns its index.
    pub fn join(&mut self, name: &str, peer_port: u16) -> usize {
        self.initial_cluster.push_str(&format!(",{name}=http://127.0.0.1:{peer_port}"));
        self.members.push(Member {
            name: name.to_string(),
            peer_port,
            client_port: free_port(),
            lock_port: free_port(),
            joined: true,
            join_via: None,
            child: None,
        });
        let i = self.members.len() - 1;
        self.launch(i);
        i
    }

    /// Starts a new member that joins by hopping (`--join`), given the peer
    /// URL of member `contact`. Returns its index.
    pub fn join_via(&mut self, name: &str, contact: usize) -> usize {
        self.members.push(Member {
            name: name.to_string(),
            peer_port: free_port(),
            client_port: free_port(),
            lock_port: free_port(),
            joined: true,
            join_via: Some(self.members[contact].peer_port),
            child: None,
        });
        let i = self.members.len() - 1;
        self.launch(i);
        i
    }

    /// SIGKILL: the process gets no chance to flush anything.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether member `i` is still running (a crash is a test failure).
    pub fn running(&mut self, i: usize) -> bool {
        match self.members[i].child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    pub fn endpoint(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.members[i].client_port)
    }

    pub fn url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.members[i].client_port)
    }

    pub fn endpoints(&self) -> String {
        (0..self.members.len()).map(|i| self.endpoint(i)).collect::<Vec<_>>().join(",")
    }

    /// Runs etcdctl (API 3) against `endpoints`.
    pub fn etcdctl(&self, endpoints: &str, args: &[&str]) -> Output {
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={endpoints}"))
            .arg("--command-timeout=20s")
            .args(args)
            .output()
            .expect("run etcdctl")
    }

    /// etcdctl against every member; panics with its stderr on failure.
    pub fn ctl_ok(&self, args: &[&str]) -> String {
        let out = self.etcdctl(&self.endpoints(), args);
        assert!(
            out.status.success(),
            "etcdctl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Member `i`'s `Status` (etcd's Maintenance API), if it answers.
    pub fn status(&self, i: usize) -> Option<StatusResponse> {
        let url = self.url(i);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        runtime.block_on(async move {
            let channel = tonic::transport::Channel::from_shared(url).ok()?.connect_timeout(Duration::from_secs(1));
            let mut client = MaintenanceClient::new(channel.connect().await.ok()?);
            let mut request = tonic::Request::new(StatusRequest {});
            request.set_timeout(Duration::from_secs(5));
            client.status(request).await.ok().map(|r| r.into_inner())
        })
    }

    /// The index of the member that leads, once one does (polls up to 60 s).
    pub fn wait_for_leader(&mut self) -> usize {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            for i in 0..self.members.len() {
                if self.members[i].child.is_none() {
                    continue;
                }
                if let Some(status) = self.status(i) {
                    let me = status.header.map_or(0, |h| h.member_id);
                    if status.leader != 0 && status.leader == me {
                        return i;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("no leader within 60 s; logs under {}", self.dir.path().display());
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A failed test: show what the members said.
            for i in 0..self.members.len() {
                let log = read_to_string(&self.log_path(i));
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                eprintln!("--- {} log (last lines, newest first):\n{}", self.members[i].name, tail.join("\n"));
            }
        }
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether the etcd server is installed (Debian's etcd-server); the same
/// rule as [`have_etcdctl`].
pub fn have_etcd() -> bool {
    let found = Command::new("etcd").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        if let Ok(reason) = std::env::var("LEASESIM_SKIP_ETCDCTL") {
            eprintln!("skipping the etcd comparison: .ci/run says: {reason}");
        } else if in_ci() {
            panic!("etcd is required under CI (.ci/run installs Debian's etcd-server)");
        } else {
            eprintln!("skipping the etcd comparison: etcd is not installed (apt-get install etcd-server)");
        }
    }
    found
}

/// Whether etcdctl is installed. Where it is missing the etcdctl checks say
/// why and pass (a user's machine may lack it), except under CI (`CI` set),
/// where `.ci/run` installs Debian's etcd-client and they must run; only if
/// that install was impossible does `.ci/run` set LEASESIM_SKIP_ETCDCTL.
pub fn have_etcdctl() -> bool {
    let found = Command::new("etcdctl").arg("version").env("ETCDCTL_API", "3").output().is_ok_and(|o| o.status.success());
    if !found {
        if let Ok(reason) = std::env::var("LEASESIM_SKIP_ETCDCTL") {
            eprintln!("skipping the etcdctl checks: .ci/run says: {reason}");
        } else if in_ci() {
            panic!("etcdctl is required under CI (.ci/run installs Debian's etcd-client)");
        } else {
            eprintln!("skipping the etcdctl checks: etcdctl is not installed (apt-get install etcd-client)");
        }
    }
    found
}

/// Starts the Raft lock-service design's data store on a free port, writing `file`.
pub fn start_store(file: &Path, log: &Path) -> (Child, u16) {
    let port = free_port();
    let log = std::fs::File::create(log).expect("store log");
    let child = Command::new(env!("CARGO_BIN_EXE_leasesim-node"))
        .args(["store", "--listen-url", &format!("http://127.0.0.1:{port}")])
        .arg("--file")
        .arg(file)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the data store");
    (child, port)
}

/// A minimal HTTP/1.1 exchange (the tests need no HTTP client crate):
/// returns the status code and the body.
pub fn http(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((code, body))
}

/// Polls `http` until it answers (a just-started server), up to 30 s.
pub fn http_when_up(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let started = Instant::now();
    loop {
        if let Some(answer) = http(port, method, path, body) {
            return answer;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "nothing answers on port {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn read_to_string(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A gRPC channel to `url`, retrying for up to 30 s (a member that just
/// started, or just became reachable).
pub async fn channel(url: &str) -> tonic::transport::Channel {
    let started = Instant::now();
    loop {
        let endpoint = tonic::transport::Channel::from_shared(url.to_string()).expect("a valid URL");
        match endpoint.connect_timeout(Duration::from_secs(1)).connect().await {
            Ok(channel) => return channel,
            Err(e) => assert!(started.elapsed() < Duration::from_secs(30), "cannot connect to {url}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
