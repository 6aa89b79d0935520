//! etcd's authentication store (users, roles, key-range permissions, the
//! enabled flag and a revision) as replicated state, so that every member
//! agrees on who may do what and the store survives restarts and snapshots
//! with the rest of the state machine.
//!
//! The rules are etcd 3.4's (`auth/store.go`): `auth enable` needs a user
//! `root` holding the role `root`; the role `root` may do everything and
//! need not exist to be granted; with auth on, `root` cannot be deleted nor
//! lose its role. Every change bumps the revision, which etcd's tokens carry
//! so that a token issued before a change is refused as old.
//!
//! Core never sees a password: the node hashes it and hands core the hash,
//! and checks a password against the hash core gives back
//! ([`AuthChange::Authenticate`]). The simulator never issues auth requests,
//! so this store stays empty there and plays no part in its runs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The user etcd treats as the administrator, and the role that makes it one.
pub const ROOT: &str = "root";

/// etcd's `authpb.Permission.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PermKind {
    Read,
    Write,
    ReadWrite,
}

impl PermKind {
    fn allows(self, wanted: PermKind) -> bool {
        self == PermKind::ReadWrite || self == wanted
    }
}

/// One key permission: a single key (`range_end` empty), a range
/// `[key, range_end)`, or every key from `key` on (`range_end` = `[0]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Permission {
    pub kind: PermKind,
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct User {
    /// A bcrypt hash; `None`: a user added with `--no-password`, who cannot
    /// authenticate with a password.
    pub password_hash: Option<String>,
    pub roles: BTreeSet<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Role {
    /// Sorted by key, as etcd keeps them (and `role get` lists them).
    pub perms: Vec<Permission>,
}

/// A change to (or a read of) the store, as the log carries it. Reads are
/// logged too, as etcd 3.4 does, so that they see every change before them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthChange {
    /// `token_key` signs the tokens members issue from now on (a new key
    /// per enable, so tokens from an earlier enable are worthless).
    Enable {
        token_key: String,
    },
    Disable,
    UserAdd {
        name: String,
        password_hash: Option<String>,
    },
    UserDelete {
        name: String,
    },
    UserChangePassword {
        name: String,
        password_hash: Option<String>,
    },
    UserGrantRole {
        user: String,
        role: String,
    },
    UserRevokeRole {
        name: String,
        role: String,
    },
    UserGet {
        name: String,
    },
    UserList,
    RoleAdd {
        name: String,
    },
    RoleDelete {
        name: String,
    },
    RoleGrantPermission {
        name: String,
        perm: Permission,
    },
    RoleRevokePermission {
        name: String,
        key: Vec<u8>,
        range_end: Vec<u8>,
    },
    RoleGet {
        name: String,
    },
    RoleList,
    /// What a member needs to check `name`'s password and sign a token.
    Authenticate {
        name: String,
    },
    /// The store's revision as of this entry, for anyone (a member that
    /// refused a call from its own, possibly lagging, store catches up to
    /// it before refusing for good).
    Revision,
}

/// An auth request: the change and who asks (the user a valid token named,
/// `None` without a token). The node resolves tokens; core judges whether
/// that user may make the change as the entry applies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AuthRequest {
    pub caller: Option<String>,
    pub change: AuthChange,
}

/// What an auth request answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthAnswer {
    /// A change applied (or one etcd accepts as a no-op); the store's revision.
    Done {
        revision: u64,
    },
    User {
        roles: Vec<String>,
    },
    Role {
        perms: Vec<Permission>,
    },
    Names {
        names: Vec<String>,
    },
    Credentials {
        password_hash: Option<String>,
        token_key: String,
        revision: u64,
    },
}

/// etcd's auth errors (`auth/store.go`); the node maps each to etcd's gRPC
/// status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthError {
    RootUserNotExist,
    RootRoleNotExist,
    UserAlreadyExist,
    UserEmpty,
    UserNotFound,
    RoleAlreadyExist,
    RoleNotFound,
    RoleEmpty,
    AuthFailed,
    PermissionDenied,
    RoleNotGranted,
    PermissionNotGranted,
    AuthNotEnabled,
    InvalidAuthMgmt,
    AuthOldRevision,
}

