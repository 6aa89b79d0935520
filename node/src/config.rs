//! The server's command-line settings, named after etcd's flags so etcd
//! users feel at home, and their translation into core's `ServerConfig`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::members::parse_url;
use clap::{Args, ValueEnum};
use leasesim_core::bugs::Bugs;
use leasesim_core::duration::parse_duration as parse_duration_ns;
use leasesim_core::raft::RaftConfig;
use leasesim_core::server::ServerConfig;
use leasesim_core::{ExpiryStrategy, NodeId, NS_PER_MS};

/// Core's defaults for the replication knobs (`RaftConfig::new`), which
/// the simulator's scenarios also default to.
pub const DEFAULT_MAX_APPEND_ENTRIES: u64 = 64;
pub const DEFAULT_MAX_IN_FLIGHT_APPENDS: u64 = 4;
/// The drift bound a scenario assumes when it names none (scenario's
/// `[cluster] drift_bound` default).
pub const DEFAULT_DRIFT_BOUND: f64 = 0.001;

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
    /// Start as a spare server (a scenario's `spares`): named in
    /// --initial-cluster, its id from --name as the initial members' are,
    /// but outside the genesis configuration, so it stays passive until a
    /// leader adds it through the log (a JoinCluster call naming its id, as
    /// `leasesim-real` makes for a scenario's `add`). A restart from the
    /// same --data-dir starts it as it was.
    #[arg(long, conflicts_with_all = ["join", "initial_cluster_state"])]
    pub spare: bool,
    /// Heartbeat interval in milliseconds.
    #[arg(long = "heartbeat-interval", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub heartbeat_interval_ms: u64,
    /// Election timeout in milliseconds (randomized in [t, 2t)).
    #[arg(long = "election-timeout", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub election_timeout_ms: u64,
    #[arg(long, value_enum, default_value = "leader-monotonic")]
    pub lease_expiry: LeaseExpiry,
    /// At most this many entries in one AppendEntries message (core's
    /// batch size; a scenario's `max_append_entries`).
    #[arg(long, default_value_t = DEFAULT_MAX_APPEND_ENTRIES, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_append_entries: u64,
    /// At most this many AppendEntries batches sent to one follower and not
    /// yet acknowledged (core's pipelining depth; a scenario's
    /// `max_in_flight_appends`).
    #[arg(long, default_value_t = DEFAULT_MAX_IN_FLIGHT_APPENDS, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    pub max_in_flight_appends: u64,
    /// With --lease-expiry leader-monotonic: confirm leadership by a
    /// read-index round before answering a keep-alive (`false`: answer at
    /// once from the leader's own deadlines, as etcd's lessor, but only
    /// while the leader's lease holds, under --drift-bound; a scenario's
    /// `keepalive_read_index`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub keepalive_read_index: bool,
    /// Leader leases for reads (Raft thesis §6.4.1; a scenario's
    /// `lease_reads`): the leader answers a linearizable read (and what
    /// else core confirms by the read index: lease lookups, and keep-alives
    /// under --keepalive-read-index) at once while its lease holds, instead
    /// of a heartbeat round after the read. Safe only while every member's
    /// clock rate stays within --drift-bound of true time. Serializable
    /// reads never use it: they are served from the member's own state.
    #[arg(long)]
    pub lease_reads: bool,
    /// With --lease-reads or --keepalive-read-index false: the bound on
    /// every clock's rate error the leader's lease assumes, a fraction in
    /// [0, 1) (a scenario's `drift_bound`; default 0.001, the scenario's
    /// default): the lease lasts election-timeout · (1 − b) / (1 + b) on
    /// the leader's clock.
    #[arg(long, value_parser = parse_drift_bound, value_name = "FRACTION")]
    pub drift_bound: Option<f64>,
    /// Compact the log after this many applied entries (the last one
    /// given wins, so a test can override a harness's value). Each
    /// snapshot copies and writes the whole state on the thread that
    /// applies entries, stalling writes meanwhile, so the default is
    /// etcd's (1000 here cost a member holding tens of thousands of keys
    /// most of its time; 10000 still stalled writes for seconds).
    #[arg(long, default_value_t = 100_000, overrides_with = "snapshot_count")]
    pub snapshot_count: u64,
    /// How often members compare state hashes (etcd's flag; 0s: never), e.g.
    /// 5s, 500ms, 1m.
    #[arg(long = "experimental-corrupt-check-time", value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub corrupt_check_time: Duration,
    /// How often a watch that asked for progress notifications gets one
    /// when it had no events (etcd's flag), e.g. 10m, 2s.
    #[arg(long = "experimental-watch-progress-notify-interval", value_name = "DURATION", default_value = "10m", value_parser = parse_positive_duration)]
    pub watch_progress_notify: Duration,
    /// Plant a bug in the engine (repeatable): the simulator's switches
    /// (e.g. follower-expires-leases), so that a real cluster can show the
    /// checkers of `leasesim-node load` catching it. For tests only.
    #[arg(long = "bug", value_name = "NAME", value_parser = parse_bug)]
    pub bugs: Vec<String>,
    // etcd's auto-compaction of the KV history (see auto_compact.rs).
    #[command(flatten)]
    pub auto_compaction: crate::auto_compact::AutoCompactionArgs,
    // Disk quota and faults (see nospace.rs, storage).
    #[command(flatten)]
    pub disk: crate::nospace::DiskArgs,
    // TLS (see tls.rs).
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
    // Fault injection for tests (see faults/).
    #[command(flatten)]
    pub test: crate::faults::TestArgs,
}

