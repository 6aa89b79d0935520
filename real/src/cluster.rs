//! The scenario's cluster on this machine: one process per server, each
//! with its data directory under the run's directory, and the data store.
//!
//! leasesim-node members dial each other through a [`Mesh`] of TCP proxies
//! (one per directed link, `--unsafe-test-peer-route`), so partitions,
//! one-way blocks, delays and loss act on real member traffic without root
//! or firewall rules, and serve the test control endpoint, so the runner
//! can skew their clocks and arm failpoints, and append their own Raft and
//! lock-table events to a file each (`--unsafe-test-event-log`,
//! `server_events.rs` reads them). etcd members dial the peer URLs they advertise
//! and read the kernel's clock: they get neither (`refuse.rs` says so).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use leasesim_node::faults::aimed::AimedFault;
use leasesim_node::faults::clock::{ClockChange, SkewChange, Skews};
use leasesim_node::faults::event_log::monotonic_ns;
use leasesim_node::faults::failpoint::Action;
use leasesim_node::faults::mesh::{Mesh, MeshMember};
use leasesim_node::faults::proxy::LinkFault;
use leasesim_node::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use leasesim_node::pb::etcdserverpb::StatusRequest;
use leasesim_scenario::{expiry_name, Process, Scenario};

use crate::procs::{arg_path, free_port, Proc};
use crate::routes::Routes;
use crate::Target;

/// One server of the scenario.
pub struct Member {
    pub proc: Proc,
    /// Its etcd API, `127.0.0.1:PORT`.
    pub client_addr: String,
    /// Where it listens for peers (a membership change names it).
    pub peer_addr: SocketAddr,
    /// Its test control endpoint (leasesim-node only).
    pub control: Option<SocketAddr>,
    /// Where it writes its own events (leasesim-node only).
    pub events: Option<std::path::PathBuf>,
    /// Its lock listener, which serves `GET /log` (leasesim-node only).
    pub lock_addr: Option<SocketAddr>,
}

pub struct Cluster {
    /// The voters `s1`… first, then the spares (`membership.rs`).
    pub members: Vec<Member>,
    /// How many of `members` are the initial voters.
    pub voters: usize,
    pub mesh: Option<Mesh>,
    /// Each client's own route to each voter and to the store, in a run
    /// whose faults cut clients' links (`routes.rs`).
    pub routes: Option<Routes>,
    /// The data store: crashed (SIGKILL, then restarted on its files) and
    /// paused (SIGSTOP/SIGCONT) as a member is; dropping the cluster stops
    /// it too.
    pub store: Proc,
    pub store_addr: String,
    /// What every peer link carries when no fault is played on it.
    pub base_link: LinkFault,
    /// Each member's clock skews as the runner set them, in CLOCK_MONOTONIC
    /// true time: a killed member's process takes its skew with it, and a
    /// restart must give it back (the simulator's clocks outlive a crash).
    skews: Mutex<Vec<Skews>>,
    /// Where members claim the failpoint entries several of them hold
    /// (`crash_points.rs`; leasesim-node only).
    claims: Option<std::path::PathBuf>,
}

/// Where the binaries are, and the planted bugs only leasesim-node's own
/// code has.
pub struct Binaries {
    /// The program and leading arguments that make a leasesim-node process
    /// (`leasesim-real node`, or a leasesim-node binary).
    pub node: Vec<String>,
    pub etcd: String,
    /// `--bug` names of leasesim-node's driver (`NODE_BUGS`: not core's,
    /// so neither a scenario file nor the simulator knows them).
    pub node_bugs: Vec<String>,
}

/// The node bug whose damage is the writes a crash finds unsynced.
const ACK_BEFORE_FSYNC: &str = "ack-before-fsync";

/// How long a fresh cluster may take to elect its first leader.
const FIRST_LEADER_WITHIN: Duration = Duration::from_secs(30);
/// How long a freshly spawned member may take to open its control endpoint.
const CONTROL_UP_WITHIN: Duration = Duration::from_secs(10);

