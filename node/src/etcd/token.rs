//! etcd's auth tokens, signed instead of remembered: a token names its user
//! and the auth revision it was issued at, expires after
//! [`TOKEN_TTL_SECS`], and carries an HMAC-SHA256 under the key the
//! cluster chose when auth was enabled (replicated with the auth store).
//! Any member can therefore check a token another member issued, and
//! tokens survive a member's restart, with nothing kept per token (etcd's
//! simple tokens live in one member's memory; its JWT tokens are signed
//! like these).
//!
//! Format: `REVISION.EXPIRY_UNIX_SECS.HEX(USER).HEX(MAC)`, ASCII so it fits
//! gRPC metadata whatever the user's name.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// etcd's default `--auth-token-ttl` (seconds).
pub const TOKEN_TTL_SECS: u64 = 300;

/// What a valid token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    pub user: String,
    /// The auth store's revision when the token was issued.
    pub revision: u64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

fn mac(key: &str, body: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body.as_bytes());
    mac
}

/// A fresh signing key (256 random bits, hex).
pub fn new_key() -> String {
    hex(&rand::random::<[u8; 32]>())
}

/// A token for `user`, valid until `now_secs + TOKEN_TTL_SECS`.
pub fn sign(key: &str, user: &str, revision: u64, now_secs: u64) -> String {
    let body = format!("{revision}.{}.{}", now_secs + TOKEN_TTL_SECS, hex(user.as_bytes()));
    let tag = mac(key, &body).finalize().into_bytes();
    format!("{body}.{}", hex(&tag))
}

/// The claims of `token` if `key` signed it and it has not expired.
pub fn verify(key: &str, token: &str, now_secs: u64) -> Option<Claims> {
    let (body, tag) = token.rsplit_once('.')?;
    mac(key, body).verify_slice(&unhex(tag)?).ok()?;
    let mut fields = body.splitn(3, '.');
    let revision = fields.next()?.parse().ok()?;
    let expiry_secs: u64 = fields.next()?.parse().ok()?;
    let user = String::from_utf8(unhex(fields.next()?)?).ok()?;
    (now_secs < expiry_secs).then_some(Claims { user, revision })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_under_their_key_and_until_they_expire() {
        let token = sign("k1", "al.ice", 7, 1000);
        assert_eq!(verify("k1", &token, 1000), Some(Claims { user: "al.ice".into(), revision: 7 }));
        assert_eq!(verify("k2", &token, 1000), None);
        assert_eq!(verify("k1", &token, 1000 + TOKEN_TTL_SECS), None);
        let forged = token.replacen("7.", "8.", 1);
        assert_eq!(verify("k1", &forged, 1000), None);
        assert_eq!(verify("k1", "garbage", 1000), None);
    }
}
