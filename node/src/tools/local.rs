//! `leasesim-node local --servers 3 --dir DIR`: a whole cluster on this
//! machine in one command, for trying it out: N members (each its own
//! process, with its own data directory and log under DIR) and the data
//! store, on free loopback ports. Prints the endpoints; Ctrl-C (or SIGTERM)
//! stops them all. The roster (`DIR/members.json`) lets `load --nemesis`
//! kill, pause and restart members.
//!
//! The ports are picked here and bound later by the members, so the pick
//! must be one nothing else can take in between: see [`free_port`]. Tests
//! that run several clusters at once give each its own `--host` too.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::Child;

use clap::Args;

use crate::config::LeaseExpiry;
use crate::tools::roster::{self, RosterEntry};

#[derive(Args, Clone, Debug)]
pub struct LocalArgs {
    /// How many members.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=9))]
    pub servers: u64,
    /// Where the members' data directories, their logs and data.txt go.
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "leader-monotonic")]
    pub lease_expiry: LeaseExpiry,
    /// Plant a bug in every member (repeatable; see `leasesim-node --help`).
    #[arg(long = "bug", value_name = "NAME", value_parser = crate::config::parse_bug)]
    pub bugs: Vec<String>,
    /// The address every member and the data store listen on (any of
    /// 127.0.0.0/8 is this machine's loopback; tests give each cluster its
    /// own, so that no other cluster ever binds its ports).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: Ipv4Addr,
}

/// A free port on `host`, never the same twice in one process, below the
/// kernel's ephemeral range (`ip_local_port_range`, 32768-60999 by
/// default). The port is released here and bound later by a member: in
/// between, anything binding `:0` or connecting out (a member dialling a
/// peer not yet up, a test's client) gets an ephemeral port, so it can
/// never take this one, as a `:0` pick could be taken (a `local` member once
/// exited at start with its port gone). Only another picker of low ports on
/// the same address could take it; on a `--host` of its own, none exists.
pub fn free_port(host: Ipv4Addr) -> Result<u16, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let below = ephemeral_range_start().max(2048);
    let span = below - 1024;
    // Spread processes apart, so that two pickers on one address (two test
    // binaries on 127.0.0.1) rarely walk the same ports.
    let offset = std::process::id() % span * 97 % span;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        if n >= span {
            return Err(format!("no free port on {host} below {below}"));
        }
        let port = (1024 + (offset + n) % span) as u16;
        if TcpListener::bind((host, port)).is_ok() {
            return Ok(port);
        }
    }
}

/// The first port the kernel hands out for `:0` binds and outgoing
/// connections.
fn ephemeral_range_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub async fn run(args: LocalArgs) -> Result<(), String> {
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("--dir {}: {e}", args.dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
    let mut ports = Vec::new();
    for _ in 0..args.servers {
        ports.push(MemberPorts { peer: free_port(args.host)?, client: free_port(args.host)?, lock: free_port(args.host)? });
    }
    let mut children = Children(Vec::new());
    start_members(&args, &exe, &ports, &mut children)?;
    let store_port = free_port(args.host)?;
    let store_argv: Vec<String> = vec![
        exe,
        "store".into(),
        "--listen-url".into(),
        format!("http://{}:{store_port}", args.host),
        "--file".into(),
        args.dir.join("data.txt").to_string_lossy().into_owned(),
    ];
    children.0.push(roster::spawn(&store_argv, &args.dir.join("store.log"))?);
    print_banner(&args, &ports, store_port);
    // Ctrl-C or SIGTERM: stop every member and the store.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    tokio::select! {
        biased;
        result = tokio::signal::ctrl_c() => result.map_err(|e| e.to_string())?,
        _ = term.recv() => {}
    }
    // A nemesis may have restarted members: stop the processes the roster
    // names now, then the ones this process started.
    for entry in roster::load(&args.dir).unwrap_or_default() {
        let _ = roster::signal(entry.pid, "CONT");
        let _ = roster::signal(entry.pid, "TERM");
    }
    drop(children);
    Ok(())
}

/// The three ports one member listens on.
struct MemberPorts {
    peer: u16,
    client: u16,
    lock: u16,
}

/// Spawns one leasesim-node per entry of `ports` and writes the roster the
/// nemesis and `load --cluster-dir` read.
fn start_members(args: &LocalArgs, exe: &str, ports: &[MemberPorts], children: &mut Children) -> Result<(), String> {
    let expiry = match args.lease_expiry {
        LeaseExpiry::LeaderMonotonic => "leader-monotonic",
        LeaseExpiry::LeaderStampedWall => "leader-stamped-wall",
        LeaseExpiry::WriterClock => "writer-clock",
    };
    let host = args.host;
    let initial_cluster =
        (1..=args.servers).zip(ports).map(|(i, p)| format!("s{i}=http://{host}:{}", p.peer)).collect::<Vec<_>>().join(",");
    let mut entries = Vec::new();
    for (i, p) in (1..=args.servers).zip(ports) {
        let name = format!("s{i}");
        let mut argv: Vec<String> = vec![
            exe.to_string(),
            "--name".into(),
            name.clone(),
            "--data-dir".into(),
            args.dir.join(&name).to_string_lossy().into_owned(),
            "--listen-peer-urls".into(),
            format!("http://{host}:{}", p.peer),
            "--listen-client-urls".into(),
            format!("http://{host}:{}", p.client),
            "--listen-lock-urls".into(),
            format!("http://{host}:{}", p.lock),
            "--initial-cluster".into(),
            initial_cluster.clone(),
            "--lease-expiry".into(),
            expiry.into(),
        ];
        for bug in &args.bugs {
            argv.extend(["--bug".to_string(), bug.clone()]);
        }
        let log = args.dir.join(format!("{name}.log"));
        let child = roster::spawn(&argv, &log)?;
        entries.push(RosterEntry { name, client_url: format!("http://{host}:{}", p.client), pid: child.id(), argv, log });
        children.0.push(child);
    }
    roster::save(&args.dir, &entries)
}

/// Prints where everything listens, once.
fn print_banner(args: &LocalArgs, ports: &[MemberPorts], store_port: u16) {
    let host = args.host;
    let endpoints = ports.iter().map(|p| format!("{host}:{}", p.client)).collect::<Vec<_>>().join(",");
    let mut banner = format!("leasesim local cluster: {} members, logs and data under {}\n", args.servers, args.dir.display());
    for (i, p) in (1..=args.servers).zip(ports) {
        banner +=
            &format!("  s{i}: etcd API http://{host}:{}  lock API ws://{host}:{}/ws  peers http://{host}:{}\n", p.client, p.lock, p.peer);
    }
    banner += &format!("  data store: POST http://{host}:{store_port}/write\n");
    if !args.bugs.is_empty() {
        banner += &format!("  planted bugs (for testing the checkers): {}\n", args.bugs.join(", "));
    }
    banner += &format!("try:  ETCDCTL_API=3 etcdctl --endpoints={endpoints} put hello world\nCtrl-C stops the cluster.\n");
    // Whoever started us may stop reading once it has the endpoints (a
    // test, `| head`, a closed terminal): `println!` would then panic on the
    // broken pipe and the unwinding would kill every member. The cluster
    // lives until a signal says otherwise, so a write error is ignored.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(banner.as_bytes()).and_then(|()| stdout.flush());
}
