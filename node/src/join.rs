//! Joining a running cluster by hopping to its leader, as the Raft
//! lock-service design describes it (docs/DESIGN-DOCUMENTS.md): a new
//! server knows one member's peer address; it asks that member to add it
//! (`JoinCluster`); a member that does not lead answers with the leader it
//! knows, and the new server hops there, at most [`MAX_REDIRECTS`] times.
//! The leader adds it through the log (a single-server change, committed by
//! a majority before the answer). The peer list (`FetchPeerList`) is fetched
//! the same way; this implementation asks for it first, because the new
//! server's Raft state starts from the voters, and asks to join once it
//! listens, because in a one-member cluster the change needs the new
//! server's vote to commit. Safety never rests on the answers: only a leader of the current
//! term can commit the change, and a deposed "potential leader" cannot.
//!
//! The two calls travel on the peer port, each on a short connection of
//! its own: the first frame is the request, the answer comes back on the
//! same connection (see `transport::serve_peers`).
//!
//! After a successful join the peer list is kept in `DATA_DIR/peers.json`,
//! so a restart from the same directory needs no leader to come up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use leasesim_core::raft::{ConfChange, Role};
use leasesim_core::{NodeId, Term};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::frame::{read_frame, write_frame, JoinReply, PeerFrame, PeerList};
use crate::front::Front;
use crate::members::{parse_url, Member, PeerEntry};
use crate::transport::{Directory, Requests};

/// Redirects a joining server follows before it gives up (the design's 5).
pub const MAX_REDIRECTS: usize = 5;
/// Answers of "no leader known" a joining server waits through (an
/// election under way), 300 ms apart, before it gives up.
const LEADERLESS_RETRIES: usize = 40;
/// How long one call may take: the leader answers a join only once the
/// change has committed.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// What a joined server starts with: the voters (itself among them once
/// the change applies) and the cluster's id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Joined {
    pub peers: Vec<PeerEntry>,
    pub cluster_id: u64,
}

impl Joined {
    /// The members, keyed by id, as `--initial-cluster` would give them.
    pub fn members(&self) -> Result<BTreeMap<NodeId, Member>, String> {
        self.peers.iter().map(|p| Ok((p.id, Member { id: p.id, name: p.name.clone(), peer: parse_url(&p.peer_url)? }))).collect()
    }

    fn path(data_dir: &Path) -> std::path::PathBuf {
        data_dir.join("peers.json")
    }

    /// The peer list saved by an earlier join into this directory.
    pub fn load(data_dir: &Path) -> Result<Option<Joined>, String> {
        crate::json_file::load(&Joined::path(data_dir))
    }

    /// Saves it (see `json_file::save`: a crash leaves the old file or the new).
    pub fn save(&self, data_dir: &Path) -> Result<(), String> {
        crate::json_file::save(data_dir, &Joined::path(data_dir), self)
    }
}

/// One call: the request as the first frame of a new connection, the
/// answer read back from it.
async fn call(addr: SocketAddr, request: &PeerFrame) -> Result<PeerFrame, String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        write_frame(&mut stream, request).await?;
        stream.flush().await?;
        read_frame(&mut BufReader::new(stream)).await
    };
    match tokio::time::timeout(CALL_TIMEOUT, exchange).await {
        Ok(Ok(Some(frame))) => Ok(frame),
        Ok(Ok(None)) => Err(format!("{addr} closed the connection without answering")),
        Ok(Err(e)) => Err(format!("{addr}: {e}")),
        Err(_) => Err(format!("{addr} did not answer within {CALL_TIMEOUT:?}")),
    }
}

/// Where a "not the leader" answer points: the next hop, or none known.
fn next_hop(leader_addr: &str) -> Option<SocketAddr> {
    if leader_addr.is_empty() {
        None
    } else {
        parse_url(leader_addr).ok()
    }
}

/// `FetchPeerList`, hopping from `contact` (any member's peer address) to
/// the leader: the voters and the cluster's id, and the leader's address.
/// Asked first, before this server starts, because its Raft state starts
/// from the voters; no consensus is needed for it.
pub async fn fetch_peers(contact: SocketAddr) -> Result<(SocketAddr, Joined), String> {
    let mut hops = Hops::from(contact);
    loop {
        let PeerFrame::PeerList(list) = call(hops.at, &PeerFrame::FetchPeers { term: 0 }).await? else {
            return Err(format!("{} answered the peer-list request with something else", hops.at));
        };
        if list.success {
            return Ok((hops.at, Joined { peers: list.peers, cluster_id: list.cluster_id }));
        }
        hops.follow(&list.leader_addr).await?;
    }
}

/// `JoinCluster`, hopping from `contact` to the leader, which adds server
/// `id` through the log and answers once the change has committed. Asked
/// once this server listens: in a one-member cluster the change needs the
/// new server's own vote to commit. Fails after [`MAX_REDIRECTS`]
/// redirects, or when a leader refuses, with a message saying which.
pub async fn ask_to_join(contact: SocketAddr, id: NodeId, name: &str, peer_url: &str) -> Result<Term, String> {
    let mut hops = Hops::from(contact);
    let join = PeerFrame::Join { id, name: name.to_string(), peer_url: peer_url.to_string() };
    loop {
        let PeerFrame::JoinReply(reply) = call(hops.at, &join).await? else {
            return Err(format!("{} answered the join with something else", hops.at));
        };
        if reply.success {
            tracing::info!(leader = %hops.at, term = reply.term, "joined the cluster");
            return Ok(reply.term);
        }
        if !reply.error.is_empty() {
            return Err(format!("the leader at {} refused the join: {}", hops.at, reply.error));
        }
        hops.follow(&reply.leader_addr).await?;
    }
}