/// The replicated store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AuthStore {
    pub enabled: bool,
    pub revision: u64,
    pub users: BTreeMap<String, User>,
    pub roles: BTreeMap<String, Role>,
    pub token_key: String,
}

impl AuthStore {
    pub fn is_empty(&self) -> bool {
        *self == AuthStore::default()
    }

    /// Applies one request (etcd's `authApplierV3`: every call but
    /// `Authenticate` needs the root role once auth is on).
    pub fn apply(&mut self, req: &AuthRequest) -> Result<AuthAnswer, AuthError> {
        if !matches!(req.change, AuthChange::Authenticate { .. } | AuthChange::Revision) {
            self.check_admin(req.caller.as_deref())?;
        }
        match &req.change {
            AuthChange::UserGet { name } => {
                let user = self.users.get(name).ok_or(AuthError::UserNotFound)?;
                Ok(AuthAnswer::User { roles: user.roles.iter().cloned().collect() })
            }
            AuthChange::UserList => Ok(AuthAnswer::Names { names: self.users.keys().cloned().collect() }),
            AuthChange::RoleGet { name } => {
                let role = self.roles.get(name).ok_or(AuthError::RoleNotFound)?;
                Ok(AuthAnswer::Role { perms: role.perms.clone() })
            }
            AuthChange::RoleList => Ok(AuthAnswer::Names { names: self.roles.keys().cloned().collect() }),
            AuthChange::Authenticate { name } => {
                if !self.enabled {
                    return Err(AuthError::AuthNotEnabled);
                }
                let user = self.users.get(name).ok_or(AuthError::AuthFailed)?;
                let (password_hash, token_key) = (user.password_hash.clone(), self.token_key.clone());
                Ok(AuthAnswer::Credentials { password_hash, token_key, revision: self.revision })
            }
            change => {
                if self.change(change)? {
                    self.revision += 1;
                }
                Ok(AuthAnswer::Done { revision: self.revision })
            }
        }
    }

    /// etcd's `IsAdminPermitted`: anyone while auth is off.
    fn check_admin(&self, caller: Option<&str>) -> Result<(), AuthError> {
        if !self.enabled {
            return Ok(());
        }
        let name = caller.filter(|c| !c.is_empty()).ok_or(AuthError::UserEmpty)?;
        let user = self.users.get(name).ok_or(AuthError::UserNotFound)?;
        if user.roles.contains(ROOT) {
            Ok(())
        } else {
            Err(AuthError::PermissionDenied)
        }
    }

    /// Makes a change; `Ok(false)`: nothing changed (etcd answers success
    /// without a new revision, e.g. granting a role already granted).
    fn change(&mut self, change: &AuthChange) -> Result<bool, AuthError> {
        match change {
            AuthChange::Enable { token_key } => return self.enable(token_key),
            AuthChange::Disable => {
                if !self.enabled {
                    return Ok(false);
                }
                self.enabled = false;
            }
            AuthChange::UserAdd { name, password_hash } => {
                if name.is_empty() {
                    return Err(AuthError::UserEmpty);
                }
                if self.users.contains_key(name) {
                    return Err(AuthError::UserAlreadyExist);
                }
                self.users.insert(name.clone(), User { password_hash: password_hash.clone(), roles: BTreeSet::new() });
            }
            AuthChange::UserDelete { name } => {
                if self.enabled && name == ROOT {
                    return Err(AuthError::InvalidAuthMgmt);
                }
                self.users.remove(name).ok_or(AuthError::UserNotFound)?;
            }
            AuthChange::UserChangePassword { name, password_hash } => {
                let user = self.users.get_mut(name).ok_or(AuthError::UserNotFound)?;
                user.password_hash = password_hash.clone();
            }
            AuthChange::UserGrantRole { user, role } => return self.grant_role(user, role),
            AuthChange::UserRevokeRole { name, role } => {
                if self.enabled && name == ROOT && role == ROOT {
                    return Err(AuthError::InvalidAuthMgmt);
                }
                let user = self.users.get_mut(name).ok_or(AuthError::UserNotFound)?;
                if !user.roles.remove(role) {
                    return Err(AuthError::RoleNotGranted);
                }
            }
            AuthChange::RoleAdd { name } => {
                if name.is_empty() {
                    return Err(AuthError::RoleEmpty);
                }
                if self.roles.contains_key(name) {
                    return Err(AuthError::RoleAlreadyExist);
                }
                self.roles.insert(name.clone(), Role::default());
            }
            AuthChange::RoleDelete { name } => self.delete_role(name)?,
            AuthChange::RoleGrantPermission { name, perm } => {
                let role = self.roles.get_mut(name).ok_or(AuthError::RoleNotFound)?;
                role.grant(perm.clone());
            }
            AuthChange::RoleRevokePermission { name, key, range_end } => self.revoke_permission(name, key, range_end)?,
            // Reads are answered by `apply` and change nothing.
            AuthChange::UserGet { .. }
            | AuthChange::UserList
            | AuthChange::RoleGet { .. }
            | AuthChange::RoleList
            | AuthChange::Authenticate { .. }
            | AuthChange::Revision => return Ok(false),
        }
        Ok(true)
    }

