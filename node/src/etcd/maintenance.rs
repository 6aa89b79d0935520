//! etcd's Maintenance service: `Status` as etcd fills it, `Snapshot` (a
//! consistent backup of this member's applied state, streamed in blobs as
//! etcd streams its bolt file), `HashKV` and `Hash` (see `digests.rs` for
//! what is hashed), and `MoveLeader` through Raft's leadership transfer.
//! Alarm lists the NOSPACE alarms kept in the log (`alarm.rs`, over
//! `nospace.rs`) and the
//! corruption check's CORRUPT alarms (`corrupt.rs`, in memory);
//! Defragment has nothing to defragment. Snapshot, Hash, HashKV and
//! Defragment need the root role when auth is on, as on etcd 3.4.

use std::time::Duration;

use leasesim_core::raft::TransferError;
use tokio::sync::oneshot;
use tonic::{Request, Status};

use super::{unimplemented, Api};
use crate::backup::BackupFile;
use crate::digests::{fold, Missing};
use crate::driver::Input;
use crate::pb::etcdserverpb::alarm_request::AlarmAction;
use crate::pb::etcdserverpb::maintenance_server::Maintenance;
use crate::pb::etcdserverpb::*;

type Reply<T> = Result<tonic::Response<T>, Status>;

/// The etcd version `Status` reports: the API level this node speaks.
pub const API_VERSION: &str = "3.4.0";
/// etcd streams snapshots in 32 KiB blobs.
const SNAPSHOT_BLOB_BYTES: usize = 32 * 1024;
/// How long MoveLeader waits for the target to take over (etcd answers
/// `leader transfer took too long` after its request timeout).
const TRANSFER_WAIT: Duration = Duration::from_secs(10);

impl Api {
    /// Asks the driver something and waits for the answer.
    async fn ask<T>(&self, input: impl FnOnce(oneshot::Sender<T>) -> Input) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.node.front.send(input(tx)).map_err(|_| Status::unavailable("etcdserver: server stopped"))?;
        rx.await.map_err(|_| Status::unavailable("etcdserver: server stopped"))
    }

    fn status_now(&self) -> StatusResponse {
        let current = self.node.front.status();
        let mut errors = Vec::new();
        if current.leader.is_none() {
            errors.push("etcdserver: no leader".to_string());
        }
        errors.extend(
            current
                .alarms
                .iter()
                .filter(|a| a.alarm == AlarmType::Nospace as i32)
                .map(|a| format!("memberID:{} alarm:NOSPACE ", a.member_id)),
        );
        errors.extend(self.node.corruption.alarms().iter().map(|id| format!("memberID:{id} alarm:CORRUPT ")));
        StatusResponse {
            header: self.header(0),
            version: API_VERSION.to_string(),
            db_size: current.db_size_bytes as i64,
            leader: current.leader.unwrap_or(0),
            raft_index: current.commit_index,
            raft_term: current.term,
            raft_applied_index: current.applied_index,
            errors,
            db_size_in_use: current.db_size_bytes as i64,
            is_learner: false,
            storage_version: String::new(),
            db_size_quota: 0,
            downgrade_info: None,
        }
    }

    /// etcd's HashKV: the state digest as of revision (log index)
    /// `revision`, 0 meaning the latest applied.
    fn hash_kv_now(&self, revision: i64) -> Result<HashKvResponse, Status> {
        if revision < 0 {
            return Err(Status::out_of_range("etcdserver: mvcc: required revision has been compacted"));
        }
        let digests = self.node.digests.lock().expect("digests lock");
        let index = match revision {
            0 => digests.latest().map(|(i, _)| i).ok_or_else(|| Status::unavailable("etcdserver: not ready"))?,
            r => r as u64,
        };
        let digest = digests.at(index).map_err(|why| match why {
            Missing::Future => Status::out_of_range("etcdserver: mvcc: required revision is a future revision"),
            Missing::Compacted => Status::out_of_range("etcdserver: mvcc: required revision has been compacted"),
        })?;
        let compact_revision = digests.oldest().map_or(0, |o| o.saturating_sub(1)) as i64;
        let mut header = self.header(0);
        if let Some(h) = header.as_mut() {
            h.revision = index as i64;
        }
        Ok(HashKvResponse { header, hash: fold(digest), compact_revision, hash_revision: index as i64 })
    }

    async fn move_leader_to(&self, target: u64) -> Result<MoveLeaderResponse, Status> {
        let current = self.node.front.status();
        if current.leader != Some(current.id) {
            return Err(Status::failed_precondition("etcdserver: not leader"));
        }
        match self.ask(|reply| Input::Transfer { target, reply }).await? {
            Ok(()) | Err(TransferError::AlreadyLeader) => {}
            Err(TransferError::NotAVoter) => return Err(Status::failed_precondition("etcdserver: bad leader transferee")),
            Err(TransferError::NotLeader { .. }) => return Err(Status::failed_precondition("etcdserver: not leader")),
            Err(TransferError::InProgress { .. }) => {
                return Err(Status::failed_precondition("etcdserver: leader transfer already in progress"))
            }
        }
        let mut watch = self.node.front.status_watch();
        let moved = tokio::time::timeout(TRANSFER_WAIT, watch.wait_for(|p| p.leader == Some(target))).await;
        if !matches!(moved, Ok(Ok(_))) {
            return Err(Status::unavailable("etcdserver: request timed out, leader transfer took too long"));
        }
        tracing::info!(from = current.id, to = target, "leadership moved");
        Ok(MoveLeaderResponse { header: self.header(0) })
    }
}

