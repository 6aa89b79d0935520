//! A server's data directory: the write-ahead log and the snapshot, carried
//! out exactly as core's durability contract asks (persist and fsync before
//! the messages that depend on it), and read back on restart into the
//! [`Persisted`] that core's restore expects.
//!
//! Layout under `--data-dir`: `snapshot.bin` (one checksummed record, the
//! latest snapshot, replaced atomically by rename), `wal.log` (the active
//! log: checksummed records of hard states, appends, truncations) and the
//! sealed log segments `wal-<seq>.log` (see [`segments`]). Taking a
//! snapshot seals the active log; a sealed segment is deleted once a
//! snapshot on disk covers it, so the directory stays bounded by one
//! snapshot plus the entries of about two snapshot intervals.
//!
//! A snapshot the member took itself is written behind the apply thread
//! (see [`snapshot_writer`]); one installed from a leader is written before
//! its answer leaves, as core's durability contract asks. Neither the state
//! nor the log's entries are kept here (core holds both; a copy here was
//! one more in memory): [`Storage::persisted`] reads them back from disk.
//!
//! A full disk is met with a reserve (`space.reserve`, see [`space`]): a
//! write that fails with ENOSPC is cut back, the reserve deleted and the
//! write tried once more, so the member can go on (and raise its NOSPACE
//! alarm) instead of dying mid-write.

pub mod record;
mod segments;
pub mod snapshot_writer;
pub mod space;
pub mod syncer;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leasesim_core::raft::{Entry, HardState, PersistOp, Persisted, Snapshot};
use leasesim_core::service::{Command, SharedState};
use leasesim_core::LogIndex;
use serde::{Deserialize, Serialize};

pub type NodePersisted = Persisted<Command, SharedState>;
pub type NodePersistOp = PersistOp<Command, SharedState>;

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
    /// `--unsafe-test-hold-syncs`: syncs asked with
    /// [`Storage::sync_behind`] wait while [`syncer::HOLD_FILE`] is in the
    /// directory.
    pub hold_syncs: bool,
}

/// What the directory holds, read back whole (at start): the log's entries
/// after the snapshot, which only [`Storage::persisted`] needs.
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

/// Where the log stands, without its entries: what the directory holds
/// once pending writes are synced.
#[derive(Clone, Copy, Debug, Default)]
struct Tail {
    hard_state: HardState,
    /// The log's last index (the snapshot's when no entry follows it).
    last_index: LogIndex,
    snapshot_index: LogIndex,
}

