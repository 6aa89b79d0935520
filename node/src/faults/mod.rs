//! Fault injection for real processes: what a runner playing a scenario on
//! a real cluster needs and the operating system does not offer per
//! process. `clock`: a member's skewable clock source; `control`: the
//! test-only HTTP endpoint that changes it and arms failpoints at run
//! time; `failpoint`: crash points inside the driver's step; `event_log`:
//! the member's own Raft and lock-table events for the runner's judge;
//! `proxy`: one directed link's cut, delay, loss and duplication;
//! `aimed`: faults aimed at one kind of Raft message on the proxies;
//! `client_ids`: lock calls that name their own client identity; `mesh`: a proxy on
//! every link of a cluster. Nothing here is on
//! unless a member is started with an `--unsafe-test-*` flag, or a runner
//! builds it for itself.

pub mod aimed;
pub mod client_ids;
pub mod clock;
pub mod control;
pub mod event_log;
pub mod failpoint;
pub mod mesh;
pub mod proxy;

use std::net::SocketAddr;

use clap::Args;

/// The test-only flags of a member.
#[derive(Args, Clone, Debug, Default)]
pub struct TestArgs {
    /// Serve the test control endpoint here (http://127.0.0.1:PORT,
    /// loopback only): skew this member's clocks at run time (see
    /// node/README.md). For tests only; absent, nothing can skew them.
    #[arg(long, value_parser = crate::members::parse_url)]
    pub unsafe_test_control_url: Option<SocketAddr>,
    /// Dial peer NAME at this address instead of its peer URL
    /// (NAME=http://127.0.0.1:PORT, repeatable): a fault proxy on the link
    /// to it (faults/mesh.rs). For tests only.
    #[arg(long = "unsafe-test-peer-route", value_name = "NAME=URL", value_parser = parse_route)]
    pub unsafe_test_peer_routes: Vec<(String, SocketAddr)>,
    /// Append this member's own Raft and lock-table events to FILE as JSON
    /// lines stamped with CLOCK_MONOTONIC (faults/event_log.rs), for a
    /// test runner's judge. For tests only.
    #[arg(long, value_name = "FILE")]
    pub unsafe_test_event_log: Option<std::path::PathBuf>,
    /// Let a Lock or Unlock call name its client identity in its gRPC
    /// metadata (`leasesim-test-client: ID/SEQ`, faults/client_ids.rs), so
    /// that a test runner's judge can tell who released a lock. For tests
    /// only: any caller could act under another's identity.
    #[arg(long)]
    pub unsafe_test_client_ids: bool,
}

fn parse_route(s: &str) -> Result<(String, SocketAddr), String> {
    let (name, url) = s.split_once('=').ok_or_else(|| format!("{s}: expected NAME=http://IP:PORT"))?;
    Ok((name.to_string(), crate::members::parse_url(url)?))
}
