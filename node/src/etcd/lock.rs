//! etcd's Lock service (v3lock) onto core's FIFO lock queues: `Lock` joins
//! the queue of `name` under the caller's lease and answers once granted;
//! the returned key is `name/<token in hex>`, and the header's revision is
//! the fencing token (the revision of the grant). `Unlock` releases by that
//! key. Under `--unsafe-test-client-ids` a call may name the client it is
//! (`faults/client_ids.rs`), so the lock table records the acquire and the
//! release under that client's id.

use leasesim_core::service::{Op, Response};
use tonic::{Request, Status};

use super::guard::{prefix_end, Need};
use super::{status, text, Api};
use crate::faults::client_ids;
use crate::front::CallError;
use crate::pb::v3lockpb::lock_server::Lock;
use crate::pb::v3lockpb::*;

type Reply<T> = Result<tonic::Response<T>, Status>;

/// Splits a key `Lock` returned into the lock name and its token.
pub fn parse_lock_key(key: &str) -> Option<(String, u64)> {
    let (name, token) = key.rsplit_once('/')?;
    Some((name.to_string(), u64::from_str_radix(token, 16).ok()?))
}

#[tonic::async_trait]
impl Lock for Api {
    async fn lock(&self, request: Request<LockRequest>) -> Reply<LockResponse> {
        // etcd's lock recipe reads the lock's prefix and writes its own key
        // there (`name/<lease in hex>`): it needs both permissions.
        let (prefix, key) = (format!("{}/", String::from_utf8_lossy(&request.get_ref().name)), request.get_ref().lease);
        let needs =
            [Need::read(prefix.as_bytes(), &prefix_end(prefix.as_bytes())), Need::write(format!("{prefix}{key:x}").as_bytes(), &[])];
        self.permit(&request, &needs).await?;
        self.writable()?;
        let named = self.named_client(&request)?;
        let req = request.into_inner();
        let name = text(req.name, "lock name")?;
        if name.is_empty() {
            return Err(Status::invalid_argument("etcdserver: key is not provided"));
        }
        if req.lease <= 0 {
            return Err(Status::not_found("etcdserver: requested lease not found"));
        }
        self.check_space(name.len())?;
        match self.call(named, Op::LockAcquire { key: name, lease: req.lease as u64 }).await.map_err(status)? {
            Response::LockGranted { key, token } => {
                // The header's revision is the fencing token itself.
                let mut header = self.header(token);
                if let Some(h) = header.as_mut() {
                    h.revision = token as i64;
                }
                Ok(tonic::Response::new(LockResponse { header, key: format!("{key}/{token:x}").into_bytes() }))
            }
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    async fn unlock(&self, request: Request<UnlockRequest>) -> Reply<UnlockResponse> {
        self.permit(&request, &[Need::write(&request.get_ref().key, &[])]).await?;
        let named = self.named_client(&request)?;
        let key = text(request.into_inner().key, "key")?;
        let (name, token) = parse_lock_key(&key).ok_or_else(|| Status::invalid_argument("leasesim: not a lock key"))?;
        match self.call(named, Op::LockRelease { key: name, token }).await.map_err(status)? {
            Response::Released { .. } => Ok(tonic::Response::new(UnlockResponse { header: self.header(0) })),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }
}

impl Api {
    /// The client identity a lock call names under
    /// `--unsafe-test-client-ids` (none without the flag, or if it names
    /// none).
    fn named_client<T>(&self, request: &Request<T>) -> Result<Option<(u64, u64)>, Status> {
        if !self.node.test_client_ids {
            return Ok(None);
        }
        client_ids::named(request.metadata()).map_err(Status::invalid_argument)
    }

    /// `op` under the named identity, or a pooled one.
    async fn call(&self, named: Option<(u64, u64)>, op: Op) -> Result<Response, CallError> {
        match named {
            Some(identity) => self.node.front.call_as(identity, op).await,
            None => self.node.front.call(op).await,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lock_keys_round_trip() {
        assert_eq!(super::parse_lock_key("a/b/1f"), Some(("a/b".to_string(), 31)));
        assert_eq!(super::parse_lock_key("nokey"), None);
    }
}
