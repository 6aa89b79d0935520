//! etcd's Lease service onto core's lease requests. TTLs are seconds on the
//! wire and nanoseconds in core. As in etcd, a TTL below the cluster's
//! minimum is raised to it, a keep-alive of an unknown lease answers TTL 0
//! and a time-to-live of one answers TTL -1 (these are not errors in etcd).

use std::pin::Pin;

use leasesim_core::service::{Op, Response, ServiceError};
use leasesim_core::NS_PER_SEC;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Status, Streaming};

use super::guard::Need;
use super::{status, Api, MAX_LEASE_TTL_SECS};
use crate::front::CallError;
use crate::pb::etcdserverpb::lease_server::Lease;
use crate::pb::etcdserverpb::*;

type Reply<T> = Result<tonic::Response<T>, Status>;

fn secs_up(ns: u64) -> i64 {
    ns.div_ceil(NS_PER_SEC) as i64
}

impl Api {
    pub async fn grant(&self, ttl_secs: i64, id: i64) -> Result<LeaseGrantResponse, Status> {
        if ttl_secs > MAX_LEASE_TTL_SECS {
            return Err(Status::out_of_range("etcdserver: too large lease TTL"));
        }
        if id < 0 {
            return Err(Status::invalid_argument("etcdserver: lease ID must be positive"));
        }
        self.check_space(0)?;
        let mut ttl_ns = (ttl_secs.max(1) as u64).saturating_mul(NS_PER_SEC);
        let id = (id != 0).then_some(id as u64);
        loop {
            match self.node.front.call(Op::LeaseGrant { ttl_ns, id }).await {
                Ok(Response::LeaseGranted { lease, ttl_ns }) => {
                    let current = self.node.front.status();
                    return Ok(LeaseGrantResponse {
                        header: self.header(current.revision),
                        id: lease as i64,
                        ttl: secs_up(ttl_ns),
                        error: String::new(),
                    });
                }
                // etcd raises a short TTL to its minimum instead of refusing.
                Err(CallError::Service(ServiceError::TtlTooShort { min_ns })) if ttl_ns < min_ns => {
                    ttl_ns = min_ns.div_ceil(NS_PER_SEC) * NS_PER_SEC;
                }
                Ok(other) => return Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
                Err(e) => return Err(status(e)),
            }
        }
    }

    async fn keep_alive_once(&self, id: i64) -> Result<LeaseKeepAliveResponse, Status> {
        let ttl = match self.node.front.call(Op::LeaseKeepAlive { lease: id as u64 }).await {
            Ok(Response::KeepAlive { ttl_ns, .. }) => secs_up(ttl_ns),
            Err(CallError::Service(ServiceError::LeaseNotFound { .. })) => 0,
            Ok(other) => return Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
            Err(e) => return Err(status(e)),
        };
        Ok(LeaseKeepAliveResponse { header: self.header(0), id, ttl })
    }
}

#[tonic::async_trait]
impl Lease for Api {
    async fn lease_grant(&self, request: Request<LeaseGrantRequest>) -> Reply<LeaseGrantResponse> {
        self.writable()?;
        let req = request.into_inner();
        self.grant(req.ttl, req.id).await.map(tonic::Response::new)
    }

    async fn lease_revoke(&self, request: Request<LeaseRevokeRequest>) -> Reply<LeaseRevokeResponse> {
        self.writable()?;
        let lease = request.get_ref().id as u64;
        // etcd's `checkLeasePuts`: revoking deletes the lease's keys, so the
        // caller needs write permission on each of them.
        if self.auth_store().enabled {
            let needs = match self.node.front.call(Op::LeaseTimeToLive { lease }).await.map_err(status)? {
                Response::TimeToLive { keys, .. } => keys.iter().map(|k| Need::write(k, &[])).collect(),
                _ => Vec::new(),
            };
            self.permit(&request, &needs).await?;
        }
        match self.node.front.call(Op::LeaseRevoke { lease }).await.map_err(status)? {
            Response::LeaseRevoked { .. } => Ok(tonic::Response::new(LeaseRevokeResponse { header: self.header(0) })),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    type LeaseKeepAliveStream = Pin<Box<dyn Stream<Item = Result<LeaseKeepAliveResponse, Status>> + Send>>;

    async fn lease_keep_alive(&self, request: Request<Streaming<LeaseKeepAliveRequest>>) -> Reply<Self::LeaseKeepAliveStream> {
        let api = self.clone();
        let requests = request.into_inner();
        let answers = requests.then(move |req| {
            let api = api.clone();
            async move {
                match req {
                    Ok(req) => api.keep_alive_once(req.id).await,
                    Err(e) => Err(e),
                }
            }
        });
        Ok(tonic::Response::new(Box::pin(answers)))
    }

    async fn lease_time_to_live(&self, request: Request<LeaseTimeToLiveRequest>) -> Reply<LeaseTimeToLiveResponse> {
        let req = request.into_inner();
        let resp = match self.node.front.call(Op::LeaseTimeToLive { lease: req.id as u64 }).await {
            Ok(Response::TimeToLive { remaining_ns, granted_ttl_ns, keys, .. }) => LeaseTimeToLiveResponse {
                header: self.header(0),
                id: req.id,
                ttl: secs_up(remaining_ns),
                granted_ttl: secs_up(granted_ttl_ns),
                keys: if req.keys { keys } else { Vec::new() },
            },
            Err(CallError::Service(ServiceError::LeaseNotFound { .. })) => {
                LeaseTimeToLiveResponse { header: self.header(0), id: req.id, ttl: -1, granted_ttl: 0, keys: Vec::new() }
            }
            Ok(other) => return Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
            Err(e) => return Err(status(e)),
        };
        Ok(tonic::Response::new(resp))
    }

    async fn lease_leases(&self, _: Request<LeaseLeasesRequest>) -> Reply<LeaseLeasesResponse> {
        match self.node.front.call(Op::LeaseList).await.map_err(status)? {
            Response::Leases { ids } => Ok(tonic::Response::new(LeaseLeasesResponse {
                header: self.header(0),
                leases: ids.into_iter().map(|id| LeaseStatus { id: id as i64 }).collect(),
            })),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }
}
