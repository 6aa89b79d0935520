//! What stands in front of every etcd call once auth is on: the caller is
//! the user its `token` metadata names (etcd's `AuthInfoFromCtx`), and a
//! call goes ahead only if that user may read or write every key range it
//! touches (etcd's `isOpPermitted`, with the checks `apply_auth.go` makes:
//! each compare and op of a txn, the keys of a revoked lease, a watch's
//! range, the admin calls). A refused call is answered with etcd's error
//! before anything is proposed, so it changes nothing.
//!
//! The checks read this member's applied auth store. A token issued at a
//! revision this member has not applied yet waits (briefly) for it; a token
//! older than the store is refused as old, and etcd clients then
//! authenticate again.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasesim_core::service::auth::{AuthError, AuthStore, PermKind};
use tonic::{Request, Status};

use super::token::{self, Claims};
use super::Api;
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::{RequestOp, TxnRequest};

/// How long a call waits for this member to apply the auth revision its
/// token was issued at.
const CATCH_UP: Duration = Duration::from_secs(5);

/// One range a call reads or writes (etcd's `range_end` conventions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
    pub kind: PermKind,
}

impl Need {
    pub fn read(key: &[u8], range_end: &[u8]) -> Need {
        Need { key: key.to_vec(), range_end: range_end.to_vec(), kind: PermKind::Read }
    }
    pub fn write(key: &[u8], range_end: &[u8]) -> Need {
        Need { key: key.to_vec(), range_end: range_end.to_vec(), kind: PermKind::Write }
    }
}

/// The end of the range of keys starting with `prefix` (etcd's
/// `GetPrefixRangeEnd`; `[0]`, every key on, when no byte can be raised).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// etcd's `checkTxnAuth`: read on every compare, and every op of both
/// branches as if run alone.
pub fn txn_needs(txn: &TxnRequest) -> Vec<Need> {
    let mut needs: Vec<Need> = txn.compare.iter().map(|c| Need::read(&c.key, &c.range_end)).collect();
    for op in txn.success.iter().chain(&txn.failure) {
        op_needs(op, &mut needs);
    }
    needs
}

fn op_needs(op: &RequestOp, needs: &mut Vec<Need>) {
    match &op.request {
        Some(TxnOp::RequestRange(r)) => needs.push(Need::read(&r.key, &r.range_end)),
        Some(TxnOp::RequestPut(p)) => {
            needs.push(Need::write(&p.key, &[]));
            if p.prev_kv {
                needs.push(Need::read(&p.key, &[]));
            }
        }
        Some(TxnOp::RequestDeleteRange(d)) => {
            needs.push(Need::write(&d.key, &d.range_end));
            if d.prev_kv {
                needs.push(Need::read(&d.key, &d.range_end));
            }
        }
        Some(TxnOp::RequestTxn(t)) => needs.extend(txn_needs(t)),
        None => {}
    }
}

/// etcd's gRPC status for an auth error (`rpctypes/error.go`).
pub fn auth_status(error: AuthError) -> Status {
    use tonic::Code::{FailedPrecondition, InvalidArgument, PermissionDenied};
    let (code, message) = match error {
        AuthError::RootUserNotExist => (FailedPrecondition, "root user does not exist"),
        AuthError::RootRoleNotExist => (FailedPrecondition, "root user does not have root role"),
        AuthError::UserAlreadyExist => (FailedPrecondition, "user name already exists"),
        AuthError::UserEmpty => (InvalidArgument, "user name is empty"),
        AuthError::UserNotFound => (FailedPrecondition, "user name not found"),
        AuthError::RoleAlreadyExist => (FailedPrecondition, "role name already exists"),
        AuthError::RoleNotFound => (FailedPrecondition, "role name not found"),
        AuthError::RoleEmpty => (InvalidArgument, "role name is empty"),
        AuthError::AuthFailed => (InvalidArgument, "authentication failed, invalid user ID or password"),
        AuthError::PermissionDenied => (PermissionDenied, "permission denied"),
        AuthError::RoleNotGranted => (FailedPrecondition, "role is not granted to the user"),
        AuthError::PermissionNotGranted => (FailedPrecondition, "permission is not granted to the role"),
        AuthError::AuthNotEnabled => (FailedPrecondition, "authentication is not enabled"),
        AuthError::InvalidAuthMgmt => (InvalidArgument, "invalid auth management"),
        AuthError::AuthOldRevision => (InvalidArgument, "revision of auth store is old"),
    };
    Status::new(code, format!("etcdserver: {message}"))
}

