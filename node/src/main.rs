//! The `leasesim-node` binary: one member of a leasesim cluster serving
//! etcd's v3 API (flags after etcd's own); `snapshot` restores and
//! inspects backups, `store` runs the Raft lock-service design's data
//! store, and the tools: `local` a whole cluster on this machine, `load` a
//! client workload against one, judged by leasesim's checkers.

use clap::{Parser, Subcommand};
use leasesim_node::backup::SnapshotArgs;
use leasesim_node::config::ServeArgs;
use leasesim_node::store::StoreArgs;
use leasesim_node::tools::load::LoadArgs;
use leasesim_node::tools::local::LocalArgs;

#[derive(Parser)]
#[command(
    name = "leasesim-node",
    version,
    about = "leasesim's lease and lock service, for real (etcd v3 API, the Raft lock-service design's WebSocket locks)",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// The Raft lock-service design's data store: fenced HTTP writes persisted to a text file.
    Store(StoreArgs),
    /// A whole local cluster (N members and the data store); prints endpoints.
    Local(LocalArgs),
    /// Drives etcd-API endpoints (leasesim-node or etcd); prints ops/s and latency.
    Load(LoadArgs),
    /// Starts leasesim-node and etcd on this machine in turn and measures
    /// put, txn and watch fan-out on both; prints one table.
    Bench(leasesim_node::tools::bench::BenchArgs),
    /// Snapshot files from `etcdctl snapshot save`: restore one into a new
    /// cluster member's data directory, or show its status.
    Snapshot(SnapshotArgs),
}

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leasesim-node: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = rt.block_on(async {
        match cli.command {
            Some(Cmd::Store(args)) => leasesim_node::store::run(args).await,
            Some(Cmd::Local(args)) => leasesim_node::tools::local::run(args).await,
            Some(Cmd::Load(args)) => leasesim_node::tools::load::run(args).await,
            Some(Cmd::Bench(args)) => leasesim_node::tools::bench::run(args).await,
            Some(Cmd::Snapshot(args)) => leasesim_node::backup::run(args),
            None => leasesim_node::serve::serve(cli.serve).await,
        }
    });
    if let Err(e) = result {
        eprintln!("leasesim-node: {e}");
        std::process::exit(2);
    }
}
