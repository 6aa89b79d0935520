//! A server's settings and the clock readings that come with every input.
//!
//! The server never reads a clock (DESIGN.md "core"): the host passes this
//! process's own monotonic and wall readings with each call. Monotonic time
//! drives Raft timers and the leader's lease deadlines; wall time is used only
//! by `leader-stamped-wall`, which stamps absolute expiries (the Raft
//! lock-service design).

use crate::bugs::Bugs;
use crate::raft::RaftConfig;
use crate::service::session::DEFAULT_SESSION_WINDOW;
use crate::service::state_machine::FULL_STATE_DIGEST_EVERY;
use crate::service::{ApplyContext, MachineSettings};
use crate::types::{ExpiryStrategy, LogIndex};

/// This process's own clocks at the moment of an input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clocks {
    pub mono_ns: u64,
    pub wall_ns: u64,
}

/// Static settings of one server. Every server of a cluster must share
/// `expiry`, `bugs`, the election timeouts and `session_window`: they decide
/// how entries are applied, and a divergence there is a divergence of state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Raft's own settings; `raft.bugs` carries the Raft planted bugs.
    pub raft: RaftConfig,
    pub expiry: ExpiryStrategy,
    /// The service planted bugs (`follower_expires_leases`,
    /// `no_promote_extension`, `token_from_local_counter`,
    /// `release_without_owner_check`, `keepalive_after_revoke`,
    /// `grant_without_lease_check`, `stale_follower_reads`).
    pub bugs: Bugs,
    /// `leader-monotonic`: a new leader re-arms every lease at
    /// now + this + TTL (etcd's `Promote` extension). It covers the old
    /// leader answering keep-alives until check-quorum deposes it, so it must
    /// be at least the largest election timeout.
    pub promote_extension_ns: u64,
    /// `leader-monotonic`: how often the leader records remaining TTLs
    /// through the log (etcd lease checkpoints). `None`: never.
    pub checkpoint_interval_ns: Option<u64>,
    /// Compact the log after this many applied entries (0: never).
    pub snapshot_every_entries: u64,
    /// `leader-monotonic`: answer a keep-alive only after a read-index round
    /// confirms this server still leads (true, the default), or at once from
    /// its own deadlines as etcd's lessor does (false). With `false`, set
    /// `raft.keepalive_lease_drift_ppm` too (the simulator and leasesim-node
    /// do): such answers then wait for the leader's lease, without which a
    /// leader paused through its successor's election answers them late
    /// (requests.rs).
    pub keepalive_read_index: bool,
    /// Sequence numbers per client whose answers the sessions keep.
    pub session_window: u64,
    /// Every this many indices the whole state joins the applied-state
    /// digest (the same on every server of a cluster); see
    /// `service::FULL_STATE_DIGEST_EVERY`, the default.
    pub full_state_digest_every: LogIndex,
    /// Every this many indices the state machine's invariants are checked
    /// (1, the default: after every entry).
    pub invariants_every: LogIndex,
    /// Stretch both periods as the state grows (see
    /// `ApplyContext::scale_walks_with_state`); off by default.
    pub scale_walks_with_state: bool,
}

impl ServerConfig {
    /// Defaults: extension = the largest election timeout, no checkpoints,
    /// a snapshot every 1000 entries, `bugs` taken from `raft.bugs`.
    pub fn new(raft: RaftConfig, expiry: ExpiryStrategy) -> Self {
        ServerConfig {
            bugs: raft.bugs,
            promote_extension_ns: raft.election_timeout_max_ns,
            raft,
            expiry,
            checkpoint_interval_ns: None,
            snapshot_every_entries: 1000,
            keepalive_read_index: true,
            session_window: DEFAULT_SESSION_WINDOW,
            full_state_digest_every: FULL_STATE_DIGEST_EVERY,
            invariants_every: 1,
            scale_walks_with_state: false,
        }
    }

    /// Turns on `bugs` in both layers (Raft's and the service's).
    pub fn with_bugs(mut self, bugs: Bugs) -> Self {
        self.bugs = bugs;
        self.raft.bugs = bugs;
        self
    }

    /// What this server brings to every apply besides the entry.
    pub fn apply_context(&self, wall_ns: u64, local_grants: u64) -> ApplyContext {
        ApplyContext {
            wall_ns,
            local_grants,
            full_state_digest_every: self.full_state_digest_every,
            invariants_every: self.invariants_every,
            scale_walks_with_state: self.scale_walks_with_state,
        }
    }

    /// The settings the state machine applies by.
    pub fn machine_settings(&self) -> MachineSettings {
        let mut settings = MachineSettings::new(self.expiry, self.raft.election_timeout_max_ns, self.bugs);
        settings.session_window = self.session_window;
        settings
    }
}
