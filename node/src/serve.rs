//! Starting one member: recover the data directory, start the driver on
//! its own thread, the peer transport, and the client APIs.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use leasesim_core::server::Server;
use leasesim_core::NodeId;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::config::{ClusterState, ServeArgs};
use crate::corrupt::CorruptCheck;
use crate::driver::{Driver, Input, MemberStatus};
use crate::faults::clock::ClockSource;
use crate::frame::PeerFrame;
use crate::front::Front;
use crate::identity::Identity;
use crate::join::{ask_to_join, fetch_peers, JoinDesk, Joined};
use crate::members::{member_id, parse_initial_cluster, Member, PeerEntry, DEFAULT_CLUSTER_TOKEN};
use crate::node_handle::NodeHandle;
use crate::storage::space::RESERVE_BYTES;
use crate::storage::{Storage, StorageOptions};
use crate::tls::PeerTls;
use crate::transport::{serve_peers, Directory, Links, MemberInfo};

/// Who this member is and whom it starts with.
struct Start {
    id: NodeId,
    /// Every member known at start, this one included.
    members: BTreeMap<NodeId, Member>,
    /// The genesis configuration Raft starts from.
    voters: BTreeSet<NodeId>,
    /// Client URLs saved in the data directory (until peers say hello).
    client_urls: BTreeMap<NodeId, String>,
    cluster_id: u64,
    /// `--join`: the leader to ask once this member listens, and the peer
    /// list to save when it says yes.
    join: Option<(SocketAddr, Joined)>,
}

impl Start {
    /// Who this member is: from its data directory when that holds an
    /// identity (the flags are then ignored), else from the flags (or a
    /// join), recorded in the directory before anything else is written.
    async fn resolve(args: &ServeArgs) -> Result<(Start, Option<Identity>), String> {
        if let Some(contact) = args.join {
            return Ok((Start::joining(args, contact).await?, None));
        }
        let own_peer_url = format!("http://{}", args.listen_peer_urls);
        if let Some(identity) = Identity::load(&args.data_dir)? {
            identity.check(&args.data_dir, &args.name, &own_peer_url, args.initial_cluster_token.as_deref())?;
            tracing::info!(
                "the data directory holds member {} (id {:x}) of cluster {:x}: --initial-cluster and --initial-cluster-state are ignored",
                identity.name,
                identity.id,
                identity.cluster_id
            );
            let start = Start {
                id: identity.id,
                members: identity.member_map()?,
                voters: identity.voters.clone(),
                client_urls: identity.client_urls.clone(),
                cluster_id: identity.cluster_id,
                join: None,
            };
            return Ok((start, Some(identity)));
        }
        if Storage::holds_log(&args.data_dir) {
            tracing::warn!(
                "the data directory holds a log but no member.json (an older leasesim-node wrote it): taking its identity from the flags"
            );
        }
        let start = Start::from_flags(args)?;
        let identity = Identity {
            name: args.name.clone(),
            id: start.id,
            cluster_id: start.cluster_id,
            cluster_token: args.initial_cluster_token.clone().unwrap_or_else(|| DEFAULT_CLUSTER_TOKEN.to_string()),
            voters: start.voters.clone(),
            members: start
                .members
                .values()
                .map(|m| PeerEntry { id: m.id, name: m.name.clone(), peer_url: format!("http://{}", m.peer) })
                .collect(),
            client_urls: BTreeMap::new(),
        };
        identity.save(&args.data_dir)?;
        Ok((start, Some(identity)))
    }

