//! Starting one member: recover the data directory, start the driver on
//! its own thread, the peer transport, and the client APIs.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use leasesim_core::server::Server;
use leasesim_core::NodeId;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::config::{member_id, parse_initial_cluster, ClusterState, Member, ServeArgs, DEFAULT_CLUSTER_TOKEN};
use crate::driver::{Driver, Input, Probe};
use crate::faults::clock::ClockSource;
use crate::front::Front;
use crate::identity::Identity;
use crate::join::{ask_to_join, fetch_peers, JoinDesk, Joined, PeerEntry};
use crate::storage::space::RESERVE_BYTES;
use crate::storage::{Storage, StorageOptions};
use crate::transport::{serve_peers, Links, MemberInfo, PeerFrame};

/// What a running member exposes to the API layers.
#[derive(Clone)]
pub struct NodeHandle {
    pub front: Front,
    pub directory: crate::transport::Directory,
    pub name: String,
    /// etcd's cluster id: a digest of `--initial-cluster`.
    pub cluster_id: u64,
    /// `--quota-backend-bytes` (etcd's default when 0 was given).
    pub quota_backend_bytes: u64,
    /// How this member dials another's client API (None: plain).
    pub client_tls: Option<tonic::transport::ClientTlsConfig>,
    /// The state digest of each recently applied index (HashKV).
    pub digests: crate::digests::Digests,
    /// The corruption check's alarms.
    pub corruption: Arc<crate::corrupt::Corruption>,
}

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
        let mut voters: BTreeSet<_> = members.keys().copied().collect();
        if args.initial_cluster_state == ClusterState::Existing {
            me.id = member_id(&format!("http://{}", me.peer));
        } else {
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

/// Runs a member until the process is stopped.
pub async fn serve(args: ServeArgs) -> Result<(), String> {
    // TLS and disk-fault settings, checked before anything starts.
    let (client_scheme, peer_scheme) = (args.tls.client_scheme(), args.tls.peer_scheme());
    let server_tls = args.tls.client_server()?;
    let client_tls = args.tls.client_dialer()?;
    let peer_tls = args.tls.peer()?;
    if args.join.is_none() {
        args.tls.check_peer_urls(&args.initial_cluster)?;
    }
    if peer_tls.is_on() && args.join.is_some() {
        return Err("--join does not speak peer TLS yet: start TLS members with --initial-cluster".into());
    }
    let storage_options = StorageOptions { lose_unsynced: args.disk.unsafe_test_lose_unsynced, reserve_bytes: RESERVE_BYTES };
    if storage_options.lose_unsynced {
        tracing::warn!("--unsafe-test-lose-unsynced: log writes stay in memory until fsynced (for crash tests only)");
    }
    let (Start { id, members, voters, client_urls, cluster_id, join }, identity) = Start::resolve(&args).await?;
    let config = args.server_config(id, voters);

    let storage =
        Storage::open_with(&args.data_dir, &storage_options).map_err(|e| format!("--data-dir {}: {e}", args.data_dir.display()))?;
    if storage.recovered_torn_bytes > 0 {
        tracing::warn!("cut a torn tail of {} bytes off the write-ahead log", storage.recovered_torn_bytes);
    }
    let clocks = Arc::new(ClockSource::new());
    let control_listener = match args.test.unsafe_test_control_url {
        Some(addr) => Some(crate::faults::control::bind(addr).await?),
        None => None,
    };
    let persisted = storage.persisted();
    let server = Server::new(config, persisted, rand::random(), clocks.now());

    let peer_listener =
        TcpListener::bind(args.listen_peer_urls).await.map_err(|e| format!("--listen-peer-urls {}: {e}", args.listen_peer_urls))?;
    let client_listener =
        TcpListener::bind(args.listen_client_urls).await.map_err(|e| format!("--listen-client-urls {}: {e}", args.listen_client_urls))?;
    let client_addr = client_listener.local_addr().map_err(|e| e.to_string())?;
    let advertised = args.advertise_client_urls.unwrap_or(client_addr);
    let lock_listener = match args.listen_lock_urls {
        Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| format!("--listen-lock-urls {addr}: {e}"))?),
        None => None,
    };
    let lock_url = match &lock_listener {
        Some(l) => format!("http://{}", l.local_addr().map_err(|e| e.to_string())?),
        None => String::new(),
    };

    let directory = Arc::new(Mutex::new(
        members
            .values()
            .map(|m| {
                let client_url = client_urls.get(&m.id).cloned().unwrap_or_default();
                let info = MemberInfo {
                    name: m.name.clone(),
                    peer_url: format!("{peer_scheme}://{}", m.peer),
                    client_url,
                    ..MemberInfo::default()
                };
                (m.id, info)
            })
            .collect::<std::collections::BTreeMap<_, _>>(),
    ));
    {
        let mut dir = directory.lock().expect("directory lock");
        let mine = dir.entry(id).or_default();
        mine.client_url = format!("{client_scheme}://{advertised}");
        mine.lock_url = lock_url.clone();
    }
    let hello = PeerFrame::Hello {
        from: id,
        name: args.name.clone(),
        peer_url: format!("{peer_scheme}://{}", args.listen_peer_urls),
        client_url: format!("{client_scheme}://{advertised}"),
        lock_url,
    };
    let routes = args.test.unsafe_test_peer_routes.iter().map(|(name, addr)| (member_id(name), *addr)).collect();
    let links = Links::new(id, hello.clone(), directory.clone()).with_tls(peer_tls.clone()).with_routes(routes);

    let (input_tx, input_rx) = mpsc::unbounded_channel::<Input>();
    let (probe_tx, probe_rx) = watch::channel(Probe::default());
    let digests = crate::digests::Digests::default();
    let driver = Driver::new(server, storage, links.clone(), clocks.clone(), probe_tx, digests.clone())
        .with_bugs(&args.bugs)
        .with_watch_progress_interval(std::time::Duration::from_millis(args.watch_progress_notify_ms));
    std::thread::Builder::new()
        .name(format!("driver-{}", args.name))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("driver runtime");
            rt.block_on(driver.run(input_rx));
        })
        .map_err(|e| e.to_string())?;

    // Peer frames go straight to the driver; join calls to the desk.
    let front = Front::new(input_tx.clone(), probe_rx);
    let desk = JoinDesk { front: front.clone(), directory: directory.clone(), cluster_id };
    let (peer_tx, mut peer_rx) = mpsc::unbounded_channel();
    tokio::spawn(serve_peers(peer_listener, directory.clone(), peer_tx, desk, peer_tls));
    crate::etcd::alarm::spawn_raiser(front.clone());
    let to_driver = input_tx.clone();
    let hello_back = links.clone();
    tokio::spawn(async move {
        while let Some((from, frame)) = peer_rx.recv().await {
            if matches!(frame, PeerFrame::Hello { .. }) {
                hello_back.ensure(from);
            }
            if to_driver.send(Input::Peer { from, frame }).is_err() {
                return;
            }
        }
    });
    if let Some(identity) = identity {
        tokio::spawn(crate::identity::keep_members_saved(identity, args.data_dir.clone(), directory.clone()));
    }
    // Say hello to every peer now, so member lists fill in before traffic.
    for peer in members.keys().filter(|p| **p != id) {
        links.send(*peer, hello.clone());
    }

    let handle = NodeHandle {
        front,
        directory,
        name: args.name.clone(),
        cluster_id,
        quota_backend_bytes: args.disk.quota_bytes(),
        client_tls,
        digests,
        corruption: Arc::default(),
    };
    if let Some(period) = args.corrupt_check_period() {
        tokio::spawn(crate::corrupt::run(handle.clone(), period));
    }
    tracing::info!(name = %args.name, id, peer = %args.listen_peer_urls, client = %client_addr, "leasesim-node started");
    if let Some(listener) = control_listener {
        tokio::spawn(crate::faults::control::serve(listener, crate::faults::control::Controls { clocks }));
    }
    if let Some(listener) = lock_listener {
        tokio::spawn(crate::ws::serve(handle.clone(), listener));
    }
    let api = crate::etcd::serve(handle, client_listener, server_tls);
    let Some((leader, joined)) = join else {
        return api.await;
    };
    // Serve while the leader adds this member; stop if it will not.
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
