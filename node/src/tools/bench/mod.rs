//! `leasesim-node bench`: one run that measures leasesim-node and etcd side
//! by side on this machine, with the same client, the same workloads and
//! the same concurrency, and prints one table. Each server is started
//! fresh (one member, defaults, a data directory under `--dir`, which fsyncs
//! its log as etcd does), driven through `put`, `txn` and `watch` (fan-out)
//! in turn, its resident memory read from /proc, and stopped.
//!
//! It exists because a speed target ("at least etcd's") means nothing
//! without the other server measured under the same load at the same time:
//! the machine this runs on is shared, and only a side-by-side figure
//! survives that. Timing is reported here, never asserted in a test.

mod workloads;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use tonic::transport::Channel;

use workloads::{Figures, Workload};

#[derive(Args, Clone, Debug)]
pub struct BenchArgs {
    /// How long each workload runs on each server: 500ms, 5s, 1m.
    #[arg(long, default_value = "5s", value_parser = crate::config::parse_duration)]
    pub duration: Duration,
    /// Concurrent clients of `put` and `txn` (and writers of `watch`).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub concurrency: u64,
    /// Watch streams of the `watch` workload, each seeing every event.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub watchers: u64,
    /// Bytes of each value written.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub value_size: u64,
    /// The etcd binary to compare with (`none`: leasesim-node alone).
    #[arg(long, default_value = "/usr/bin/etcd")]
    pub etcd: String,
    /// Where the servers' data directories and logs go (removed first).
    #[arg(long, default_value = "/tmp/leasesim-bench")]
    pub dir: PathBuf,
    /// Rounds: each round runs every workload on each server in turn, the
    /// servers' order alternating, so a machine whose load drifts weighs
    /// on both alike; the table ends with each figure's range.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: u64,
    /// The workloads to run, in this order: put, txn, watch.
    #[arg(long, value_delimiter = ',', default_value = "put,txn,watch", value_parser = parse_workload)]
    pub workloads: Vec<Workload>,
    /// `put` writes each client's keys among this many, overwriting them
    /// in every round (0: a fresh key every put). A bounded key space is
    /// what shows whether memory stays flat under compaction.
    #[arg(long, default_value_t = 0)]
    pub key_space: u64,
    /// The leasesim-node binary to measure (default: this one), e.g. an
    /// older build for a before/after figure.
    #[arg(long)]
    pub node: Option<PathBuf>,
    /// Flags given to both servers, split at spaces (both take etcd's
    /// names), e.g. "--snapshot-count 5000 --auto-compaction-mode revision
    /// --auto-compaction-retention 1000".
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub server_args: String,
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    [Workload::Put, Workload::Txn, Workload::Watch]
        .into_iter()
        .find(|w| w.name() == s)
        .ok_or_else(|| format!("unknown workload `{s}`: expected put, txn or watch"))
}

/// A server under test, killed when dropped.
struct Server {
    name: &'static str,
    child: Child,
    endpoint: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound and released; the server binds it next).
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn start(name: &'static str, program: &str, dir: &std::path::Path, extra: &str) -> Result<Server, String> {
    let (client, peer) = (free_port()?, free_port()?);
    let data = dir.join(name);
    let (client_url, peer_url) = (format!("http://127.0.0.1:{client}"), format!("http://127.0.0.1:{peer}"));
    let mut cmd = Command::new(program);
    cmd.arg("--data-dir").arg(&data).args(["--listen-client-urls", &client_url, "--listen-peer-urls", &peer_url]);
    if name == "etcd" {
        cmd.args(["--name", "s1", "--advertise-client-urls", &client_url, "--initial-advertise-peer-urls", &peer_url]);
    }
    cmd.args(["--initial-cluster", &format!("s1={peer_url}")]).args(extra.split_whitespace());
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).map_err(|e| format!("{}: {e}", dir.display()))?;
    let child = cmd.stdout(Stdio::null()).stderr(log).spawn().map_err(|e| format!("cannot start {program}: {e}"))?;
    Ok(Server { name, child, endpoint: client_url })
}

