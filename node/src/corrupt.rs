//! The periodic cross-member corruption check, after etcd's
//! `--experimental-corrupt-check-time`: every period, each member asks every
//! peer for its `HashKV` at the index (revision) this member had applied one
//! period earlier, which the peers have most likely applied too, and
//! compares it with its own. A peer that has not applied it yet, or no
//! longer keeps it, is skipped this round, as etcd skips a peer at another
//! revision.
//!
//! A mismatch is a replica divergence (the simulator's `replica-divergence`
//! checker judges the same digest in every run): the member logs it and
//! raises etcd's CORRUPT alarm naming the peer, and from then on refuses
//! writes with etcd's `etcdserver: corrupt cluster` while still serving
//! reads, as etcd's corrupt applier does. Unlike etcd, where the leader alone
//! checks and the alarm is replicated through the log, every member checks
//! and keeps its alarms in memory (a restart clears them): in a cluster where
//! one member diverged, the others see it and it sees them, so every member
//! refuses writes within one period.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_core::{LogIndex, NodeId};

use crate::digests::{fold, Digests};
use crate::front::Front;
use crate::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use crate::pb::etcdserverpb::HashKvRequest;
use crate::transport::Directory;

/// How long one peer may take to answer.
const PEER_TIMEOUT: Duration = Duration::from_secs(3);

/// The CORRUPT alarms this member raised (member ids).
#[derive(Debug, Default)]
pub struct Corruption {
    alarms: Mutex<BTreeSet<NodeId>>,
}

impl Corruption {
    pub fn alarms(&self) -> Vec<NodeId> {
        self.alarms.lock().expect("alarms lock").iter().copied().collect()
    }

    pub fn raised(&self) -> bool {
        !self.alarms.lock().expect("alarms lock").is_empty()
    }

    fn raise(&self, member: NodeId) -> bool {
        self.alarms.lock().expect("alarms lock").insert(member)
    }
}

/// What the check reads (this member's digests and status, the peers'
/// client URLs) and the alarms it raises: the parts of the member's
/// `NodeHandle` it needs, so that the handle, which holds the alarms, and
/// this module do not import each other.
pub struct CorruptCheck {
    pub front: Front,
    pub directory: Directory,
    pub digests: Digests,
    pub corruption: Arc<Corruption>,
}

/// Runs the check every `period` until the process stops.
pub async fn run(node: CorruptCheck, period: Duration) {
    let mut previous: Option<LogIndex> = None;
    loop {
        tokio::time::sleep(period).await;
        if let Some(index) = previous {
            check_at(&node, index).await;
        }
        previous = node.digests.lock().expect("digests lock").latest().map(|(index, _)| index);
    }
}

async fn check_at(node: &CorruptCheck, index: LogIndex) {
    // Revision 0 would ask peers for their latest state.
    if index == 0 {
        return;
    }
    let Ok(mine) = node.digests.lock().expect("digests lock").at(index) else {
        return;
    };
    let mine = fold(mine);
    let me = node.front.status().id;
    let peers: Vec<(NodeId, String)> = {
        let voters = node.front.status().voters;
        let dir = node.directory.lock().expect("directory lock");
        voters
            .into_iter()
            .filter(|id| *id != me)
            .filter_map(|id| dir.get(&id).filter(|m| !m.client_url.is_empty()).map(|m| (id, m.client_url.clone())))
            .collect()
    };
    for (peer, url) in peers {
        let Some(theirs) = peer_hash(&url, index).await else { continue };
        if theirs != mine && node.corruption.raise(peer) {
            tracing::error!(
                "corruption check: member {peer:x} hashes revision {index} to {theirs:08x}, this member ({me:x}) to {mine:08x}; \
                 raising the CORRUPT alarm for {peer:x}: writes are refused from now on"
            );
        }
    }
}

/// A peer's `HashKV` at `index`, or `None` if it cannot answer for it now.
async fn peer_hash(url: &str, index: LogIndex) -> Option<u32> {
    let endpoint = tonic::transport::Channel::from_shared(url.to_string()).ok()?.connect_timeout(PEER_TIMEOUT).timeout(PEER_TIMEOUT);
    let mut client = MaintenanceClient::new(endpoint.connect().await.ok()?);
    let answer = client.hash_kv(HashKvRequest { revision: index as i64 }).await.ok()?;
    Some(answer.into_inner().hash)
}
