//! How fast the pure Raft core runs inside leasesim-testkit's harness: a cluster
//! under a steady proposal load on a slightly lossy network, reporting
//! messages stepped per wall-clock second — with every safety check after
//! every input, and with the per-input O(log) checks (Log Matching,
//! durability) off. This is the budget a CI seed sweep works with.
//!
//! `cargo run --release -p leasesim-core --example raft_throughput [simulated_seconds]`

use leasesim_testkit::{NetFaults, RaftCluster, RaftClusterOptions};

const NS_PER_MS: u64 = 1_000_000;

/// Wall-clock timing is the point of this example; the engine itself never
/// reads a clock.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn measure(voters: usize, all_checks: bool, simulated_secs: u64) {
    let net = NetFaults { drop_permille: 10, dup_permille: 10, min_delay_ns: NS_PER_MS, max_delay_ns: 5 * NS_PER_MS };
    let mut opts = RaftClusterOptions::new(voters).seed(1).net(net).compact_every(64);
    opts.check_log_matching = all_checks;
    opts.check_durability = all_checks;
    let mut c = RaftCluster::new(opts);
    let started = std::time::Instant::now();
    let mut command = 0u64;
    // One proposal per simulated millisecond.
    for _ in 0..simulated_secs * 1_000 {
        if let Some(leader) = c.leader() {
            command += 1;
            let _ = c.propose(leader, command);
        }
        c.run_for(NS_PER_MS);
    }
    if let Err(v) = c.check() {
        panic!("violation during the benchmark: {v}");
    }
    let wall = started.elapsed().as_secs_f64();
    let stepped = c.stats.steps;
    println!(
        "{voters} voters, {:<20} {stepped:>9} messages stepped in {wall:>6.2} s wall = {:>9.0} msg/s \
         ({} entries applied by node 1, {} elections, {simulated_secs} s simulated)",
        if all_checks { "all checks:" } else { "cheap checks only:" },
        stepped as f64 / wall,
        c.state(1).applied_index,
        c.stats.elections_won,
    );
}

fn main() {
    let simulated_secs = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    for voters in [3, 5] {
        for all_checks in [true, false] {
            measure(voters, all_checks, simulated_secs);
        }
    }
}
