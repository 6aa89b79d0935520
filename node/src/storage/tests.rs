//! Recovery of a data directory: what was synced comes back, a torn tail
//! is cut, corruption is refused, compaction bounds the directory.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::Write;

use leasesim_core::raft::{Entry, HardState, Payload, PersistOp, Snapshot};
use leasesim_core::service::{ClientRequest, Command, MachineSettings, Op, SharedState, StateMachine};
use leasesim_core::ExpiryStrategy;

use super::{Storage, WAL};

fn put(index: u64) -> Entry<Command> {
    let req = ClientRequest { client: 1, seq: index, op: Op::Put { key: format!("k{index}"), value: "v".into(), lease: None } };
    Entry { term: 1, index, payload: Payload::Command(Command::Request { req, stamp_wall_ns: 0 }) }
}

fn write_entries(storage: &mut Storage, range: std::ops::RangeInclusive<u64>) {
    storage.write(PersistOp::Append(range.map(put).collect())).unwrap();
    storage.sync().unwrap();
}

#[test]
fn restart_recovers_hard_state_and_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    storage.write(PersistOp::SetHardState(HardState { term: 3, voted_for: Some(2) })).unwrap();
    write_entries(&mut storage, 1..=5);
    storage.write(PersistOp::TruncateFrom(4)).unwrap();
    write_entries(&mut storage, 4..=4);
    drop(storage);
    let again = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!(again.hard_state, HardState { term: 3, voted_for: Some(2) });
    assert_eq!(again.entries.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert_eq!(again.entries[3], put(4));
}

#[test]
fn a_torn_tail_is_truncated_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    write_entries(&mut storage, 1..=3);
    drop(storage);
    // A crash half-way through the next record's write.
    let mut wal = OpenOptions::new().append(true).open(dir.path().join(WAL)).unwrap();
    wal.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, 5]).unwrap();
    drop(wal);
    let storage = Storage::open(dir.path()).unwrap();
    assert_eq!(storage.recovered_torn_bytes, 9);
    assert_eq!(storage.persisted().unwrap().entries.len(), 3);
    drop(storage);
    // The cut is itself durable: a second restart finds a clean log.
    let storage = Storage::open(dir.path()).unwrap();
    assert_eq!(storage.recovered_torn_bytes, 0);
    assert_eq!(storage.persisted().unwrap().entries.len(), 3);
}

#[test]
fn a_corrupted_record_before_good_ones_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    write_entries(&mut storage, 1..=1);
    write_entries(&mut storage, 2..=2);
    drop(storage);
    let path = dir.path().join(WAL);
    let mut bytes = fs::read(&path).unwrap();
    bytes[10] ^= 0x55;
    fs::write(&path, bytes).unwrap();
    let err = Storage::open(dir.path()).err().expect("corruption must not be papered over");
    assert!(err.to_string().contains("checksum"), "{err}");
}

/// A snapshot seals the log; the sealed segment goes once a later snapshot
/// covers every entry in it, and a restart in between finds the entries
/// the snapshot does not cover.
#[test]
fn a_snapshot_compacts_the_log_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    storage.write(PersistOp::SetHardState(HardState { term: 1, voted_for: Some(1) })).unwrap();
    for start in (1..=400).step_by(10) {
        write_entries(&mut storage, start..=start + 9);
    }
    let before = storage.size_bytes();
    let snapshot = Snapshot { last_index: 395, last_term: 1, voters: BTreeSet::from([1, 2, 3]), data: SharedState::new(state_as_of(395)) };
    storage.write(PersistOp::SaveSnapshot(snapshot.clone())).unwrap();
    storage.sync().unwrap();
    assert_eq!(storage.sealed_segments(), 1, "396..400 are still needed");
    write_entries(&mut storage, 401..=402);
    drop(storage);
    let mut again = Storage::open(dir.path()).unwrap();
    let persisted = again.persisted().unwrap();
    assert_eq!(persisted.snapshot, Some(snapshot));
    assert_eq!(persisted.entries.iter().map(|e| e.index).collect::<Vec<_>>(), vec![396, 397, 398, 399, 400, 401, 402]);
    assert_eq!(persisted.hard_state.term, 1);
    let snapshot = Snapshot { last_index: 400, last_term: 1, voters: BTreeSet::from([1, 2, 3]), data: SharedState::new(state_as_of(400)) };
    again.write(PersistOp::SaveSnapshot(snapshot.clone())).unwrap();
    again.sync().unwrap();
    assert_eq!(again.sealed_segments(), 1, "the first segment is gone, the second holds 401..402");
    let log_bytes: u64 = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("wal"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(log_bytes < before / 10, "log {log_bytes} bytes after compaction, {before} before");
    drop(again);
    let persisted = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!(persisted.snapshot, Some(snapshot));
    assert_eq!(persisted.entries.iter().map(|e| e.index).collect::<Vec<_>>(), vec![401, 402]);
    assert_eq!(persisted.hard_state, HardState { term: 1, voted_for: Some(1) });
}

