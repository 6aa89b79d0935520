//! How the simulator addresses each process: every process is a madsim node
//! with one IP address: servers 10.0.0.N, clients 10.0.1.N.., the data store
//! 10.0.9.1, the operator 10.0.9.2. (The process names themselves, [`Proc`],
//! belong to the judge, which knows nothing of madsim's network.)

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use leasesim_core::NodeId;
use leasesim_judge::vocab::Proc;

pub const PORT: u16 = 7000;

/// A process's simulated address.
pub trait ProcAddr {
    fn addr(self) -> SocketAddr;
}

impl ProcAddr for Proc {
    fn addr(self) -> SocketAddr {
        let ip = match self {
            Proc::Server(n) => Ipv4Addr::new(10, 0, 0, n as u8),
            Proc::Client(n) => Ipv4Addr::new(10, 0, 1 + (n / 250) as u8, (n % 250) as u8 + 1),
            Proc::Store => Ipv4Addr::new(10, 0, 9, 1),
            Proc::Admin => Ipv4Addr::new(10, 0, 9, 2),
        };
        SocketAddr::new(IpAddr::V4(ip), PORT)
    }
}

/// The process at a simulated address, if any.
pub fn proc_of_addr(addr: SocketAddr) -> Option<Proc> {
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
            assert_eq!(proc_of_addr(p.addr()), Some(p), "{p}");
        }
    }
}
