//! Per-link network faults for a whole cluster: one [`LinkProxy`] on every
//! directed member-to-member link, and optionally one in front of each
//! member's client API.
//!
//! How members are pointed at the proxies: member A is started with
//! `--unsafe-test-peer-route B=http://127.0.0.1:P` for every peer B, where
//! P is the proxy of the link A→B alone; A dials B there, and nothing else
//! changes (its member list, its hello, B's real peer URL). A member only
//! ever writes to its own outbound connection (each direction of a pair
//! has its own connection, `transport.rs`), so one proxy per directed link
//! can cut or slow A→B and leave B→A alone: asymmetric partitions come for
//! free. Why a route flag rather than per-member `--initial-cluster`s: the
//! peer URL a member learns from a peer's hello replaces the one the flags
//! gave, and a data directory records them; a route overrides only where A
//! dials. Why proxies rather than firewall rules or 127.0.0.x aliases with
//! tc: those need root and act on the whole machine, and every run here
//! shares it with other runs; proxies on ephemeral 127.0.0.1 ports need
//! nothing and die with the runner.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::aimed::AimedFault;
use super::proxy::{Framing, LinkFault, LinkProxy};

/// One member as the mesh needs it: its name and where it really listens.
#[derive(Clone, Debug)]
pub struct MeshMember {
    pub name: String,
    pub peer: SocketAddr,
    /// Its client API, to put a proxy in front of (None: no client proxy).
    pub client: Option<SocketAddr>,
}

/// Proxies on every directed peer link (`(from, to)` by member index) and
/// in front of client APIs.
pub struct Mesh {
    members: Vec<MeshMember>,
    peer_links: BTreeMap<(usize, usize), LinkProxy>,
    client_links: BTreeMap<usize, LinkProxy>,
}

impl Mesh {
    /// Starts `n × (n − 1)` peer proxies and one client proxy per member
    /// that names a client address, all on ephemeral loopback ports.
    pub async fn start(members: Vec<MeshMember>) -> std::io::Result<Mesh> {
        let any: SocketAddr = ([127, 0, 0, 1], 0).into();
        let mut peer_links = BTreeMap::new();
        for (from, _) in members.iter().enumerate() {
            for (to, target) in members.iter().enumerate().filter(|(to, _)| *to != from) {
                peer_links.insert((from, to), LinkProxy::start(any, target.peer, Framing::PeerFrames).await?);
            }
        }
        let mut client_links = BTreeMap::new();
        for (i, member) in members.iter().enumerate() {
            if let Some(client) = member.client {
                client_links.insert(i, LinkProxy::start(any, client, Framing::Opaque).await?);
            }
        }
        Ok(Mesh { members, peer_links, client_links })
    }

    /// The flags member `from` must be started with so it dials every peer
    /// through its link's proxy.
    pub fn route_args(&self, from: usize) -> Vec<String> {
        let mut args = Vec::new();
        for ((_, to), proxy) in self.peer_links.range((from, 0)..(from + 1, 0)) {
            args.push("--unsafe-test-peer-route".to_string());
            args.push(format!("{}=http://{}", self.members[*to].name, proxy.addr()));
        }
        args
    }

    /// The proxy of the directed link `from` → `to`.
    pub fn peer_link(&self, from: usize, to: usize) -> Option<&LinkProxy> {
        self.peer_links.get(&(from, to))
    }

    /// The proxy in front of member `i`'s client API (clients dial it).
    pub fn client_link(&self, i: usize) -> Option<&LinkProxy> {
        self.client_links.get(&i)
    }

    /// Sets `fault` on every peer link into and out of `member` (a cut
    /// isolates it from its peers; its clients still reach it).
    pub fn around(&self, member: usize, fault: LinkFault) -> Result<(), String> {
        for ((from, to), proxy) in &self.peer_links {
            if *from == member || *to == member {
                proxy.set(fault)?;
            }
        }
        Ok(())
    }

    /// Aims `faults` at every peer link (replacing the ones before), as a
    /// scenario's `messages` faults hit every message of their kind.
    pub fn aim_all(&self, faults: &[AimedFault]) -> Result<(), String> {
        for proxy in self.peer_links.values() {
            proxy.aim(faults.to_vec())?;
        }
        Ok(())
    }

    /// Lifts every fault on every link.
    pub fn heal(&self) {
        for proxy in self.peer_links.values().chain(self.client_links.values()) {
            proxy.set(LinkFault::default()).expect("no fault is always valid");
        }
        for proxy in self.peer_links.values() {
            proxy.aim(Vec::new()).expect("no aimed fault is always valid");
        }
    }
}
