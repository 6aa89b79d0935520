//! Who is in a cluster, as flags and files name its members: a member's id
//! (derived from its name), its peer URL, `--initial-cluster`, and the
//! record of one member that join answers, `member.json` and `peers.json`
//! carry. Below every module that names members (flags, join, transport,
//! identity, backup), so none of them needs another for it.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use leasesim_core::NodeId;
use serde::{Deserialize, Serialize};

/// etcd's default `--initial-cluster-token`.
pub const DEFAULT_CLUSTER_TOKEN: &str = "etcd-cluster";

/// Parses `http://host:port`, `https://host:port` (or `host:port`) into a
/// socket address; the first of a comma-separated list. Whether TLS is on
/// is decided by the certificate flags, which `tls::TlsArgs::check` holds
/// against the schemes.
pub fn parse_url(s: &str) -> Result<SocketAddr, String> {
    let first = s.split(',').next().unwrap_or_default().trim();
    let bare = first.strip_prefix("http://").or_else(|| first.strip_prefix("https://")).unwrap_or(first);
    let bare = bare.trim_end_matches('/');
    let bare = bare.replacen("localhost:", "127.0.0.1:", 1);
    bare.parse().map_err(|e| format!("{s}: expected http://IP:PORT or https://IP:PORT ({e})"))
}

/// One member of the cluster as the flags name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: NodeId,
    pub name: String,
    pub peer: SocketAddr,
}

/// A member's id, derived from its name so every server agrees without
/// talking: `sN` is N, anything else a hash (never 0).
pub fn member_id(name: &str) -> NodeId {
    if let Some(n) = name.strip_prefix('s').and_then(|n| n.parse::<u64>().ok()).filter(|n| *n > 0) {
        return n;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 12).max(1_000_000)
}

/// Parses `--initial-cluster`.
pub fn parse_initial_cluster(s: &str) -> Result<BTreeMap<NodeId, Member>, String> {
    let mut members = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, url) = part.split_once('=').ok_or_else(|| format!("--initial-cluster: `{part}` is not name=url"))?;
        let name = name.trim().to_string();
        let peer = parse_url(url).map_err(|e| format!("--initial-cluster: {e}"))?;
        let id = member_id(&name);
        if members.insert(id, Member { id, name: name.clone(), peer }).is_some() {
            return Err(format!("--initial-cluster: member {name} appears twice"));
        }
    }
    if members.is_empty() {
        return Err("--initial-cluster names no member".into());
    }
    Ok(members)
}

/// One member as a peer list records it (join answers, `member.json`,
/// `peers.json`): its peer URL kept as text, as it was announced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerEntry {
    pub id: NodeId,
    pub name: String,
    pub peer_url: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_clusters_parse() {
        assert_eq!(parse_url("http://127.0.0.1:2380").unwrap(), "127.0.0.1:2380".parse().unwrap());
        assert_eq!(parse_url("localhost:1,http://x:2").unwrap(), "127.0.0.1:1".parse().unwrap());
        assert_eq!(parse_url("https://127.0.0.1:1").unwrap(), "127.0.0.1:1".parse().unwrap());
        assert!(parse_url("https://host-name:1").unwrap_err().contains("https://IP:PORT"));
        let members = parse_initial_cluster("s1=http://127.0.0.1:1,s2=http://127.0.0.1:2").unwrap();
        assert_eq!(members.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert!(parse_initial_cluster("s1").is_err());
        assert!(parse_initial_cluster("s1=http://127.0.0.1:1,s1=http://127.0.0.1:2").is_err());
        assert!(member_id("alpha") >= 1_000_000);
    }
}
