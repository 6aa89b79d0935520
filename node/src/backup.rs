//! Backups in etcd's style: the file `etcdctl snapshot save` writes from a
//! member's `Snapshot` stream, and `leasesim-node snapshot restore`, which
//! turns it into the data directory of one member of a *new* cluster (new
//! member ids, new cluster id, the log starting after the backup's index),
//! and `snapshot status`.
//!
//! The file is leasesim's own, not etcd's bolt database: a magic line, one
//! checksummed record (the write-ahead log's framing) holding the applied
//! state machine, its index and term, and where it came from, zeros up to a
//! multiple of 512 bytes, and the SHA-256 of all that. The trailer is
//! etcd's: `etcdctl snapshot save` (3.4) refuses a stream whose length is
//! not 32 more than a multiple of 512 ("sha256 checksum not found"), and
//! etcd's restore checks the hash. A restore here checks the magic line,
//! the hash and the record's checksum, so a truncated or altered file is
//! refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use leasesim_core::raft::{HardState, PersistOp, Snapshot};
use leasesim_core::service::StateMachine;
use leasesim_core::{LogIndex, NodeId, Term};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::driver::Backup;
use crate::identity::Identity;
use crate::members::{member_id, parse_initial_cluster, PeerEntry, DEFAULT_CLUSTER_TOKEN};
use crate::storage::{record, Storage};

/// The first bytes of every backup file.
const MAGIC: &[u8] = b"leasesim-snapshot v1\n";
/// etcd pads to this and appends a SHA-256 (etcdctl checks the length).
const PAGE_BYTES: usize = 512;
const SHA256_BYTES: usize = 32;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BackupFile {
    pub cluster_id: u64,
    pub member_id: NodeId,
    pub index: LogIndex,
    pub term: Term,
    pub state: StateMachine,
}

impl BackupFile {
    pub fn new(cluster_id: u64, member_id: NodeId, backup: Backup) -> Self {
        BackupFile { cluster_id, member_id, index: backup.index, term: backup.term, state: backup.state }
    }

    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let payload = bincode::serialize(self).map_err(|e| e.to_string())?;
        let mut bytes = MAGIC.to_vec();
        bytes.extend(record::encode(&payload));
        bytes.resize(bytes.len().div_ceil(PAGE_BYTES) * PAGE_BYTES, 0);
        let sha = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sha);
        Ok(bytes)
    }

    /// Reads a backup file, refusing anything else or a damaged one.
    pub fn read(path: &Path) -> Result<BackupFile, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(rest) = bytes.strip_prefix(MAGIC) else {
            let hint = if bytes.len() >= 20 && bytes[16..20] == [0xed, 0x0c, 0xdd, 0xed] {
                " (it is a bolt database: a snapshot of a real etcd, which leasesim cannot restore)"
            } else {
                ""
            };
            return Err(format!("{}: not a leasesim snapshot{hint}", path.display()));
        };
        let damaged = || format!("{}: the snapshot is damaged (truncated, or its checksum does not match)", path.display());
        let body_len = bytes.len().checked_sub(SHA256_BYTES).ok_or_else(damaged)?;
        let (body, sha) = bytes.split_at(body_len);
        if body_len % PAGE_BYTES != 0 || Sha256::digest(body).as_slice() != sha {
            return Err(damaged());
        }
        let rest = &rest[..body_len - MAGIC.len()];
        let record_len = rest
            .get(..4)
            .map(|l| record::HEADER_BYTES + u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
            .filter(|n| *n <= rest.len())
            .ok_or_else(damaged)?;
        let scan = record::scan(&rest[..record_len]).map_err(|e| format!("{}: {e}", path.display()))?;
        match scan.payloads.as_slice() {
            [payload] if scan.valid_len == record_len => {
                bincode::deserialize(payload).map_err(|e| format!("{}: cannot decode the snapshot: {e}", path.display()))
            }
            _ => Err(damaged()),
        }
    }

    /// etcd's `snapshot status` hash: a CRC-32 of the whole state, the same
    /// the member's `Hash` answered at this index.
    pub fn hash(&self) -> u32 {
        crc32fast::hash(&bincode::serialize(&self.state).expect("the state machine serializes"))
    }
}

/// `leasesim-node snapshot …`
#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    pub command: SnapshotCmd,
}

#[derive(Subcommand, Debug)]
pub enum SnapshotCmd {
    /// Makes the data directory of one member of a new cluster from a
    /// snapshot file (run once per member, with the same --initial-cluster).
    Restore(RestoreArgs),
    /// Prints a snapshot file's hash, revision, total keys and size, as
    /// `etcdctl snapshot status` does.
    Status { file: PathBuf },
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The file `etcdctl snapshot save` wrote.
    pub file: PathBuf,
    /// This member's name in --initial-cluster.
    #[arg(long, default_value = "default")]
    pub name: String,
    /// Where to create the member's data directory (must not exist);
    /// defaults to NAME.leasesim.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Every member of the new cluster: name=http://peer-host:port,…
    #[arg(long, default_value = "default=http://127.0.0.1:2380")]
    pub initial_cluster: String,
    #[arg(long, default_value = DEFAULT_CLUSTER_TOKEN)]
    pub initial_cluster_token: String,
    /// This member's peer URL; must match its --initial-cluster entry.
    #[arg(long, value_parser = crate::members::parse_url)]
    pub initial_advertise_peer_urls: Option<std::net::SocketAddr>,
}

