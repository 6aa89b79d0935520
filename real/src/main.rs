//! `leasesim-real run SCENARIO.toml`: plays a scenario file on real
//! processes on this machine (leasesim-node members by default, Debian's
//! etcd 3.4 with `--target etcd`), runs its workloads as real clients,
//! plays its faults for real (SIGKILL and restart, SIGSTOP/SIGCONT, TCP
//! proxies on every member link, the members' skewable clocks, spares
//! added and voters removed through the leader) and judges
//! what the clients saw with the simulator's own judge (`leasesim-judge`).
//!
//! It lives apart from the simulator because the simulator's binary builds
//! under madsim, and apart from leasesim-node because a member must never
//! link its test tooling; it reuses the load tool's clients and recorder
//! (`leasesim_node::tools::load`), and no member depends on it.
//!
//! Its members are this very binary: `leasesim-real node ARGS…` is
//! `leasesim-node ARGS…` (the node's command line is a library function),
//! so one build gives the runner and its members, and `--node-bin` picks
//! another leasesim-node binary.
//!
//! Exit codes match `leasesim run`: 0 when the verdict is the one the
//! scenario expects, 1 when it is not, 2 for bad input (a file, a flag, a
//! fault or workload the target cannot play) or a cluster that would not
//! start; 130 when interrupted (every process it started is killed first).

mod clients;
mod cluster;
mod compare;
mod crash_points;
mod final_state;
mod gate;
mod history;
mod membership;
mod procs;
mod refuse;
mod report;
mod routes;
mod run;
mod schedule;
mod selectors;
mod server_events;
mod sites;
mod timer_points;
mod verdict;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "leasesim-real", version, about = "Plays a leasesim scenario on real processes and judges it")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Play one scenario for real and judge it.
    Run(RunArgs),
    /// Run leasesim-node with ARGS (`leasesim-real node --help`): how the
    /// runner starts its members and data store from its own binary.
    #[command(name = NODE_COMMAND, disable_help_flag = true)]
    Node {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<std::ffi::OsString>,
    },
    /// Run one scenario in the simulator and for real, and set the two
    /// side by side (invariants with Wilson intervals, timing figures).
    Compare(compare::CompareArgs),
}

/// What the members are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// leasesim-node (this binary as `leasesim-real node`, or --node-bin).
    Node,
    /// /usr/bin/etcd (3.4), or --etcd-bin.
    Etcd,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Node => "node",
            Target::Etcd => "etcd",
        }
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// The scenario file.
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "node")]
    pub target: Target,
    /// The seed: draws the clients' think and hold times and which server
    /// `random-server` and `follower` name (default: the first of the
    /// scenario's seeds).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the outcome as one JSON line (the shape of `leasesim run --json`).
    #[arg(long)]
    pub json: bool,
    /// A leasesim-node binary for the members and the data store (default:
    /// this binary, which runs leasesim-node as `leasesim-real node ARGS…`).
    #[arg(long)]
    pub node_bin: Option<PathBuf>,
    /// The etcd binary.
    #[arg(long, default_value = "/usr/bin/etcd")]
    pub etcd_bin: PathBuf,
    /// Plant a bug in every leasesim-node member too (repeatable; the
    /// names `leasesim run --bug` takes).
    #[arg(long = "bug", value_name = "NAME")]
    pub bugs: Vec<String>,
    /// Write every observation, in true-time order, as JSON lines (the
    /// format of `leasesim run --trace`).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Write the run's timeline (self-contained HTML, as `leasesim run
    /// --report`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Keep the members' data directories and logs here (default: a
    /// temporary directory, removed at the end).
    #[arg(long)]
    pub keep_dir: Option<PathBuf>,
}

/// The subcommand that makes this binary a leasesim-node process.
pub const NODE_COMMAND: &str = "node";

fn main() {
    let cli = Cli::parse();
    let args = match cli.cmd {
        Cmd::Run(args) => args,
        Cmd::Node { args } => {
            leasesim_node::cli::main_with(std::iter::once("leasesim-node".into()).chain(args).collect());
            return;
        }
        Cmd::Compare(args) => std::process::exit(compare::run(&args)),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("leasesim-real: cannot start the runtime: {e}");
            std::process::exit(2);
        }
    };
    let code = runtime.block_on(run::run_or_interrupt(args));
    // Client tasks may still wait on sockets of killed members: do not
    // wait for them.
    runtime.shutdown_background();
    std::process::exit(code);
}
