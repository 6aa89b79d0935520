//! The server's command-line settings, named after etcd's flags so etcd
//! users feel at home, and their translation into core's `ServerConfig`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use leasesim_core::bugs::Bugs;
use leasesim_core::raft::RaftConfig;
use leasesim_core::server::ServerConfig;
use leasesim_core::{ExpiryStrategy, NodeId, NS_PER_MS};

/// etcd's default `--initial-cluster-token`.
pub const DEFAULT_CLUSTER_TOKEN: &str = "etcd-cluster";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClusterState {
    New,
    Existing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LeaseExpiry {
    LeaderMonotonic,
    LeaderStampedWall,
    WriterClock,
}

impl From<LeaseExpiry> for ExpiryStrategy {
    fn from(e: LeaseExpiry) -> Self {
        match e {
            LeaseExpiry::LeaderMonotonic => ExpiryStrategy::LeaderMonotonic,
            LeaseExpiry::LeaderStampedWall => ExpiryStrategy::LeaderStampedWall,
            LeaseExpiry::WriterClock => ExpiryStrategy::WriterClock,
        }
    }
}

/// `leasesim-node` (serve): one member of a cluster.
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// This member's name; must appear in --initial-cluster.
    #[arg(long, default_value = "s1")]
    pub name: String,
    /// Where the write-ahead log and snapshots live.
    #[arg(long, default_value = "default.leasesim")]
    pub data_dir: PathBuf,
    /// Address peers connect to (http://host:port).
    #[arg(long, default_value = "http://127.0.0.1:2380", value_parser = parse_url)]
    pub listen_peer_urls: SocketAddr,
    /// Address of the etcd v3 gRPC API (http://host:port).
    #[arg(long, default_value = "http://127.0.0.1:2379", value_parser = parse_url)]
    pub listen_client_urls: SocketAddr,
    /// Client URLs to tell others (defaults to --listen-client-urls).
    #[arg(long, value_parser = parse_url)]
    pub advertise_client_urls: Option<SocketAddr>,
    /// Address of the Raft lock-service design's WebSocket lock API (off when absent).
    #[arg(long, value_parser = parse_url)]
    pub listen_lock_urls: Option<SocketAddr>,
    /// Every member: name=http://peer-host:port,…
    #[arg(long, default_value = "s1=http://127.0.0.1:2380")]
    pub initial_cluster: String,
    #[arg(long, value_enum, default_value = "new")]
    pub initial_cluster_state: ClusterState,
    /// The cluster's token (etcd's flag): part of the cluster id, recorded in
    /// the data directory; a restart with another token is refused.
    #[arg(long)]
    pub initial_cluster_token: Option<String>,
    /// Join a running cluster through any member's peer URL
    /// (http://host:port): hop to its leader (at most 5 redirects), be
    /// added through the log, fetch the peer list. Replaces
    /// --initial-cluster; a restart from the same --data-dir needs no leader.
    #[arg(long, value_parser = parse_url, conflicts_with_all = ["initial_cluster", "initial_cluster_state"])]
    pub join: Option<SocketAddr>,
    /// Heartbeat interval in milliseconds.
    #[arg(long = "heartbeat-interval", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub heartbeat_interval_ms: u64,
    /// Election timeout in milliseconds (randomized in [t, 2t)).
    #[arg(long = "election-timeout", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub election_timeout_ms: u64,
    #[arg(long, value_enum, default_value = "leader-monotonic")]
    pub lease_expiry: LeaseExpiry,
    /// Compact the log after this many applied entries (the last one
    /// given wins, so a test can override a harness's value).
    #[arg(long, default_value_t = 1000, overrides_with = "snapshot_count")]
    pub snapshot_count: u64,
    /// How often members compare state hashes (etcd's flag; 0s: never), e.g.
    /// 5s, 500ms, 1m.
    #[arg(long = "experimental-corrupt-check-time", default_value = "0s", value_parser = parse_duration_ms)]
    pub corrupt_check_ms: u64,
    /// How often a watch that asked for progress notifications gets one
    /// when it had no events (etcd's flag), e.g. 10m, 2s.
    #[arg(long = "experimental-watch-progress-notify-interval", default_value = "10m", value_parser = parse_positive_duration_ms)]
    pub watch_progress_notify_ms: u64,
    /// Plant a bug in the engine (repeatable): the simulator's switches
    /// (e.g. follower-expires-leases), so that a real cluster can show the
    /// checkers of `leasesim-node load` catching it. For tests only.
    #[arg(long = "bug", value_name = "NAME", value_parser = parse_bug)]
    pub bugs: Vec<String>,
    // Disk faults (see etcd/alarm.rs, storage).
    #[command(flatten)]
    pub disk: crate::etcd::alarm::DiskArgs,
    // TLS (see tls.rs).
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
    // Fault injection for tests (see faults/).
    #[command(flatten)]
    pub test: crate::faults::TestArgs,
}

/// An etcd-style duration (`500ms`, `5s`, `1m`, `0s`) in milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("{s}: expected a duration such as 500ms, 5s or 1m"))?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        _ => return Err(format!("{s}: expected a duration such as 500ms, 5s or 1m (units ms, s, m)")),
    };
    Ok(n * scale)
}

