//! Scenario files: parsing, validation and `file:line:col` errors (see
//! SCENARIO-FORMAT.md, and docs/SCENARIO-EXTENSIONS.md for additions).
//!
//! Scenario files are the product's main interface, so this module turns
//! them into a fully typed, defaulted and cross-checked [`Scenario`] (the
//! simulator never re-validates), reports every problem with where it is and
//! how to fix it, and writes scenarios back ([`to_toml`]) for `shrink`.
//!
//! Pipeline: `raw` (the TOML as a tree with spans) → `validate`, which reads
//! it with `fields` and the per-section modules (`workload` with
//! `multi_instance`, `fault`, `chaos`, `expect`, `selector`) → the [`model`] types; `error` and `span`
//! turn problems into `file:line:col` diagnostics.

mod chaos;
pub mod chaos_draw;
pub mod check;
pub mod error;
mod expect;
mod fault;
pub mod fields;
mod invariants;
pub mod knobs;
mod load;
pub mod message_fault;
pub mod model;
mod multi_instance;
pub mod point;
pub mod raw;
pub mod seeds;
mod selector;
mod span;
pub mod suggest;
pub mod txn_draw;
mod validate;
mod watch_txn;
mod workload;
mod write;

pub use check::check_command;
pub use error::{Diagnostic, Location, ScenarioError, Snippet};
pub use invariants::{all_ids as invariant_ids, is_known_invariant, is_safety, EXTENSION_INVARIANT_IDS, INVARIANT_IDS};
pub use load::{load, load_all, load_each};
pub use message_fault::{MessageEffect, MessageFault, WireKind};
pub use model::*;
pub use point::{MessageKind, Point};
pub use validate::{
    expiry_from_name, expiry_name, DEFAULT_CLIENT_TIMEOUT_NS, DEFAULT_MAX_APPEND_ENTRIES, DEFAULT_MAX_IN_FLIGHT_APPENDS,
    DEFAULT_SNAPSHOT_EVERY,
};
pub use write::to_toml;

/// Parses and validates scenario text; `file_name` is used in errors and
/// becomes the scenario's `path`.
pub fn parse(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
    validate::parse_located(text, file_name).map(|(scenario, _)| scenario)
}