    fn from_flags(args: &ServeArgs) -> Result<Start, String> {
        let mut members = parse_initial_cluster(&args.initial_cluster)?;
        let named = member_id(&args.name);
        let mut me = members.remove(&named).ok_or_else(|| format!("--name {} is not in --initial-cluster", args.name))?;
        if me.peer != args.listen_peer_urls {
            tracing::warn!("--initial-cluster gives {} the peer URL {}, it listens on {}", args.name, me.peer, args.listen_peer_urls);
        }
        // The genesis configuration: every initial member. A member joining an
        // existing cluster takes the id `member add` gave it (derived from its
        // peer URL) and starts passive (its own id left out of the genesis
        // set); it learns the configuration from the log once a leader adds it.
        // A spare (`--spare`) keeps the id its name gives and starts
        // passive the same way, until a leader adds that id.
        let mut voters: BTreeSet<_> = members.keys().copied().collect();
        if args.initial_cluster_state == ClusterState::Existing {
            me.id = member_id(&format!("http://{}", me.peer));
        } else if !args.spare {
            voters.insert(me.id);
        }
        let id = me.id;
        members.insert(id, me);
        let cluster_id = match &args.initial_cluster_token {
            Some(token) => member_id(&format!("{token}/{}", args.initial_cluster)),
            None => member_id(&args.initial_cluster),
        };
        Ok(Start { id, members, voters, client_urls: BTreeMap::new(), cluster_id, join: None })
    }

    /// `--join`: the voters from the leader (or from the list an earlier
    /// join saved in the data directory), this member passive among them
    /// until the leader adds it.
    async fn joining(args: &ServeArgs, contact: SocketAddr) -> Result<Start, String> {
        let id = member_id(&args.name);
        let (joined, join) = match Joined::load(&args.data_dir)? {
            Some(saved) => (saved, None),
            None => {
                let (leader, joined) = fetch_peers(contact).await.map_err(|e| format!("--join {contact}: {e}"))?;
                (joined.clone(), Some((leader, joined)))
            }
        };
        let mut members = joined.members()?;
        let voters = members.keys().copied().filter(|v| *v != id).collect();
        members.insert(id, Member { id, name: args.name.clone(), peer: args.listen_peer_urls });
        Ok(Start { id, members, voters, client_urls: BTreeMap::new(), cluster_id: joined.cluster_id, join })
    }
}

/// How the data directory is run, from the disk flags (the test-only
/// ones said aloud).
fn storage_options(args: &ServeArgs) -> StorageOptions {
    let options = StorageOptions {
        lose_unsynced: args.disk.unsafe_test_lose_unsynced,
        reserve_bytes: RESERVE_BYTES,
        hold_snapshot_writes: args.disk.unsafe_test_hold_snapshot_writes,
        hold_syncs: args.disk.unsafe_test_hold_syncs,
    };
    if options.lose_unsynced {
        tracing::warn!("--unsafe-test-lose-unsynced: log writes stay in memory until fsynced (for crash tests only)");
    }
    if options.hold_snapshot_writes {
        tracing::warn!("--unsafe-test-hold-snapshot-writes: snapshot writes wait while hold-snapshot-writes is in the data directory");
    }
    if options.hold_syncs {
        tracing::warn!("--unsafe-test-hold-syncs: the log's fsyncs wait while hold-syncs is in the data directory");
    }
    options
}

