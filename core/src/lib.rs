//! leasesim-core: a lease and lock service on a Raft "consistent core",
//! written as pure state machines.
//!
//! Nothing in this crate reads a clock, draws ambient randomness, does IO,
//! spawns or awaits. Every input carries the node's own clock readings
//! (`now_ns`, monotonic; `wall_ns` where a strategy needs it), every output is
//! data the host carries out (messages, persist operations, replies, the next
//! deadline). That is what lets `leasesim` (the `sim/` crate) replay any run
//! bit for bit from a seed. `core/clippy.toml` enforces it (disallowed methods and types).
//!
//! Layers, bottom up:
//! - [`raft`]: consensus, generic over the command and snapshot types.
//! - [`service`]: the replicated state machine (KV, leases, locks, sessions).
//! - [`server`]: one server process = Raft + state machine + the leader's
//!   lease deadlines; answers client requests.
//! - [`client`]: the client library logic (leader discovery, retries,
//!   keep-alive, the client's belief in its lease).
//! - [`bugs`]: planted bugs, off unless a test or scenario turns them on.
//! - [`seed`]: one random stream per purpose, derived from the run's seed.
//! - [`duration`]: duration strings (`"250ms"`), read and written exactly,
//!   for every program that takes a duration from a person.
//!
//! # A walkthrough
//!
//! Three servers and the smallest correct host, from this crate alone: the
//! host owns the clock, the disks and the network, and after every input
//! carries out the server's output — persist first, then send, as
//! [`server::ServerOutput`] demands.
//!
//! ```
//! use std::collections::{BTreeMap, VecDeque};
//! use leasesim_core::raft::{Persisted, RaftConfig, Role};
//! use leasesim_core::server::{Clocks, PeerMessage, Server, ServerConfig};
//! use leasesim_core::service::{ClientRequest, ClientResponse, Command, Op, Response, SharedState};
//! use leasesim_core::{ExpiryStrategy, NodeId, NS_PER_MS, NS_PER_SEC};
//!
//! struct Host {
//!     now_ns: u64, // one true clock: every server reads it unskewed
//!     servers: BTreeMap<NodeId, Server>,
//!     disks: BTreeMap<NodeId, Persisted<Command, SharedState>>,
//!     in_flight: VecDeque<(NodeId, NodeId, PeerMessage)>,
//!     replies: Vec<ClientResponse>,
//! }
//! impl Host {
//!     fn clocks(&self) -> Clocks { Clocks { mono_ns: self.now_ns, wall_ns: self.now_ns } }
//!     /// Writes before sends: a vote or an acknowledgement rests on them.
//!     fn carry_out(&mut self, id: NodeId) {
//!         let output = self.servers.get_mut(&id).unwrap().take_output();
//!         output.persist.into_iter().for_each(|op| self.disks.get_mut(&id).unwrap().apply(op));
//!         self.in_flight.extend(output.messages.into_iter().map(|(to, msg)| (id, to, msg)));
//!         self.replies.extend(output.replies);
//!     }
//!     /// A perfect network: every message, and those it causes, arrives now.
//!     fn deliver_all(&mut self) {
//!         while let Some((from, to, msg)) = self.in_flight.pop_front() {
//!             let clocks = self.clocks();
//!             self.servers.get_mut(&to).unwrap().handle_peer(clocks, from, msg);
//!             self.carry_out(to);
//!         }
//!     }
//!     /// Time passes: each server's timers fire when due (`tick` is harmless before).
//!     fn advance(&mut self, by_ns: u64) {
//!         self.now_ns += by_ns;
//!         for id in 1..=3 {
//!             let clocks = self.clocks();
//!             self.servers.get_mut(&id).unwrap().tick(clocks);
//!             self.carry_out(id);
//!         }
//!         self.deliver_all();
//!     }
//!     fn leader(&self) -> Option<NodeId> {
//!         self.servers.values().find(|s| s.raft().role() == Role::Leader).map(|s| s.id())
//!     }
//!     /// A client's request to `to`, answered once the entry commits and applies.
//!     fn ask(&mut self, to: NodeId, seq: u64, op: Op) -> Response {
//!         let clocks = self.clocks();
//!         self.servers.get_mut(&to).unwrap().handle_client(clocks, ClientRequest { client: 7, seq, op });
//!         self.carry_out(to);
//!         self.deliver_all();
//!         self.replies.pop().expect("answered within the same instant").body
//!     }
//! }
//!
//! let config = |id| ServerConfig::new(RaftConfig::new(id, [1, 2, 3].into()), ExpiryStrategy::LeaderMonotonic);
//! let mut host = Host { now_ns: 0, servers: BTreeMap::new(), disks: BTreeMap::new(), in_flight: VecDeque::new(), replies: Vec::new() };
//! for id in 1..=3 {
//!     // The seed only draws election jitter; a fresh server starts from an empty disk.
//!     host.servers.insert(id, Server::new(config(id), Persisted::default(), id, host.clocks()));
//!     host.disks.insert(id, Persisted::default());
//! }
//! // No leader until an election timeout (150..300 ms by default) fires somewhere.
//! while host.leader().is_none() {
//!     host.advance(10 * NS_PER_MS);
//! }
//! let leader = host.leader().unwrap();
//! assert!(host.now_ns >= 150 * NS_PER_MS);
//! // Its term and its vote reached its disk before any vote was asked for.
//! assert_eq!(host.disks[&leader].hard_state.term, host.servers[&leader].raft().term());
//!
//! // A lease of 5 s: the leader alone keeps its deadline, on its own clock.
//! let granted_at_ns = host.now_ns;
//! let Response::LeaseGranted { lease, ttl_ns } = host.ask(leader, 1, Op::LeaseGrant { ttl_ns: 5 * NS_PER_SEC, id: None }) else { panic!() };
//! assert_eq!(ttl_ns, 5 * NS_PER_SEC);
//! assert_eq!(host.servers[&leader].lease_deadlines().deadline(lease), Some(granted_at_ns + ttl_ns));
//!
//! // Two seconds on (heartbeats keep the leader in place), a keep-alive
//! // moves the deadline to a full TTL from now.
//! (0..200).for_each(|_| host.advance(10 * NS_PER_MS));
//! assert_eq!(host.leader(), Some(leader));
//! assert_eq!(host.ask(leader, 2, Op::LeaseKeepAlive { lease }), Response::KeepAlive { lease, ttl_ns });
//! assert_eq!(host.servers[&leader].lease_deadlines().deadline(lease), Some(host.now_ns + ttl_ns));
//! ```

/// An engine invariant, checked at the end of a step: on in debug builds and
/// in every simulation build (`--cfg madsim`, so release sweeps too), where
/// stopping at the step that broke an invariant is worth its small cost;
/// off in a plain release build of the library.
macro_rules! invariant {
    ($($arg:tt)*) => {
        if cfg!(any(debug_assertions, madsim)) {
            assert!($($arg)*);
        }
    };
}

/// `assert_eq!` under the same rule as [`invariant!`].
macro_rules! invariant_eq {
    ($($arg:tt)*) => {
        if cfg!(any(debug_assertions, madsim)) {
            assert_eq!($($arg)*);
        }
    };
}

pub mod bugs;
pub mod byte_hash;
pub mod client;
pub mod duration;
pub mod raft;
pub mod seed;
pub mod server;
pub mod service;
pub mod types;

pub use types::*;
