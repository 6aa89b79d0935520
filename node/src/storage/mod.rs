//! A server's data directory: the write-ahead log and the snapshot, carried
//! out exactly as core's durability contract asks (persist and fsync before
//! the messages that depend on it), and read back on restart into the
//! [`Persisted`] that core's restore expects.
//!
//! Layout under `--data-dir`: `snapshot.bin` (one checksummed record, the
//! latest snapshot, replaced atomically by rename) and `wal.log`
//! (checksummed records: hard states, appends, truncations). Saving a
//! snapshot rewrites the log with only what follows it, so the directory
//! stays bounded by one snapshot plus the entries since.
//!
//! A snapshot the member took itself is written behind the apply thread
//! (see [`snapshot_writer`]); one installed from a leader is written before
//! its answer leaves, as core's durability contract asks. The state itself
//! is not kept here: a copy held for the snapshot's sake was one more whole
//! state in memory, so [`Storage::persisted`] reads it back from disk.
//!
//! A full disk is met with a reserve (`space.reserve`, see [`space`]): a
//! write that fails with ENOSPC is cut back, the reserve deleted and the
//! write tried once more, so the member can go on (and raise its NOSPACE
//! alarm) instead of dying mid-write.

pub mod record;
pub mod snapshot_writer;
pub mod space;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use leasesim_core::raft::{Entry, HardState, PersistOp, Persisted, Snapshot};
use leasesim_core::service::{Command, StateMachine};
use leasesim_core::LogIndex;
use serde::{Deserialize, Serialize};

pub type NodePersisted = Persisted<Command, StateMachine>;
pub type NodePersistOp = PersistOp<Command, StateMachine>;

const WAL: &str = "wal.log";
const WAL_TMP: &str = "wal.log.tmp";
const SNAPSHOT: &str = "snapshot.bin";
const SNAPSHOT_TMP: &str = "snapshot.bin.tmp";

/// How a data directory is run (the defaults: as in production, no
/// reserve).
#[derive(Clone, Debug, Default)]
pub struct StorageOptions {
    /// `--unsafe-test-lose-unsynced`.
    pub lose_unsynced: bool,
    /// Bytes kept back for a full disk (0: none).
    pub reserve_bytes: u64,
    /// `--unsafe-test-hold-snapshot-writes`: background snapshot writes
    /// wait while [`snapshot_writer::HOLD_FILE`] is in the directory.
    pub hold_snapshot_writes: bool,
}

/// What the directory holds once pending writes are synced, but the
/// snapshot's state: its index is enough to keep the log.
#[derive(Clone, Debug, Default)]
struct Image {
    hard_state: HardState,
    /// Entries after `snapshot_index`, contiguous.
    entries: Vec<Entry<Command>>,
    snapshot_index: LogIndex,
}

/// One log record.
#[derive(Serialize, Deserialize)]
enum WalRecord {
    HardState(HardState),
    Append(Vec<Entry<Command>>),
    TruncateFrom(LogIndex),
}

/// An open data directory and a mirror of what it holds.
pub struct Storage {
    dir: PathBuf,
    wal: File,
    /// What the directory holds (after the pending writes are synced).
    image: Image,
    /// Snapshots being written behind the apply thread.
    writer: snapshot_writer::SnapshotWriter,
    /// Written since the last [`Storage::sync`].
    dirty: bool,
    /// The log's length: where a write cut short by ENOSPC is cut back to.
    wal_len: u64,
    /// `--unsafe-test-lose-unsynced`: log bytes held here until the sync.
    unsynced: Option<Vec<u8>>,
    /// The space kept back for a full disk.
    reserve: space::Reserve,
    /// What recovery found and cut off (for the log and tests).
    pub recovered_torn_bytes: u64,
}

