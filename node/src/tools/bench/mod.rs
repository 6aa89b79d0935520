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

fn start(name: &'static str, program: &str, dir: &std::path::Path) -> Result<Server, String> {
    let (client, peer) = (free_port()?, free_port()?);
    let data = dir.join(name);
    let (client_url, peer_url) = (format!("http://127.0.0.1:{client}"), format!("http://127.0.0.1:{peer}"));
    let mut cmd = Command::new(program);
    cmd.arg("--data-dir").arg(&data).args(["--listen-client-urls", &client_url, "--listen-peer-urls", &peer_url]);
    if name == "etcd" {
        cmd.args(["--name", "s1", "--advertise-client-urls", &client_url, "--initial-advertise-peer-urls", &peer_url]);
    }
    cmd.args(["--initial-cluster", &format!("s1={peer_url}")]);
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

/// Runs every workload on every server and prints the table.
pub async fn run(args: BenchArgs) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(&args.dir);
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("--dir {}: {e}", args.dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
    let mut servers: Vec<(&'static str, String)> = vec![("leasesim-node", exe)];
    if args.etcd != "none" {
        servers.push(("etcd", args.etcd.clone()));
    }
    let mut rows = Vec::new();
    for (name, program) in servers {
        let server = start(name, &program, &args.dir)?;
        let channel = ready(&server).await?;
        for workload in [Workload::Put, Workload::Txn, Workload::Watch] {
            let figures = workloads::run(workload, &channel, &args).await?;
            rows.push((name, workload, figures, rss_bytes(server.child.id())));
        }
        drop(server);
    }
    print_table(&args, &rows);
    Ok(())
}

fn print_table(args: &BenchArgs, rows: &[(&str, Workload, Figures, Option<u64>)]) {
    println!(
        "bench: {} per workload, {} clients, {} watchers, {}-byte values; load average before: {}",
        leasesim_core::duration::format_duration(args.duration.as_nanos() as u64),
        args.concurrency,
        args.watchers,
        args.value_size,
        std::fs::read_to_string("/proc/loadavg").map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
    );
    println!("| server | workload | ops/s | events/s | p50 ms | p90 ms | p99 ms | max ms | errors | RSS MiB |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (server, workload, f, rss) in rows {
        let rss = rss.map_or("-".to_string(), |b| format!("{:.0}", b as f64 / (1024.0 * 1024.0)));
        let events = if *workload == Workload::Watch { format!("{:.0}", f.events_per_s) } else { "-".into() };
        println!(
            "| {server} | {} | {:.0} | {events} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {rss} |",
            workload.name(),
            f.ops_per_s,
            f.p50_ms,
            f.p90_ms,
            f.p99_ms,
            f.max_ms,
            f.errors
        );
    }
}
