//! A fault's selector, resolved when the fault fires, as the simulator
//! resolves it: `leader` is whoever says it leads then, `holder:KEY` the
//! client that believes it holds KEY then, `follower` and `random-*` are
//! drawn from the run's seed. A selector that matches nothing then (no
//! leader mid-election, nobody holding the key) skips the fault, and the
//! run's log says so.

use leasesim_scenario::Selector;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::clients::Ctx;
use crate::cluster::Cluster;

/// A concrete process of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// A member, by index (`s1` is 0).
    Server(usize),
    /// A client, by id (`c1` is 1).
    Client(u64),
    /// The data store.
    Store,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Server(i) => write!(f, "s{}", i + 1),
            Who::Client(c) => write!(f, "c{c}"),
            Who::Store => write!(f, "store"),
        }
    }
}

/// Whom `selector` names now; `Err` says why nobody.
pub async fn resolve(selector: &Selector, cluster: &Cluster, ctx: &Ctx, clients: u64, rng: &mut ChaCha8Rng) -> Result<Who, String> {
    let running: Vec<usize> = (0..cluster.members.len()).filter(|i| cluster.members[*i].proc.is_running()).collect();
    match selector {
        Selector::Server(n) => Ok(Who::Server(*n as usize - 1)),
        Selector::Client(c) => Ok(Who::Client(*c)),
        Selector::Leader => cluster.leader().await.map(Who::Server).ok_or_else(|| "no member leads now".to_string()),
        Selector::Follower => {
            // Among the initial voters, as the simulator draws it (spares
            // are not followers until added, and may be removed again).
            let leader = cluster.leader().await;
            let followers: Vec<usize> = running.into_iter().filter(|i| *i < cluster.voters && Some(*i) != leader).collect();
            followers.choose(rng).copied().map(Who::Server).ok_or_else(|| "no follower runs now".to_string())
        }
        Selector::RandomServer => {
            let all: Vec<usize> = (0..cluster.members.len()).collect();
            Ok(Who::Server(*all.choose(rng).expect("a cluster has a server")))
        }
        Selector::RandomClient => {
            let all: Vec<u64> = (1..=clients).collect();
            all.choose(rng).copied().map(Who::Client).ok_or_else(|| "the scenario has no client".to_string())
        }
        Selector::Holder(key) => ctx.holder(key).map(Who::Client).ok_or_else(|| format!("nobody holds {key} now")),
        Selector::Store => Ok(Who::Store),
    }
}