/// Runs a member until the process is stopped: check the flags, find out
/// who it is, open its data directory, bind its sockets, start its driver,
/// its peer transport and its APIs, and, for `--join`, ask to be added.
pub async fn serve(args: ServeArgs) -> Result<(), String> {
    let tls = Tls::from_flags(&args)?;
    let auto_compaction = args.auto_compaction.retention()?;
    let storage_options = storage_options(&args);
    let (start, identity) = Start::resolve(&args).await?;
    let config = args.server_config(start.id, start.voters.clone());
    let storage = open_storage(&args, &storage_options)?;
    let clocks = Arc::new(ClockSource::new());
    let control_listener = match args.test.unsafe_test_control_url {
        Some(addr) => Some(crate::faults::control::bind(addr).await?),
        None => None,
    };
    let persisted = storage.persisted().map_err(|e| format!("cannot read the snapshot in the data directory: {e}"))?;
    let server = Server::new(config, persisted, rand::random(), clocks.now());
    let sockets = Sockets::bind(&args).await?;
    let own = Announced {
        client_url: format!("{}://{}", tls.client_scheme, sockets.advertised),
        peer_url: format!("{}://{}", tls.peer_scheme, args.listen_peer_urls),
        lock_url: sockets.lock_url.clone(),
    };
    let directory = directory_of(&start, tls.peer_scheme, &own);
    let hello = PeerFrame::Hello {
        from: start.id,
        name: args.name.clone(),
        peer_url: own.peer_url.clone(),
        client_url: own.client_url.clone(),
        lock_url: own.lock_url.clone(),
    };
    let routes = args.test.unsafe_test_peer_routes.iter().map(|(name, addr)| (member_id(name), *addr)).collect();
    let links = Links::new(start.id, hello.clone(), directory.clone()).with_tls(tls.peer.clone()).with_routes(routes);
    let digests = crate::digests::Digests::default();
    let failpoints = Arc::new(crate::faults::failpoint::Failpoints::default());
    let (input_tx, front) = start_driver(&args, server, storage, &links, &clocks, &digests, &failpoints)?;
    let desk = JoinDesk { front: front.clone(), directory: directory.clone(), cluster_id: start.cluster_id };
    let (peer_tx, peer_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_peers(sockets.peer, directory.clone(), peer_tx, desk, tls.peer));
    crate::etcd::alarm::spawn_raiser(front.clone());
    if let Some(retention) = auto_compaction {
        tokio::spawn(crate::auto_compact::run(front.clone(), clocks.clone(), retention));
    }
    tokio::spawn(pass_peer_frames(peer_rx, input_tx, links.clone()));
    if let Some(identity) = identity {
        tokio::spawn(crate::identity::keep_members_saved(identity, args.data_dir.clone(), directory.clone()));
    }
    // Say hello to every peer now, so member lists fill in before traffic.
    for peer in start.members.keys().filter(|p| **p != start.id) {
        links.send(*peer, hello.clone());
    }
    if args.test.unsafe_test_client_ids {
        tracing::warn!("--unsafe-test-client-ids: lock calls may name their client identity (for tests only)");
    }
    let handle = NodeHandle {
        front,
        directory,
        name: args.name.clone(),
        cluster_id: start.cluster_id,
        quota_backend_bytes: args.disk.quota_bytes(),
        client_tls: tls.client_dialer,
        digests,
        corruption: Arc::default(),
        test_client_ids: args.test.unsafe_test_client_ids,
    };
    tracing::info!(name = %args.name, id = start.id, peer = %args.listen_peer_urls, client = %sockets.client_addr, "leasesim-node started");
    let controls = crate::faults::control::Controls { clocks, failpoints };
    let api = start_apis(&args, handle, controls, control_listener, sockets.lock, sockets.client, tls.server);
    match start.join {
        None => api.await,
        Some((leader, joined)) => finish_join(&args, start.id, leader, joined, api).await,
    }
}

/// The TLS settings of the flags, checked before anything starts.
struct Tls {
    client_scheme: &'static str,
    peer_scheme: &'static str,
    /// How this member serves its client API (None: plain).
    server: Option<tonic::transport::ServerTlsConfig>,
    /// How it dials another member's client API (None: plain).
    client_dialer: Option<tonic::transport::ClientTlsConfig>,
    peer: PeerTls,
}

impl Tls {
    fn from_flags(args: &ServeArgs) -> Result<Tls, String> {
        let tls = Tls {
            client_scheme: args.tls.client_scheme(),
            peer_scheme: args.tls.peer_scheme(),
            server: args.tls.client_server()?,
            client_dialer: args.tls.client_dialer()?,
            peer: args.tls.peer()?,
        };
        if args.join.is_none() {
            args.tls.check_peer_urls(&args.initial_cluster)?;
        }
        if tls.peer.is_on() && args.join.is_some() {
            return Err("--join does not speak peer TLS yet: start TLS members with --initial-cluster".into());
        }
        Ok(tls)
    }
}

