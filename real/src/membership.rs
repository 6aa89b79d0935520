//! Spare servers and the `add` / `remove` faults, played as the simulator
//! plays them (`sim/src/run/faults.rs`, `sim/src/host/server.rs`):
//!
//! - a spare starts with the run, passive: it knows the initial voters but
//!   is not one (`leasesim-node --spare`), so it neither campaigns nor is
//!   asked for votes; there are no learners;
//! - `add = "sN"` asks whoever leads then to add server N through the log
//!   (no leader: skipped, as in the simulator), with the Raft lock-service
//!   design's JoinCluster call naming N's id and peer URL (etcd's
//!   `MemberAdd` would give the member an id of the leader's choosing);
//! - `remove = SELECTOR` asks the leader to remove that server with etcd's
//!   `MemberRemove`;
//! - a removed process is left running, as the simulator leaves it: it
//!   learns of its removal from the leader's last heartbeat and stays quiet.
//!
//! The simulator's administrator sends its request and moves on, so the
//! call runs as a task of its own and the timeline does not wait for the
//! change to commit (under a partition that can take seconds); what the
//! cluster answered is recorded when it answers, as the simulator records
//! the leader's "proposed" or "refused".

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc as JudgeProc;
use leasesim_node::pb::etcdserverpb::cluster_client::ClusterClient;
use leasesim_node::pb::etcdserverpb::{MemberListRequest, MemberRemoveRequest};

use crate::clients::Ctx;

/// Makes a member's argv a spare's: `--spare`, and its own entry added to
/// `--initial-cluster` (which names the initial voters).
pub fn as_spare(argv: &mut Vec<String>, name: &str, peer_port: u16) {
    if let Some(at) = argv.iter().position(|a| a == "--initial-cluster") {
        argv[at + 1] = format!("{},{name}=http://127.0.0.1:{peer_port}", argv[at + 1]);
    }
    argv.push("--spare".into());
}

/// One membership change asked of the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Server N (1-based) joins, at its peer address.
    Add(u64, SocketAddr),
    /// Server N leaves.
    Remove(u64),
}

impl Change {
    /// As the simulator's trace names it (`AddServer(4)`).
    fn name(&self) -> String {
        match self {
            Change::Add(n, _) => format!("AddServer({n})"),
            Change::Remove(n) => format!("RemoveServer({n})"),
        }
    }
}

/// The leader as the runner reached it: its number (1-based), its peer and
/// client addresses.
#[derive(Clone, Debug)]
pub struct Leader {
    pub n: u64,
    pub peer: SocketAddr,
    pub client: String,
}

/// How long the runner waits for the cluster's answer to one change before
/// it records none (the change may still commit later).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Starts asking `leader` for `change`; the task records the answer in
/// the run's log as the simulator's leader does: `Fault` "… committed" or
/// `FaultSkipped` "the cluster refused: …" (an add is answered once it
/// committed, a remove once it is in force in the leader's log).
pub fn ask(ctx: &Arc<Ctx>, leader: Leader, change: Change) -> tokio::task::JoinHandle<()> {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let action = format!("{} via s{}", change.name(), leader.n);
        let answer = match tokio::time::timeout(ANSWER_WITHIN, carry_out(&leader, change)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer within {ANSWER_WITHIN:?}")),
        };
        let event = match answer {
            Ok(done) => Event::Fault { action: format!("{action} {done}") },
            Err(why) => Event::FaultSkipped { action, why: format!("the cluster refused: {why}") },
        };
        ctx.seen.record_as(JudgeProc::Admin, event);
    })
}

/// What the cluster did ("committed", "in force"), or why it did not.
async fn carry_out(leader: &Leader, change: Change) -> Result<&'static str, String> {
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", leader.client))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .map_err(|e| format!("s{}: {e}", leader.n))?;
    let mut cluster = ClusterClient::new(channel);
    match change {
        Change::Add(n, peer) => {
            // Core refuses to add a voter again (a no-op change); the
            // JoinCluster call answers yes to one, so look first.
            let list = cluster.member_list(MemberListRequest { linearizable: false }).await.map_err(|e| e.message().to_string())?;
            if list.into_inner().members.iter().any(|m| m.id == n) {
                return Err(format!("s{n} is a voter already"));
            }
            leasesim_node::join::ask_to_join(leader.peer, n, &format!("s{n}"), &format!("http://{peer}")).await.map(|_| "committed")
        }
        Change::Remove(n) => {
            cluster.member_remove(MemberRemoveRequest { id: n }).await.map(|_| "in force").map_err(|e| e.message().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_is_named_in_the_initial_cluster_and_started_passive() {
        let mut argv: Vec<String> =
            ["leasesim-node", "--initial-cluster", "s1=http://127.0.0.1:1", "--name", "s2"].iter().map(|a| a.to_string()).collect();
        as_spare(&mut argv, "s2", 7);
        assert_eq!(argv[2], "s1=http://127.0.0.1:1,s2=http://127.0.0.1:7");
        assert_eq!(argv.last().map(String::as_str), Some("--spare"));
        assert_eq!(Change::Add(4, ([127, 0, 0, 1], 1).into()).name(), "AddServer(4)");
        assert_eq!(Change::Remove(1).name(), "RemoveServer(1)");
    }
}