impl Cluster {
    /// Starts every server and the store, and waits for a leader.
    pub async fn start(s: &Scenario, target: Target, bins: &Binaries, dir: &Path, base_link: LinkFault) -> Result<Cluster, String> {
        let n = (s.cluster.servers + s.cluster.spares) as usize;
        let voters = s.cluster.servers as usize;
        let mut ports = Vec::new();
        for _ in 0..n {
            ports.push((free_port()?, free_port()?, free_port()?, free_port()?));
        }
        let names: Vec<String> = (1..=n).map(|i| format!("s{i}")).collect();
        let initial =
            names.iter().zip(&ports).take(voters).map(|(name, p)| format!("{name}=http://127.0.0.1:{}", p.0)).collect::<Vec<_>>().join(",");
        let mesh = match target {
            Target::Node => {
                let members = names
                    .iter()
                    .zip(&ports)
                    .map(|(name, p)| MeshMember { name: name.clone(), peer: ([127, 0, 0, 1], p.0).into(), client: None })
                    .collect();
                Some(Mesh::start(members).await.map_err(|e| format!("cannot start the link proxies: {e}"))?)
            }
            Target::Etcd => None,
        };
        let mut members = Vec::new();
        for (i, (name, p)) in names.iter().zip(&ports).enumerate() {
            let argv = match target {
                Target::Node => {
                    let mut argv = node_argv(s, bins, dir, name, *p, &initial, mesh.as_ref().map(|m| m.route_args(i)));
                    if i >= voters {
                        crate::membership::as_spare(&mut argv, name, p.0);
                    }
                    argv
                }
                Target::Etcd => etcd_argv(s, &bins.etcd, dir, name, *p, &initial),
            };
            let control = (target == Target::Node).then(|| SocketAddr::from(([127, 0, 0, 1], p.3)));
            let events = (target == Target::Node).then(|| dir.join(format!("{name}.events.jsonl")));
            let lock_addr = (target == Target::Node).then(|| SocketAddr::from(([127, 0, 0, 1], p.2)));
            let proc = Proc::spawn(argv, dir.join(format!("{name}.log")))?;
            let peer_addr = SocketAddr::from(([127, 0, 0, 1], p.0));
            members.push(Member { proc, client_addr: format!("127.0.0.1:{}", p.1), peer_addr, control, events, lock_addr });
        }
        let store_port = free_port()?;
        let mut store_argv = bins.node.clone();
        store_argv.extend(["store".into(), "--listen-url".into(), format!("http://127.0.0.1:{store_port}")]);
        store_argv.extend(["--file".into(), arg_path(dir, "data.txt")]);
        if unfenced(s) {
            store_argv.push("--unfenced".into());
        }
        if s.bugs.completion_without_token_check {
            // The planted bug lives in the data store, not in the members.
            store_argv.push("--unchecked-completions".into());
        }
        let mut store = Proc::spawn(store_argv, dir.join("store.log"))?;
        wait_for_store(&mut store, store_port).await?;
        let skews = Mutex::new(vec![Skews::default(); n]);
        let claims = match target {
            Target::Node => Some(fresh_dir(&dir.join("failpoint-claims"))?),
            Target::Etcd => None,
        };
        let store_addr = format!("127.0.0.1:{store_port}");
        let mut cluster = Cluster { members, voters, mesh, routes: None, store, store_addr, base_link, skews, claims };
        cluster.apply_initial_clocks(s).await?;
        cluster.heal_links()?;
        cluster.wait_for_leader(FIRST_LEADER_WITHIN).await?;
        Ok(cluster)
    }

