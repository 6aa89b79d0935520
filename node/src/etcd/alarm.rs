//! etcd's NOSPACE alarm: a member whose data directory passed
//! `--quota-backend-bytes`, or whose disk answered a write with ENOSPC,
//! raises it; while any member's alarm is active every member refuses
//! writes (puts, txns with a put, lease grants, lock acquisitions) with
//! etcd's `etcdserver: mvcc: database space exceeded` and still serves
//! reads, deletes and revocations (etcd's capped applier), until `etcdctl
//! alarm disarm`.
//!
//! Alarms are replicated through the Raft log, as etcd's are: an alarm is a
//! key under [`ALARM_PREFIX`] in the replicated store (raised by a put,
//! disarmed by a delete, both ordinary logged requests), so every member
//! sees every member's alarm, and a restarted member still sees it. The KV
//! API hides that prefix from clients. Core needs no new command for it;
//! the cost is that raising or disarming an alarm bumps the store's
//! revision, which etcd's does not.

use std::time::Duration;

use clap::Args;
use leasesim_core::service::kv::Kv;
use leasesim_core::service::{Op, Response};
use leasesim_core::NodeId;
use tonic::{Request, Status};

use super::{status, Api};
use crate::front::Front;
use crate::pb::etcdserverpb::alarm_request::AlarmAction;
use crate::pb::etcdserverpb::{AlarmMember, AlarmRequest, AlarmResponse, AlarmType};
use crate::storage::Storage;
use crate::view::RangeSpec;

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

fn parse_key(key: &str) -> Option<AlarmMember> {
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

/// Raises this member's NOSPACE alarm whenever its driver reports a full
/// disk and the store does not show the alarm yet.
pub fn spawn_raiser(front: Front) {
    tokio::spawn(async move {
        let mut probe = front.probe_watch();
        loop {
            let p = probe.borrow_and_update().clone();
            let mine = p.alarms.iter().any(|a| a.member_id == p.id && a.alarm == AlarmType::Nospace as i32);
            if p.disk_full && !mine {
                tracing::error!("the data directory's disk is full: raising the NOSPACE alarm");
                if raise(&front, p.id).await.is_err() {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
            if probe.changed().await.is_err() {
                return;
            }
        }
    });
}

async fn raise(front: &Front, member: NodeId) -> Result<(), crate::front::CallError> {
    let key = alarm_key(member, AlarmType::Nospace);
    front.call(Op::Put { key, value: String::new(), lease: None }).await.map(drop)
}

/// etcd's answer to a write while NOSPACE is active.
pub fn no_space() -> Status {
    Status::resource_exhausted("etcdserver: mvcc: database space exceeded")
}

impl Api {
    /// etcd's quota check before a write of `cost_bytes`: refused while any
    /// NOSPACE alarm is active, and refused (raising this member's alarm)
    /// when the write would take the data directory past the quota.
    pub(super) fn check_space(&self, cost_bytes: usize) -> Result<(), Status> {
        let probe = self.node.front.probe();
        if probe.alarms.iter().any(|a| a.alarm == AlarmType::Nospace as i32) {
            return Err(no_space());
        }
        if probe.db_size_bytes.saturating_add(cost_bytes as u64) > self.node.quota_backend_bytes {
            tracing::warn!(
                db_size = probe.db_size_bytes,
                quota = self.node.quota_backend_bytes,
                "the backend quota is exhausted: raising NOSPACE"
            );
            let front = self.node.front.clone();
            tokio::spawn(async move { raise(&front, probe.id).await });
            return Err(no_space());
        }
        Ok(())
    }

    /// The alarms in the store, read linearizably.
    async fn alarms(&self) -> Result<Vec<AlarmMember>, Status> {
        let mut end = ALARM_PREFIX.as_bytes().to_vec();
        *end.last_mut().expect("non-empty prefix") += 1;
        let spec = RangeSpec::keys(ALARM_PREFIX.as_bytes().to_vec(), end);
        let answer = self.node.front.call_view(Op::Get { key: ALARM_PREFIX.to_string() }, Some(spec)).await.map_err(status)?;
        Ok(answer.view.unwrap_or_default().kvs.iter().filter_map(|(k, _)| parse_key(&String::from_utf8_lossy(k))).collect())
    }

    /// etcd's Alarm call: list (`GET`, of one type or all), raise
    /// (`ACTIVATE`) and disarm (`DEACTIVATE`, answering the alarm it
    /// cleared, or nothing when there was none).
    pub(super) async fn alarm_op(&self, request: Request<AlarmRequest>) -> Result<AlarmResponse, Status> {
        let req = request.into_inner();
        let action = AlarmAction::try_from(req.action).map_err(|_| Status::invalid_argument("etcdserver: unknown alarm action"))?;
        let kind = AlarmType::try_from(req.alarm).map_err(|_| Status::invalid_argument("etcdserver: unknown alarm type"))?;
        let current = self.alarms().await?;
        let alarms = match action {
            AlarmAction::Get => current.into_iter().filter(|a| kind == AlarmType::None || a.alarm == kind as i32).collect(),
            AlarmAction::Activate if kind == AlarmType::None => Vec::new(),
            AlarmAction::Activate => {
                let key = alarm_key(req.member_id, kind);
                self.node.front.call(Op::Put { key, value: String::new(), lease: None }).await.map_err(status)?;
                vec![AlarmMember { member_id: req.member_id, alarm: kind as i32 }]
            }
            AlarmAction::Deactivate => {
                let wanted = AlarmMember { member_id: req.member_id, alarm: kind as i32 };
                if !current.contains(&wanted) {
                    Vec::new()
                } else {
                    let key = alarm_key(req.member_id, kind);
                    match self.node.front.call(Op::Delete { key }).await.map_err(status)? {
                        Response::Done { .. } => vec![wanted],
                        other => return Err(Status::internal(format!("leasesim: unexpected answer {other:?}"))),
                    }
                }
            }
        };
        Ok(AlarmResponse { header: self.header(0), alarms })
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
