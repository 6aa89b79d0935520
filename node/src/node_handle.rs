//! `NodeHandle`: what a running member hands its API layers (the etcd
//! gRPC services, the WebSocket lock API). In a module of its own, below
//! both `serve`, which builds it, and the layers, which `serve` starts, so
//! that neither side imports the other.

use std::sync::Arc;

use crate::corrupt::Corruption;
use crate::digests::Digests;
use crate::front::Front;
use crate::transport::Directory;

/// What a running member exposes to the API layers.
#[derive(Clone)]
pub struct NodeHandle {
    pub front: Front,
    pub directory: Directory,
    pub name: String,
    /// etcd's cluster id: a digest of `--initial-cluster`.
    pub cluster_id: u64,
    /// `--quota-backend-bytes` (etcd's default when 0 was given).
    pub quota_backend_bytes: u64,
    /// How this member dials another's client API (None: plain).
    pub client_tls: Option<tonic::transport::ClientTlsConfig>,
    /// The state digest of each recently applied index (HashKV).
    pub digests: Digests,
    /// The corruption check's alarms.
    pub corruption: Arc<Corruption>,
    /// `--unsafe-test-client-ids`: lock calls may name their identity.
    pub test_client_ids: bool,
}