    /// The initial voters' etcd APIs, in server order: the clients know
    /// only them, as the simulator's do (spares come and go).
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().take(self.voters).map(|m| m.client_addr.clone()).collect()
    }

    /// Where client `client` dials the members and the store: its routes,
    /// if the run has them, else their own addresses.
    pub fn dial(&self, client: u64) -> crate::clients::Dial {
        match &self.routes {
            Some(routes) => crate::clients::Dial { endpoints: routes.endpoints(client), store: routes.store(client) },
            None => crate::clients::Dial { endpoints: self.endpoints(), store: self.store_addr.clone() },
        }
    }

    /// The index of the member that says it leads (and is running).
    pub async fn leader(&self) -> Option<usize> {
        for (i, member) in self.members.iter().enumerate() {
            if !member.proc.is_running() || member.proc.is_paused() {
                continue;
            }
            if let Some((me, leader)) = status(&member.client_addr).await {
                if leader != 0 && leader == me {
                    return Some(i);
                }
            }
        }
        None
    }

    async fn wait_for_leader(&mut self, within: Duration) -> Result<usize, String> {
        let give_up = Instant::now() + within;
        loop {
            if let Some(i) = self.leader().await {
                return Ok(i);
            }
            for (i, member) in self.members.iter_mut().enumerate() {
                if let Some(status) = member.proc.exited() {
                    return Err(format!("s{} exited ({status}) before a leader was elected:\n{}", i + 1, member.proc.log_tail(15)));
                }
            }
            if Instant::now() > give_up {
                return Err(format!("no leader within {within:?}; see the members' logs"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sets `fault` on the link from member `from` to member `to`.
    pub fn set_link(&self, from: usize, to: usize, fault: LinkFault) -> Result<(), String> {
        let mesh = self.mesh.as_ref().ok_or("this target has no link proxies")?;
        mesh.peer_link(from, to).ok_or_else(|| format!("no link s{} -> s{}", from + 1, to + 1))?.set(fault)
    }

    /// Changes member `i`'s clocks through its control endpoint, and
    /// remembers the change for its restarts. A member that is down (a
    /// crash, or a crash point it just reached) gets it from its restart:
    /// the simulator's clocks outlive a crash, and a drawn clock fault
    /// often lands on a crashed member (`chaos-watch-txn` seed 16 stopped
    /// on one: its control endpoint reset the request as it died).
    pub async fn set_clock(&mut self, i: usize, change: &ClockChange) -> Result<(), String> {
        self.skews.lock().expect("skews")[i].apply(change, monotonic_ns())?;
        let Err(e) = self.send_clock(i, change).await else { return Ok(()) };
        // A member dying at a crash failpoint as the request reaches it
        // resets the connection while closing its sockets, before its exit
        // can be waited for: look again for a while, bounded by tries (a
        // member that keeps running after a reset is an error).
        for _ in 0..50 {
            if !self.members[i].proc.is_running() || self.members[i].proc.exited().is_some() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(e)
    }

    /// Remembers, for member `i`'s restarts, a change it made to its own
    /// clocks at `at_mono_ns` (`CLOCK_MONOTONIC`): a clock entry it reached.
    pub fn note_clock(&self, i: usize, change: &ClockChange, at_mono_ns: u64) -> Result<(), String> {
        self.skews.lock().expect("skews")[i].apply(change, at_mono_ns)
    }

    /// SIGKILLs member `i` if it still runs and starts it again on its data
    /// directory, with the clock skew it had: the restore is sent as soon
    /// as its control endpoint listens.
    pub async fn restart(&mut self, i: usize) -> Result<(), String> {
        self.members[i].proc.restart()?;
        let skews = self.skews.lock().expect("skews")[i];
        match self.members[i].control {
            Some(_) if skews != Skews::default() => self.set_first_clock(i, &restore(&skews, monotonic_ns())).await,
            _ => Ok(()),
        }
    }

    /// Sends `change` to member `i`'s control endpoint.
    async fn send_clock(&self, i: usize, change: &ClockChange) -> Result<(), String> {
        let body = serde_json::to_string(change).map_err(|e| e.to_string())?;
        self.post_control(i, "/clock", &body).await
    }

    /// Arms failpoint entry `id` at `point` in member `i` (`None`: disarms
    /// that entry; the member's others stay): it SIGKILLs or stops itself,
    /// as the action says, when it next reaches that point, if it is the
    /// first to create `claim`
    /// (an entry several members hold). Waits for a freshly started
    /// member's control endpoint, as [`Cluster::set_first_clock`] does.
    pub async fn arm_failpoint_when_up(
        &mut self,
        i: usize,
        id: u64,
        point: Option<(&str, Action)>,
        claim: Option<&Path>,
    ) -> Result<(), String> {
        let body = match point {
            Some((point, action)) => serde_json::json!({ "id": id, "point": point, "action": action, "claim": claim }),
            None => serde_json::json!({ "id": id, "point": null }),
        }
        .to_string();
        self.post_control_when_up(i, "/failpoint", &body).await
    }

    /// The claim file of failpoint entry `id` when several members hold it.
    pub fn claim_path(&self, id: usize) -> Result<std::path::PathBuf, String> {
        Ok(self.claims.as_ref().ok_or("this target has no failpoints")?.join(id.to_string()))
    }

    /// POSTs `body` to `path` on member `i`'s control endpoint.
    async fn post_control(&self, i: usize, path: &str, body: &str) -> Result<(), String> {
        let control = self.members[i].control.ok_or_else(|| format!("this target has no test control endpoint ({path})"))?;
        let answer = http_post(control, path, body).await?;
        if answer.starts_with("HTTP/1.1 200") {
            Ok(())
        } else {
            Err(format!("s{}'s control endpoint refused {body}: {answer}", i + 1))
        }
    }

    /// [`Cluster::post_control`] to a member that may have just been
    /// spawned: until its control endpoint listens the connection is
    /// refused, so retry every 50 ms for up to [`CONTROL_UP_WITHIN`] while
    /// the member runs (on a loaded machine most starts failed without it).
    async fn post_control_when_up(&mut self, i: usize, path: &str, body: &str) -> Result<(), String> {
        let give_up = Instant::now() + CONTROL_UP_WITHIN;
        loop {
            match self.post_control(i, path, body).await {
                Ok(()) => return Ok(()),
                Err(e) if e.contains("Connection refused") && self.members[i].proc.alive() && Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The first clock change of member `i`, sent right after it was
    /// spawned (its control endpoint may not listen yet).
    async fn set_first_clock(&mut self, i: usize, change: &ClockChange) -> Result<(), String> {
        let body = serde_json::to_string(change).map_err(|e| e.to_string())?;
        self.post_control_when_up(i, "/clock", &body).await
    }

    /// The scenario's `[clocks]` for servers, before the run starts.
    async fn apply_initial_clocks(&mut self, s: &Scenario) -> Result<(), String> {
        for (process, spec) in &s.clocks {
            if let Process::Server(n) = process {
                let change = crate::clients::clock::from_spec(spec);
                self.set_first_clock(*n as usize - 1, &change).await?;
                self.skews.lock().expect("skews")[*n as usize - 1].apply(&change, monotonic_ns())?;
            }
        }
        Ok(())
    }

    /// Aims `faults` at every peer link, replacing the ones before.
    pub fn aim_links(&self, faults: &[AimedFault]) -> Result<(), String> {
        self.mesh.as_ref().ok_or("this target has no link proxies")?.aim_all(faults)
    }

    /// Puts every peer link back to [`Cluster::base_link`], and every
    /// client's route through.
    pub fn heal_links(&self) -> Result<(), String> {
        if let Some(routes) = &self.routes {
            routes.heal();
        }
        let Some(mesh) = &self.mesh else { return Ok(()) };
        for from in 0..self.members.len() {
            for to in (0..self.members.len()).filter(|to| *to != from) {
                if let Some(link) = mesh.peer_link(from, to) {
                    link.set(self.base_link)?;
                }
            }
        }
        Ok(())
    }
}

/// The change that gives a freshly started member the skews `skews` have
/// at true time `t_ns`: the same rates, and the wall clock the whole step
/// its skew adds by now (a fresh skew adds nothing, so an absolute offset
/// is that step). The monotonic clock gets the rate only: a new process's
/// monotonic readings start from their own origin, so no offset carries
/// over, and a slow clock's negative one could not be set anyway.
pub fn restore(skews: &Skews, t_ns: u64) -> ClockChange {
    let wall_ms = skews.wall.added_ns(t_ns) / 1_000_000;
    ClockChange {
        monotonic: Some(SkewChange { rate: Some(skews.mono.rate()), ..SkewChange::default() }),
        wall: Some(SkewChange { rate: Some(skews.wall.rate()), offset_ms: Some(wall_ms), step_ms: None }),
    }
}

/// The fault every peer link carries when none is played: the file's
/// `[network]` latency (as a delay with jitter) and loss when the file
/// writes a `[network]` (`written`); none otherwise (loopback's own
/// latency: the simulator's default latency models a real wire, which
/// loopback is).
pub fn base_link(s: &Scenario, written: bool) -> LinkFault {
    if !written {
        return LinkFault::default();
    }
    let (lo_ns, hi_ns) = s.network.latency_ns;
    let (delay_ms, jitter_ms) = (lo_ns / 1_000_000, (hi_ns - lo_ns) / 1_000_000);
    LinkFault { cut: false, delay_ms, jitter_ms, loss: s.network.loss, duplicate: s.network.duplicate }
}

/// Waits until the data store listens (or says why it exited).
async fn wait_for_store(store: &mut Proc, port: u16) -> Result<(), String> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        if let Some(status) = store.exited() {
            return Err(format!("the data store exited ({status}):\n{}", store.log_tail(10)));
        }
        if Instant::now() > give_up {
            return Err("the data store did not listen within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The planted bug that lives in the data store (`--unchecked-completions`),
/// not in the members' engine.
pub const STORE_BUG: &str = "completion-without-token-check";

/// Whether some lock workload writes to a data store that does not check
/// fencing tokens.
fn unfenced(s: &Scenario) -> bool {
    s.workloads.iter().any(|w| matches!(&w.kind, leasesim_scenario::WorkloadKind::Lock(l) if !l.fenced))
}

fn node_argv(
    s: &Scenario,
    bins: &Binaries,
    dir: &Path,
    name: &str,
    p: (u16, u16, u16, u16),
    initial: &str,
    routes: Option<Vec<String>>,
) -> Vec<String> {
    let mut argv: Vec<String> = bins.node.clone();
    argv.extend(["--name".into(), name.into(), "--data-dir".into(), arg_path(dir, name)]);
    argv.extend(["--listen-peer-urls".into(), format!("http://127.0.0.1:{}", p.0)]);
    argv.extend(["--listen-client-urls".into(), format!("http://127.0.0.1:{}", p.1)]);
    argv.extend(["--listen-lock-urls".into(), format!("http://127.0.0.1:{}", p.2)]);
    argv.extend(["--unsafe-test-control-url".into(), format!("http://127.0.0.1:{}", p.3)]);
    argv.extend(["--unsafe-test-event-log".into(), arg_path(dir, &format!("{name}.events.jsonl"))]);
    // Each lock client acquires and releases under its own scenario id, so
    // the judge can tell who released a lock (`release-by-owner`).
    argv.push("--unsafe-test-client-ids".into());
    let acks_unsynced = bins.node_bugs.iter().any(|b| b == ACK_BEFORE_FSYNC);
    if crate::crash_points::loses_unsynced(s) || acks_unsynced {
        // A crash point between a write and its fsync must lose the write,
        // as the simulator's disk does; the page cache would keep it. So
        // must a crash under ack-before-fsync, whose acknowledged writes
        // stay unsynced until a snapshot.
        argv.push("--unsafe-test-lose-unsynced".into());
    }
    argv.extend(["--initial-cluster".into(), initial.into()]);
    argv.extend(["--lease-expiry".into(), expiry_name(s.cluster.lease_expiry).into()]);
    argv.extend(timing_args(s));
    argv.extend(replication_args(s));
    for bug in s.bugs.enabled().into_iter().filter(|bug| *bug != STORE_BUG).chain(bins.node_bugs.iter().map(String::as_str)) {
        argv.extend(["--bug".into(), bug.into()]);
    }
    argv.extend(routes.unwrap_or_default());
    argv
}

fn etcd_argv(s: &Scenario, bin: &str, dir: &Path, name: &str, p: (u16, u16, u16, u16), initial: &str) -> Vec<String> {
    let (peer, client) = (format!("http://127.0.0.1:{}", p.0), format!("http://127.0.0.1:{}", p.1));
    let mut argv: Vec<String> = vec![bin.into(), "--name".into(), name.into(), "--data-dir".into(), arg_path(dir, name)];
    argv.extend(["--listen-peer-urls".into(), peer.clone(), "--initial-advertise-peer-urls".into(), peer]);
    argv.extend(["--listen-client-urls".into(), client.clone(), "--advertise-client-urls".into(), client]);
    argv.extend(["--initial-cluster".into(), initial.into(), "--initial-cluster-state".into(), "new".into()]);
    argv.extend(["--initial-cluster-token".into(), format!("leasesim-real-{}", std::process::id())]);
    argv.extend(timing_args(s));
    argv
}

/// Heartbeat, election timeout and snapshot period: flags both targets
/// spell the same way.
fn timing_args(s: &Scenario) -> Vec<String> {
    vec![
        "--heartbeat-interval".into(),
        (s.cluster.heartbeat_ns / 1_000_000).to_string(),
        "--election-timeout".into(),
        (s.cluster.election_timeout_ns.0 / 1_000_000).to_string(),
        "--snapshot-count".into(),
        s.cluster.snapshot_every.to_string(),
    ]
}

/// Core's replication and read knobs, which only leasesim-node takes
/// (`refuse.rs` refuses them against etcd).
fn replication_args(s: &Scenario) -> Vec<String> {
    let c = &s.cluster;
    let mut args = vec![
        "--max-append-entries".into(),
        c.max_append_entries.to_string(),
        "--max-in-flight-appends".into(),
        c.max_in_flight_appends.to_string(),
        "--keepalive-read-index".into(),
        c.keepalive_read_index.to_string(),
    ];
    if c.lease_reads {
        args.push("--lease-reads".into());
    }
    // The leader's lease (for reads, or for keep-alives answered from its
    // own deadlines) assumes the bound the judge holds the run to, as in
    // the simulator (sim/src/run/setup.rs).
    let keepalive_lease = !c.keepalive_read_index && c.lease_expiry == leasesim_core::ExpiryStrategy::LeaderMonotonic;
    if c.lease_reads || keepalive_lease {
        args.extend(["--drift-bound".into(), c.drift_bound.to_string()]);
    }
    args
}

/// A member's (own id, leader id) by the Maintenance Status call.
async fn status(addr: &str) -> Option<(u64, u64)> {
    let endpoint = tonic::transport::Channel::from_shared(format!("http://{addr}")).ok()?;
    let channel = endpoint.connect_timeout(Duration::from_millis(300)).timeout(Duration::from_millis(500)).connect().await.ok()?;
    let status = MaintenanceClient::new(channel).status(StatusRequest {}).await.ok()?.into_inner();
    Some((status.header.map_or(0, |h| h.member_id), status.leader))
}

/// One HTTP/1.1 POST to a loopback address; the whole answer.
async fn http_post(addr: SocketAddr, path: &str, body: &str) -> Result<String, String> {
    http(addr, "POST", path, body).await
}

/// One HTTP/1.1 request to a loopback address; the whole answer.
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let io = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .map_err(|_| format!("{addr}{path}: no answer in 5 s"))?
        .map_err(|e| format!("{addr}{path}: {e}"))
}

/// `path` as an empty directory: a run kept in a reused `--keep-dir` must
/// not find the last run's claims taken.
fn fresh_dir(path: &Path) -> Result<std::path::PathBuf, String> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn lease_reads_start_members_with_the_mode_and_the_scenarios_drift_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reads.toml");
        let text = "name = \"r\"\nduration = \"2s\"\n[cluster]\nservers = 3\n[[workload]]\nkind = \"kv\"\nclients = 1\n";
        std::fs::write(&path, text).unwrap();
        let off = replication_args(&leasesim_scenario::load(&path).unwrap());
        assert!(!off.iter().any(|a| a.contains("lease-reads") || a.contains("drift-bound")), "{off:?}");
        std::fs::write(&path, text.replace("servers = 3\n", "servers = 3\nlease_reads = true\ndrift_bound = 0.1\n")).unwrap();
        let on = replication_args(&leasesim_scenario::load(&path).unwrap());
        assert!(on.ends_with(&["--lease-reads".to_string(), "--drift-bound".to_string(), "0.1".to_string()]), "{on:?}");
        assert_eq!(leasesim_node::config::parse_drift_bound(&on[on.len() - 1]), Ok(0.1), "the member reads back the bound");
        // Keep-alives answered from the leader's deadlines wait for its
        // lease, under the same bound; not under writer-clock.
        let etcd_lessor = "servers = 3\nkeepalive_read_index = false\ndrift_bound = 0.02\n";
        std::fs::write(&path, text.replace("servers = 3\n", etcd_lessor)).unwrap();
        let keepalives = replication_args(&leasesim_scenario::load(&path).unwrap());
        assert!(keepalives.ends_with(&["--drift-bound".to_string(), "0.02".to_string()]), "{keepalives:?}");
        assert!(!keepalives.iter().any(|a| a.contains("lease-reads")), "{keepalives:?}");
        let writer_clock = format!("{etcd_lessor}lease_expiry = \"writer-clock\"\n");
        std::fs::write(&path, text.replace("servers = 3\n", &writer_clock)).unwrap();
        let writer = replication_args(&leasesim_scenario::load(&path).unwrap());
        assert!(!writer.iter().any(|a| a.contains("drift-bound")), "{writer:?}");
    }

    /// A member whose wall clock started 1.5 s ahead and has run 10 % fast
    /// for 20 s is restarted: the fresh process, given [`restore`], reads
    /// what the old one would have, now and later.
    #[test]
    fn a_restored_clock_reads_as_the_crashed_one_would_have() {
        let mut before = Skews::default();
        let spec = ClockChange { wall: Some(SkewChange { offset_ms: Some(1_500), ..SkewChange::default() }), monotonic: None };
        before.apply(&spec, 0).unwrap();
        before.apply(&crate::clients::clock::from_fault(Some(0.1), None), 10 * S).unwrap();
        let restart_ns = 30 * S;
        let mut fresh = Skews::default();
        fresh.apply(&restore(&before, restart_ns), restart_ns).unwrap();
        for later in [restart_ns, restart_ns + 7 * S] {
            let (old, new) = (before.wall.added_ns(later), fresh.wall.added_ns(later));
            assert!((old - new).abs() < 1_000_000, "wall at {later}: {old} ns added before the crash, {new} after");
        }
        assert_eq!(fresh.wall.added_ns(restart_ns) / 1_000_000, 3_500, "1.5 s offset plus 20 s at +10 %");
        assert_eq!((fresh.mono.rate(), fresh.wall.rate()), (1.1, 1.1), "both clocks keep their rate");
        // A slow monotonic clock has a negative offset by now, which a new
        // process could not be given: the restore carries only its rate.
        let mut slow = Skews::default();
        slow.apply(&crate::clients::clock::from_fault(Some(-0.5), None), 0).unwrap();
        Skews::default().apply(&restore(&slow, 10 * S), 10 * S).expect("a slow clock restores");
    }
}
