//! A member's identity kept in its data directory (`DATA_DIR/member.json`):
//! its name and id, its cluster's id, the genesis configuration Raft starts
//! from, and the members' peer URLs. As in etcd, the data directory *is* the
//! member: once it holds this file, a restart takes the member's id and
//! cluster from it and ignores `--initial-cluster` and
//! `--initial-cluster-state` (it says so in the log), so a member restarted
//! with `--initial-cluster-state existing` is the same member, not a
//! stranger with a new id. A directory that belongs to another member or
//! another cluster is refused, never reused or overwritten.
//!
//! The file is written (synced, renamed) before the first write-ahead log
//! record, and rewritten when the member list learns a new peer URL, so a
//! restart finds members added after this one started.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use leasesim_core::NodeId;
use serde::{Deserialize, Serialize};

use crate::members::{parse_url, Member, PeerEntry};
use crate::transport::Directory;

const FILE: &str = "member.json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub name: String,
    pub id: NodeId,
    pub cluster_id: u64,
    /// `--initial-cluster-token` the cluster was created with.
    pub cluster_token: String,
    /// The genesis configuration (the same on every member).
    pub voters: BTreeSet<NodeId>,
    /// Every member known, this one included.
    pub members: Vec<PeerEntry>,
    /// The members' client URLs as last heard (a restarted member lists
    /// them before every peer has said hello again).
    #[serde(default)]
    pub client_urls: BTreeMap<NodeId, String>,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

impl Identity {
    /// The identity saved in `data_dir`, if any.
    pub fn load(data_dir: &Path) -> Result<Option<Identity>, String> {
        crate::json_file::load(&path(data_dir))
    }

    /// Saves it (see `json_file::save`: a crash leaves the old file or the new).
    pub fn save(&self, data_dir: &Path) -> Result<(), String> {
        crate::json_file::save(data_dir, &path(data_dir), self)
    }

    /// The members, keyed by id.
    pub fn member_map(&self) -> Result<BTreeMap<NodeId, Member>, String> {
        self.members.iter().map(|p| Ok((p.id, Member { id: p.id, name: p.name.clone(), peer: parse_url(&p.peer_url)? }))).collect()
    }

    /// This member's own peer URL as recorded.
    pub fn own_peer_url(&self) -> Option<&str> {
        self.members.iter().find(|p| p.id == self.id).map(|p| p.peer_url.as_str())
    }

    /// Refuses a directory that is not this process's: another member's
    /// (`--name` differs), or another cluster's (the recorded peer URL is
    /// not the one this process listens on, or `--initial-cluster-token`
    /// names another cluster).
    pub fn check(&self, data_dir: &Path, name: &str, listen_peer: &str, token: Option<&str>) -> Result<(), String> {
        let whose =
            format!("--data-dir {} holds member {} (id {:x}) of cluster {:x}", data_dir.display(), self.name, self.id, self.cluster_id);
        if self.name != name {
            return Err(format!("{whose}, not --name {name}: it is another member's data directory; refusing to use it"));
        }
        if let Some(recorded) = self.own_peer_url() {
            if recorded != listen_peer {
                return Err(format!(
                    "{whose}, which listens for peers at {recorded}, but --listen-peer-urls is {listen_peer}: a data directory \
                     from another cluster? refusing to use it"
                ));
            }
        }
        if let Some(token) = token.filter(|t| *t != self.cluster_token) {
            return Err(format!(
                "{whose}, created with --initial-cluster-token {}, not {token}: a data directory from another cluster; \
                 refusing to use it",
                self.cluster_token
            ));
        }
        Ok(())
    }
}

/// Keeps `member.json`'s member list in step with the directory of peers
/// (members added later, URLs learned from their hellos), checking every
/// second.
pub async fn keep_members_saved(mut identity: Identity, data_dir: PathBuf, directory: Directory) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (known, client_urls): (Vec<PeerEntry>, BTreeMap<NodeId, String>) = {
            let dir = directory.lock().expect("directory lock");
            let known = dir
                .iter()
                .filter(|(_, m)| !m.peer_url.is_empty())
                .map(|(id, m)| PeerEntry { id: *id, name: m.name.clone(), peer_url: m.peer_url.clone() })
                .collect();
            let urls = dir.iter().filter(|(_, m)| !m.client_url.is_empty()).map(|(id, m)| (*id, m.client_url.clone())).collect();
            (known, urls)
        };
        let mut urls = identity.client_urls.clone();
        urls.extend(client_urls);
        let mut merged: BTreeMap<NodeId, PeerEntry> = identity.members.iter().map(|p| (p.id, p.clone())).collect();
        for peer in known {
            let entry = merged.entry(peer.id).or_insert_with(|| peer.clone());
            if !peer.name.is_empty() {
                entry.name = peer.name;
            }
            entry.peer_url = peer.peer_url;
        }
        let members: Vec<PeerEntry> = merged.into_values().collect();
        if members != identity.members || urls != identity.client_urls {
            identity.members = members;
            identity.client_urls = urls;
            if let Err(e) = identity.save(&data_dir) {
                tracing::warn!("cannot update the member list in the data directory: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            name: "s1".into(),
            id: 1,
            cluster_id: 77,
            cluster_token: "etcd-cluster".into(),
            voters: BTreeSet::from([1, 2]),
            members: vec![
                PeerEntry { id: 1, name: "s1".into(), peer_url: "http://127.0.0.1:2380".into() },
                PeerEntry { id: 2, name: "s2".into(), peer_url: "http://127.0.0.1:2381".into() },
            ],
            client_urls: BTreeMap::from([(2, "http://127.0.0.1:2379".to_string())]),
        }
    }

    #[test]
    fn a_saved_identity_reads_back_and_refuses_strangers() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Identity::load(dir.path()).unwrap(), None);
        let me = identity();
        me.save(dir.path()).unwrap();
        let back = Identity::load(dir.path()).unwrap().unwrap();
        assert_eq!(back, me);
        assert_eq!(back.member_map().unwrap()[&2].peer, "127.0.0.1:2381".parse().unwrap());

        let url = "http://127.0.0.1:2380";
        assert_eq!(back.check(dir.path(), "s1", url, None), Ok(()));
        assert_eq!(back.check(dir.path(), "s1", url, Some("etcd-cluster")), Ok(()));
        assert!(back.check(dir.path(), "s2", url, None).unwrap_err().contains("another member"));
        assert!(back.check(dir.path(), "s1", "http://127.0.0.1:9", None).unwrap_err().contains("another cluster"));
        assert!(back.check(dir.path(), "s1", url, Some("other")).unwrap_err().contains("another cluster"));
    }

    #[test]
    fn a_damaged_identity_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{ not json").unwrap();
        assert!(Identity::load(dir.path()).unwrap_err().contains("member.json"));
    }
}
