//! leasesim-node: leasesim's engine (`leasesim-core`) running for real, on
//! tokio with real sockets, a real disk and real clocks, behind etcd's v3
//! gRPC API. The simulator and this binary drive the same core, so a bug
//! the simulator finds is a bug of a program people can run.
//!
//! Modules: `config` (etcd-style flags), `backup` (snapshot files and
//! restore), `digests` and `corrupt` (state hashes and the corruption check), `storage` (write-ahead log and
//! snapshots), `driver` (the task that drives core), `transport` (peer
//! frames over TCP), `front` (requests with retries), `join` (joining by
//! hopping to the leader), `identity` (the member a data directory holds), `view` (range reads),
//! `etcd` (the gRPC services), `ws` (the Raft lock-service design's WebSocket lock API),
//! `store` (the Raft lock-service design's data store), `serve` (starting a member), `local`
//! (a whole cluster on one machine), `faults` (fault injection for tests on
//! real processes: skewable clocks).

pub mod backup;
pub mod config;
pub mod corrupt;
pub mod digests;
pub mod driver;
pub mod etcd;
pub mod faults;
pub mod front;
pub mod identity;
pub mod join;
pub mod json_file;
pub mod load;
pub mod local;
pub mod nemesis;
pub mod pb;
pub mod roster;
pub mod serve;
pub mod storage;
pub mod store;
pub mod tls;
pub mod transport;
pub mod view;
pub mod ws;
