//! The `leasesim-node` command line as a library function, so that one
//! more binary can be a member without a second build: `leasesim-real
//! node ARGS…` runs exactly this (the real runner starts its members from
//! its own binary, and its tests need no `cargo build -p leasesim-node`
//! with another feature set). The `leasesim-node` binary is a call to
//! [`main_with`].

use crate::backup::SnapshotArgs;
use crate::config::ServeArgs;
use crate::store::StoreArgs;
use crate::tools::load::LoadArgs;
use crate::tools::local::LocalArgs;
use clap::{CommandFactory, Parser, Subcommand};

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
    Bench(crate::tools::bench::BenchArgs),
    /// Snapshot files from `etcdctl snapshot save`: restore one into a new
    /// cluster member's data directory, or show its status.
    Snapshot(SnapshotArgs),
}

/// Runs the `leasesim-node` command line `args` (the program name first);
/// exits the process with status 2 on an error, as the binary does.
///
/// Not generic over the argument iterator: a generic entry is instantiated
/// in each caller's crate, and with it the async body below and the whole
/// server's future tree, which made the 9-line `leasesim-node` binary (and
/// `leasesim-real`) compile the server a second time.
pub fn main_with(args: Vec<std::ffi::OsString>) {
    let cli = Cli::parse_from(args);
    if cli.command.is_none() {
        if let Err(e) = cli.serve.check() {
            Cli::command().error(clap::error::ErrorKind::ArgumentConflict, e).exit();
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    if cli.command.is_none() {
        // Before the runtime starts, so that every thread inherits it.
        crate::sched_slice::shorten_for_server();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leasesim-node: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(cli)) {
        eprintln!("leasesim-node: {e}");
        std::process::exit(2);
    }
}

/// The chosen command, on the runtime.
async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Some(Cmd::Store(args)) => crate::store::run(args).await,
        Some(Cmd::Local(args)) => crate::tools::local::run(args).await,
        Some(Cmd::Load(args)) => crate::tools::load::run(args).await,
        Some(Cmd::Bench(args)) => crate::tools::bench::run(args).await,
        Some(Cmd::Snapshot(args)) => crate::backup::run(args),
        None => crate::serve::serve(cli.serve).await,
    }
}