fn invalid(why: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

impl Storage {
    /// Opens (creating if needed) `dir` and recovers what it holds: the
    /// snapshot, then every intact log record; a torn tail is truncated.
    pub fn open(dir: &Path) -> io::Result<Storage> {
        Storage::open_with(dir, &StorageOptions::default())
    }

    /// [`Storage::open`] with the disk-fault options.
    pub fn open_with(dir: &Path, options: &StorageOptions) -> io::Result<Storage> {
        fs::create_dir_all(dir)?;
        let mut image = Image { snapshot_index: read_snapshot(dir)?.map_or(0, |s| s.last_index), ..Image::default() };
        let _ = fs::remove_file(dir.join(SNAPSHOT_TMP));
        let _ = fs::remove_file(dir.join(WAL_TMP));
        let wal_path = dir.join(WAL);
        let bytes = if wal_path.exists() { fs::read(&wal_path)? } else { Vec::new() };
        let scan = record::scan(&bytes).map_err(invalid)?;
        for payload in &scan.payloads {
            let rec: WalRecord = bincode::deserialize(payload).map_err(invalid)?;
            image.apply(rec_to_op(rec)).map_err(invalid)?;
        }
        let torn = (bytes.len() - scan.valid_len) as u64;
        let wal = OpenOptions::new().create(true).append(true).open(&wal_path)?;
        if torn > 0 {
            wal.set_len(scan.valid_len as u64)?;
            wal.sync_all()?;
        }
        sync_dir(dir)?;
        let reserve = space::Reserve::open(dir, options.reserve_bytes)?;
        let writer = snapshot_writer::SnapshotWriter::start(dir.to_path_buf(), options.hold_snapshot_writes)?;
        Ok(Storage {
            dir: dir.to_path_buf(),
            wal,
            image,
            writer,
            dirty: false,
            wal_len: scan.valid_len as u64,
            unsynced: options.lose_unsynced.then(Vec::new),
            reserve,
            recovered_torn_bytes: torn,
        })
    }

    /// Whether the reserve was given up to a full disk.
    pub fn reserve_released(&self) -> bool {
        self.reserve.released()
    }

    /// Takes the reserve back (once space returned).
    pub fn restore_reserve(&mut self) -> io::Result<()> {
        self.reserve.restore()
    }

    /// Appends `bytes` to the log: held in memory under
    /// `--unsafe-test-lose-unsynced`, else written through.
    fn put_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.dirty = true;
        match self.unsynced.as_mut() {
            Some(held) => {
                held.extend_from_slice(bytes);
                Ok(())
            }
            None => self.write_wal(bytes),
        }
    }

    /// Writes to the log file; on ENOSPC cuts the partial write off, gives
    /// up the reserve and tries once more.
    fn write_wal(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut result = self.wal.write_all(bytes);
        if let Err(e) = &result {
            if space::is_full(e) && self.reserve.release()? {
                self.wal.set_len(self.wal_len)?;
                result = self.wal.write_all(bytes);
            }
        }
        if result.is_err() {
            // Leave no torn record behind for the next write to follow.
            let _ = self.wal.set_len(self.wal_len);
        }
        result?;
        self.wal_len += bytes.len() as u64;
        Ok(())
    }

    /// Whether `dir` holds a log or a snapshot (a member has run there).
    pub fn holds_log(dir: &Path) -> bool {
        let wal_len = fs::metadata(dir.join(WAL)).map_or(0, |m| m.len());
        wal_len > 0 || dir.join(SNAPSHOT).exists()
    }

    /// What core's restore needs: the log as held, the snapshot read back.
    pub fn persisted(&self) -> io::Result<NodePersisted> {
        let snapshot = read_snapshot(&self.dir)?;
        // A snapshot renamed into place but not yet finished here covers
        // entries the log still holds.
        let floor = snapshot.as_ref().map_or(0, |s| s.last_index);
        let entries = self.image.entries.iter().filter(|e| e.index > floor).cloned().collect();
        Ok(Persisted { hard_state: self.image.hard_state, snapshot, entries })
    }

    /// The log entries held (those after the latest finished snapshot).
    pub fn entries_held(&self) -> usize {
        self.image.entries.len()
    }

    /// Index of the latest snapshot finished (written and the log cut).
    pub fn snapshot_index(&self) -> LogIndex {
        self.image.snapshot_index
    }

    /// Queues a snapshot this member took itself for writing behind the
    /// apply thread; the log keeps what it covers until
    /// [`Storage::finish_snapshots`] sees it written.
    pub fn save_snapshot_behind(&mut self, snapshot: Snapshot<StateMachine>) -> io::Result<()> {
        self.writer.submit(snapshot)
    }

    /// Snapshots queued or being written.
    pub fn snapshots_in_flight(&self) -> usize {
        self.writer.in_flight()
    }

    /// Takes in the snapshots written since the last call: the log drops
    /// what each covers and is rewritten. Returns how many.
    pub fn finish_snapshots(&mut self) -> io::Result<usize> {
        let mut finished = 0;
        while let Some(done) = self.writer.try_done() {
            self.finish(done)?;
            finished += 1;
        }
        Ok(finished)
    }

    /// Waits for every queued snapshot and takes it in.
    pub fn wait_for_snapshots(&mut self) -> io::Result<()> {
        while let Some(done) = self.writer.wait_done() {
            self.finish(done)?;
        }
        Ok(())
    }

    fn finish(&mut self, done: snapshot_writer::Done) -> io::Result<()> {
        match (done.result, done.snapshot) {
            (Ok(()), _) => {
                self.sync()?;
                self.image.snapshot_saved(done.last_index);
                self.rewrite_wal()
            }
            (Err(e), Some(snapshot)) if space::is_full(&e) => {
                let _ = fs::remove_file(self.dir.join(SNAPSHOT_TMP));
                if !self.reserve.release()? {
                    return Err(e);
                }
                self.save_snapshot(snapshot)
            }
            (Err(e), _) => Err(e),
        }
    }

    /// Writes one operation (not yet synced: call [`Storage::sync`] before
    /// sending anything that depends on it).
    pub fn write(&mut self, op: NodePersistOp) -> io::Result<()> {
        match op {
            PersistOp::SaveSnapshot(snapshot) => self.save_snapshot(snapshot),
            PersistOp::SetHardState(hs) => self.append_record(&WalRecord::HardState(hs), PersistOp::SetHardState(hs)),
            PersistOp::TruncateFrom(index) => self.append_record(&WalRecord::TruncateFrom(index), PersistOp::TruncateFrom(index)),
            PersistOp::Append(entries) => {
                let rec = WalRecord::Append(entries);
                let bytes = bincode::serialize(&rec).map_err(invalid)?;
                let WalRecord::Append(entries) = rec else { unreachable!("built above") };
                self.put_bytes(&record::encode(&bytes))?;
                self.image.apply(PersistOp::Append(entries)).map_err(invalid)
            }
        }
    }

    /// fsyncs what was written since the last sync.
    pub fn sync(&mut self) -> io::Result<()> {
        if self.dirty {
            if let Some(held) = self.unsynced.take() {
                let written = self.write_wal(&held);
                self.unsynced = Some(Vec::new());
                written?;
            }
            self.wal.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Bytes the directory holds now (for the compaction test and status).
    pub fn size_bytes(&self) -> u64 {
        [WAL, SNAPSHOT].iter().filter_map(|f| fs::metadata(self.dir.join(f)).ok()).map(|m| m.len()).sum()
    }

    fn append_record(&mut self, rec: &WalRecord, op: NodePersistOp) -> io::Result<()> {
        let bytes = bincode::serialize(rec).map_err(invalid)?;
        self.put_bytes(&record::encode(&bytes))?;
        self.image.apply(op).map_err(invalid)
    }

    /// Saves the snapshot (write, fsync, rename, fsync the directory), then
    /// rewrites the log with the hard state and the entries after it, the
    /// same way. A crash between the two leaves a new snapshot and an old
    /// log; recovery drops the entries the snapshot covers.
    /// Snapshots queued behind are written first, so none of them can
    /// replace this one afterwards.
    fn save_snapshot(&mut self, snapshot: Snapshot<StateMachine>) -> io::Result<()> {
        self.wait_for_snapshots()?;
        self.sync()?;
        let bytes = bincode::serialize(&snapshot).map_err(invalid)?;
        self.write_atomically(SNAPSHOT_TMP, SNAPSHOT, &record::encode(&bytes))?;
        self.image.snapshot_saved(snapshot.last_index);
        self.rewrite_wal()
    }

    /// Replaces the log with the hard state and the entries held.
    fn rewrite_wal(&mut self) -> io::Result<()> {
        let mut log = record::encode(&bincode::serialize(&WalRecord::HardState(self.image.hard_state)).map_err(invalid)?);
        if !self.image.entries.is_empty() {
            let rec = WalRecord::Append(self.image.entries.clone());
            log.extend(record::encode(&bincode::serialize(&rec).map_err(invalid)?));
        }
        self.write_atomically(WAL_TMP, WAL, &log)?;
        self.wal = OpenOptions::new().append(true).open(self.dir.join(WAL))?;
        self.wal_len = log.len() as u64;
        Ok(())
    }

    /// [`write_atomically`], giving up the reserve once on ENOSPC.
    fn write_atomically(&mut self, tmp: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
        match write_atomically(&self.dir, tmp, name, bytes) {
            Err(e) if space::is_full(&e) => {
                let _ = fs::remove_file(self.dir.join(tmp));
                if !self.reserve.release()? {
                    return Err(e);
                }
                write_atomically(&self.dir, tmp, name, bytes)
            }
            other => other,
        }
    }
}

fn rec_to_op(rec: WalRecord) -> NodePersistOp {
    match rec {
        WalRecord::HardState(hs) => PersistOp::SetHardState(hs),
        WalRecord::Append(entries) => PersistOp::Append(entries),
        WalRecord::TruncateFrom(index) => PersistOp::TruncateFrom(index),
    }
}

fn write_atomically(dir: &Path, tmp: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp_path = dir.join(tmp);
    let mut file = File::create(&tmp_path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp_path, dir.join(name))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The directory's snapshot, if it has one.
fn read_snapshot(dir: &Path) -> io::Result<Option<Snapshot<StateMachine>>> {
    let path = dir.join(SNAPSHOT);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = fs::read(&path)?;
    let scan = record::scan(&bytes).map_err(invalid)?;
    let payload = match scan.payloads.as_slice() {
        [one] if scan.valid_len == bytes.len() => *one,
        _ => return Err(invalid(format!("{} is damaged", path.display()))),
    };
    bincode::deserialize(payload).map(Some).map_err(invalid)
}

impl Image {
    /// Carries out `op`, with the same rules as the simulator's disk:
    /// appends follow the log, a snapshot drops what it covers.
    fn apply(&mut self, op: NodePersistOp) -> Result<(), String> {
        match op {
            PersistOp::SetHardState(hs) => self.hard_state = hs,
            PersistOp::TruncateFrom(index) => self.entries.retain(|e| e.index < index),
            PersistOp::Append(entries) => {
                let last = self.entries.last().map_or(self.snapshot_index, |e| e.index);
                match entries.first() {
                    // After a snapshot rewrite an old log may still repeat
                    // what the snapshot covers: skip what is already there.
                    Some(first) if first.index <= last => {
                        let keep = first.index;
                        self.entries.retain(|e| e.index < keep);
                        let floor = self.snapshot_index;
                        self.entries.extend(entries.into_iter().filter(|e| e.index > floor));
                    }
                    Some(first) if first.index != last + 1 => {
                        return Err(format!("append at {} but the log ends at {last}", first.index));
                    }
                    _ => self.entries.extend(entries),
                }
            }
            PersistOp::SaveSnapshot(snapshot) => self.snapshot_saved(snapshot.last_index),
        }
        Ok(())
    }

    /// A snapshot as of `last` is on disk: the entries it covers go.
    fn snapshot_saved(&mut self, last: LogIndex) {
        self.entries.retain(|e| e.index > last);
        if self.entries.first().is_some_and(|e| e.index != last + 1) {
            self.entries.clear();
        }
        self.snapshot_index = self.snapshot_index.max(last);
    }
}

#[cfg(test)]
mod tests;