/// The data directory's log and snapshot, a torn tail cut off.
fn open_storage(args: &ServeArgs, options: &StorageOptions) -> Result<Storage, String> {
    let storage = Storage::open_with(&args.data_dir, options).map_err(|e| format!("--data-dir {}: {e}", args.data_dir.display()))?;
    if storage.recovered_torn_bytes > 0 {
        tracing::warn!("cut a torn tail of {} bytes off the write-ahead log", storage.recovered_torn_bytes);
    }
    Ok(storage)
}

/// The sockets a member listens on, bound before anything is served.
struct Sockets {
    peer: TcpListener,
    client: TcpListener,
    client_addr: SocketAddr,
    /// The client address told to others (`--advertise-client-urls`).
    advertised: SocketAddr,
    lock: Option<TcpListener>,
    /// The WebSocket lock API's URL ("" when there is none).
    lock_url: String,
}

impl Sockets {
    async fn bind(args: &ServeArgs) -> Result<Sockets, String> {
        let peer =
            TcpListener::bind(args.listen_peer_urls).await.map_err(|e| format!("--listen-peer-urls {}: {e}", args.listen_peer_urls))?;
        let client = TcpListener::bind(args.listen_client_urls)
            .await
            .map_err(|e| format!("--listen-client-urls {}: {e}", args.listen_client_urls))?;
        let client_addr = client.local_addr().map_err(|e| e.to_string())?;
        let advertised = args.advertise_client_urls.unwrap_or(client_addr);
        let lock = match args.listen_lock_urls {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| format!("--listen-lock-urls {addr}: {e}"))?),
            None => None,
        };
        let lock_url = match &lock {
            Some(l) => format!("http://{}", l.local_addr().map_err(|e| e.to_string())?),
            None => String::new(),
        };
        Ok(Sockets { peer, client, client_addr, advertised, lock, lock_url })
    }
}

/// The URLs this member tells its peers in its hello.
struct Announced {
    client_url: String,
    peer_url: String,
    lock_url: String,
}

/// The member directory at start: every member known, with the client
/// URLs saved in the data directory, and this member's own URLs.
fn directory_of(start: &Start, peer_scheme: &str, own: &Announced) -> Directory {
    let members = start
        .members
        .values()
        .map(|m| {
            let client_url = start.client_urls.get(&m.id).cloned().unwrap_or_default();
            let info =
                MemberInfo { name: m.name.clone(), peer_url: format!("{peer_scheme}://{}", m.peer), client_url, ..MemberInfo::default() };
            (m.id, info)
        })
        .collect::<BTreeMap<_, _>>();
    let directory = Arc::new(Mutex::new(members));
    {
        let mut dir = directory.lock().expect("directory lock");
        let mine = dir.entry(start.id).or_default();
        mine.client_url = own.client_url.clone();
        mine.lock_url = own.lock_url.clone();
    }
    directory
}

/// Starts the driver on a thread of its own (an fsync blocks it, not the
/// rest of the process): the sender of its inputs, and the front the APIs
/// call it through.
fn start_driver(
    args: &ServeArgs,
    server: Server,
    storage: Storage,
    links: &Links,
    clocks: &Arc<ClockSource>,
    digests: &crate::digests::Digests,
    failpoints: &Arc<crate::faults::failpoint::Failpoints>,
) -> Result<(mpsc::UnboundedSender<Input>, Front), String> {
    let (input_tx, input_rx) = mpsc::unbounded_channel::<Input>();
    let (status_tx, status_rx) = watch::channel(MemberStatus::default());
    let driver = Driver::new(server, storage, links.clone(), clocks.clone(), status_tx, digests.clone()).with_bugs(&args.bugs);
    let driver = driver.with_watch_progress_interval(args.watch_progress_notify);
    let event_log = match &args.test.unsafe_test_event_log {
        Some(path) => {
            tracing::warn!("--unsafe-test-event-log: writing this member's events to {}", path.display());
            Some(crate::faults::event_log::EventLog::open(path)?)
        }
        None => None,
    };
    let driver = driver.with_test_hooks(event_log, failpoints.clone());
    std::thread::Builder::new()
        .name(format!("driver-{}", args.name))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("driver runtime");
            rt.block_on(driver.run(input_rx));
        })
        .map_err(|e| e.to_string())?;
    let front = Front::new(input_tx.clone(), status_rx);
    Ok((input_tx, front))
}

