//! What each member looked like when the run ended, for the judge's
//! end-of-run checks (`liveness`): the simulator reads it from its servers'
//! memory ([`FinalServer`]); a real run asks each member, once the clients
//! have stopped, as any client could: etcd's `Status` (its term, its commit
//! index, and which member it follows as leader) and a serializable range
//! over every key (what its own state machine holds). Both targets answer
//! both, leasesim-node and etcd alike.
//!
//! leasesim-node members also report their Raft log (`GET /log` on the
//! lock listener: the snapshot point and the term of every entry after
//! it), read right after their `Status`, so that `durability` and
//! log-matching's end-of-run half are judged on their logs as the
//! simulator judges its servers' memory. etcd reports no log: those stay
//! unjudged against it (`verdict.rs`). A running leasesim-node member
//! whose log cannot be read is a gap the judge is told of
//! ([`Finals::log_gaps`]), never an empty log: an empty log would read as
//! every entry lost.
//!
//! The state is read a little after the run's end (after the clients'
//! drain, within [`ASK_LIMIT`] per member): a cluster that recovers only in
//! that margin passes; one that has not recovered by then is judged as the
//! simulator judges it at its end.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use leasesim_core::raft::Role;
use leasesim_core::NodeId;
use leasesim_judge::vocab::{FinalServer, ServerProbe};
use leasesim_node::log_view::LogView;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use leasesim_node::pb::etcdserverpb::{RangeRequest, StatusRequest};
use tonic::transport::Channel;

/// How long one member may take to answer before it counts as silent.
const ASK_LIMIT: Duration = Duration::from_secs(2);

/// A member as the runner knows it when the run ends: its etcd API,
/// its lock listener (leasesim-node's, which serves its log) and whether
/// its process runs (not crashed, not paused).
pub struct MemberAtEnd {
    pub client_addr: String,
    pub lock_addr: Option<SocketAddr>,
    pub running: bool,
}

/// What the members said when the run ended.
pub struct Finals {
    /// Every member's [`FinalServer`], s1 first.
    pub servers: BTreeMap<NodeId, FinalServer>,
    /// Running members whose log should have been read and was not, with
    /// why (`s2: …`).
    pub log_gaps: Vec<String>,
}

/// Every member's end state. A member whose process is not running is
/// down; a running one that does not answer within [`ASK_LIMIT`] is up but
/// silent (no probe), as a server that cannot tell its role is in the
/// simulator's end-of-run view.
pub async fn read(members: &[MemberAtEnd]) -> Finals {
    let mut finals = Finals { servers: BTreeMap::new(), log_gaps: Vec::new() };
    for (i, member) in members.iter().enumerate() {
        let (probe, keys) = match member.running {
            true => ask(&member.client_addr).await.unwrap_or_default(),
            false => (None, Vec::new()),
        };
        let mut server = final_server(member.running, probe, keys);
        if let (true, Some(addr)) = (member.running, member.lock_addr) {
            match log_of(addr).await {
                Ok(log) => with_log(&mut server, &log),
                Err(why) => finals.log_gaps.push(format!("s{}: {why}", i + 1)),
            }
        }
        finals.servers.insert(i as NodeId + 1, server);
    }
    finals
}

/// `server` holding `log`: the first index after its snapshot and the term
/// of every entry, as the simulator reads them from its servers' memory.
pub fn with_log(server: &mut FinalServer, log: &LogView) {
    server.first_index = log.snapshot_index + 1;
    server.log_terms = log.entries();
}

/// A leasesim-node member's log, by `GET /log` on its lock listener.
async fn log_of(addr: SocketAddr) -> Result<LogView, String> {
    let answer = tokio::time::timeout(ASK_LIMIT, crate::cluster::http(addr, "GET", "/log", ""))
        .await
        .map_err(|_| format!("GET /log on {addr}: no answer within {ASK_LIMIT:?}"))??;
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(|| format!("GET /log on {addr}: no HTTP answer: {answer}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("GET /log on {addr}: {}", head.lines().next().unwrap_or(head)));
    }
    serde_json::from_str(body).map_err(|e| format!("GET /log on {addr}: not a log ({e}): {body}"))
}

/// A member's end state from what it answered.
pub fn final_server(up: bool, probe: Option<ServerProbe>, keys: Vec<String>) -> FinalServer {
    // The runner plays no membership change: every member is a voter.
    FinalServer { up, voter: true, probe, first_index: 0, log_terms: Vec::new(), keys, changes: Vec::new() }
}

/// A member's role from its `Status`: leader when the leader it names is
/// itself (etcd names the leader by member id; 0 is none).
pub fn probe_of(member_id: u64, leader: u64, term: u64, commit_index: u64) -> ServerProbe {
    let role = if leader != 0 && leader == member_id { Role::Leader } else { Role::Follower };
    ServerProbe { role, term, commit_index }
}

async fn ask(addr: &str) -> Option<(Option<ServerProbe>, Vec<String>)> {
    let endpoint = Channel::from_shared(format!("http://{addr}")).ok()?;
    let channel = endpoint.connect_timeout(ASK_LIMIT).timeout(ASK_LIMIT).connect().await.ok()?;
    let status = MaintenanceClient::new(channel.clone()).status(StatusRequest {}).await.ok().map(|s| s.into_inner());
    let probe = status.map(|s| probe_of(s.header.map_or(0, |h| h.member_id), s.leader, s.raft_term, s.raft_index));
    // Every key this member's own store holds (serializable: no quorum
    // read, the member's local state). A member that answers `Status` but
    // not this is taken to hold no key: the registry half of liveness then
    // passes it, the one gap this view leaves.
    let range = RangeRequest { key: vec![0], range_end: vec![0], keys_only: true, serializable: true, ..Default::default() };
    let keys = match KvClient::new(channel).range(range).await {
        Ok(answer) => answer.into_inner().kvs.iter().map(|kv| String::from_utf8_lossy(&kv.key).into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    Some((probe, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_leads_only_when_it_names_itself() {
        assert_eq!(probe_of(7, 7, 3, 40).role, Role::Leader);
        assert_eq!(probe_of(7, 9, 3, 40).role, Role::Follower);
        assert_eq!(probe_of(0, 0, 3, 40).role, Role::Follower, "no leader is not a leader named 0");
        assert_eq!(probe_of(7, 7, 3, 40), ServerProbe { role: Role::Leader, term: 3, commit_index: 40 });
    }
}
