//! The guided hunt's mutations of a genome, as a coverage-guided fuzzer's
//! "havoc" stage: one to three of them stacked, each small enough that the
//! child stays near the run that reached something new, each keeping the
//! rules a drawn seed obeys (faults within the run, membership changes left
//! in their drawn order, knobs only from the values `knobs::draw` offers).
//!
//! - `shift`: a fault earlier or later by up to a tenth of the run;
//! - `stretch`: a fault lasting half or twice as long;
//! - `drop`: a fault removed;
//! - `copy`: a fault repeated at another time;
//! - `splice`: a fault taken from another corpus entry of the same scenario;
//! - `reseed`: the same faults under another run seed (other message
//!   latencies, timeouts and workload choices);
//! - `graft`: the faults of a fifth of the run replaced by what another
//!   seed's chaos draws there, so the search also meets faults no corpus
//!   entry holds (the others only move, copy or splice faults the corpus
//!   already has, and once the first seeds' faults are exhausted a search
//!   of a bug that needs a kind of fault they lack never finds it);
//! - `knob`: one group of engine knobs redrawn (the timing group —
//!   election, heartbeat, latency, client timeout — moves together, since
//!   `knobs::draw` derives each from the others).

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use leasesim_scenario::{Scenario, ScheduledFault};

use super::genome::{movable, Genome};
use crate::run::{chaos, knobs};

const MUTATIONS: [&str; 8] = ["shift", "stretch", "drop", "copy", "splice", "reseed", "graft", "knob"];

/// A child of `parent`: one to three mutations, `donor` (another entry of
/// the same scenario, if any) giving faults to `splice`.
pub fn mutate(parent: &Genome, donor: Option<&Genome>, scenarios: &[Scenario], rng: &mut ChaCha8Rng) -> Genome {
    let mut child = parent.clone();
    let mut done = Vec::new();
    for _ in 0..rng.gen_range(1..=3) {
        let kind = *MUTATIONS.choose(rng).expect("mutations");
        if let Some(what) = apply(kind, &mut child, donor, &scenarios[parent.base], rng) {
            done.push(what);
        }
    }
    if done.is_empty() {
        // Nothing applied (no fault to move, no knobs): a new run seed is
        // always possible and always a different run.
        child.seed = rng.gen_range(0..1 << 32);
        done.push(format!("reseed {}", child.seed));
    }
    child.decided.faults.sort_by_key(|f| f.at_ns);
    child.lineage.push(done.join(", "));
    child
}

/// Applies one mutation; what it did, or `None` if it had nothing to work on.
fn apply(kind: &str, g: &mut Genome, donor: Option<&Genome>, base: &Scenario, rng: &mut ChaCha8Rng) -> Option<String> {
    let duration_ns = base.duration_ns;
    let pick = g.mutable_faults().choose(rng).copied();
    match kind {
        "shift" => {
            let f = &mut g.decided.faults[pick?];
            let by_ns = rng.gen_range(-(duration_ns as i64 / 10)..=duration_ns as i64 / 10);
            f.at_ns = f.at_ns.saturating_add_signed(by_ns).min(duration_ns);
            Some(format!(
                "shift fault {} by {}{}",
                pick?,
                leasesim_core::fmt_secs(by_ns.unsigned_abs()),
                if by_ns < 0 { " earlier" } else { " later" }
            ))
        }
        "stretch" => {
            let f = &mut g.decided.faults[pick?];
            let for_ns = f.for_ns.as_mut()?;
            let longer = rng.gen_bool(0.5);
            *for_ns = if longer { for_ns.saturating_mul(2) } else { (*for_ns / 2).max(1_000_000) };
            Some(format!("stretch fault {} {}", pick?, if longer { "×2" } else { "×½" }))
        }
        "drop" => {
            g.decided.faults.remove(pick?);
            Some(format!("drop fault {}", pick?))
        }
        "copy" => {
            let mut f = g.decided.faults[pick?].clone();
            f.at_ns = rng.gen_range(0..=duration_ns);
            g.decided.faults.push(f);
            Some(format!("copy fault {}", pick?))
        }
        "splice" => {
            let donor = donor.filter(|d| d.base == g.base)?;
            let f = donor.decided.faults.iter().filter(|f| movable(f)).collect::<Vec<_>>().choose(rng).copied()?.clone();
            g.decided.faults.push(f);
            Some("splice a fault".to_string())
        }
        "reseed" => {
            g.seed = rng.gen_range(0..1 << 32);
            Some(format!("reseed {}", g.seed))
        }
        "graft" => graft(g, base, rng),
        _ => knob(g, base, rng),
    }
}

/// Replaces the movable faults of a window a fifth of the run long with
/// those another seed's draw puts in the same window.
fn graft(g: &mut Genome, base: &Scenario, rng: &mut ChaCha8Rng) -> Option<String> {
    let seed: u64 = rng.gen_range(0..1 << 32);
    let other = chaos::decide(base, seed)?;
    let width_ns = base.duration_ns / 5;
    let from_ns = rng.gen_range(0..=base.duration_ns - width_ns);
    let inside = |f: &ScheduledFault| movable(f) && (from_ns..from_ns + width_ns).contains(&f.at_ns);
    g.decided.faults.retain(|f| !inside(f));
    g.decided.faults.extend(other.faults.into_iter().filter(inside));
    Some(format!("graft {}..{} from seed {seed}'s draw", leasesim_core::fmt_secs(from_ns), leasesim_core::fmt_secs(from_ns + width_ns)))
}

/// Redraws one group of knobs from another seed's draw.
fn knob(g: &mut Genome, base: &Scenario, rng: &mut ChaCha8Rng) -> Option<String> {
    let current = g.knobs.as_mut()?;
    let fresh = knobs::draw(base, rng.gen())?;
    let group = rng.gen_range(0..8);
    match group {
        0 => {
            current.election_timeout_ms = fresh.election_timeout_ms;
            current.heartbeat_ms = fresh.heartbeat_ms;
            current.latency_us = fresh.latency_us;
            current.client_timeout_ms = fresh.client_timeout_ms;
        }
        1 => current.max_append_entries = fresh.max_append_entries,
        2 => current.snapshot_every = fresh.snapshot_every,
        3 => current.keepalives_per_ttl = fresh.keepalives_per_ttl,
        4 => current.lease_expiry = fresh.lease_expiry,
        5 => current.keepalive_read_index = fresh.keepalive_read_index,
        6 => current.max_in_flight_appends = fresh.max_in_flight_appends,
        _ => current.kv_in_flight = fresh.kv_in_flight,
    }
    let names = [
        "timing",
        "max-append-entries",
        "snapshot-every",
        "keepalives-per-ttl",
        "lease-expiry",
        "keepalive-read-index",
        "max-in-flight-appends",
        "kv-in-flight",
    ];
    Some(format!("knob {}", names[group]))
}