    /// etcd's `AuthEnable`: only with a root user holding the root role.
    fn enable(&mut self, token_key: &str) -> Result<bool, AuthError> {
        if self.enabled {
            return Ok(false);
        }
        let root = self.users.get(ROOT).ok_or(AuthError::RootUserNotExist)?;
        if !root.roles.contains(ROOT) {
            return Err(AuthError::RootRoleNotExist);
        }
        self.enabled = true;
        self.token_key = token_key.to_string();
        Ok(true)
    }

    /// etcd's `RoleDelete`: the role leaves every user holding it too.
    fn delete_role(&mut self, name: &str) -> Result<(), AuthError> {
        if self.enabled && name == ROOT {
            return Err(AuthError::InvalidAuthMgmt);
        }
        self.roles.remove(name).ok_or(AuthError::RoleNotFound)?;
        for user in self.users.values_mut() {
            user.roles.remove(name);
        }
        Ok(())
    }

    /// etcd's `RoleRevokePermission`: the exact (key, range end) granted.
    fn revoke_permission(&mut self, name: &str, key: &[u8], range_end: &[u8]) -> Result<(), AuthError> {
        let role = self.roles.get_mut(name).ok_or(AuthError::RoleNotFound)?;
        let before = role.perms.len();
        role.perms.retain(|p| !(p.key == key && p.range_end == range_end));
        if role.perms.len() == before {
            return Err(AuthError::PermissionNotGranted);
        }
        Ok(())
    }

    /// etcd's `UserGrantRole`: the role `root` need not exist.
    fn grant_role(&mut self, name: &str, role: &str) -> Result<bool, AuthError> {
        if !self.users.contains_key(name) {
            return Err(AuthError::UserNotFound);
        }
        if role != ROOT && !self.roles.contains_key(role) {
            return Err(AuthError::RoleNotFound);
        }
        let user = self.users.get_mut(name).ok_or(AuthError::UserNotFound)?;
        Ok(user.roles.insert(role.to_string()))
    }

    /// etcd's `isOpPermitted`: may `user`, whose token was issued at
    /// `token_revision`, do `kind` on `[key, range_end)` (etcd's range
    /// conventions)? Always yes while auth is off.
    pub fn check(&self, user: Option<&str>, token_revision: u64, key: &[u8], range_end: &[u8], kind: PermKind) -> Result<(), AuthError> {
        if !self.enabled {
            return Ok(());
        }
        let Some(name) = user.filter(|u| !u.is_empty()) else {
            return Err(AuthError::UserEmpty);
        };
        if token_revision < self.revision {
            return Err(AuthError::AuthOldRevision);
        }
        let user = self.users.get(name).ok_or(AuthError::PermissionDenied)?;
        if user.roles.contains(ROOT) {
            return Ok(());
        }
        let perms: Vec<&Permission> =
            user.roles.iter().filter_map(|r| self.roles.get(r)).flat_map(|r| r.perms.iter()).filter(|p| p.kind.allows(kind)).collect();
        if covered(&perms, key, range_end) {
            Ok(())
        } else {
            Err(AuthError::PermissionDenied)
        }
    }

    /// Whether `user` holds the role `root` (or auth is off).
    pub fn is_admin(&self, user: Option<&str>) -> Result<(), AuthError> {
        self.check_admin(user)
    }
}