pub fn run(args: SnapshotArgs) -> Result<(), String> {
    match args.command {
        SnapshotCmd::Restore(restore) => restore_member(&restore),
        SnapshotCmd::Status { file } => {
            let backup = BackupFile::read(&file)?;
            let size = std::fs::metadata(&file).map_err(|e| format!("{}: {e}", file.display()))?.len();
            let keys = backup.state.kv().iter().count();
            println!("{:x}, {}, {keys}, {size} B", backup.hash(), backup.state.kv().revision());
            Ok(())
        }
    }
}

/// Writes `--data-dir` for member `--name` of the new cluster: the
/// backup's state as its snapshot (the voters are the new members), the
/// backup's term, and the new identity.
pub fn restore_member(args: &RestoreArgs) -> Result<(), String> {
    let backup = BackupFile::read(&args.file)?;
    let members = parse_initial_cluster(&args.initial_cluster)?;
    let id = member_id(&args.name);
    let me = members.get(&id).ok_or_else(|| format!("--name {} is not in --initial-cluster", args.name))?;
    if let Some(url) = args.initial_advertise_peer_urls.filter(|u| *u != me.peer) {
        return Err(format!(
            "--initial-advertise-peer-urls http://{url} is not {}'s URL in --initial-cluster (http://{})",
            args.name, me.peer
        ));
    }
    let data_dir = args.data_dir.clone().unwrap_or_else(|| PathBuf::from(format!("{}.leasesim", args.name)));
    if data_dir.exists() {
        return Err(format!("--data-dir {} exists: a restore makes a new data directory and never overwrites one", data_dir.display()));
    }
    let voters: BTreeSet<NodeId> = members.keys().copied().collect();
    let identity = Identity {
        name: args.name.clone(),
        id,
        cluster_id: member_id(&format!("{}/{}", args.initial_cluster_token, args.initial_cluster)),
        cluster_token: args.initial_cluster_token.clone(),
        voters: voters.clone(),
        members: members.values().map(|m| PeerEntry { id: m.id, name: m.name.clone(), peer_url: format!("http://{}", m.peer) }).collect(),
        client_urls: Default::default(),
    };
    let (index, term, revision) = (backup.index, backup.term, backup.state.kv().revision());
    let write = || -> Result<(), String> {
        identity.save(&data_dir)?;
        let mut storage = Storage::open(&data_dir).map_err(|e| format!("--data-dir {}: {e}", data_dir.display()))?;
        let snapshot =
            Snapshot { last_index: index, last_term: term, voters, data: leasesim_core::service::SharedState::new(backup.state) };
        storage.write(PersistOp::SaveSnapshot(snapshot)).map_err(|e| e.to_string())?;
        storage.write(PersistOp::SetHardState(HardState { term, voted_for: None })).map_err(|e| e.to_string())?;
        storage.sync().map_err(|e| e.to_string())
    };
    if let Err(e) = write() {
        // Leave no half-made directory behind to be mistaken for a member.
        let _ = std::fs::remove_dir_all(&data_dir);
        return Err(e);
    }
    println!(
        "restored snapshot {} (revision {revision}, index {index}, term {term}) into {} as member {} of cluster {:x}",
        args.file.display(),
        data_dir.display(),
        args.name,
        identity.cluster_id
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::service::MachineSettings;
    use leasesim_core::ExpiryStrategy;

    fn file() -> BackupFile {
        let settings = MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 2_000_000_000, Default::default());
        BackupFile { cluster_id: 1, member_id: 2, index: 9, term: 3, state: StateMachine::new(settings) }
    }

    #[test]
    fn a_backup_reads_back_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        let bytes = file().encode().unwrap();
        assert_eq!(bytes.len() % 512, 32, "etcdctl's length check");
        std::fs::write(&path, &bytes).unwrap();
        let back = BackupFile::read(&path).unwrap();
        assert_eq!((back.index, back.term, back.hash()), (9, 3, file().hash()));

        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(BackupFile::read(&path).unwrap_err().contains("damaged"));
        let mut flipped = bytes.clone();
        flipped[MAGIC.len() + 12] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(BackupFile::read(&path).unwrap_err().contains("damaged"));
        let mut bolt = vec![0u8; 64];
        bolt[16..20].copy_from_slice(&[0xed, 0x0c, 0xdd, 0xed]);
        std::fs::write(&path, &bolt).unwrap();
        assert!(BackupFile::read(&path).unwrap_err().contains("bolt database"));
    }

    #[test]
    fn a_restore_never_overwrites_and_checks_its_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        std::fs::write(&path, file().encode().unwrap()).unwrap();
        let args = |name: &str, data_dir: PathBuf| RestoreArgs {
            file: path.clone(),
            name: name.into(),
            data_dir: Some(data_dir),
            initial_cluster: "s1=http://127.0.0.1:1,s2=http://127.0.0.1:2".into(),
            initial_cluster_token: "t".into(),
            initial_advertise_peer_urls: None,
        };
        let target = dir.path().join("s1");
        restore_member(&args("s1", target.clone())).unwrap();
        let identity = Identity::load(&target).unwrap().unwrap();
        assert_eq!((identity.id, identity.voters.len()), (1, 2));
        let persisted = Storage::open(&target).unwrap().persisted().unwrap();
        assert_eq!(persisted.snapshot.map(|s| (s.last_index, s.voters.len())), Some((9, 2)));
        assert_eq!(persisted.hard_state.term, 3);

        assert!(restore_member(&args("s1", target)).unwrap_err().contains("exists"));
        assert!(restore_member(&args("s9", dir.path().join("s9"))).unwrap_err().contains("not in --initial-cluster"));
        assert!(!dir.path().join("s9").exists());
    }
}