/// Only a prefix of the sealed segments goes: a later segment whose
/// entries a snapshot covers may still truncate an earlier segment that
/// stays, and a restart must replay that truncation.
#[test]
fn a_covered_segment_after_a_needed_one_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    write_entries(&mut storage, 1..=10);
    let snapshot = Snapshot { last_index: 5, last_term: 1, voters: BTreeSet::from([1]), data: SharedState::new(state_as_of(5)) };
    storage.save_snapshot_behind(snapshot).unwrap();
    storage.wait_for_snapshots().unwrap();
    storage.write(PersistOp::TruncateFrom(8)).unwrap();
    write_entries(&mut storage, 8..=9);
    let snapshot = Snapshot { last_index: 9, last_term: 1, voters: BTreeSet::from([1]), data: SharedState::new(state_as_of(9)) };
    storage.write(PersistOp::SaveSnapshot(snapshot)).unwrap();
    storage.sync().unwrap();
    assert_eq!(storage.sealed_segments(), 2, "the first holds 10, which only the second truncates");
    drop(storage);
    let persisted = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!(persisted.entries.iter().map(|e| e.index).collect::<Vec<_>>(), Vec::<u64>::new(), "entry 10 was truncated");
}

fn state_as_of(last: u64) -> StateMachine {
    let mut sm = StateMachine::new(MachineSettings::new(ExpiryStrategy::LeaderMonotonic, 300_000_000, Default::default()));
    let mut ctx = Default::default();
    for index in 1..=last {
        sm.apply_entry(&put(index), &mut ctx);
    }
    sm
}

/// A snapshot written behind (the member's own): while its write is held,
/// the log goes on taking appends and syncs, and keeps every entry the
/// snapshot covers; once written, the log holds only the entries after it,
/// on disk and in memory, and a restart finds both.
#[test]
fn a_snapshot_written_behind_lets_the_log_go_on_then_cuts_it() {
    let dir = tempfile::tempdir().unwrap();
    let options = super::StorageOptions { hold_snapshot_writes: true, ..Default::default() };
    let mut storage = Storage::open_with(dir.path(), &options).unwrap();
    storage.write(PersistOp::SetHardState(HardState { term: 1, voted_for: Some(1) })).unwrap();
    write_entries(&mut storage, 1..=300);
    let hold = dir.path().join(super::snapshot_writer::HOLD_FILE);
    fs::write(&hold, b"").unwrap();
    let snapshot = Snapshot { last_index: 300, last_term: 1, voters: BTreeSet::from([1]), data: SharedState::new(state_as_of(300)) };
    storage.save_snapshot_behind(snapshot.clone()).unwrap();
    let mut appended_during_write = 0;
    for index in 301..=350 {
        write_entries(&mut storage, index..=index);
        assert_eq!(storage.finish_snapshots().unwrap(), 0, "held: not finished");
        appended_during_write += 1;
    }
    assert_eq!((appended_during_write, storage.snapshots_in_flight()), (50, 1));
    assert!(!dir.path().join(super::SNAPSHOT).exists(), "held: not written");
    assert_eq!((storage.entries_held(), storage.snapshot_index()), (350, 0), "the log keeps what the unwritten snapshot covers");
    fs::remove_file(&hold).unwrap();
    storage.wait_for_snapshots().unwrap();
    assert_eq!((storage.entries_held(), storage.snapshot_index(), storage.snapshots_in_flight()), (50, 300, 0));
    drop(storage);
    let again = Storage::open(dir.path()).unwrap();
    assert_eq!(again.entries_held(), 50, "the log holds only the entries after the snapshot");
    let persisted = again.persisted().unwrap();
    assert_eq!(persisted.snapshot, Some(snapshot));
    assert_eq!(persisted.entries.iter().map(|e| e.index).collect::<Vec<_>>(), (301..=350).collect::<Vec<_>>());
}

/// A crash after the snapshot is renamed into place but before the log is
/// cut: the restart's log still repeats covered entries, which are
/// dropped, whatever the order of finishing.
#[test]
fn a_snapshot_written_but_not_yet_taken_in_is_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    write_entries(&mut storage, 1..=20);
    let snapshot = Snapshot { last_index: 15, last_term: 1, voters: BTreeSet::from([1]), data: SharedState::new(state_as_of(15)) };
    super::snapshot_writer::write_snapshot(dir.path(), &snapshot).unwrap();
    let persisted = storage.persisted().unwrap();
    assert_eq!(persisted.entries.iter().map(|e| e.index).collect::<Vec<_>>(), (16..=20).collect::<Vec<_>>());
    drop(storage);
    let again = Storage::open(dir.path()).unwrap();
    assert_eq!((again.entries_held(), again.snapshot_index()), (5, 15));
}

/// `--unsafe-test-lose-unsynced`: what was written but not synced is gone
/// after a "power loss" (the storage dropped without a sync), what was
/// synced survives.
#[test]
fn the_lose_unsynced_mode_drops_exactly_the_unsynced_writes() {
    let dir = tempfile::tempdir().unwrap();
    let options = super::StorageOptions { lose_unsynced: true, ..Default::default() };
    let mut storage = Storage::open_with(dir.path(), &options).unwrap();
    write_entries(&mut storage, 1..=3);
    storage.write(PersistOp::Append((4..=6).map(put).collect())).unwrap();
    drop(storage);
    let again = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!(again.entries.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 2, 3]);
}

