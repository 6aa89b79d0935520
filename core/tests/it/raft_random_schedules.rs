//! Raft under random schedules: proptest draws a seed, the fault knobs and
//! a list of timed faults (crashes, restarts, partitions, membership
//! changes, compactions, reads, clock jumps), runs the harness, and on a
//! failure shrinks the fault list to a short reproduction. Every input of
//! every node is checked for Election Safety, Log Matching, Leader
//! Completeness, State Machine Safety, durability and read safety; after
//! the faults heal, a leader must commit a proposal within
//! `LIVENESS_ELECTION_TIMEOUTS` election timeouts.
//!
//! Cases: 2000 per property (4000 schedules, a few seconds of CPU in
//! release), the same under the README's test command and in CI. To run
//! more, `PROPTEST_CASES=5000 cargo test --release -p leasesim-core --test
//! it raft_random_schedules::` — proptest applies `PROPTEST_CASES` over
//! every property's own count, so do not export it for a whole workspace
//! run: the service-cluster properties (32 and 12 cases, each a whole
//! chaos run) would run 2000 too.

use proptest::collection::vec;
use proptest::prelude::*;

use leasesim_testkit::{run_schedule, run_schedule_traced, Schedule, ScheduledFault, LIVENESS_ELECTION_TIMEOUTS};

fn fault() -> impl Strategy<Value = ScheduledFault> {
    let node = 0..8u8;
    prop_oneof![
        node.clone().prop_map(ScheduledFault::Crash),
        node.clone().prop_map(ScheduledFault::Restart),
        node.clone().prop_map(ScheduledFault::Isolate),
        any::<u8>().prop_map(ScheduledFault::Partition),
        Just(ScheduledFault::Heal),
        node.clone().prop_map(ScheduledFault::AddServer),
        node.clone().prop_map(ScheduledFault::RemoveServer),
        node.clone().prop_map(ScheduledFault::Compact),
        node.clone().prop_map(ScheduledFault::Read),
        (node, 0..500u16).prop_map(|(n, ms)| ScheduledFault::ClockJump(n, ms)),
    ]
}

fn schedule() -> impl Strategy<Value = Schedule> {
    let knobs = (
        any::<u64>(),
        prop_oneof![Just(3u8), Just(5u8)],
        0..=1u8,
        prop_oneof![Just(0u16), 0..=300u16],
        prop_oneof![Just(0u16), 0..=150u16],
        1..=40u8,
    );
    let more = (
        prop_oneof![Just(10u16), Just(20u16), Just(50u16)],
        prop_oneof![Just(0u32), Just(1_000u32), Just(50_000u32)],
        prop_oneof![Just(4u8), Just(16u8), Just(64u8)],
        vec((0..2_000u16, fault()), 0..16),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.8),
    );
    (knobs, more).prop_map(
        |(
            (seed, voters, spares, drop_permille, dup_permille, max_delay_ms),
            (propose_every_ms, max_drift_ppm, compact_every, faults, pre_vote, check_quorum),
        )| Schedule {
            seed,
            voters,
            spares,
            drop_permille,
            dup_permille,
            max_delay_ms,
            propose_every_ms,
            max_drift_ppm,
            compact_every,
            fault_phase_ms: 2_000,
            faults,
            pre_vote,
            check_quorum,
            ..Schedule::default()
        },
    )
}

/// Runs a schedule; on failure, replays it with tracing for the report.
fn check(s: &Schedule) -> Result<(), TestCaseError> {
    match run_schedule(s) {
        Ok(_) => Ok(()),
        Err(v) => {
            let (_, trace) = run_schedule_traced(s);
            let lines: Vec<&str> = trace.lines().collect();
            let tail = lines[lines.len().saturating_sub(60)..].join("\n");
            Err(TestCaseError::fail(format!("{v}\nschedule: {s:?}\nlast events:\n{tail}")))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn raft_is_safe_and_live_under_shrinkable_fault_schedules(s in schedule()) {
        check(&s)?;
    }

    /// Swarm testing: the seed alone draws the knobs and the faults.
    #[test]
    fn raft_is_safe_and_live_under_swarm_seeds(seed in any::<u64>()) {
        check(&Schedule::random(seed))?;
    }
}

#[test]
fn after_faults_heal_a_leader_commits_within_a_bounded_number_of_election_timeouts() {
    let timeout_ns = 300_000_000;
    let mut worst_ns = 0;
    for seed in 0..64 {
        let s = Schedule::random(seed);
        let summary = run_schedule(&s).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        assert!(summary.recovery_ns <= LIVENESS_ELECTION_TIMEOUTS * timeout_ns);
        worst_ns = worst_ns.max(summary.recovery_ns);
    }
    // Healing restarts every node; they need at most a few election rounds.
    assert!(worst_ns <= 6 * timeout_ns, "slowest recovery took {worst_ns} ns");
}

#[test]
fn a_schedule_replays_bit_for_bit() {
    for seed in [3, 17, 99] {
        let s = Schedule::random(seed);
        assert_eq!(run_schedule(&s), run_schedule(&s));
    }
}