/// An open data directory and where its log stands.
pub struct Storage {
    dir: PathBuf,
    /// The active log, `wal.log` (shared with the sync thread).
    wal: Arc<File>,
    tail: Tail,
    /// The highest index ever appended to the active log.
    active_max_index: LogIndex,
    /// Sealed log segments, oldest first.
    sealed: Vec<segments::Sealed>,
    /// Snapshots being written behind the apply thread.
    writer: snapshot_writer::SnapshotWriter,
    /// The log's fdatasync, on its own thread.
    syncer: syncer::Syncer,
    /// Written since the last sync was made or asked for.
    dirty: bool,
    /// The log's length: where a write cut short by ENOSPC is cut back to.
    wal_len: u64,
    /// Log records not yet written: a batch's records go out in one write
    /// ([`Storage::write_out`]).
    buffer: Vec<u8>,
    /// `--unsafe-test-lose-unsynced`: `buffer` is written only when a sync
    /// is made or asked for, so a SIGKILL loses what was not.
    lose_unsynced: bool,
    /// `--unsafe-test-hold-syncs`: every sync goes through the (held) sync
    /// thread.
    hold_syncs: bool,
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
        let _ = fs::remove_file(dir.join(SNAPSHOT_TMP));
        let _ = fs::remove_file(dir.join(WAL_TMP));
        let snapshot_index = read_snapshot(dir)?.map_or(0, |s| s.last_index);
        let (mut image, sealed) = read_sealed(dir, snapshot_index)?;
        let wal_path = dir.join(WAL);
        let bytes = if wal_path.exists() { fs::read(&wal_path)? } else { Vec::new() };
        let scan = record::scan(&bytes).map_err(invalid)?;
        let active_max_index = replay(&mut image, &scan.payloads)?;
        let torn = (bytes.len() - scan.valid_len) as u64;
        let wal = Arc::new(OpenOptions::new().create(true).append(true).open(&wal_path)?);
        if torn > 0 {
            wal.set_len(scan.valid_len as u64)?;
            wal.sync_all()?;
        }
        sync_dir(dir)?;
        let reserve = space::Reserve::open(dir, options.reserve_bytes)?;
        let writer = snapshot_writer::SnapshotWriter::start(dir.to_path_buf(), options.hold_snapshot_writes)?;
        let syncer = syncer::Syncer::start(dir.to_path_buf(), options.hold_syncs)?;
        let last_index = image.entries.last().map_or(image.snapshot_index, |e| e.index);
        Ok(Storage {
            dir: dir.to_path_buf(),
            wal,
            tail: Tail { hard_state: image.hard_state, last_index, snapshot_index: image.snapshot_index },
            active_max_index,
            sealed,
            writer,
            syncer,
            dirty: false,
            wal_len: scan.valid_len as u64,
            buffer: Vec::new(),
            lose_unsynced: options.lose_unsynced,
            hold_syncs: options.hold_syncs,
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

    /// Appends `bytes` to the log's buffer (see [`Storage::write_out`]).
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.dirty = true;
        self.buffer.extend_from_slice(bytes);
    }

    /// Writes the buffered records to the log in one write (not synced);
    /// under `--unsafe-test-lose-unsynced` keeps them until a sync.
    pub fn write_out(&mut self) -> io::Result<()> {
        if self.lose_unsynced {
            return Ok(());
        }
        self.flush_buffer()
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let mut bytes = std::mem::take(&mut self.buffer);
        let written = self.write_wal(&bytes);
        // Keep the allocation for the next batch.
        bytes.clear();
        self.buffer = bytes;
        written
    }

    /// Writes to the log file; on ENOSPC cuts the partial write off, gives
    /// up the reserve and tries once more.
    fn write_wal(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut result = (&*self.wal).write_all(bytes);
        if let Err(e) = &result {
            if space::is_full(e) && self.reserve.release()? {
                self.wal.set_len(self.wal_len)?;
                result = (&*self.wal).write_all(bytes);
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
        wal_len > 0 || dir.join(SNAPSHOT).exists() || segments::list(dir).is_ok_and(|s| !s.is_empty())
    }

    /// What core's restore needs, read back from disk: the snapshot, and
    /// the log's entries after it (a snapshot renamed into place but not
    /// yet finished here covers entries the log still holds: dropped).
    /// Only what was synced (or written through) is there.
    pub fn persisted(&self) -> io::Result<NodePersisted> {
        let snapshot = read_snapshot(&self.dir)?;
        let floor = snapshot.as_ref().map_or(0, |s| s.last_index);
        let (mut image, _) = read_sealed(&self.dir, floor)?;
        let bytes = fs::read(self.dir.join(WAL))?;
        replay(&mut image, &record::scan(&bytes).map_err(invalid)?.payloads)?;
        Ok(Persisted { hard_state: image.hard_state, snapshot, entries: image.entries })
    }

    /// The log entries held (those after the latest finished snapshot).
    pub fn entries_held(&self) -> usize {
        (self.tail.last_index - self.tail.snapshot_index) as usize
    }

    /// Index of the latest snapshot finished (written and the log cut).
    pub fn snapshot_index(&self) -> LogIndex {
        self.tail.snapshot_index
    }

    /// Sealed log segments still on disk (not yet covered by a snapshot).
    pub fn sealed_segments(&self) -> usize {
        self.sealed.len()
    }

    /// Queues a snapshot this member took itself for writing behind the
    /// apply thread; the log keeps what it covers until
    /// [`Storage::finish_snapshots`] sees it written. The active log is
    /// sealed first, so that what the snapshot covers can go as whole files.
    pub fn save_snapshot_behind(&mut self, snapshot: Snapshot<SharedState>) -> io::Result<()> {
        self.seal()?;
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
            (Ok(()), _) => self.snapshot_on_disk(done.last_index),
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

    /// Writes one operation into the buffer (not yet written out nor
    /// synced: call [`Storage::sync`], or [`Storage::sync_behind`] and wait
    /// for its report, before sending anything that depends on it).
    pub fn write(&mut self, op: NodePersistOp) -> io::Result<()> {
        match op {
            PersistOp::SaveSnapshot(snapshot) => self.save_snapshot(snapshot),
            PersistOp::SetHardState(hs) => self.append_record(&WalRecord::HardState(hs), PersistOp::SetHardState(hs)),
            PersistOp::TruncateFrom(index) => self.append_record(&WalRecord::TruncateFrom(index), PersistOp::TruncateFrom(index)),
            PersistOp::Append(entries) => {
                let rec = WalRecord::Append(entries);
                let bytes = bincode::serialize(&rec).map_err(invalid)?;
                let WalRecord::Append(entries) = rec else { unreachable!("built above") };
                self.put_bytes(&record::encode(&bytes));
                self.active_max_index = self.active_max_index.max(entries.last().map_or(0, |e| e.index));
                self.tail.append(&entries).map_err(invalid)
            }
        }
    }

    /// Writes out and fsyncs what was written since the last sync, on this
    /// thread.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush_buffer()?;
        if self.dirty {
            self.wal.sync_data()?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Writes out what was written and asks the sync thread to fsync it;
    /// returns the sync number that covers every write so far (an earlier
    /// one when nothing was written since): once [`Storage::synced`]
    /// reaches it, all of it is durable.
    pub fn sync_behind(&mut self) -> io::Result<u64> {
        self.flush_buffer()?;
        if self.dirty {
            self.syncer.request(self.wal.clone())?;
            self.dirty = false;
        }
        Ok(self.syncer.requested())
    }

    /// Syncs on this thread if the sync thread has nothing in flight (so
    /// this sync cannot overtake an earlier one); true if it did. For a
    /// lone request: handing its sync to the thread and back costs two
    /// thread wake-ups, and nothing is there to overlap it with.
    pub fn sync_here_if_idle(&mut self) -> io::Result<bool> {
        if self.hold_syncs || self.syncer.synced() < self.syncer.requested() {
            return Ok(false);
        }
        self.sync()?;
        Ok(true)
    }

    /// The highest sync number reported done.
    pub fn synced(&self) -> u64 {
        self.syncer.synced()
    }

    /// The highest sync number asked for.
    pub fn sync_requested(&self) -> u64 {
        self.syncer.requested()
    }

    /// Waits for the sync thread's next report (cancel-safe); `None` if it
    /// stopped. An error is a failed fdatasync: nothing since the last
    /// report can be trusted durable.
    pub async fn next_synced(&mut self) -> Option<io::Result<u64>> {
        self.syncer.next_report().await
    }

    /// [`Storage::next_synced`], blocking (outside a runtime).
    pub fn wait_synced(&mut self) -> Option<io::Result<u64>> {
        self.syncer.wait_report()
    }

    /// fdatasync calls the sync thread made.
    pub fn background_fsyncs(&self) -> u64 {
        self.syncer.fsyncs()
    }

    /// Bytes the directory holds now (for the compaction test and status).
    pub fn size_bytes(&self) -> u64 {
        let snapshot = fs::metadata(self.dir.join(SNAPSHOT)).map_or(0, |m| m.len());
        snapshot + self.wal_len + self.sealed.iter().map(|s| s.len_bytes).sum::<u64>()
    }

    fn append_record(&mut self, rec: &WalRecord, op: NodePersistOp) -> io::Result<()> {
        let bytes = bincode::serialize(rec).map_err(invalid)?;
        self.put_bytes(&record::encode(&bytes));
        match op {
            PersistOp::SetHardState(hs) => self.tail.hard_state = hs,
            PersistOp::TruncateFrom(index) => self.tail.truncate_from(index),
            _ => unreachable!("only hard states and truncations are framed here"),
        }
        Ok(())
    }

    /// Seals the active log, then saves the snapshot (write, fsync, rename,
    /// fsync the directory) and deletes the segments it covers. A crash
    /// between the two leaves a new snapshot and old segments; recovery
    /// drops the entries the snapshot covers.
    /// Snapshots queued behind are written first, so none of them can
    /// replace this one afterwards.
    fn save_snapshot(&mut self, snapshot: Snapshot<SharedState>) -> io::Result<()> {
        self.wait_for_snapshots()?;
        self.seal()?;
        let bytes = bincode::serialize(&snapshot).map_err(invalid)?;
        self.write_atomically(SNAPSHOT_TMP, SNAPSHOT, &record::encode(&bytes))?;
        self.snapshot_on_disk(snapshot.last_index)
    }

    /// A snapshot as of `last` is on disk: the log's entries up to it are
    /// no longer needed, and the sealed segments holding only those go.
    fn snapshot_on_disk(&mut self, last: LogIndex) -> io::Result<()> {
        self.tail.snapshot_saved(last);
        let sealed = std::mem::take(&mut self.sealed);
        self.sealed = segments::release_covered(&self.dir, sealed, self.tail.snapshot_index)?;
        Ok(())
    }

    /// Syncs the active log, renames it into the next sealed segment and
    /// begins a fresh one with the hard state, synced at once. The sealed
    /// segment may hold the only durable copy of the term and vote, and it
    /// is deleted as soon as a snapshot covers its entries (for a snapshot
    /// installed from a leader, before this batch's own sync): a copy left
    /// for the batch's sync was lost by a crash before it, and the restart
    /// read term 0 and no vote beside a snapshot of a later term
    /// (chaos-failover seed 7 on leasesim-node, reports/sim-vs-real.md).
    fn seal(&mut self) -> io::Result<()> {
        self.sync()?;
        // `sealed` lists exactly the segments on disk.
        let seq = self.sealed.last().map_or(0, |s| s.seq + 1);
        fs::rename(self.dir.join(WAL), segments::path_of(&self.dir, seq))?;
        self.sealed.push(segments::Sealed { seq, max_index: self.active_max_index, len_bytes: self.wal_len });
        self.wal = Arc::new(OpenOptions::new().create(true).append(true).open(self.dir.join(WAL))?);
        self.wal_len = 0;
        self.active_max_index = 0;
        let hard_state = self.tail.hard_state;
        self.append_record(&WalRecord::HardState(hard_state), PersistOp::SetHardState(hard_state))?;
        self.sync()?;
        // One directory sync makes both the rename and the fresh log's
        // name durable, before any segment can be deleted.
        sync_dir(&self.dir)
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

/// The sealed segments' records replayed onto the snapshot as of
/// `snapshot_index`, and each segment's extent.
fn read_sealed(dir: &Path, snapshot_index: LogIndex) -> io::Result<(Image, Vec<segments::Sealed>)> {
    let mut image = Image { snapshot_index, ..Image::default() };
    let mut sealed = Vec::new();
    for seq in segments::list(dir)? {
        let path = segments::path_of(dir, seq);
        let bytes = fs::read(&path)?;
        let scan = record::scan(&bytes).map_err(invalid)?;
        if scan.valid_len != bytes.len() {
            return Err(invalid(format!("{} is damaged (a sealed log segment ends in a torn record)", path.display())));
        }
        let max_index = replay(&mut image, &scan.payloads)?;
        sealed.push(segments::Sealed { seq, max_index, len_bytes: bytes.len() as u64 });
    }
    Ok((image, sealed))
}

/// Applies a log file's records to `image`; returns the highest entry
/// index they append (0: none).
fn replay(image: &mut Image, payloads: &[&[u8]]) -> io::Result<LogIndex> {
    let mut max_index = 0;
    for payload in payloads {
        let rec: WalRecord = bincode::deserialize(payload).map_err(invalid)?;
        if let WalRecord::Append(entries) = &rec {
            max_index = max_index.max(entries.last().map_or(0, |e| e.index));
        }
        image.apply(rec_to_op(rec)).map_err(invalid)?;
    }
    Ok(max_index)
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
fn read_snapshot(dir: &Path) -> io::Result<Option<Snapshot<SharedState>>> {
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

impl Tail {
    /// The same rules as [`Image::apply`] for an append, on indices alone.
    fn append(&mut self, entries: &[Entry<Command>]) -> Result<(), String> {
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else { return Ok(()) };
        if first.index > self.last_index + 1 {
            return Err(format!("append at {} but the log ends at {}", first.index, self.last_index));
        }
        self.last_index = last.index.max(self.snapshot_index);
        Ok(())
    }

    fn truncate_from(&mut self, index: LogIndex) {
        self.last_index = self.last_index.min(index.saturating_sub(1)).max(self.snapshot_index);
    }

    fn snapshot_saved(&mut self, last: LogIndex) {
        self.snapshot_index = self.snapshot_index.max(last);
        self.last_index = self.last_index.max(last);
    }
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
