//! Linearizability checking of operation histories: Wing & Gong's search
//! (1993) with Lowe's (2017) and porcupine's improvements.
//!
//! Its own crate because three programs judge histories with it: the
//! simulator's `linearizable` invariant, `leasesim check-history`, and
//! `leasesim-node load`, which checks what it recorded against a real
//! cluster. The real node must not link madsim (the simulation build
//! replaces the process's clock and randomness), so the checker cannot live
//! inside the simulator crate. Like core, it reads no clock and does no IO:
//! text and histories in, verdicts out.
//!
//! The checker must be one the project trusts: proven on histories nobody
//! here wrote (Jepsen's etcd register histories, with porcupine's known
//! answers) and exact, never guessing (an exhausted step budget answers
//! `Unknown`).
//!
//! - [`history`]: the operations the simulator records (KV with leases) and
//!   Jepsen's register operations;
//! - [`model`]: the sequential specifications (register, KV with leases);
//! - [`partition`]: independent sub-histories (per key, joined by leases);
//! - [`search`]: the search itself, with [`cache`], its memo, and `states`,
//!   its interned model states;
//! - [`window`]: the minimal failing window of a non-linearizable history;
//! - [`check`]: the pipeline tying them together;
//! - [`jepsen`], [`jepsen_edn`] (with [`edn`], its reader), [`leasesim_format`]:
//!   the file formats.

pub mod cache;
pub mod check;
pub mod edn;
pub mod history;
pub mod jepsen;
pub mod jepsen_edn;
pub mod leasesim_format;
pub mod model;
pub mod partition;
pub mod search;
mod states;
pub mod window;

pub use check::{
    check_kv, check_register, check_txn, CheckOptions, CheckReport, Verdict, DEFAULT_BUDGET_STEPS, DEFAULT_SHRINK_BUDGET_STEPS,
};
pub use history::{History, KvInput, KvOutput, Operation, RegisterHistory, RegisterInput, RegisterOutput};