#[tonic::async_trait]
impl Maintenance for Api {
    async fn alarm(&self, request: Request<AlarmRequest>) -> Reply<AlarmResponse> {
        let listing = request.get_ref().action == AlarmAction::Get as i32
            && matches!(AlarmType::try_from(request.get_ref().alarm), Ok(AlarmType::None | AlarmType::Corrupt));
        let mut answer = self.alarm_op(request).await?;
        if listing {
            let corrupt = self.node.corruption.alarms().into_iter();
            answer.alarms.extend(corrupt.map(|member_id| AlarmMember { member_id, alarm: AlarmType::Corrupt as i32 }));
        }
        Ok(tonic::Response::new(answer))
    }

    async fn status(&self, _: Request<StatusRequest>) -> Reply<StatusResponse> {
        Ok(tonic::Response::new(self.status_now()))
    }

    async fn defragment(&self, request: Request<DefragmentRequest>) -> Reply<DefragmentResponse> {
        self.permit_maintenance(&request).await?;
        Ok(tonic::Response::new(DefragmentResponse { header: self.header(0) }))
    }

    async fn hash(&self, request: Request<HashRequest>) -> Reply<HashResponse> {
        self.permit_maintenance(&request).await?;
        let (hash, index) = self.ask(|reply| Input::Hash { reply }).await?;
        let mut header = self.header(0);
        if let Some(h) = header.as_mut() {
            h.revision = index as i64;
        }
        Ok(tonic::Response::new(HashResponse { header, hash }))
    }

    async fn hash_kv(&self, request: Request<HashKvRequest>) -> Reply<HashKvResponse> {
        self.permit_maintenance(&request).await?;
        self.hash_kv_now(request.into_inner().revision).map(tonic::Response::new)
    }

    type SnapshotStream = tokio_stream::Iter<std::vec::IntoIter<Result<SnapshotResponse, Status>>>;

    async fn snapshot(&self, request: Request<SnapshotRequest>) -> Reply<Self::SnapshotStream> {
        self.permit_maintenance(&request).await?;
        let backup = self.ask(|reply| Input::Backup { reply }).await?;
        let current = self.node.front.status();
        let file = BackupFile::new(self.node.cluster_id, current.id, backup);
        tracing::info!(index = file.index, revision = file.state.kv().revision(), "sending a snapshot");
        let bytes = file.encode().map_err(Status::internal)?;
        let total = bytes.len();
        let blobs: Vec<_> = bytes
            .chunks(SNAPSHOT_BLOB_BYTES)
            .scan(0usize, |sent, blob| {
                *sent += blob.len();
                let remaining_bytes = (total - *sent) as u64;
                Some(Ok(SnapshotResponse { header: self.header(0), remaining_bytes, blob: blob.to_vec(), version: String::new() }))
            })
            .collect();
        Ok(tonic::Response::new(tokio_stream::iter(blobs)))
    }

    async fn move_leader(&self, request: Request<MoveLeaderRequest>) -> Reply<MoveLeaderResponse> {
        self.move_leader_to(request.into_inner().target_id).await.map(tonic::Response::new)
    }

    async fn downgrade(&self, _: Request<DowngradeRequest>) -> Reply<DowngradeResponse> {
        Err(unimplemented("Downgrade"))
    }
}