/// Waits until the server answers a read (it has a leader).
async fn ready(server: &Server) -> Result<Channel, String> {
    use crate::pb::etcdserverpb::{kv_client::KvClient, RangeRequest};
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(ch) = Channel::from_shared(server.endpoint.clone()).expect("a valid URL").connect().await {
            if KvClient::new(ch.clone()).range(RangeRequest { key: b"bench".to_vec(), ..Default::default() }).await.is_ok() {
                return Ok(ch);
            }
        }
        if Instant::now() > give_up {
            return Err(format!("{} at {} did not answer within 30 s (log in its --dir)", server.name, server.endpoint));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Resident memory of a process, from /proc (None where there is none).
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// CPU time a process has used so far (user + system), from /proc.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

/// One measured row: a server, a workload, a round.
struct Row {
    server: &'static str,
    workload: Workload,
    figures: Figures,
    rss: Option<u64>,
    /// The server's CPU milliseconds per acknowledged request (what the
    /// machine's load cannot inflate as much as throughput).
    cpu_ms_per_op: Option<f64>,
}

/// Runs every workload on every server, `rounds` times, and prints the table.
pub async fn run(args: BenchArgs) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(&args.dir);
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("--dir {}: {e}", args.dir.display()))?;
    let exe = match &args.node {
        Some(node) => node.clone(),
        None => std::env::current_exe().map_err(|e| e.to_string())?,
    };
    let mut servers = vec![start("leasesim-node", &exe.to_string_lossy(), &args.dir, &args.server_args)?];
    if args.etcd != "none" {
        servers.push(start("etcd", &args.etcd, &args.dir, &args.server_args)?);
    }
    let mut channels = Vec::new();
    for server in &servers {
        channels.push(ready(server).await?);
    }
    let load_before = load_average();
    let mut rows = Vec::new();
    for round in 0..args.rounds {
        for &workload in &args.workloads {
            for turn in 0..servers.len() {
                // Odd rounds run the servers in the other order.
                let i = if round % 2 == 0 { turn } else { servers.len() - 1 - turn };
                let pid = servers[i].child.id();
                let cpu_before = cpu_seconds(pid);
                let figures = workloads::run(workload, &channels[i], &args, round).await?;
                let cpu = cpu_seconds(pid).zip(cpu_before).map(|(after, before)| after - before);
                let acked = figures.ops_per_s * figures.elapsed_s;
                let cpu_ms_per_op = cpu.filter(|_| acked > 0.0).map(|c| c * 1e3 / acked);
                rows.push(Row { server: servers[i].name, workload, figures, rss: rss_bytes(pid), cpu_ms_per_op });
            }
        }
    }
    print_table(&args, &rows, &load_before);
    Ok(())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

fn print_table(args: &BenchArgs, rows: &[Row], load_before: &str) {
    println!(
        "bench: {} per workload, {} round(s), {} clients, {} watchers, {}-byte values; load average before: {load_before}, after: {}",
        leasesim_core::duration::format_duration(args.duration.as_nanos() as u64),
        args.rounds,
        args.concurrency,
        args.watchers,
        args.value_size,
        load_average()
    );
    println!("| server | workload | ops/s | events/s | p50 ms | p90 ms | p99 ms | max ms | errors | server CPU ms/op | RSS MiB |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let f = &row.figures;
        let rss = row.rss.map_or("-".to_string(), |b| format!("{:.0}", b as f64 / (1024.0 * 1024.0)));
        let events = if row.workload == Workload::Watch { format!("{:.0}", f.events_per_s) } else { "-".into() };
        let cpu = row.cpu_ms_per_op.map_or("-".to_string(), |c| format!("{c:.3}"));
        println!(
            "| {} | {} | {:.0} | {events} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {cpu} | {rss} |",
            row.server,
            row.workload.name(),
            f.ops_per_s,
            f.p50_ms,
            f.p90_ms,
            f.p99_ms,
            f.max_ms,
            f.errors
        );
    }
    if args.rounds > 1 {
        print_ranges(rows);
    }
}

/// Each server's and workload's range over the rounds (min–max).
fn print_ranges(rows: &[Row]) {
    println!();
    println!("| server | workload | ops/s | events/s | server CPU ms/op |");
    println!("|---|---|---:|---:|---:|");
    let mut seen: Vec<(&str, Workload)> = Vec::new();
    for row in rows {
        if seen.contains(&(row.server, row.workload)) {
            continue;
        }
        seen.push((row.server, row.workload));
        let same: Vec<&Row> = rows.iter().filter(|r| r.server == row.server && r.workload == row.workload).collect();
        let range = |get: &dyn Fn(&Row) -> Option<f64>, digits: usize| {
            let values: Vec<f64> = same.iter().filter_map(|r| get(r)).collect();
            let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
            if values.is_empty() {
                "-".to_string()
            } else {
                format!("{lo:.digits$}–{hi:.digits$}")
            }
        };
        let events = if row.workload == Workload::Watch { range(&|r| Some(r.figures.events_per_s), 0) } else { "-".into() };
        println!(
            "| {} | {} | {} | {events} | {} |",
            row.server,
            row.workload.name(),
            range(&|r| Some(r.figures.ops_per_s), 0),
            range(&|r| r.cpu_ms_per_op, 3)
        );
    }
}