/// The joining server's path through the cluster.
struct Hops {
    at: SocketAddr,
    redirects: Vec<SocketAddr>,
    leaderless: usize,
}

impl From<SocketAddr> for Hops {
    fn from(contact: SocketAddr) -> Self {
        Hops { at: contact, redirects: Vec::new(), leaderless: 0 }
    }
}

impl Hops {
    /// Moves to the leader an answer named, or waits when it named none.
    async fn follow(&mut self, leader_addr: &str) -> Result<(), String> {
        match next_hop(leader_addr) {
            Some(next) => {
                if self.redirects.len() == MAX_REDIRECTS {
                    let path: Vec<String> = self.redirects.iter().map(ToString::to_string).collect();
                    return Err(format!(
                        "no leader found after {MAX_REDIRECTS} redirects ({} → {}); the cluster may be electing or partitioned: try again, or --join another member",
                        path.join(" → "),
                        next
                    ));
                }
                tracing::info!(from = %self.at, to = %next, "not the leader: hopping");
                self.redirects.push(next);
                self.at = next;
            }
            None => {
                self.leaderless += 1;
                if self.leaderless > LEADERLESS_RETRIES {
                    return Err(format!("{} knows no leader after {LEADERLESS_RETRIES} tries, 300 ms apart", self.at));
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        Ok(())
    }
}

/// The members' side: answers `Join` and `FetchPeers` frames.
#[derive(Clone)]
pub struct JoinDesk {
    pub front: Front,
    pub directory: Directory,
    pub cluster_id: u64,
}

impl Requests for JoinDesk {
    /// The answer to one request frame (`None` for any other frame).
    async fn answer(&self, request: PeerFrame) -> Option<PeerFrame> {
        match request {
            PeerFrame::Join { id, name, peer_url } => Some(PeerFrame::JoinReply(self.join(id, name, peer_url).await)),
            PeerFrame::FetchPeers { .. } => Some(PeerFrame::PeerList(self.peer_list())),
            _ => None,
        }
    }
}

impl JoinDesk {
    fn peer_url_of(&self, id: NodeId) -> String {
        self.directory.lock().expect("directory lock").get(&id).map(|m| m.peer_url.clone()).unwrap_or_default()
    }

    /// Not the leader: where to go instead ("" when no leader is known).
    fn leader_hint(&self) -> (Option<NodeId>, String, Term) {
        let status = self.front.status();
        let leader = status.leader.filter(|l| *l != status.id);
        (leader, leader.map(|l| self.peer_url_of(l)).unwrap_or_default(), status.term)
    }

    fn leads(&self) -> bool {
        self.front.status().role == Some(Role::Leader)
    }

    async fn join(&self, id: NodeId, name: String, peer_url: String) -> JoinReply {
        let refuse = |error: String, term| JoinReply { success: false, leader_id: None, leader_addr: String::new(), term, error };
        if !self.leads() {
            let (leader_id, leader_addr, term) = self.leader_hint();
            return JoinReply { success: false, leader_id, leader_addr, term, error: String::new() };
        }
        let status = self.front.status();
        let peer_url = match parse_url(&peer_url) {
            Ok(addr) => format!("http://{addr}"),
            Err(e) => return refuse(format!("bad peer URL: {e}"), status.term),
        };
        if id == 0 {
            return refuse("member id 0 is reserved".into(), status.term);
        }
        let known = self.peer_url_of(id);
        if status.voters.contains(&id) && known != peer_url {
            return refuse(format!("member id {id} is already in the cluster at {known}; pick another --name"), status.term);
        }
        {
            let mut dir = self.directory.lock().expect("directory lock");
            let entry = dir.entry(id).or_default();
            entry.name = name;
            entry.peer_url = peer_url;
        }
        if !status.voters.contains(&id) {
            let index = match self.front.conf_change(ConfChange::AddServer(id)).await {
                Ok(index) => index,
                Err(e) => return refuse(format!("the membership change failed: {e:?}"), self.front.status().term),
            };
            // Answer only once a majority holds the change.
            let mut watch = self.front.status_watch();
            let committed = tokio::time::timeout(CALL_TIMEOUT, watch.wait_for(|p| p.commit_index >= index)).await;
            if !matches!(committed, Ok(Ok(_))) {
                let (leader_id, leader_addr, term) = self.leader_hint();
                return JoinReply { success: false, leader_id, leader_addr, term, error: String::new() };
            }
        }
        let status = self.front.status();
        JoinReply {
            success: true,
            leader_id: Some(status.id),
            leader_addr: self.peer_url_of(status.id),
            term: status.term,
            error: String::new(),
        }
    }

    fn peer_list(&self) -> PeerList {
        let status = self.front.status();
        if !self.leads() {
            let (leader_id, leader_addr, term) = self.leader_hint();
            return PeerList { success: false, leader_id, leader_addr, term, peers: Vec::new(), cluster_id: self.cluster_id };
        }
        let dir = self.directory.lock().expect("directory lock");
        let peers = status
            .voters
            .iter()
            .map(|id| {
                let info = dir.get(id).cloned().unwrap_or_default();
                PeerEntry { id: *id, name: info.name, peer_url: info.peer_url }
            })
            .collect();
        PeerList {
            success: true,
            leader_id: Some(status.id),
            leader_addr: dir.get(&status.id).map(|m| m.peer_url.clone()).unwrap_or_default(),
            term: status.term,
            peers,
            cluster_id: self.cluster_id,
        }
    }
}
