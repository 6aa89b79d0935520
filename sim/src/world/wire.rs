//! What travels between simulated processes, and how processes are named
//! and addressed.
//!
//! Every process is a madsim node with one IP address: servers 10.0.0.N,
//! clients 10.0.1.N, the data store 10.0.2.1. Messages are passed as values
//! (madsim's raw payloads), never serialized: the simulator measures the
//! protocol, not a codec.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use leasesim_core::raft::ConfChange;
use leasesim_core::server::PeerMessage;
use leasesim_core::service::{ClientRequest, ClientResponse};
use leasesim_core::{ClientId, NodeId};
use serde::{Deserialize, Serialize};

pub const PORT: u16 = 7000;

/// A simulated process, as scenarios name it: `s3`, `c2`, `store`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Proc {
    Server(NodeId),
    Client(ClientId),
    Store,
    /// The operator: the fault injector's voice for membership changes.
    Admin,
}

impl Proc {
    pub fn addr(self) -> SocketAddr {
        let ip = match self {
            Proc::Server(n) => Ipv4Addr::new(10, 0, 0, n as u8),
            Proc::Client(n) => Ipv4Addr::new(10, 0, 1 + (n / 250) as u8, (n % 250) as u8 + 1),
            Proc::Store => Ipv4Addr::new(10, 0, 9, 1),
            Proc::Admin => Ipv4Addr::new(10, 0, 9, 2),
        };
        SocketAddr::new(IpAddr::V4(ip), PORT)
    }

    pub fn from_addr(addr: SocketAddr) -> Option<Proc> {
        let IpAddr::V4(ip) = addr.ip() else { return None };
        let [a, b, c, d] = ip.octets();
        match (a, b, c, d) {
            (10, 0, 0, n) => Some(Proc::Server(n as NodeId)),
            (10, 0, 9, 1) => Some(Proc::Store),
            (10, 0, 9, 2) => Some(Proc::Admin),
            (10, 0, hi @ 1..=8, lo) if lo >= 1 => Some(Proc::Client((hi as u64 - 1) * 250 + lo as u64 - 1)),
            _ => None,
        }
    }
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proc::Server(n) => write!(f, "s{n}"),
            Proc::Client(n) => write!(f, "c{n}"),
            Proc::Store => write!(f, "store"),
            Proc::Admin => write!(f, "admin"),
        }
    }
}

/// A write to the data store, carrying the writer's fencing token (seed 001).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreWrite {
    pub client: ClientId,
    pub key: String,
    pub token: u64,
    pub request_id: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreReply {
    pub request_id: u64,
    pub accepted: bool,
}

#[derive(Clone, Debug)]
pub enum Wire {
    Peer(PeerMessage),
    Request(ClientRequest),
    Response(ClientResponse),
    StoreWrite(StoreWrite),
    StoreReply(StoreReply),
    /// A task worker's fenced start or completion (seed 003), and its answer.
    TaskWrite(crate::host::task_table::TaskWrite),
    TaskReply(crate::host::task_table::TaskReply),
    /// Operator → leader: propose a membership change.
    Admin(ConfChange),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        for p in [
            Proc::Server(1),
            Proc::Server(9),
            Proc::Client(1),
            Proc::Client(249),
            Proc::Client(250),
            Proc::Client(600),
            Proc::Store,
            Proc::Admin,
        ] {
            assert_eq!(Proc::from_addr(p.addr()), Some(p), "{p}");
        }
    }
}
