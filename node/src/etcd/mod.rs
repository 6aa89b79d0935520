//! etcd's v3 gRPC API on a member's client URL: the subset `etcdctl` and
//! etcd clients need (KV, Lease, Lock, Watch, Maintenance,
//! Cluster, Auth, Alarm), as adapters onto core's requests. Any member answers; a follower forwards
//! to the leader (the driver does it for core requests).
//!
//! Errors carry etcd's gRPC codes and messages (`etcdserver: requested
//! lease not found`, …) so that etcd clients recognise them.

// tonic's `Status` is large, and it is what every handler returns.
#![allow(clippy::result_large_err)]

pub mod alarm;
// Auth: `auth` is the service, `guard` the checks in front of every call,
// `token` the signed tokens.
mod auth;
mod cluster;
mod coalesce;
pub mod guard;
mod kv;
mod lease;
mod lock;
mod maintenance;
pub mod token;
mod watch;
mod watch_events;

use leasesim_core::service::ServiceError;
use tokio::net::TcpListener;
use tonic::Status;

use crate::front::CallError;
use crate::node_handle::NodeHandle;
use crate::pb::etcdserverpb::cluster_server::ClusterServer;
use crate::pb::etcdserverpb::kv_server::KvServer;
use crate::pb::etcdserverpb::lease_server::LeaseServer;
use crate::pb::etcdserverpb::maintenance_server::MaintenanceServer;
use crate::pb::etcdserverpb::watch_server::WatchServer;
use crate::pb::etcdserverpb::ResponseHeader;
use crate::pb::v3lockpb::lock_server::LockServer;

/// etcd's default largest request (`--max-request-bytes`, 1.5 MiB).
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// etcd's largest lease TTL (`MaxLeaseTTL`), seconds.
pub const MAX_LEASE_TTL_SECS: i64 = 9_000_000_000;

/// The API state every service shares.
#[derive(Clone)]
pub struct Api {
    pub node: NodeHandle,
}

impl Api {
    pub fn header(&self, revision: u64) -> Option<ResponseHeader> {
        let current = self.node.front.status();
        let revision = revision.max(current.revision);
        Some(ResponseHeader { cluster_id: self.node.cluster_id, member_id: current.id, revision: revision as i64, raft_term: current.term })
    }
}

impl Api {
    /// Refuses a write once the corruption check raised CORRUPT (etcd's
    /// corrupt applier refuses writes; reads go on).
    pub fn writable(&self) -> Result<(), Status> {
        if self.node.corruption.raised() {
            return Err(Status::data_loss("etcdserver: corrupt cluster"));
        }
        Ok(())
    }
}

/// Serves the etcd API on `listener` until the process stops.
/// `tls`: the --cert-file/--key-file/--client-cert-auth settings (None:
/// plain HTTP/2).
pub async fn serve(node: NodeHandle, listener: TcpListener, tls: Option<tonic::transport::ServerTlsConfig>) -> Result<(), String> {
    let api = Api { node };
    let incoming = client_connections(listener)?;
    let limit = MAX_REQUEST_BYTES + 64 * 1024;
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| format!("--cert-file/--key-file: {e}"))?;
    }
    builder
        .add_service(KvServer::new(api.clone()).max_decoding_message_size(limit))
        .add_service(LeaseServer::new(api.clone()))
        .add_service(ClusterServer::new(api.clone()))
        .add_service(MaintenanceServer::new(api.clone()))
        .add_service(LockServer::new(api.clone()))
        .add_service(WatchServer::new(api.clone()))
        .add_service(crate::pb::etcdserverpb::auth_server::AuthServer::new(api.clone()))
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| format!("gRPC server: {e}"))
}

/// The client connections `listener` accepts, each with TCP_NODELAY, as Go
/// (so etcd) sets it by default: without it Nagle holds each small write
/// (a response, a watch event) back while an earlier one is still
/// unacknowledged. Watch fan-out, many small frames per batch, measured
/// faster with it (reports/node-conformance.md, 2026-11-27). With the
/// frames ready together gathered into one write instead ([`coalesce`]).
fn client_connections(
    listener: TcpListener,
) -> Result<impl tokio_stream::Stream<Item = std::io::Result<coalesce::Coalesced<tokio::net::TcpStream>>>, String> {
    use tokio_stream::StreamExt;
    let incoming =
        tonic::transport::server::TcpIncoming::from_listener(listener, true, None).map_err(|e| format!("client listener: {e}"))?;
    Ok(incoming.map(|conn| conn.map(coalesce::Coalesced::new)))
}

/// etcd's status for a failed call.
pub fn status(error: CallError) -> Status {
    match error {
        CallError::Unavailable(_) => Status::unavailable("etcdserver: request timed out"),
        CallError::Stopped => Status::unavailable("etcdserver: server stopped"),
        CallError::Service(e) => service_status(e),
    }
}

fn service_status(error: ServiceError) -> Status {
    match error {
        ServiceError::LeaseNotFound { .. } => Status::not_found("etcdserver: requested lease not found"),
        ServiceError::DuplicateLease { .. } => Status::failed_precondition("etcdserver: lease already exists"),
        ServiceError::TtlTooShort { min_ns } => {
            Status::out_of_range(format!("etcdserver: lease TTL below the minimum of {} ms", min_ns / 1_000_000))
        }
        ServiceError::NotLockHolder { key } => Status::failed_precondition(format!("leasesim: not the holder of lock {key}")),
        ServiceError::AlreadyQueued { key } => Status::failed_precondition(format!("leasesim: this lease already waits for lock {key}")),
        ServiceError::SessionExpired => Status::unavailable("leasesim: request too old to retry (session expired)"),
        ServiceError::NotLeader { .. } => Status::unavailable("etcdserver: no leader"),
        ServiceError::Retry => Status::unavailable("etcdserver: leader changed"),
        ServiceError::Auth(e) => guard::auth_status(e),
        ServiceError::Kv(e) => kv::kv_status(e),
    }
}

/// Keys and values are bytes in etcd and UTF-8 text in core.
pub fn text(bytes: Vec<u8>, what: &str) -> Result<String, Status> {
    String::from_utf8(bytes).map_err(|_| Status::invalid_argument(format!("leasesim: {what} must be UTF-8")))
}

pub fn unimplemented(what: &str) -> Status {
    Status::unimplemented(format!("leasesim: {what} is not implemented"))
}

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    /// Fails if the client listener goes back to plain accepts (Nagle on).
    #[tokio::test]
    async fn client_connections_have_nodelay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = super::client_connections(listener).unwrap();
        let mut incoming = std::pin::pin!(incoming);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let accepted = incoming.next().await.unwrap().unwrap();
        assert!(accepted.get_ref().nodelay().unwrap());
    }
}