/// A duration that must not be zero.
pub fn parse_positive_duration_ms(s: &str) -> Result<u64, String> {
    match parse_duration_ms(s)? {
        0 => Err(format!("{s}: must be longer than 0")),
        ms => Ok(ms),
    }
}

/// A planted bug's name, checked against core's list.
pub fn parse_bug(name: &str) -> Result<String, String> {
    if crate::driver::NODE_BUGS.contains(&name) {
        return Ok(name.to_string());
    }
    if name == "completion-without-token-check" {
        return Err(format!("{name} lives in the simulator's data store, not in the engine this node runs"));
    }
    Bugs::default()
        .enable(name)
        .map(|()| name.to_string())
        .map_err(|e| format!("{e} (or one of the node's own: {})", crate::driver::NODE_BUGS.join(", ")))
}

/// Parses `http://host:port`, `https://host:port` (or `host:port`) into a
/// socket address; the first of a comma-separated list. Whether TLS is on
/// is decided by the certificate flags, which `tls::TlsArgs::check` holds
/// against the schemes.
pub fn parse_url(s: &str) -> Result<SocketAddr, String> {
    let first = s.split(',').next().unwrap_or_default().trim();
    let bare = first.strip_prefix("http://").or_else(|| first.strip_prefix("https://")).unwrap_or(first);
    let bare = bare.trim_end_matches('/');
    let bare = bare.replacen("localhost:", "127.0.0.1:", 1);
    bare.parse().map_err(|e| format!("{s}: expected http://IP:PORT or https://IP:PORT ({e})"))
}

/// One member of the cluster as the flags name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: NodeId,
    pub name: String,
    pub peer: SocketAddr,
}

/// A member's id, derived from its name so every server agrees without
/// talking: `sN` is N, anything else a hash (never 0).
pub fn member_id(name: &str) -> NodeId {
    if let Some(n) = name.strip_prefix('s').and_then(|n| n.parse::<u64>().ok()).filter(|n| *n > 0) {
        return n;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 12).max(1_000_000)
}

/// Parses `--initial-cluster`.
pub fn parse_initial_cluster(s: &str) -> Result<BTreeMap<NodeId, Member>, String> {
    let mut members = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, url) = part.split_once('=').ok_or_else(|| format!("--initial-cluster: `{part}` is not name=url"))?;
        let name = name.trim().to_string();
        let peer = parse_url(url).map_err(|e| format!("--initial-cluster: {e}"))?;
        let id = member_id(&name);
        if members.insert(id, Member { id, name: name.clone(), peer }).is_some() {
            return Err(format!("--initial-cluster: member {name} appears twice"));
        }
    }
    if members.is_empty() {
        return Err("--initial-cluster names no member".into());
    }
    Ok(members)
}

impl ServeArgs {
    /// The corruption check's period, if it is on.
    pub fn corrupt_check_period(&self) -> Option<std::time::Duration> {
        (self.corrupt_check_ms > 0).then(|| std::time::Duration::from_millis(self.corrupt_check_ms))
    }

    /// The settings core runs with, shared by every member (they must match).
    pub fn server_config(&self, id: NodeId, voters: BTreeSet<NodeId>) -> ServerConfig {
        let mut raft = RaftConfig::new(id, voters);
        raft.heartbeat_ns = self.heartbeat_interval_ms * NS_PER_MS;
        raft.election_timeout_min_ns = self.election_timeout_ms * NS_PER_MS;
        raft.election_timeout_max_ns = 2 * self.election_timeout_ms * NS_PER_MS;
        let mut bugs = Bugs::default();
        for name in self.bugs.iter().filter(|b| !crate::driver::NODE_BUGS.contains(&b.as_str())) {
            bugs.enable(name).expect("checked by parse_bug");
        }
        let mut config = ServerConfig::new(raft, self.lease_expiry.into()).with_bugs(bugs);
        config.snapshot_every_entries = self.snapshot_count;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_clusters_parse() {
        assert_eq!(parse_url("http://127.0.0.1:2380").unwrap(), "127.0.0.1:2380".parse().unwrap());
        assert_eq!(parse_url("localhost:1,http://x:2").unwrap(), "127.0.0.1:1".parse().unwrap());
        assert_eq!(parse_url("https://127.0.0.1:1").unwrap(), "127.0.0.1:1".parse().unwrap());
        assert!(parse_url("https://host-name:1").unwrap_err().contains("https://IP:PORT"));
        let members = parse_initial_cluster("s1=http://127.0.0.1:1,s2=http://127.0.0.1:2").unwrap();
        assert_eq!(members.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert!(parse_initial_cluster("s1").is_err());
        assert!(parse_initial_cluster("s1=http://127.0.0.1:1,s1=http://127.0.0.1:2").is_err());
        assert!(member_id("alpha") >= 1_000_000);
        assert_eq!(parse_bug("follower-expires-leases").as_deref(), Ok("follower-expires-leases"));
        assert!(parse_bug("follower-expires-lease").unwrap_err().contains("follower-expires-leases"), "the error lists the names");
        assert!(parse_bug("completion-without-token-check").is_err());
        assert_eq!((parse_duration_ms("500ms"), parse_duration_ms("5s"), parse_duration_ms("1m")), (Ok(500), Ok(5000), Ok(60_000)));
        assert!(parse_duration_ms("5").unwrap_err().contains("units"));
        assert!(parse_duration_ms("s").is_err());
    }
}
