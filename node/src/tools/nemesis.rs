//! The fault side of `leasesim-node load`: every `--every`, kill the leader
//! with SIGKILL and restart it, pause it with SIGSTOP/SIGCONT, or kill a
//! random member, on a cluster started by `leasesim-node local` (its roster
//! says which process is which member and how to restart it).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use tonic::transport::Channel;

use crate::pb::etcdserverpb::maintenance_client::MaintenanceClient;
use crate::pb::etcdserverpb::StatusRequest;
use crate::tools::roster;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Nemesis {
    KillLeader,
    PauseLeader,
    KillRandom,
}

/// What the nemesis did, for the load's summary.
#[derive(Clone, Debug, Default)]
pub struct NemesisLog {
    pub actions: Vec<String>,
}

/// The roster index of the member that leads now, if one answers.
async fn find_leader(entries: &[roster::RosterEntry]) -> Option<usize> {
    for (i, entry) in entries.iter().enumerate() {
        let Ok(endpoint) = Channel::from_shared(entry.client_url.clone()) else {
            continue;
        };
        let Ok(channel) = endpoint.connect_timeout(Duration::from_millis(500)).connect().await else {
            continue;
        };
        let mut request = tonic::Request::new(StatusRequest {});
        request.set_timeout(Duration::from_secs(2));
        if let Ok(status) = MaintenanceClient::new(channel).status(request).await {
            let status = status.into_inner();
            let me = status.header.map_or(0, |h| h.member_id);
            if status.leader != 0 && status.leader == me {
                return Some(i);
            }
        }
    }
    None
}

/// Runs until `until`, one fault every `every`.
pub async fn run(kind: Nemesis, every: Duration, dir: PathBuf, started: Instant, until: Instant) -> Result<NemesisLog, String> {
    let mut log = NemesisLog::default();
    loop {
        tokio::time::sleep(every).await;
        if Instant::now() + every / 2 >= until {
            return Ok(log);
        }
        let mut entries = roster::load(&dir)?;
        let target = match kind {
            Nemesis::KillLeader | Nemesis::PauseLeader => find_leader(&entries).await,
            Nemesis::KillRandom => Some(rand::random::<usize>() % entries.len().max(1)),
        };
        let Some(i) = target.filter(|i| *i < entries.len()) else {
            log.actions.push(format!("{:.1}s: no leader found, nothing done", started.elapsed().as_secs_f64()));
            continue;
        };
        let at = started.elapsed().as_secs_f64();
        let name = entries[i].name.clone();
        match kind {
            Nemesis::PauseLeader => {
                roster::signal(entries[i].pid, "STOP")?;
                tokio::time::sleep(every / 2).await;
                roster::signal(entries[i].pid, "CONT")?;
                log.actions.push(format!("{at:.1}s: paused {name} (leader) for {:?}", every / 2));
            }
            Nemesis::KillLeader | Nemesis::KillRandom => {
                roster::signal(entries[i].pid, "KILL")?;
                tokio::time::sleep(every / 2).await;
                let child = roster::spawn(&entries[i].argv, &entries[i].log)?;
                entries[i].pid = child.id();
                roster::save(&dir, &entries)?;
                log.actions.push(format!("{at:.1}s: SIGKILL {name}, restarted after {:?}", every / 2));
            }
        }
    }
}
