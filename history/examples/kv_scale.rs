//! How long a KV-with-leases history the linearizability checker handles in
//! one second: generates histories the way the `kv` and `registry`
//! workloads would record them (clients each one request at a time, every
//! operation taking effect at an instant inside its interval, 2% timeouts
//! whose outcome is unknown), grows them until a check takes over a second,
//! then narrows down the longest that still takes at most one.
//!
//! `cargo run --release -p leasesim-history --example kv_scale -- [CLIENTS] [KEYS]`
//! (defaults: 5 clients, 8 keys; 1 key is the no-partitioning worst case).

use std::time::Instant;

use leasesim_history::history::{History, KvInput, Operation};
use leasesim_history::{check_kv, CheckOptions, CheckReport};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::ReferenceKv;

/// The reference store the generator runs operations against, shared with
/// the property tests.
#[path = "../tests/it/support/mod.rs"]
mod support;

/// One request of `client`: mostly the `kv` workload's reads, writes and
/// compare-and-sets over the shared keys; one in ten the `registry`
/// workload's, on the client's own key and lease (so each registry client's
/// key and lease form one partition of their own).
fn random_input(rng: &mut ChaCha8Rng, client: u64, keys: u32) -> KvInput {
    let key = format!("k{}", rng.gen_range(0..keys));
    let value = format!("v{}", rng.gen_range(0..5));
    let own_lease = client + 1;
    let own_key = format!("/services/c{}", client + 1);
    match rng.gen_range(0..100) {
        0..=29 => KvInput::Put { key, value, lease: None },
        30..=59 => KvInput::Get { key },
        60..=63 => KvInput::Delete { key },
        64..=89 => {
            let expected = rng.gen_bool(0.8).then(|| format!("v{}", rng.gen_range(0..5)));
            KvInput::Cas { key, expected, value, lease: None }
        }
        90..=92 => KvInput::LeaseGrant { lease: Some(own_lease) },
        93..=96 => KvInput::Put { key: own_key, value, lease: Some(own_lease) },
        97 => KvInput::Get { key: own_key },
        98 => KvInput::LeaseRevoke { lease: own_lease },
        _ => KvInput::LeaseExpire { lease: own_lease },
    }
}

/// `n` operations from `clients` clients over `keys` keys, seeded.
fn generate(n: usize, clients: u64, keys: u32, seed: u64) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut free_at_ns = vec![0u64; clients as usize];
    // (instant it takes effect, op index, applied?)
    let mut ops = Vec::with_capacity(n);
    let mut effects = Vec::with_capacity(n);
    for i in 0..n {
        let client = rng.gen_range(0..clients);
        let call_ns = free_at_ns[client as usize] + rng.gen_range(0..2_000_000);
        let length_ns = rng.gen_range(500_000..10_000_000);
        let at_ns = call_ns + rng.gen_range(0..length_ns);
        let timed_out = rng.gen_bool(0.02);
        // A timed-out request takes effect or is lost, half and half.
        let applied = !timed_out || rng.gen_bool(0.5);
        free_at_ns[client as usize] = call_ns + length_ns;
        ops.push(Operation {
            client: client + 1,
            call_ns,
            return_ns: (!timed_out).then_some(call_ns + length_ns),
            input: random_input(&mut rng, client, keys),
            output: None,
        });
        if applied {
            effects.push((at_ns, i, timed_out));
        }
    }
    effects.sort();
    let mut store = ReferenceKv::default();
    for (_, i, timed_out) in effects {
        let out = store.apply(&ops[i].input);
        if !timed_out {
            ops[i].output = Some(out);
        }
    }
    History { ops }
}

fn time_check(n: usize, clients: u64, keys: u32) -> (f64, CheckReport) {
    let history = generate(n, clients, keys, n as u64);
    let started = Instant::now();
    let report = check_kv(&history, &CheckOptions { budget_steps: u64::MAX, shrink_budget_steps: 0 }).expect("valid");
    (started.elapsed().as_secs_f64(), report)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clients: u64 = args.next().map_or(5, |a| a.parse().expect("CLIENTS"));
    let keys: u32 = args.next().map_or(8, |a| a.parse().expect("KEYS"));
    println!("{clients} clients, {keys} keys");
    let (mut lo, mut hi) = (0usize, 1_000usize);
    loop {
        let (secs, report) = time_check(hi, clients, keys);
        println!("{hi:>9} ops: {secs:.3}s, {} steps, {} partitions, {}", report.steps, report.partitions, report.verdict.name());
        assert_eq!(report.verdict.name(), "linearizable", "a generated history must be linearizable");
        if secs > 1.0 {
            break;
        }
        lo = hi;
        hi *= 2;
    }
    while hi - lo > lo / 50 + 1 {
        let mid = lo + (hi - lo) / 2;
        let (secs, report) = time_check(mid, clients, keys);
        println!("{mid:>9} ops: {secs:.3}s, {} steps", report.steps);
        if secs > 1.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    println!("longest history checked within one second: about {lo} operations ({clients} clients, {keys} keys)");
}
