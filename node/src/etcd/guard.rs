//! What stands in front of every etcd call once auth is on: the caller is
//! the user its `token` metadata names (etcd's `AuthInfoFromCtx`), and a
//! call goes ahead only if that user may read or write every key range it
//! touches (etcd's `isOpPermitted`, with the checks `apply_auth.go` makes:
//! each compare and op of a txn, the keys of a revoked lease, a watch's
//! range, the admin calls). A refused call is answered with etcd's error
//! before anything is proposed, so it changes nothing.
//!
//! The checks read this member's applied auth store; a call that store
//! refuses is judged again once the member has caught up with the leader's
//! auth revision, so a lagging member never refuses what the cluster
//! allows. (The converse remains: a member that has not yet applied a
//! revoke may still allow, for as long as it lags, what was revoked.) A
//! token older than the store is refused as old, and etcd clients then
//! authenticate again.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasesim_core::service::auth::{AuthAnswer, AuthChange, AuthError, AuthRequest, AuthStore, PermKind};
use leasesim_core::service::{Op, Response};
use tonic::{Request, Status};

use super::token::{self, Claims};
use super::{status, Api};
use crate::pb::etcdserverpb::request_op::Request as TxnOp;
use crate::pb::etcdserverpb::{RequestOp, TxnRequest};

/// How long a refused call waits for this member to catch up with the
/// leader's auth revision.
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

/// The caller `request`'s token names, judged by `store`.
fn caller_in<T>(store: &AuthStore, request: &Request<T>) -> Result<Option<Claims>, Status> {
    if !store.enabled {
        return Ok(None);
    }
    match token_of(request) {
        None => Ok(None),
        Some(t) => token::verify(&store.token_key, &t, now_secs()).map(Some).ok_or_else(invalid_token),
    }
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
        self.node.front.status().auth
    }

    /// Who calls: `None` without a token or while auth is off; a token
    /// that is not valid is etcd's `invalid auth token`.
    pub fn caller<T>(&self, request: &Request<T>) -> Result<Option<Claims>, Status> {
        caller_in(&self.auth_store(), request)
    }

    /// The auth store once this member has applied every auth change the
    /// leader had applied when asked (one logged `Revision` read).
    pub(super) async fn caught_up_store(&self) -> Result<Arc<AuthStore>, Status> {
        let ask = AuthRequest { caller: None, change: AuthChange::Revision };
        let revision = match self.node.front.call(Op::Auth(ask)).await.map_err(status)? {
            Response::Auth(AuthAnswer::Done { revision }) => revision,
            other => return Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        };
        let mut current = self.node.front.status_watch();
        let caught_up = tokio::time::timeout(CATCH_UP, current.wait_for(|p| p.auth.revision >= revision)).await;
        match caught_up {
            Ok(Ok(p)) => Ok(p.auth.clone()),
            _ => Err(Status::unavailable("etcdserver: request timed out")),
        }
    }

    /// Runs `judge` on this member's store; a refusal is judged again on a
    /// store caught up with the leader, so that a lagging member does not
    /// refuse what the cluster already allows (a user just granted a role,
    /// auth just disabled, a token from a just-applied enable).
    async fn judged<F>(&self, judge: F) -> Result<(), Status>
    where
        F: Fn(&AuthStore) -> Result<(), Status>,
    {
        if judge(&self.auth_store()).is_ok() {
            return Ok(());
        }
        judge(&*self.caught_up_store().await?)
    }

    /// Refuses the call unless its caller may do everything `needs` lists.
    pub async fn permit<T>(&self, request: &Request<T>, needs: &[Need]) -> Result<(), Status> {
        self.judged(|store| {
            let (user, revision) = match caller_in(store, request)? {
                // Issued at a revision this store has not reached: judged
                // again once caught up.
                Some(c) if c.revision > store.revision => return Err(Status::unavailable("etcdserver: request timed out")),
                Some(c) => (Some(c.user), c.revision),
                None => (None, 0),
            };
            for need in needs {
                store.check(user.as_deref(), revision, &need.key, &need.range_end, need.kind).map_err(auth_status)?;
            }
            Ok(())
        })
        .await
    }

    /// Refuses the call unless its caller holds the role `root` (etcd's
    /// `IsAdminPermitted`, for membership changes and the like).
    pub async fn permit_admin<T>(&self, request: &Request<T>) -> Result<(), Status> {
        self.judged(|store| {
            let claims = caller_in(store, request)?;
            store.is_admin(claims.as_ref().map(|c| c.user.as_str())).map_err(auth_status)
        })
        .await
    }

    /// etcd's `authMaintenanceServer` check (Defragment, Snapshot, Hash,
    /// HashKV): admin only, refused with the auth store's own error as etcd
    /// lets it through (code `Unknown`, `auth: permission denied`).
    pub async fn permit_maintenance<T>(&self, request: &Request<T>) -> Result<(), Status> {
        self.permit_admin(request).await.map_err(|e| match e.message().strip_prefix("etcdserver: ") {
            Some(reason) if e.code() != tonic::Code::Unavailable => Status::unknown(format!("auth: {reason}")),
            _ => e,
        })
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
            vec![Need::read(b"c", b""), Need::write(b"p", b""), Need::read(b"p", b""), Need::read(b"r", b"s"), Need::write(b"d", b""),]
        );
    }
}
