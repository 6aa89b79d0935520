//! etcd's Cluster service: member list, add and remove (single-server
//! changes through the log, asked of the leader). Maintenance lives in
//! `maintenance.rs`.

use leasesim_core::raft::ConfChange;
use tonic::{Request, Status};

use super::{status, unimplemented, Api};
use crate::members::member_id;
use crate::pb::etcdserverpb::cluster_client::ClusterClient;
use crate::pb::etcdserverpb::cluster_server::Cluster;
use crate::pb::etcdserverpb::*;
use crate::transport::MemberInfo;

type Reply<T> = Result<tonic::Response<T>, Status>;

impl Api {
    fn members(&self) -> Vec<Member> {
        let voters = self.node.front.status().voters;
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
        let mut watch = self.node.front.status_watch();
        let settled = |p: &crate::driver::MemberStatus| p.voters.contains(&id) == present;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), watch.wait_for(settled)).await;
    }

    /// A client on the leader's Cluster service, when this member is not it.
    async fn leader_cluster(&self) -> Result<Option<ClusterClient<tonic::transport::Channel>>, Status> {
        let current = self.node.front.status();
        let Some(leader) = current.leader.filter(|l| *l != current.id) else {
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
        let peer_url = format!("http://{}", crate::members::parse_url(&peer_url).map_err(Status::invalid_argument)?);
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
        if !self.node.front.status().voters.contains(&req.id) {
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
