//! Linearizability in the simulator: the checker itself lives in the
//! `leasesim-history` crate (history/), shared with `leasesim-node load`;
//! its modules are re-exported here under their old paths, and [`cli`] is
//! `leasesim check-history`.

pub mod cli;

pub use leasesim_history::{cache, check, edn, history, jepsen, jepsen_edn, leasesim_format, model, partition, search, window};
pub use leasesim_history::{
    check_kv, check_register, CheckOptions, CheckReport, Verdict, DEFAULT_BUDGET_STEPS, DEFAULT_SHRINK_BUDGET_STEPS,
};
pub use leasesim_history::{History, KvInput, KvOutput, Operation, RegisterHistory, RegisterInput, RegisterOutput};
