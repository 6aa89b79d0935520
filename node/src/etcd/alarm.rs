//! etcd's Alarm call (list, raise, disarm) and the NOSPACE checks in front
//! of writes, over the alarms `nospace.rs` keeps in the replicated store;
//! and the task that raises this member's NOSPACE alarm when its driver
//! reports a full disk.

use std::time::Duration;

use leasesim_core::service::{Op, Response};
use leasesim_core::NodeId;
use tonic::{Request, Status};

use super::{status, Api};
use crate::front::{CallError, Front};
use crate::nospace::{alarm_key, parse_key, ALARM_PREFIX};
use crate::pb::etcdserverpb::alarm_request::AlarmAction;
use crate::pb::etcdserverpb::{AlarmMember, AlarmRequest, AlarmResponse, AlarmType};
use crate::view::RangeSpec;

/// Raises this member's NOSPACE alarm whenever its driver reports a full
/// disk and the store does not show the alarm yet.
pub fn spawn_raiser(front: Front) {
    tokio::spawn(async move {
        let mut current = front.status_watch();
        loop {
            let p = current.borrow_and_update().clone();
            let mine = p.alarms.iter().any(|a| a.member_id == p.id && a.alarm == AlarmType::Nospace as i32);
            if p.disk_full && !mine {
                tracing::error!("the data directory's disk is full: raising the NOSPACE alarm");
                if raise(&front, p.id).await.is_err() {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
            if current.changed().await.is_err() {
                return;
            }
        }
    });
}

async fn raise(front: &Front, member: NodeId) -> Result<(), CallError> {
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
        let current = self.node.front.status();
        if current.alarms.iter().any(|a| a.alarm == AlarmType::Nospace as i32) {
            return Err(no_space());
        }
        if current.db_size_bytes.saturating_add(cost_bytes as u64) > self.node.quota_backend_bytes {
            tracing::warn!(
                db_size = current.db_size_bytes,
                quota = self.node.quota_backend_bytes,
                "the backend quota is exhausted: raising NOSPACE"
            );
            let front = self.node.front.clone();
            tokio::spawn(async move { raise(&front, current.id).await });
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
