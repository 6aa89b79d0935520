//! A synthetic run for the checkers' own tests: every checker must be shown
//! to fire on a planted violation and to stay silent on a healthy history.

use std::collections::BTreeMap;

use leasesim_core::raft::Role;
use leasesim_core::server::ServerEvent;
use leasesim_core::{ExpiryStrategy, NodeId};

use super::{FinalServer, RunRecord, TaskPace};
use crate::observe::{Event, Obs, ObsLog};
use crate::vocab::Proc;
use crate::vocab::ServerProbe;
use crate::vocab::SimClock;

pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;

pub struct Fixture {
    pub obs: ObsLog,
    pub clocks: BTreeMap<Proc, SimClock>,
    pub servers: BTreeMap<NodeId, FinalServer>,
    pub registry_ttl_ns: BTreeMap<u64, u64>,
    pub task_pace: Option<TaskPace>,
    pub drift_bound: f64,
    pub expiry: ExpiryStrategy,
    pub end_ns: u64,
}

impl Fixture {
    /// Three servers and three clients with exact clocks; s1 leads term 1
    /// when the run ends, all logs empty.
    pub fn new() -> Self {
        let mut clocks = BTreeMap::new();
        for n in 1..=3 {
            clocks.insert(Proc::Server(n), SimClock::new(1_000 * n, 0, 0.0));
            clocks.insert(Proc::Client(n), SimClock::new(7_000 * n, 0, 0.0));
        }
        let servers = (1..=3)
            .map(|n| {
                let role = if n == 1 { Role::Leader } else { Role::Follower };
                let probe = ServerProbe { role, term: 1, commit_index: 0 };
                (
                    n,
                    FinalServer {
                        up: true,
                        voter: true,
                        probe: Some(probe),
                        first_index: 1,
                        log_terms: Vec::new(),
                        keys: Vec::new(),
                        changes: Vec::new(),
                    },
                )
            })
            .collect();
        Fixture {
            obs: ObsLog::from(Vec::new()),
            clocks,
            servers,
            registry_ttl_ns: BTreeMap::new(),
            task_pace: None,
            drift_bound: 0.01,
            expiry: ExpiryStrategy::LeaderMonotonic,
            end_ns: 60 * S,
        }
    }

    pub fn push(&mut self, at_ns: u64, proc: Proc, event: Event) -> &mut Self {
        self.obs.insert_in_time_order(Obs { at_ns, proc, event });
        self
    }

    pub fn server(&mut self, at_ns: u64, server: NodeId, event: ServerEvent) -> &mut Self {
        self.push(at_ns, Proc::Server(server), Event::Server { event })
    }

    /// The same server event on every server, 1 ms apart (as every server
    /// applies every entry).
    pub fn everywhere(&mut self, at_ns: u64, event: ServerEvent) -> &mut Self {
        for n in 1..=3 {
            self.server(at_ns + (n - 1) * MS, n, event.clone());
        }
        self
    }

    pub fn record(&self) -> RunRecord<'_> {
        RunRecord {
            obs: &self.obs,
            clocks: &self.clocks,
            drift_bound: self.drift_bound,
            expiry: self.expiry,
            election_timeout_max_ns: 300 * MS,
            settle_at_ns: self.end_ns - 10 * S,
            end_ns: self.end_ns,
            servers: &self.servers,
            registry_ttl_ns: &self.registry_ttl_ns,
            lock_wait_bound_ns: 5 * S,
            commit_backlog_ns: 0,
            task_pace: self.task_pace,
        }
    }

    /// Ids of the invariants that fire on this run.
    pub fn fired(&self) -> Vec<&'static str> {
        super::check_all(&self.record()).violations.into_iter().map(|v| v.invariant).collect()
    }
}