impl Role {
    /// etcd's `RoleGrantPermission`: a permission on the same range replaces
    /// the old one's type; otherwise it is inserted in key order.
    fn grant(&mut self, perm: Permission) {
        if let Some(old) = self.perms.iter_mut().find(|p| p.key == perm.key && p.range_end == perm.range_end) {
            old.kind = perm.kind;
            return;
        }
        let at = self.perms.partition_point(|p| p.key < perm.key);
        self.perms.insert(at, perm);
    }
}

/// An interval's end: `None` is past every key.
fn end_of(key: &[u8], range_end: &[u8]) -> Option<Vec<u8>> {
    match range_end {
        [] => {
            let mut next = key.to_vec();
            next.push(0);
            Some(next)
        }
        [0] => None,
        end => Some(end.to_vec()),
    }
}

/// Whether the union of `perms` covers the whole request range (etcd's
/// interval-tree `Contains` over a user's merged permissions): a request
/// for one key needs one permission holding it; a range request needs its
/// every key held by some permission.
fn covered(perms: &[&Permission], key: &[u8], range_end: &[u8]) -> bool {
    let want_end = end_of(key, range_end);
    let mut intervals: Vec<(Vec<u8>, Option<Vec<u8>>)> = perms.iter().map(|p| (p.key.clone(), end_of(&p.key, &p.range_end))).collect();
    intervals.sort();
    let mut reached: Option<Vec<u8>> = Some(key.to_vec());
    for (start, end) in intervals {
        let Some(at) = reached.as_ref() else { break };
        if start > *at {
            continue;
        }
        reached = match (end, reached.take()) {
            (None, _) | (_, None) => None,
            (Some(end), Some(at)) => Some(end.max(at)),
        };
    }
    match (reached, want_end) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(at), Some(want)) => at >= want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perm(kind: PermKind, key: &str, range_end: &[u8]) -> Permission {
        Permission { kind, key: key.as_bytes().to_vec(), range_end: range_end.to_vec() }
    }

    fn req(caller: Option<&str>, change: AuthChange) -> AuthRequest {
        AuthRequest { caller: caller.map(str::to_string), change }
    }

    fn store_with_alice(perms: &[Permission]) -> AuthStore {
        let mut s = AuthStore::default();
        let hash = Some("h".to_string());
        s.apply(&req(None, AuthChange::UserAdd { name: ROOT.into(), password_hash: hash.clone() })).unwrap();
        s.apply(&req(None, AuthChange::UserGrantRole { user: ROOT.into(), role: ROOT.into() })).unwrap();
        s.apply(&req(None, AuthChange::UserAdd { name: "alice".into(), password_hash: hash })).unwrap();
        s.apply(&req(None, AuthChange::RoleAdd { name: "app".into() })).unwrap();
        for p in perms {
            s.apply(&req(None, AuthChange::RoleGrantPermission { name: "app".into(), perm: p.clone() })).unwrap();
        }
        s.apply(&req(None, AuthChange::UserGrantRole { user: "alice".into(), role: "app".into() })).unwrap();
        s.apply(&req(None, AuthChange::Enable { token_key: "k".into() })).unwrap();
        s
    }

    #[test]
    fn enable_needs_root_with_the_root_role() {
        let mut s = AuthStore::default();
        let enable = req(None, AuthChange::Enable { token_key: "k".into() });
        assert_eq!(s.apply(&enable), Err(AuthError::RootUserNotExist));
        s.apply(&req(None, AuthChange::UserAdd { name: ROOT.into(), password_hash: None })).unwrap();
        assert_eq!(s.apply(&enable), Err(AuthError::RootRoleNotExist));
        s.apply(&req(None, AuthChange::UserGrantRole { user: ROOT.into(), role: ROOT.into() })).unwrap();
        assert_eq!(s.apply(&enable), Ok(AuthAnswer::Done { revision: 3 }));
        assert!(s.enabled);
        // With auth on: only root manages, and root cannot be removed.
        assert_eq!(s.apply(&req(None, AuthChange::UserList)), Err(AuthError::UserEmpty));
        assert_eq!(s.apply(&req(None, AuthChange::Revision)), Ok(AuthAnswer::Done { revision: 3 }));
        assert_eq!(s.apply(&req(Some(ROOT), AuthChange::UserDelete { name: ROOT.into() })), Err(AuthError::InvalidAuthMgmt));
        let revoke = AuthChange::UserRevokeRole { name: ROOT.into(), role: ROOT.into() };
        assert_eq!(s.apply(&req(Some(ROOT), revoke)), Err(AuthError::InvalidAuthMgmt));
        assert_eq!(s.apply(&req(Some(ROOT), AuthChange::Disable)), Ok(AuthAnswer::Done { revision: 4 }));
    }

    #[test]
    fn non_root_users_cannot_manage_and_errors_change_nothing() {
        let mut s = store_with_alice(&[]);
        let before = s.clone();
        assert_eq!(s.apply(&req(Some("alice"), AuthChange::RoleAdd { name: "x".into() })), Err(AuthError::PermissionDenied));
        assert_eq!(s.apply(&req(Some("ghost"), AuthChange::RoleList)), Err(AuthError::UserNotFound));
        assert_eq!(
            s.apply(&req(Some(ROOT), AuthChange::UserAdd { name: "alice".into(), password_hash: None })),
            Err(AuthError::UserAlreadyExist)
        );
        let revoke = AuthChange::RoleRevokePermission { name: "app".into(), key: b"nope".to_vec(), range_end: vec![] };
        assert_eq!(s.apply(&req(Some(ROOT), revoke)), Err(AuthError::PermissionNotGranted));
        assert_eq!(s, before);
    }

    #[test]
    fn permissions_cover_keys_prefixes_and_open_ranges() {
        let s = store_with_alice(&[
            perm(PermKind::ReadWrite, "app/", b"app0"),
            perm(PermKind::Read, "cfg", b""),
            perm(PermKind::Write, "from", &[0]),
        ]);
        let rev = s.revision;
        let alice = Some("alice");
        assert_eq!(s.check(alice, rev, b"app/x", b"", PermKind::Write), Ok(()));
        assert_eq!(s.check(alice, rev, b"app/", b"app0", PermKind::Read), Ok(()));
        assert_eq!(s.check(alice, rev, b"app/", b"app1", PermKind::Read), Err(AuthError::PermissionDenied));
        assert_eq!(s.check(alice, rev, b"cfg", b"", PermKind::Read), Ok(()));
        assert_eq!(s.check(alice, rev, b"cfg", b"", PermKind::Write), Err(AuthError::PermissionDenied));
        assert_eq!(s.check(alice, rev, b"zzz", b"", PermKind::Write), Ok(()));
        assert_eq!(s.check(alice, rev, b"from", &[0], PermKind::Write), Ok(()));
        assert_eq!(s.check(alice, rev, b"a", &[0], PermKind::Write), Err(AuthError::PermissionDenied));
        assert_eq!(s.check(alice, rev, b"k", b"", PermKind::Read), Err(AuthError::PermissionDenied));
        assert_eq!(s.check(None, rev, b"app/x", b"", PermKind::Read), Err(AuthError::UserEmpty));
        assert_eq!(s.check(alice, rev - 1, b"app/x", b"", PermKind::Read), Err(AuthError::AuthOldRevision));
        assert_eq!(s.check(Some(ROOT), rev, b"", &[0], PermKind::Write), Ok(()));
    }

    #[test]
    fn adjacent_permissions_join_into_one_range() {
        let s = store_with_alice(&[perm(PermKind::Read, "a", b"c"), perm(PermKind::Read, "c", b"e"), perm(PermKind::Write, "e", b"f")]);
        let rev = s.revision;
        assert_eq!(s.check(Some("alice"), rev, b"a", b"e", PermKind::Read), Ok(()));
        assert_eq!(s.check(Some("alice"), rev, b"a", b"f", PermKind::Read), Err(AuthError::PermissionDenied));
    }

    #[test]
    fn role_delete_revokes_it_and_grants_replace_the_type() {
        let mut s = store_with_alice(&[perm(PermKind::Read, "k", b"")]);
        s.apply(&req(Some(ROOT), AuthChange::RoleGrantPermission { name: "app".into(), perm: perm(PermKind::Write, "k", b"") })).unwrap();
        assert_eq!(s.roles["app"].perms, vec![perm(PermKind::Write, "k", b"")]);
        s.apply(&req(Some(ROOT), AuthChange::RoleDelete { name: "app".into() })).unwrap();
        assert!(s.users["alice"].roles.is_empty());
    }
}
