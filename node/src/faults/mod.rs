//! Fault injection for real processes: what a runner playing a scenario on
//! a real cluster needs and the operating system does not offer per
//! process. `clock`: a member's skewable clock source; `control`: the
//! test-only HTTP endpoint that changes it at run time. Nothing here is on
//! unless a member is started with an `--unsafe-test-*` flag, or a runner
//! builds it for itself.

pub mod clock;
pub mod control;

use std::net::SocketAddr;

use clap::Args;

/// The test-only flags of a member.
#[derive(Args, Clone, Debug, Default)]
pub struct TestArgs {
    /// Serve the test control endpoint here (http://127.0.0.1:PORT,
    /// loopback only): skew this member's clocks at run time (see
    /// node/README.md). For tests only; absent, nothing can skew them.
    #[arg(long, value_parser = crate::config::parse_url)]
    pub unsafe_test_control_url: Option<SocketAddr>,
}
