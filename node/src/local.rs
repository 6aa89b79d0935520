//! `leasesim-node local --servers 3 --dir DIR`: a whole cluster on this
//! machine in one command, for trying it out: N members (each its own
//! process, with its own data directory and log under DIR) and the data
//! store, on free loopback ports. Prints the endpoints; Ctrl-C (or SIGTERM)
//! stops them all.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use clap::Args;

use crate::config::LeaseExpiry;

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
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
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
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let expiry = match args.lease_expiry {
        LeaseExpiry::LeaderMonotonic => "leader-monotonic",
        LeaseExpiry::LeaderStampedWall => "leader-stamped-wall",
        LeaseExpiry::WriterClock => "writer-clock",
    };
    let mut ports = Vec::new();
    for _ in 0..args.servers {
        ports.push((free_port()?, free_port()?, free_port()?));
    }
    let initial_cluster = (1..=args.servers)
        .zip(&ports)
        .map(|(i, (peer, _, _))| format!("s{i}=http://127.0.0.1:{peer}"))
        .collect::<Vec<_>>();
    let initial_cluster = initial_cluster.join(",");
    let log = |name: &str| {
        std::fs::File::create(args.dir.join(format!("{name}.log")))
            .map_err(|e| format!("log file for {name}: {e}"))
    };
    let mut children = Children(Vec::new());
    for (i, (peer, client, lock)) in (1..=args.servers).zip(&ports) {
        let name = format!("s{i}");
        let child = Command::new(&exe)
            .args(["--name", &name])
            .arg("--data-dir")
            .arg(args.dir.join(&name))
            .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
            .args([
                "--listen-client-urls",
                &format!("http://127.0.0.1:{client}"),
            ])
            .args(["--listen-lock-urls", &format!("http://127.0.0.1:{lock}")])
            .args([
                "--initial-cluster",
                &initial_cluster,
                "--lease-expiry",
                expiry,
            ])
            .stdout(Stdio::null())
            .stderr(log(&name)?)
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        children.0.push(child);
    }
    let store_port = free_port()?;
    let store = Command::new(&exe)
        .args([
            "store",
            "--listen-url",
            &format!("http://127.0.0.1:{store_port}"),
        ])
        .arg("--file")
        .arg(args.dir.join("data.txt"))
        .stdout(Stdio::null())
        .stderr(log("store")?)
        .spawn()
        .map_err(|e| format!("starting the data store: {e}"))?;
    children.0.push(store);

    let endpoints = ports
        .iter()
        .map(|(_, c, _)| format!("127.0.0.1:{c}"))
        .collect::<Vec<_>>()
        .join(",");
    println!(
        "leasesim local cluster: {} members, logs and data under {}",
        args.servers,
        args.dir.display()
    );
    for (i, (peer, client, lock)) in (1..=args.servers).zip(&ports) {
        println!("  s{i}: etcd API http://127.0.0.1:{client}  lock API ws://127.0.0.1:{lock}/ws  peers http://127.0.0.1:{peer}");
    }
    println!("  data store: POST http://127.0.0.1:{store_port}/write");
    println!("try:  ETCDCTL_API=3 etcdctl --endpoints={endpoints} put hello world");
    println!("Ctrl-C stops the cluster.");
    // Ctrl-C or SIGTERM: stop every member and the store.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        biased;
        result = tokio::signal::ctrl_c() => result.map_err(|e| e.to_string())?,
        _ = term.recv() => {}
    }
    drop(children);
    Ok(())
}