/// A reserve is written at open, given up once, and taken back.
#[test]
fn the_disk_reserve_is_given_up_once_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let mut reserve = super::space::Reserve::open(dir.path(), 4096).unwrap();
    let file = dir.path().join("space.reserve");
    assert_eq!(fs::metadata(&file).unwrap().len(), 4096);
    assert!(reserve.release().unwrap() && !file.exists() && reserve.released());
    assert!(!reserve.release().unwrap(), "nothing left to give");
    reserve.restore().unwrap();
    assert!(!reserve.released() && file.exists());
    assert!(super::space::is_full(&std::io::Error::from_raw_os_error(libc::ENOSPC)));
}

/// Syncs asked for while the disk is busy share one fdatasync, and none
/// is reported before it is done: ten batches written, each asking for its
/// sync, while the sync thread is held, make one fdatasync once released,
/// and its one report covers all ten.
#[test]
fn syncs_asked_while_one_is_held_share_one_fdatasync() {
    let dir = tempfile::tempdir().unwrap();
    let options = super::StorageOptions { hold_syncs: true, ..Default::default() };
    let mut storage = Storage::open_with(dir.path(), &options).unwrap();
    let hold = dir.path().join(super::syncer::HOLD_FILE);
    fs::write(&hold, b"").unwrap();
    let mut asked = Vec::new();
    for index in 1..=10 {
        storage.write(PersistOp::Append(vec![put(index)])).unwrap();
        storage.write_out().unwrap();
        asked.push(storage.sync_behind().unwrap());
    }
    assert_eq!(asked, (1..=10).collect::<Vec<u64>>(), "one sync asked for per batch");
    assert_eq!(storage.sync_behind().unwrap(), 10, "nothing written since: the last sync covers it");
    assert_eq!((storage.synced(), storage.background_fsyncs()), (0, 0), "held: nothing synced, nothing reported");
    fs::remove_file(&hold).unwrap();
    assert_eq!(storage.wait_synced().unwrap().unwrap(), 10, "one report covers every batch queued behind the held one");
    assert_eq!((storage.synced(), storage.background_fsyncs()), (10, 1));
    drop(storage);
    assert_eq!(Storage::open(dir.path()).unwrap().persisted().unwrap().entries.len(), 10);
}

/// A batch's records go out in one write, and only when written out: the
/// log file does not grow record by record.
#[test]
fn a_batch_is_written_out_in_one_piece() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = Storage::open(dir.path()).unwrap();
    let wal_len = || fs::metadata(dir.path().join(WAL)).unwrap().len();
    storage.write(PersistOp::SetHardState(HardState { term: 2, voted_for: Some(1) })).unwrap();
    storage.write(PersistOp::Append((1..=3).map(put).collect())).unwrap();
    assert_eq!(wal_len(), 0, "buffered until written out");
    storage.write_out().unwrap();
    assert!(wal_len() > 0);
    storage.sync().unwrap();
    drop(storage);
    let again = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!((again.hard_state.term, again.entries.len()), (2, 3));
}

/// A snapshot installed from a leader of a newer term, and a crash before
/// the batch's fsync (`after-write`, unsynced writes lost): the term the
/// batch raised was synced when the old log was sealed, but the sealed
/// segment holding it goes as soon as the snapshot covers its entries,
/// so the term must be durable in the fresh log before that. Otherwise
/// the restart reads a snapshot of term 3 with the hard state of a member
/// that never saw term 3, and core stops ("log holds an entry from a
/// future term"): chaos-failover seed 7, chaos-nemesis seed 6 on
/// leasesim-node.
#[test]
fn an_installed_snapshot_and_its_term_survive_losing_the_unsynced_writes_together() {
    let dir = tempfile::tempdir().unwrap();
    let options = super::StorageOptions { lose_unsynced: true, ..Default::default() };
    let mut storage = Storage::open_with(dir.path(), &options).unwrap();
    storage.write(PersistOp::SetHardState(HardState { term: 1, voted_for: Some(1) })).unwrap();
    write_entries(&mut storage, 1..=5);
    // The install's batch, as core emits it: the new term, then the snapshot.
    let raised = HardState { term: 3, voted_for: None };
    storage.write(PersistOp::SetHardState(raised)).unwrap();
    let snapshot = Snapshot { last_index: 10, last_term: 3, voters: BTreeSet::from([1, 2, 3]), data: SharedState::new(state_as_of(10)) };
    storage.write(PersistOp::SaveSnapshot(snapshot.clone())).unwrap();
    storage.write_out().unwrap();
    assert_eq!(storage.sealed_segments(), 0, "the segment holding entries 1..=5 is covered and gone");
    drop(storage);
    let again = Storage::open(dir.path()).unwrap().persisted().unwrap();
    assert_eq!(again.snapshot, Some(snapshot), "the snapshot was fsynced and renamed into place");
    assert_eq!(again.hard_state, raised, "the term of the snapshot on disk is on disk too");
    assert!(again.entries.is_empty());
}
