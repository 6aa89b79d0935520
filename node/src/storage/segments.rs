//! The log's sealed segments. Cutting the log after a snapshot used to
//! mean rewriting it whole (every entry after the snapshot, written and
//! fsynced on the driver's thread: a stall of up to half a second in the
//! bench with 4 KiB values) from a copy of the log held in memory only for
//! that (the log held twice). Instead, when a snapshot is taken the active
//! log `wal.log` is sealed: fsynced and renamed `wal-<seq>.log`, and a
//! fresh `wal.log` begins with the hard state. Once a snapshot covering
//! every entry of a sealed segment is on disk the segment is deleted, as
//! etcd releases its WAL files. Recovery reads the sealed segments in
//! sequence order, then `wal.log`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use leasesim_core::LogIndex;

/// A sealed segment: synced, never written again.
#[derive(Clone, Debug)]
pub(super) struct Sealed {
    pub seq: u64,
    /// The highest entry index ever appended to it (0: none): once a
    /// snapshot on disk covers it, nothing in the segment is needed.
    pub max_index: LogIndex,
    pub len_bytes: u64,
}

const PREFIX: &str = "wal-";
const SUFFIX: &str = ".log";

/// The file name of segment `seq`.
pub(super) fn path_of(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{seq:016}{SUFFIX}"))
}

/// The sealed segments' sequence numbers in `dir`, oldest first.
pub(super) fn list(dir: &Path) -> io::Result<Vec<u64>> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name.strip_prefix(PREFIX).and_then(|n| n.strip_suffix(SUFFIX)) else { continue };
        if digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit()) {
            seqs.push(digits.parse().expect("16 decimal digits fit a u64"));
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// Deletes the oldest segments, in order, while `snapshot_index` covers
/// every entry of each; returns those still needed. Only a prefix goes: a
/// later segment may truncate entries of an earlier kept one, and that
/// truncation must be replayed too.
pub(super) fn release_covered(dir: &Path, sealed: Vec<Sealed>, snapshot_index: LogIndex) -> io::Result<Vec<Sealed>> {
    let covered = sealed.iter().take_while(|s| s.max_index <= snapshot_index).count();
    for segment in &sealed[..covered] {
        fs::remove_file(path_of(dir, segment.seq))?;
    }
    Ok(sealed[covered..].to_vec())
}