/// A duration flag as etcd takes one (a Go duration: `500ms`, `5s`, `1m`,
/// `1.5s`, or a bare `0`), read by the workspace's one duration parser
/// (`leasesim_core::duration`). etcd's flags that take plain milliseconds
/// (`--heartbeat-interval`, `--election-timeout`) stay integers, as on
/// etcd. Go also takes sums such as `1m30s`; this parser does not (the
/// error says what it takes).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    // Go's time.ParseDuration takes "0" without a unit, and so does etcd.
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{s}` has no unit: write {s}s, {s}ms or {s}m"));
    }
    parse_duration_ns(s).map(Duration::from_nanos).map_err(|e| format!("`{s}`: {e}"))
}

/// A duration that must not be zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        Duration::ZERO => Err(format!("`{s}`: must be longer than 0")),
        d => Ok(d),
    }
}

/// `--drift-bound`: a fraction in [0, 1), as a scenario's `drift_bound`.
pub fn parse_drift_bound(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(b) if (0.0..1.0).contains(&b) => Ok(b),
        _ => Err(format!("`{s}`: a clock's rate error bound is a fraction in [0, 1), e.g. 0.001")),
    }
}

/// A planted bug's name, checked against core's list.
pub fn parse_bug(name: &str) -> Result<String, String> {
    if crate::driver::NODE_BUGS.contains(&name) {
        return Ok(name.to_string());
    }
    if name == "completion-without-token-check" {
        return Err(format!(
            "{name} lives in the data store (`leasesim-node store --unchecked-completions`), not in the engine this node runs"
        ));
    }
    Bugs::default()
        .enable(name)
        .map(|()| name.to_string())
        .map_err(|e| format!("{e} (or one of the node's own: {})", crate::driver::NODE_BUGS.join(", ")))
}

impl ServeArgs {
    /// The corruption check's period, if it is on.
    pub fn corrupt_check_period(&self) -> Option<Duration> {
        (!self.corrupt_check_time.is_zero()).then_some(self.corrupt_check_time)
    }

    /// Whether keep-alives are answered from the leader's own deadlines,
    /// under its lease (core's `keepalive_lease_drift_ppm`).
    fn keepalive_lease(&self) -> bool {
        !self.keepalive_read_index && ExpiryStrategy::from(self.lease_expiry) == ExpiryStrategy::LeaderMonotonic
    }

    /// What clap cannot say of the flags together: a drift bound that no
    /// lease uses would silently do nothing.
    pub fn check(&self) -> Result<(), String> {
        if self.drift_bound.is_some() && !self.lease_reads && !self.keepalive_lease() {
            return Err("--drift-bound is used only with --lease-reads, or with --keepalive-read-index false under \
                        --lease-expiry leader-monotonic"
                .into());
        }
        Ok(())
    }

    /// The settings core runs with, shared by every member (they must match).
    pub fn server_config(&self, id: NodeId, voters: BTreeSet<NodeId>) -> ServerConfig {
        let mut raft = RaftConfig::new(id, voters);
        raft.heartbeat_ns = self.heartbeat_interval_ms * NS_PER_MS;
        raft.election_timeout_min_ns = self.election_timeout_ms * NS_PER_MS;
        raft.election_timeout_max_ns = 2 * self.election_timeout_ms * NS_PER_MS;
        raft.max_entries_per_append = self.max_append_entries as usize;
        raft.max_in_flight_appends = self.max_in_flight_appends as usize;
        // In parts per million, rounded up, exactly as the simulator turns
        // a scenario's `drift_bound` into core's knob (sim/src/run/setup.rs).
        let drift_ppm = (self.drift_bound.unwrap_or(DEFAULT_DRIFT_BOUND) * 1e6).ceil() as u64;
        raft.lease_read_drift_ppm = self.lease_reads.then_some(drift_ppm);
        raft.keepalive_lease_drift_ppm = self.keepalive_lease().then_some(drift_ppm);
        let mut bugs = Bugs::default();
        for name in self.bugs.iter().filter(|b| !crate::driver::NODE_BUGS.contains(&b.as_str())) {
            bugs.enable(name).expect("checked by parse_bug");
        }
        let mut config = ServerConfig::new(raft, self.lease_expiry.into()).with_bugs(bugs);
        config.snapshot_every_entries = self.snapshot_count;
        config.keepalive_read_index = self.keepalive_read_index;
        // The whole-state digest and invariant walks every few entries cost
        // time in the number of keys and history records; a member holding
        // tens of thousands of them (etcdctl check perf) spent most of its
        // time there. Stretch them as the state grows (core keeps the
        // digest a function of index and state, so members still agree).
        config.scale_walks_with_state = true;
        // The invariants walk every key: after every entry (core's default)
        // it cost a tenth of a loaded member's time. Every 32 entries, and
        // stretched as the state grows, like the digest.
        config.invariants_every = 32;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bugs_parse_against_both_lists() {
        assert_eq!(parse_bug("follower-expires-leases").as_deref(), Ok("follower-expires-leases"));
        assert_eq!(parse_bug("ack-before-fsync").as_deref(), Ok("ack-before-fsync"));
        assert!(parse_bug("follower-expires-lease").unwrap_err().contains("follower-expires-leases"), "the error lists the names");
        assert!(parse_bug("completion-without-token-check").is_err());
    }

    #[test]
    fn durations_parse_as_etcd_takes_them() {
        let ms = Duration::from_millis;
        assert_eq!((parse_duration("500ms"), parse_duration("5s"), parse_duration("1m")), (Ok(ms(500)), Ok(ms(5000)), Ok(ms(60_000))));
        assert_eq!((parse_duration("0s"), parse_duration("0"), parse_duration("1.5s")), (Ok(ms(0)), Ok(ms(0)), Ok(ms(1500))));
        assert_eq!(parse_duration("5").unwrap_err(), "`5` has no unit: write 5s, 5ms or 5m");
        for bad in ["s", "", "5 s", "1m30s", "-1s"] {
            let error = parse_duration(bad).unwrap_err();
            assert!(error.starts_with(&format!("`{bad}`: ")), "{bad:?}: {error}");
        }
        assert!(parse_duration("1m30s").unwrap_err().contains("e.g. 500ms, 5s or 1m"));
    }
}

#[cfg(test)]
mod knob_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let serve = Flags::try_parse_from(std::iter::once("leasesim-node").chain(args.iter().copied()))?.serve;
        serve.check().map_err(|e| clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, e))?;
        Ok(serve)
    }

    #[test]
    fn replication_knobs_reach_cores_config_and_default_to_cores() {
        let config = parse(&[]).unwrap().server_config(1, BTreeSet::from([1]));
        let core = RaftConfig::new(1, BTreeSet::from([1]));
        assert_eq!(config.raft.max_entries_per_append, core.max_entries_per_append);
        assert_eq!(config.raft.max_in_flight_appends, core.max_in_flight_appends);
        assert!(config.keepalive_read_index);
        let args = parse(&["--max-append-entries", "2", "--max-in-flight-appends", "16", "--keepalive-read-index", "false"]).unwrap();
        let config = args.server_config(1, BTreeSet::from([1]));
        assert_eq!((config.raft.max_entries_per_append, config.raft.max_in_flight_appends), (2, 16));
        assert!(!config.keepalive_read_index);
        for bad in [["--max-append-entries", "0"], ["--max-in-flight-appends", "1001"], ["--keepalive-read-index", "maybe"]] {
            assert!(parse(&bad).is_err(), "{bad:?} is refused");
        }
        assert!(parse(&["--spare", "--initial-cluster-state", "existing"]).is_err(), "--spare is its own way in");
    }

    #[test]
    fn lease_reads_reach_cores_knob_in_parts_per_million_as_the_simulator_sets_it() {
        let voters = || BTreeSet::from([1, 2, 3]);
        assert_eq!(parse(&[]).unwrap().server_config(1, voters()).raft.lease_read_drift_ppm, None, "off by default");
        let on = |args: &[&str]| parse(args).unwrap().server_config(1, voters()).raft.lease_read_drift_ppm;
        assert_eq!(on(&["--lease-reads"]), Some(1_000), "the scenario's default bound, 0.001");
        // sim/src/run/setup.rs: (drift_bound · 1e6).ceil().
        assert_eq!(on(&["--lease-reads", "--drift-bound", "0.1"]), Some(100_000));
        assert_eq!(on(&["--lease-reads", "--drift-bound", "0.0000015"]), Some(2), "rounded up: never a shorter assumed bound");
        let refused = parse(&["--drift-bound", "0.1"]).expect_err("a bound without a lease would silently do nothing").to_string();
        assert!(refused.contains("--drift-bound is used only with --lease-reads"), "{refused}");
        let refused = parse(&["--drift-bound", "0.1", "--keepalive-read-index", "false", "--lease-expiry", "writer-clock"]);
        assert!(refused.is_err(), "no leader lease guards keep-alives under writer-clock");
        let keepalives = |args: &[&str]| parse(args).unwrap().server_config(1, voters()).raft.keepalive_lease_drift_ppm;
        assert_eq!(keepalives(&[]), None, "keep-alives wait for a read-index round by default");
        assert_eq!(keepalives(&["--keepalive-read-index", "false"]), Some(1_000), "etcd's lessor, under the default bound");
        assert_eq!(keepalives(&["--keepalive-read-index", "false", "--drift-bound", "0.01"]), Some(10_000));
        assert_eq!(keepalives(&["--keepalive-read-index", "false", "--lease-expiry", "writer-clock"]), None);
        for bad in ["1", "-0.1", "x", "NaN"] {
            let flag = format!("--drift-bound={bad}");
            let error = parse(&["--lease-reads", &flag]).expect_err("refused").to_string();
            assert!(error.contains("fraction in [0, 1)"), "{bad}: {error}");
        }
    }
}