pub fn invalid_token() -> Status {
    Status::unauthenticated("etcdserver: invalid auth token")
}

pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The token a request carries (`token`, or `authorization` as etcd's
/// gateway sends it).
pub fn token_of<T>(request: &Request<T>) -> Option<String> {
    let md = request.metadata();
    let value = md.get("token").or_else(|| md.get("authorization"))?;
    Some(value.to_str().unwrap_or("").to_string())
}

impl Api {
    /// This member's applied auth store.
    pub fn auth_store(&self) -> Arc<AuthStore> {
        self.node.front.probe().auth
    }

    /// Who calls: `None` without a token or while auth is off; a token
    /// that is not valid is etcd's `invalid auth token`.
    pub fn caller<T>(&self, request: &Request<T>) -> Result<Option<Claims>, Status> {
        let store = self.auth_store();
        if !store.enabled {
            return Ok(None);
        }
        match token_of(request) {
            None => Ok(None),
            Some(t) => token::verify(&store.token_key, &t, now_secs()).map(Some).ok_or_else(invalid_token),
        }
    }

    /// The auth store once this member has applied `revision`.
    async fn store_at(&self, revision: u64) -> Result<Arc<AuthStore>, Status> {
        let mut probe = self.node.front.probe_watch();
        let caught_up = tokio::time::timeout(CATCH_UP, probe.wait_for(|p| p.auth.revision >= revision)).await;
        match caught_up {
            Ok(Ok(p)) => Ok(p.auth.clone()),
            _ => Err(Status::unavailable("etcdserver: request timed out")),
        }
    }

    /// Refuses the call unless its caller may do everything `needs` lists.
    pub async fn permit<T>(&self, request: &Request<T>, needs: &[Need]) -> Result<(), Status> {
        let Some(claims) = self.caller(request)? else {
            return self.check(&self.auth_store(), None, 0, needs);
        };
        let store = self.store_at(claims.revision).await?;
        self.check(&store, Some(&claims.user), claims.revision, needs)
    }

    fn check(&self, store: &AuthStore, user: Option<&str>, revision: u64, needs: &[Need]) -> Result<(), Status> {
        for need in needs {
            store.check(user, revision, &need.key, &need.range_end, need.kind).map_err(auth_status)?;
        }
        Ok(())
    }

    /// Refuses the call unless its caller holds the role `root` (etcd's
    /// `IsAdminPermitted`, for membership changes and the like).
    pub async fn permit_admin<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let claims = self.caller(request)?;
        let store = match &claims {
            Some(c) => self.store_at(c.revision).await?,
            None => self.auth_store(),
        };
        store.is_admin(claims.as_ref().map(|c| c.user.as_str())).map_err(auth_status)
    }

    /// A `Request` carrying `inner` and `request`'s token, for a call this
    /// member forwards to another (the leader) on the caller's behalf.
    pub fn with_token_of<T, U>(request: &Request<T>, inner: U) -> Request<U> {
        let mut forwarded = Request::new(inner);
        if let Some(value) = request.metadata().get("token") {
            forwarded.metadata_mut().insert("token", value.clone());
        }
        forwarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::etcdserverpb::{Compare, DeleteRangeRequest, PutRequest, RangeRequest};

    #[test]
    fn a_txn_needs_its_compares_and_both_branches() {
        let op = |request| RequestOp { request: Some(request) };
        let txn = TxnRequest {
            compare: vec![Compare { key: b"c".to_vec(), ..Default::default() }],
            success: vec![op(TxnOp::RequestPut(PutRequest { key: b"p".to_vec(), prev_kv: true, ..Default::default() }))],
            failure: vec![
                op(TxnOp::RequestRange(RangeRequest { key: b"r".to_vec(), range_end: b"s".to_vec(), ..Default::default() })),
                op(TxnOp::RequestDeleteRange(DeleteRangeRequest { key: b"d".to_vec(), ..Default::default() })),
            ],
        };
        assert_eq!(
            txn_needs(&txn),
            vec![
                Need::read(b"c", b""),
                Need::write(b"p", b""),
                Need::read(b"p", b""),
                Need::read(b"r", b"s"),
                Need::write(b"d", b""),
            ]
        );
    }
}
