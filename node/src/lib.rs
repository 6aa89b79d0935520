//! leasesim-node: leasesim's engine (`leasesim-core`) running for real, on
//! tokio with real sockets, a real disk and real clocks, behind etcd's v3
//! gRPC API. The simulator and this binary drive the same core, so a bug
//! the simulator finds is a bug of a program people can run.
//!
//! Modules, the server's first, each below the ones that use it (no
//! module imports one that imports it back; `tests/it/module_graph.rs`
//! checks): `members` (member ids, peer URLs, `--initial-cluster`),
//! `config` (etcd-style flags, durations), `identity` (the member a data
//! directory holds), `json_file` (small JSON files written atomically),
//! `storage` (write-ahead log and snapshots), `backup` (snapshot files and
//! restore), `digests` and `corrupt` (state hashes and the corruption
//! check), `nospace` (the NOSPACE alarm in the replicated store and the
//! disk flags), `view` (range reads), `frame` (what members say to each
//! other), `transport` (peer frames over TCP), `driver` (the task that
//! drives core, and the `MemberStatus` it publishes), `log_view` (its Raft
//! log as term runs, for `GET /log`), `watch_hub`
//! (applied changes out to the watch streams), `front` (requests
//! with retries), `join` (joining by hopping to the leader), `node_handle`
//! (what a running member hands its APIs), `pb` (etcd's generated protobuf
//! types), `etcd` (the gRPC services), `ws` (the WebSocket lock API of the
//! lock-service design), `store` (its data store, which checks fencing
//! tokens; `store_tasks`, its task rows), `tls` (certificates), `sched_slice`
//! (a short scheduling slice for a server's threads), `serve` (starting a member), `faults`
//! (fault injection hooks for tests on real processes: skewable clocks,
//! link proxies). Then the tools, which no server module imports: `tools`
//! (`local`, a whole cluster on one machine; `load` and `nemesis`, a
//! client workload under faults; `roster`).

pub mod auto_compact;
pub mod backup;
pub mod cli;
pub mod config;
pub mod corrupt;
pub mod digests;
pub mod driver;
pub mod etcd;
pub mod faults;
pub mod frame;
pub mod front;
pub mod identity;
pub mod join;
pub mod json_file;
pub mod log_view;
pub mod members;
pub mod node_handle;
pub mod nospace;
pub mod pb;
pub mod sched_slice;
pub mod serve;
pub mod storage;
pub mod store;
pub mod store_tasks;
pub mod tls;
pub mod tools;
pub mod transport;
pub mod view;
pub mod watch_hub;
pub mod ws;
