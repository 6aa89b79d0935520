//! etcd's Cluster and Maintenance services: member list, add and remove
//! (single-server changes through the log, asked of the leader) and the
//! per-member `Status` that `etcdctl endpoint status` shows.

use leasesim_core::raft::ConfChange;
use tonic::{Request, Status};

use super::{status, unimplemented, Api};
use crate::config::member_id;
use crate::pb::etcdserverpb::cluster_client::ClusterClient;
use crate::pb::etcdserverpb::cluster_server::Cluster;
use crate::pb::etcdserverpb::maintenance_server::Maintenance;
use crate::pb::etcdserverpb::*;
use crate::transport::MemberInfo;

type Reply<T> = Result<tonic::Response<T>, Status>;

/// The etcd version `Status` reports: the API level this node speaks.
pub const API_VERSION: &str = "3.4.0";

impl Api {
    fn members(&self) -> Vec<Member> {
        let voters = self.node.front.probe().voters;
        let dir = self.node.directory.lock().expect("directory lock");
        voters
            .iter()
            .map(|id| {
                let info = dir.get(id).cloned().unwrap_or_default();
                Member {
                    id: *id,
                    name: info.name,
                    peer_ur_ls: vec![info.peer_url],
                    client_ur_ls: if info.client_url.is_empty() { Vec::new() } else { vec![info.client_url] },
                    is_learner: false,
                }
            })
            .collect()
    }

    /// Waits (briefly) until this member's configuration shows the change
    /// it just proposed, so the answer lists the new membership.
    async fn config_settles(&self, id: u64, present: bool) {
        let mut watch = self.node.front.probe_watch();
        let settled = |p: &crate::driver::Probe| p.voters.contains(&id) == present;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), watch.wait_for(settled)).await;
    }

    /// A client on the leader's Cluster service, when this member is not it.
    async fn leader_cluster(&self) -> Result<Option<ClusterClient<tonic::transport::Channel>>, Status> {
        let probe = self.node.front.probe();
        let Some(leader) = probe.leader.filter(|l| *l != probe.id) else {
            return Ok(None);
        };
        let url = self.node.directory.lock().expect("directory lock").get(&leader).map(|m| m.client_url.clone());
        let url = url.filter(|u| !u.is_empty()).ok_or_else(|| Status::unavailable("etcdserver: no leader"))?;
        let unreachable = |_| Status::unavailable("etcdserver: leader unreachable");
        let mut endpoint = tonic::transport::Endpoint::from_shared(url).map_err(unreachable)?;
        if let Some(tls) = self.node.client_tls.clone() {
            endpoint = endpoint.tls_config(tls).map_err(unreachable)?;
        }
        endpoint.connect().await.map(|c| Some(ClusterClient::new(c))).map_err(unreachable)
    }
}

#[tonic::async_trait]
impl Cluster for Api {
    async fn member_add(&self, request: Request<MemberAddRequest>) -> Reply<MemberAddResponse> {
        self.permit_admin(&request).await?;
        let req = request.get_ref().clone();
        if req.is_learner {
            return Err(unimplemented("learners"));
        }
        if let Some(mut leader) = self.leader_cluster().await? {
            return leader.member_add(Api::with_token_of(&request, req)).await;
        }
        let peer_url = req.peer_ur_ls.first().cloned().ok_or_else(|| Status::invalid_argument("etcdserver: no peer URL"))?;
        let peer_url = format!("http://{}", crate::config::parse_url(&peer_url).map_err(Status::invalid_argument)?);
        // A joining member derives the same id from its own peer URL.
        let id = member_id(&peer_url);
        self.node.directory.lock().expect("directory lock").insert(id, MemberInfo { peer_url: peer_url.clone(), ..MemberInfo::default() });
        self.node.front.conf_change(ConfChange::AddServer(id)).await.map_err(status)?;
        self.config_settles(id, true).await;
        let member = Member { id, name: String::new(), peer_ur_ls: vec![peer_url], client_ur_ls: Vec::new(), is_learner: false };
        Ok(tonic::Response::new(MemberAddResponse { header: self.header(0), member: Some(member), members: self.members() }))
    }

    async fn member_remove(&self, request: Request<MemberRemoveRequest>) -> Reply<MemberRemoveResponse> {
        self.permit_admin(&request).await?;
        let req = *request.get_ref();
        if let Some(mut leader) = self.leader_cluster().await? {
            return leader.member_remove(Api::with_token_of(&request, req)).await;
        }
        if !self.node.front.probe().voters.contains(&req.id) {
            return Err(Status::not_found("etcdserver: member not found"));
        }
        self.node.front.conf_change(ConfChange::RemoveServer(req.id)).await.map_err(status)?;
        self.config_settles(req.id, false).await;
        Ok(tonic::Response::new(MemberRemoveResponse { header: self.header(0), members: self.members() }))
    }

    async fn member_update(&self, _: Request<MemberUpdateRequest>) -> Reply<MemberUpdateResponse> {
        Err(unimplemented("MemberUpdate"))
    }

    async fn member_list(&self, _: Request<MemberListRequest>) -> Reply<MemberListResponse> {
        Ok(tonic::Response::new(MemberListResponse { header: self.header(0), members: self.members() }))
    }

    async fn member_promote(&self, _: Request<MemberPromoteRequest>) -> Reply<MemberPromoteResponse> {
        Err(unimplemented("learners"))
    }
}

#[tonic::async_trait]
impl Maintenance for Api {
    async fn alarm(&self, request: Request<AlarmRequest>) -> Reply<AlarmResponse> {
        self.alarm_op(request).await.map(tonic::Response::new)
    }

    async fn status(&self, _: Request<StatusRequest>) -> Reply<StatusResponse> {
        let probe = self.node.front.probe();
        Ok(tonic::Response::new(StatusResponse {
            header: self.header(0),
            version: API_VERSION.to_string(),
            db_size: probe.db_size_bytes as i64,
            leader: probe.leader.unwrap_or(0),
            raft_index: probe.commit_index,
            raft_term: probe.term,
            raft_applied_index: probe.applied_index,
            errors: Vec::new(),
            db_size_in_use: probe.db_size_bytes as i64,
            is_learner: false,
            storage_version: String::new(),
            db_size_quota: 0,
            downgrade_info: None,
        }))
    }

    async fn defragment(&self, request: Request<DefragmentRequest>) -> Reply<DefragmentResponse> {
        self.permit_maintenance(&request).await?;
        Ok(tonic::Response::new(DefragmentResponse { header: self.header(0) }))
    }

    async fn hash(&self, _: Request<HashRequest>) -> Reply<HashResponse> {
        Err(unimplemented("Hash"))
    }

    async fn hash_kv(&self, _: Request<HashKvRequest>) -> Reply<HashKvResponse> {
        Err(unimplemented("HashKV"))
    }

    type SnapshotStream = tokio_stream::Empty<Result<SnapshotResponse, Status>>;

    async fn snapshot(&self, _: Request<SnapshotRequest>) -> Reply<Self::SnapshotStream> {
        Err(unimplemented("Snapshot"))
    }

    async fn move_leader(&self, _: Request<MoveLeaderRequest>) -> Reply<MoveLeaderResponse> {
        Err(unimplemented("MoveLeader"))
    }

    async fn downgrade(&self, _: Request<DowngradeRequest>) -> Reply<DowngradeResponse> {
        Err(unimplemented("Downgrade"))
    }
}
