//! The simulator's integration tests, one module per suite, in one test
//! binary. Each file under tests/ used to be its own crate, and each
//! linked the simulator, madsim and the rest of its dependency graph again:
//! 31 of them were 31 links. One binary links it once. Run one suite with
//! `cargo test -p leasesim --release --test it shrink_hunt::`.
//!
//! Three suites stay binaries of their own because scripts and reports name
//! them: `mutant_sweep` (the mutation score's stage 2,
//! .github/scripts/mutants-two-stage.sh), `hand_mutant_windows`
//! (reports/hand-mutants.md) and `cli_errors` (the small target
//! real/tests/it/compare.rs builds to get the `leasesim` binary).
//!
//! The suites now share one process and run on the test harness's threads
//! side by side, where the old binaries ran one after another. None sets
//! an environment variable or the working directory (children get theirs
//! with `Command::current_dir`); each writes under a temp directory whose
//! name starts with its own prefix and the pid. `parser_fuzz`'s counting
//! allocator is this whole binary's global allocator now: it counts per
//! thread, and each test runs on a thread of its own, so only the fuzz
//! targets' own allocations reach their bounds.

mod aimed_messages;
mod checker_inputs;
mod checkers_fire;
mod determinism;
mod forecast_frozen;
mod guided_hunt;
mod history_formats;
mod hunt_published;
mod invariant_ids;
mod json_errors;
mod kv_in_flight;
mod lease_reads;
mod linearizability_cli;
mod liveness_slack;
mod mutants_config;
mod parser_fuzz;
mod report_cli;
mod scenario_errors;
mod scenario_load;
mod scenario_multi_instance;
mod scenario_roundtrip;
mod shrink_hunt;
mod study;
mod study_mixed_drift;
mod study_pauses;
mod study_renewal_lag;
mod study_restart_replay;
mod study_seeds;
mod study_slew;
mod sweep_stream;
mod task_workloads;
mod watch_txn;