/// Peer frames go straight to the driver (join calls went to the desk); a
/// hello also opens this member's link back to its sender.
async fn pass_peer_frames(
    mut peer_rx: mpsc::UnboundedReceiver<(NodeId, PeerFrame)>,
    to_driver: mpsc::UnboundedSender<Input>,
    hello_back: Links,
) {
    while let Some((from, frame)) = peer_rx.recv().await {
        if matches!(frame, PeerFrame::Hello { .. }) {
            hello_back.ensure(from);
        }
        if to_driver.send(Input::Peer { from, frame }).is_err() {
            return;
        }
    }
}

/// Starts the corruption check, the test control endpoint and the
/// WebSocket lock API when asked for, and returns the etcd API's server,
/// which runs until the process stops.
fn start_apis(
    args: &ServeArgs,
    handle: NodeHandle,
    controls: crate::faults::control::Controls,
    control_listener: Option<TcpListener>,
    lock_listener: Option<TcpListener>,
    client_listener: TcpListener,
    server_tls: Option<tonic::transport::ServerTlsConfig>,
) -> impl std::future::Future<Output = Result<(), String>> {
    if let Some(period) = args.corrupt_check_period() {
        let check = CorruptCheck {
            front: handle.front.clone(),
            directory: handle.directory.clone(),
            digests: handle.digests.clone(),
            corruption: handle.corruption.clone(),
        };
        tokio::spawn(crate::corrupt::run(check, period));
    }
    if let Some(listener) = control_listener {
        tokio::spawn(crate::faults::control::serve(listener, controls));
    }
    if let Some(listener) = lock_listener {
        tokio::spawn(crate::ws::serve(handle.clone(), listener));
    }
    crate::etcd::serve(handle, client_listener, server_tls)
}

/// `--join`: serve while the leader adds this member; stop if it will not.
/// The peer list is saved once the leader said yes, so a restart needs no
/// leader.
async fn finish_join(
    args: &ServeArgs,
    id: NodeId,
    leader: SocketAddr,
    joined: Joined,
    api: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    tokio::pin!(api);
    let peer_url = format!("http://{}", args.listen_peer_urls);
    tokio::select! {
        served = &mut api => served,
        asked = ask_to_join(leader, id, &args.name, &peer_url) => {
            asked.map_err(|e| format!("--join: {e}"))?;
            joined.save(&args.data_dir)?;
            api.await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn start(extra: &[&str]) -> Start {
        let cluster = "s1=http://127.0.0.1:1,s2=http://127.0.0.1:2,s3=http://127.0.0.1:3";
        let args = ["leasesim-node", "--name", "s3", "--listen-peer-urls", "http://127.0.0.1:3", "--initial-cluster", cluster];
        let flags = Flags::try_parse_from(args.iter().chain(extra)).expect("flags parse");
        Start::from_flags(&flags.serve).expect("a start")
    }

    #[test]
    fn a_spare_keeps_its_named_id_outside_the_genesis_configuration() {
        let voter = start(&[]);
        assert_eq!((voter.id, voter.voters.iter().copied().collect::<Vec<_>>()), (3, vec![1, 2, 3]));
        let spare = start(&["--spare"]);
        assert_eq!((spare.id, spare.voters.iter().copied().collect::<Vec<_>>()), (3, vec![1, 2]));
        assert_eq!(spare.members.len(), 3, "it knows the voters and itself");
        // etcd's way in takes the id `member add` derives from the peer URL.
        let existing = start(&["--initial-cluster-state", "existing"]);
        assert_eq!(existing.id, member_id("http://127.0.0.1:3"));
    }
}
