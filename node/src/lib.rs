//! leasesim-node: leasesim's engine (`leasesim-core`) running for real, on
//! tokio with real sockets, a real disk and real clocks, behind etcd's v3
//! gRPC API. The simulator and this binary drive the same core, so a bug
//! the simulator finds is a bug of a program people can run.
//!
//! Modules: `config` (etcd-style flags), `storage` (write-ahead log and
//! snapshots), `driver` (the task that drives core), `transport` (peer
//! frames over TCP), `front` (requests with retries), `view` (range reads),
//! `etcd` (the gRPC services), `serve` (starting a member).

pub mod config;
pub mod driver;
pub mod etcd;
pub mod front;
pub mod pb;
pub mod serve;
pub mod storage;
pub mod transport;
pub mod view;
