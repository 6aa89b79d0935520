//! etcd's Auth service onto core's replicated auth store: every call is
//! one logged `Op::Auth` (reads too, as etcd 3.4 logs them), carrying the
//! user the caller's token names so that core judges the root-only rule as
//! the entry applies.
//!
//! Passwords are hashed here, never in core: bcrypt at etcd's default cost
//! (10), the scheme etcd itself stores, a salted and deliberately slow hash
//! from a maintained crate (`bcrypt`), so a copied data directory does not
//! give the passwords away. `Authenticate` fetches the user's hash through
//! the log, checks the password against it on a blocking thread and signs
//! a token (see `token`).

use leasesim_core::service::auth::{AuthAnswer, AuthChange, AuthError, AuthRequest, PermKind, Permission};
use leasesim_core::service::{Op, Response};
use tonic::{Request, Status};

use super::guard::{auth_status, now_secs};
use super::{status, token, Api};
use crate::pb::authpb::{self, permission::Type as PermType};
use crate::pb::etcdserverpb::auth_server::Auth;
use crate::pb::etcdserverpb::*;

type Reply<T> = Result<tonic::Response<T>, Status>;

/// etcd's default `--bcrypt-cost`.
pub const BCRYPT_COST: u32 = 10;

async fn hash(password: String) -> Result<String, Status> {
    tokio::task::spawn_blocking(move || bcrypt::hash(password, BCRYPT_COST))
        .await
        .map_err(|e| Status::internal(format!("leasesim: hashing: {e}")))?
        .map_err(|e| Status::internal(format!("leasesim: hashing: {e}")))
}

async fn password_matches(password: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false)).await.unwrap_or(false)
}

fn kind_of(perm: &authpb::Permission) -> Result<PermKind, Status> {
    match PermType::try_from(perm.perm_type) {
        Ok(PermType::Read) => Ok(PermKind::Read),
        Ok(PermType::Write) => Ok(PermKind::Write),
        Ok(PermType::Readwrite) => Ok(PermKind::ReadWrite),
        Err(_) => Err(Status::invalid_argument(format!("leasesim: unknown permission type {}", perm.perm_type))),
    }
}

fn to_pb(perm: Permission) -> authpb::Permission {
    let kind = match perm.kind {
        PermKind::Read => PermType::Read,
        PermKind::Write => PermType::Write,
        PermKind::ReadWrite => PermType::Readwrite,
    };
    authpb::Permission { perm_type: kind as i32, key: perm.key, range_end: perm.range_end }
}

