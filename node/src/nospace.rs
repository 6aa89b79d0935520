//! etcd's NOSPACE alarm below the API: a member whose data directory
//! passed `--quota-backend-bytes`, or whose disk answered a write with
//! ENOSPC, raises it; while any member's alarm is active every member
//! refuses writes (puts, txns with a put, lease grants, lock acquisitions)
//! with etcd's `etcdserver: mvcc: database space exceeded` and still serves
//! reads, deletes and revocations (etcd's capped applier), until `etcdctl
//! alarm disarm`. This module holds what the driver and the range reads
//! need (where alarms live in the store, the disk flags, the driver's watch
//! over a full disk); etcd's Alarm call and the task that raises the alarm
//! are in `etcd/alarm.rs`.
//!
//! Alarms are replicated through the Raft log, as etcd's are: an alarm is a
//! key under [`ALARM_PREFIX`] in the replicated store (raised by a put,
//! disarmed by a delete, both ordinary logged requests), so every member
//! sees every member's alarm, and a restarted member still sees it. The KV
//! API hides that prefix from clients. Core needs no new command for it;
//! the cost is that raising or disarming an alarm bumps the store's
//! revision, which etcd's does not.

use clap::Args;
use leasesim_core::service::kv::Kv;
use leasesim_core::NodeId;

use crate::pb::etcdserverpb::{AlarmMember, AlarmType};
use crate::storage::Storage;

/// Where alarms live in the replicated store: a prefix no etcd client
/// writes by accident (it starts with a NUL byte).
pub const ALARM_PREFIX: &str = "\u{0}leasesim/alarm/";
/// etcd's default `--quota-backend-bytes` (2 GiB), used when the flag is 0.
pub const DEFAULT_QUOTA_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Disk-fault flags.
#[derive(Args, Clone, Debug, Default)]
pub struct DiskArgs {
    /// Raise the NOSPACE alarm when the data directory (log and snapshot)
    /// would pass this many bytes (0: etcd's default, 2 GiB).
    #[arg(long, default_value_t = 0)]
    pub quota_backend_bytes: u64,
    /// For crash tests only: keep log writes in memory until they are
    /// fsynced, so that a SIGKILL loses them as a power loss would.
    #[arg(long)]
    pub unsafe_test_lose_unsynced: bool,
    /// For tests only: snapshots this member takes wait to be written
    /// while a file named `hold-snapshot-writes` is in the data directory
    /// (a test counts what the member applies meanwhile).
    #[arg(long)]
    pub unsafe_test_hold_snapshot_writes: bool,
    /// For tests only: the log's fsyncs wait while a file named
    /// `hold-syncs` is in the data directory (a test counts that no answer
    /// or watch event leaves meanwhile).
    #[arg(long)]
    pub unsafe_test_hold_syncs: bool,
}

impl DiskArgs {
    pub fn quota_bytes(&self) -> u64 {
        if self.quota_backend_bytes == 0 {
            DEFAULT_QUOTA_BYTES
        } else {
            self.quota_backend_bytes
        }
    }
}

/// The store key of `member`'s alarm of type `alarm`.
pub fn alarm_key(member: NodeId, alarm: AlarmType) -> String {
    format!("{ALARM_PREFIX}{member:016x}/{}", alarm.as_str_name())
}

/// Whether a client's key falls in the alarms' reserved prefix.
pub fn is_reserved(key: &[u8]) -> bool {
    key.starts_with(ALARM_PREFIX.as_bytes())
}

pub fn parse_key(key: &str) -> Option<AlarmMember> {
    let (member, name) = key.strip_prefix(ALARM_PREFIX)?.split_once('/')?;
    let member_id = u64::from_str_radix(member, 16).ok()?;
    let alarm = AlarmType::from_str_name(name)? as i32;
    Some(AlarmMember { member_id, alarm })
}

/// Every active alarm in `kv`, in key order.
pub fn active(kv: &Kv) -> Vec<AlarmMember> {
    kv.iter_from(ALARM_PREFIX.as_bytes())
        .map_while(|(k, _)| is_reserved(k).then(|| parse_key(&String::from_utf8_lossy(k))))
        .flatten()
        .collect()
}

/// The driver's side of a full disk: the storage gave up its reserve to
/// finish a write that met ENOSPC; this member's alarm must then be raised
/// (the raiser task does it), and once an operator disarmed it the reserve
/// is taken back, or the alarm raised again if the disk is still full.
#[derive(Default)]
pub struct DiskWatch {
    /// This member's NOSPACE alarm was seen in the store since the reserve
    /// was given up.
    raised_seen: bool,
}

impl DiskWatch {
    /// After a batch: whether this member's disk is (still) full.
    pub fn after_batch(&mut self, storage: &mut Storage, me: NodeId, alarms: &[AlarmMember]) -> bool {
        if !storage.reserve_released() {
            self.raised_seen = false;
            return false;
        }
        let mine = alarms.iter().any(|a| a.member_id == me && a.alarm == AlarmType::Nospace as i32);
        if mine {
            self.raised_seen = true;
        } else if self.raised_seen {
            // Disarmed: take the space back if it returned.
            self.raised_seen = false;
            match storage.restore_reserve() {
                Ok(()) => {
                    tracing::info!("disk space returned: NOSPACE alarm cleared");
                    return false;
                }
                Err(e) => tracing::warn!("NOSPACE alarm disarmed but the disk is still full ({e}): raising it again"),
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarm_keys_round_trip_and_are_reserved() {
        let key = alarm_key(0xabc, AlarmType::Nospace);
        assert!(is_reserved(key.as_bytes()));
        assert!(!is_reserved(b"\0other"));
        assert_eq!(parse_key(&key), Some(AlarmMember { member_id: 0xabc, alarm: AlarmType::Nospace as i32 }));
        assert_eq!(parse_key(&format!("{ALARM_PREFIX}zz/NOSPACE")), None);
        assert_eq!(DiskArgs::default().quota_bytes(), DEFAULT_QUOTA_BYTES);
    }
}
