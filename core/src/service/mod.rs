//! The replicated state machine: key-value store, leases, locks and client
//! sessions, applied from the Raft log identically on every server (except
//! where `leader-stamped-wall` lets each server's wall clock judge expiry).
//!
//! One concept per file: [`command`] is the wire vocabulary, [`kv`],
//! [`lease`], [`lock`] and [`session`] hold the replicated data,
//! [`state_machine`] applies entries to them ([`txn`] and [`range`]
//! are etcd's Txn and Range over [`kv`]'s revisions, [`watch`] the changes a
//! watch reads from its history), [`effects`] is what an apply
//! reports ([`event`] the facts among it that the checkers judge,
//! `event_digest` the bytes they feed digests) and [`invariants`] what must
//! hold after each; [`writer_clock`] is the Juju lease design's clock
//! document and its expiry rules; [`auth`] is etcd's users, roles and
//! permissions; [`history_bytes`] keeps the bytes of [`kv`]'s history that
//! the applied-state digest hashes; [`shared_state`] is the state as a
//! snapshot shares it.

pub mod auth;
mod command;
pub mod effects;
mod event;
pub(crate) mod event_digest;
mod history_bytes;
mod invariants;
pub mod kv;
pub mod lease;
pub mod lock;
pub mod range;
pub mod session;
pub mod shared_state;
pub mod state_machine;
pub mod txn;
mod txn_apply;
pub mod watch;
pub mod writer_clock;

pub use command::*;
pub use effects::Effect;
pub use event::{ReleaseCause, RevokeCause, ServiceEvent};
pub use range::{RangeRequest, RangeResponse, SortOrder, SortTarget};
pub use shared_state::SharedState;
pub use state_machine::{ApplyContext, MachineSettings, StateMachine};
pub use txn::{Compare, CompareResult, CompareTarget, DeleteRequest, KvError, PutRequest, TxnOp, TxnOpResponse, TxnRequest, TxnResponse};