impl Api {
    /// Runs one auth request through the log on behalf of `request`'s caller.
    async fn auth_call<T>(&self, request: &Request<T>, change: AuthChange) -> Result<AuthAnswer, Status> {
        let caller = self.caller(request)?.map(|c| c.user);
        match self.node.front.call(Op::Auth(AuthRequest { caller, change })).await.map_err(status)? {
            Response::Auth(answer) => Ok(answer),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    /// A change whose answer is just "done".
    async fn auth_change<T>(&self, request: &Request<T>, change: AuthChange) -> Result<Option<ResponseHeader>, Status> {
        self.auth_call(request, change).await?;
        Ok(self.header(0))
    }

    async fn names<T>(&self, request: &Request<T>, change: AuthChange) -> Result<Vec<String>, Status> {
        match self.auth_call(request, change).await? {
            AuthAnswer::Names { names } => Ok(names),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    async fn authenticate_op(&self, req: AuthenticateRequest) -> Result<AuthenticateResponse, Status> {
        let change = AuthChange::Authenticate { name: req.name.clone() };
        let answer = self.auth_call(&Request::new(()), change).await?;
        let AuthAnswer::Credentials { password_hash, token_key, revision } = answer else {
            return Err(Status::internal(format!("leasesim: unexpected answer {answer:?}")));
        };
        let matches = match password_hash {
            Some(hash) => password_matches(req.password, hash).await,
            None => false,
        };
        if !matches {
            return Err(auth_status(AuthError::AuthFailed));
        }
        let token = token::sign(&token_key, &req.name, revision, now_secs());
        Ok(AuthenticateResponse { header: self.header(0), token })
    }

    /// The hash to store for a user: etcd 3.5's `hashedPassword` as given,
    /// none for `--no-password`, else the password hashed here.
    async fn password_hash(password: String, hashed: String, no_password: bool) -> Result<Option<String>, Status> {
        if !hashed.is_empty() {
            return Ok(Some(hashed));
        }
        if no_password {
            return Ok(None);
        }
        hash(password).await.map(Some)
    }
}

#[tonic::async_trait]
impl Auth for Api {
    async fn auth_enable(&self, request: Request<AuthEnableRequest>) -> Reply<AuthEnableResponse> {
        let header = self.auth_change(&request, AuthChange::Enable { token_key: token::new_key() }).await?;
        Ok(tonic::Response::new(AuthEnableResponse { header }))
    }

    async fn auth_disable(&self, request: Request<AuthDisableRequest>) -> Reply<AuthDisableResponse> {
        let header = self.auth_change(&request, AuthChange::Disable).await?;
        Ok(tonic::Response::new(AuthDisableResponse { header }))
    }

    async fn auth_status(&self, _: Request<AuthStatusRequest>) -> Reply<AuthStatusResponse> {
        let store = self.caught_up_store().await?;
        Ok(tonic::Response::new(AuthStatusResponse { header: self.header(0), enabled: store.enabled, auth_revision: store.revision }))
    }

    async fn authenticate(&self, request: Request<AuthenticateRequest>) -> Reply<AuthenticateResponse> {
        self.authenticate_op(request.into_inner()).await.map(tonic::Response::new)
    }

    async fn user_add(&self, request: Request<AuthUserAddRequest>) -> Reply<AuthUserAddResponse> {
        let req = request.get_ref().clone();
        let no_password = req.options.is_some_and(|o| o.no_password);
        let password_hash = Api::password_hash(req.password, req.hashed_password, no_password).await?;
        let header = self.auth_change(&request, AuthChange::UserAdd { name: req.name, password_hash }).await?;
        Ok(tonic::Response::new(AuthUserAddResponse { header }))
    }

    async fn user_get(&self, request: Request<AuthUserGetRequest>) -> Reply<AuthUserGetResponse> {
        let name = request.get_ref().name.clone();
        match self.auth_call(&request, AuthChange::UserGet { name }).await? {
            AuthAnswer::User { roles } => Ok(tonic::Response::new(AuthUserGetResponse { header: self.header(0), roles })),
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    async fn user_list(&self, request: Request<AuthUserListRequest>) -> Reply<AuthUserListResponse> {
        let users = self.names(&request, AuthChange::UserList).await?;
        Ok(tonic::Response::new(AuthUserListResponse { header: self.header(0), users }))
    }

    async fn user_delete(&self, request: Request<AuthUserDeleteRequest>) -> Reply<AuthUserDeleteResponse> {
        let name = request.get_ref().name.clone();
        let header = self.auth_change(&request, AuthChange::UserDelete { name }).await?;
        Ok(tonic::Response::new(AuthUserDeleteResponse { header }))
    }

    async fn user_change_password(&self, request: Request<AuthUserChangePasswordRequest>) -> Reply<AuthUserChangePasswordResponse> {
        let req = request.get_ref().clone();
        let password_hash = Api::password_hash(req.password, req.hashed_password, false).await?;
        let header = self.auth_change(&request, AuthChange::UserChangePassword { name: req.name, password_hash }).await?;
        Ok(tonic::Response::new(AuthUserChangePasswordResponse { header }))
    }

    async fn user_grant_role(&self, request: Request<AuthUserGrantRoleRequest>) -> Reply<AuthUserGrantRoleResponse> {
        let AuthUserGrantRoleRequest { user, role } = request.get_ref().clone();
        let header = self.auth_change(&request, AuthChange::UserGrantRole { user, role }).await?;
        Ok(tonic::Response::new(AuthUserGrantRoleResponse { header }))
    }

    async fn user_revoke_role(&self, request: Request<AuthUserRevokeRoleRequest>) -> Reply<AuthUserRevokeRoleResponse> {
        let AuthUserRevokeRoleRequest { name, role } = request.get_ref().clone();
        let header = self.auth_change(&request, AuthChange::UserRevokeRole { name, role }).await?;
        Ok(tonic::Response::new(AuthUserRevokeRoleResponse { header }))
    }

    async fn role_add(&self, request: Request<AuthRoleAddRequest>) -> Reply<AuthRoleAddResponse> {
        let name = request.get_ref().name.clone();
        let header = self.auth_change(&request, AuthChange::RoleAdd { name }).await?;
        Ok(tonic::Response::new(AuthRoleAddResponse { header }))
    }

    async fn role_get(&self, request: Request<AuthRoleGetRequest>) -> Reply<AuthRoleGetResponse> {
        let name = request.get_ref().role.clone();
        match self.auth_call(&request, AuthChange::RoleGet { name }).await? {
            AuthAnswer::Role { perms } => {
                let perm = perms.into_iter().map(to_pb).collect();
                Ok(tonic::Response::new(AuthRoleGetResponse { header: self.header(0), perm }))
            }
            other => Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
        }
    }

    async fn role_list(&self, request: Request<AuthRoleListRequest>) -> Reply<AuthRoleListResponse> {
        let roles = self.names(&request, AuthChange::RoleList).await?;
        Ok(tonic::Response::new(AuthRoleListResponse { header: self.header(0), roles }))
    }

    async fn role_delete(&self, request: Request<AuthRoleDeleteRequest>) -> Reply<AuthRoleDeleteResponse> {
        let name = request.get_ref().role.clone();
        let header = self.auth_change(&request, AuthChange::RoleDelete { name }).await?;
        Ok(tonic::Response::new(AuthRoleDeleteResponse { header }))
    }

    async fn role_grant_permission(&self, request: Request<AuthRoleGrantPermissionRequest>) -> Reply<AuthRoleGrantPermissionResponse> {
        let req = request.get_ref().clone();
        let perm = req.perm.ok_or_else(|| Status::invalid_argument("etcdserver: permission not given"))?;
        let perm = Permission { kind: kind_of(&perm)?, key: perm.key, range_end: perm.range_end };
        let header = self.auth_change(&request, AuthChange::RoleGrantPermission { name: req.name, perm }).await?;
        Ok(tonic::Response::new(AuthRoleGrantPermissionResponse { header }))
    }

    async fn role_revoke_permission(&self, request: Request<AuthRoleRevokePermissionRequest>) -> Reply<AuthRoleRevokePermissionResponse> {
        let AuthRoleRevokePermissionRequest { role, key, range_end } = request.get_ref().clone();
        let header = self.auth_change(&request, AuthChange::RoleRevokePermission { name: role, key, range_end }).await?;
        Ok(tonic::Response::new(AuthRoleRevokePermissionResponse { header }))
    }
}
