//! The `leasesim-node` binary: one member of a leasesim cluster serving
//! etcd's v3 API (flags after etcd's own); `snapshot` restores and
//! inspects backups, `store` runs the Raft lock-service design's data
//! store, and the tools: `local` a whole cluster on this machine, `load` a
//! client workload against one, judged by leasesim's checkers.

fn main() {
    leasesim_node::cli::main_with(std::env::args_os().collect());
}
