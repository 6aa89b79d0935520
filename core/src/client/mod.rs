//! The client library's logic, sans-IO: leader discovery by hints with
//! bounded retries, resend of pending requests after leader loss
//! ([`session`]), and the client's belief in its lease ([`belief`]).
//!
//! The simulator's workloads drive a [`Session`] with their own clock
//! readings and carry out its sends.

mod belief;
mod session;

pub use belief::{Belief, BeliefFrom};
pub use session::{ClientConfig, Completion, Session};
