//! Peer transport: the frames of `frame.rs` over TCP, one outbound
//! connection per peer (reconnected with backoff) and any number inbound.
//!
//! Raft tolerates lost and repeated messages, so the transport is plain
//! best effort: a frame that cannot be queued or written is dropped. Every
//! connection opens with a `Hello` naming the sender and its client URL,
//! which is how members learn each other's client endpoints (member list,
//! forwarding). Client requests a follower forwards to the leader, and
//! their answers, travel on the same links.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::future::Future;

use leasesim_core::NodeId;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::frame::{read_frame, write_frame, PeerFrame};
use crate::members::parse_url;
use crate::tls::PeerTls;

/// Frames queued per peer before new ones are dropped.
const QUEUE_FRAMES: usize = 8192;

/// What is known of a member: from the flags, then from its `Hello`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberInfo {
    pub name: String,
    pub peer_url: String,
    pub client_url: String,
    /// The WebSocket lock API's URL ("" when the member serves none).
    pub lock_url: String,
}

pub type Directory = Arc<Mutex<BTreeMap<NodeId, MemberInfo>>>;

/// The sending side: one queue per peer, drained by a task that owns the
/// connection.
#[derive(Clone)]
pub struct Links {
    me: NodeId,
    hello: PeerFrame,
    queues: Arc<Mutex<BTreeMap<NodeId, mpsc::Sender<PeerFrame>>>>,
    directory: Directory,
    /// Plain TCP unless the --peer-* TLS flags are given.
    tls: PeerTls,
    /// Where to dial a peer instead of its peer URL
    /// (`--unsafe-test-peer-route`: a test's fault proxy on that link).
    routes: Arc<BTreeMap<NodeId, SocketAddr>>,
}

impl Links {
    pub fn new(me: NodeId, hello: PeerFrame, directory: Directory) -> Self {
        Links { me, hello, queues: Arc::default(), directory, tls: PeerTls::default(), routes: Arc::default() }
    }

    /// Dials the peers in `routes` at the address given there.
    pub fn with_routes(mut self, routes: BTreeMap<NodeId, SocketAddr>) -> Self {
        self.routes = Arc::new(routes);
        self
    }

    /// Dials peers with TLS (the --peer-* flags).
    pub fn with_tls(mut self, tls: PeerTls) -> Self {
        self.tls = tls;
        self
    }

    /// Queues `frame` for `to` (dropped if the queue is full or `to` unknown).
    pub fn send(&self, to: NodeId, frame: PeerFrame) {
        if to == self.me {
            return;
        }
        let mut queues = self.queues.lock().expect("links lock");
        let queue = match queues.get(&to) {
            Some(q) if !q.is_closed() => q.clone(),
            _ => {
                let Some(addr) = self.peer_addr(to) else {
                    return;
                };
                let (tx, rx) = mpsc::channel(QUEUE_FRAMES);
                tokio::spawn(run_link(addr, self.hello.clone(), rx, self.tls.clone()));
                queues.insert(to, tx.clone());
                tx
            }
        };
        drop(queues);
        let _ = queue.try_send(frame);
    }

    /// How many frames wait in the queue to `to` (0 once its writer took
    /// them all, or when there is no link).
    pub fn queued(&self, to: NodeId) -> usize {
        self.queues.lock().expect("links lock").get(&to).filter(|q| !q.is_closed()).map_or(0, |q| q.max_capacity() - q.capacity())
    }

    /// Opens the link to `to` if there is none (it says hello on connect),
    /// so a member that just joined learns this one's client URL.
    pub fn ensure(&self, to: NodeId) {
        let known = self.queues.lock().expect("links lock").get(&to).is_some_and(|q| !q.is_closed());
        if !known {
            self.send(to, self.hello.clone());
        }
    }

    fn peer_addr(&self, id: NodeId) -> Option<SocketAddr> {
        if let Some(route) = self.routes.get(&id) {
            return Some(*route);
        }
        let dir = self.directory.lock().expect("directory lock");
        dir.get(&id).and_then(|m| parse_url(&m.peer_url).ok())
    }
}

/// Owns the connection to one peer: connects (retrying), says hello, then
/// writes queued frames, flushing whenever the queue runs dry.
async fn run_link(addr: SocketAddr, hello: PeerFrame, mut rx: mpsc::Receiver<PeerFrame>, tls: PeerTls) {
    let mut backoff = Duration::from_millis(20);
    loop {
        let stream = match tls.dial(addr).await {
            Ok(s) => s,
            Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
                // Frames queued meanwhile are stale: drop them.
                while rx.try_recv().is_ok() {}
                if rx.is_closed() {
                    return;
                }
                continue;
            }
        };
        backoff = Duration::from_millis(20);
        let mut w = BufWriter::new(stream);
        if write_frame(&mut w, &hello).await.is_err() || w.flush().await.is_err() {
            continue;
        }
        loop {
            let Some(frame) = rx.recv().await else { return };
            if write_frame(&mut w, &frame).await.is_err() {
                break;
            }
            let mut failed = false;
            while let Ok(frame) = rx.try_recv() {
                if write_frame(&mut w, &frame).await.is_err() {
                    failed = true;
                    break;
                }
            }
            if failed || w.flush().await.is_err() {
                break;
            }
        }
    }
}

/// Who answers a connection that opens with a request instead of a hello
/// (the join desk, `join::JoinDesk`). A trait, so that the transport,
/// which the driver uses, does not depend on what answers joins, which
/// uses the driver.
pub trait Requests: Clone + Send + Sync + 'static {
    /// The answer to one request frame (`None`: nothing to answer).
    fn answer(&self, request: PeerFrame) -> impl Future<Output = Option<PeerFrame>> + Send;
}

/// Accepts peer connections and hands every frame, with its sender, to
/// `deliver` (the opening hello included). A connection that opens with a
/// join request instead is answered by `desk` on the same connection.
pub async fn serve_peers(
    listener: TcpListener,
    directory: Directory,
    deliver: mpsc::UnboundedSender<(NodeId, PeerFrame)>,
    desk: impl Requests,
    tls: PeerTls,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let directory = directory.clone();
        let deliver = deliver.clone();
        let desk = desk.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            // A peer whose certificate does not verify is dropped here.
            let stream = match tls.accept(stream).await {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::warn!("refused a peer connection: {e}");
                    return;
                }
            };
            let (read_half, mut write_half) = tokio::io::split(stream);
            let mut r = tokio::io::BufReader::new(read_half);
            let hello = match read_frame(&mut r).await {
                Ok(Some(hello @ PeerFrame::Hello { .. })) => hello,
                Ok(Some(request)) => {
                    if let Some(answer) = desk.answer(request).await {
                        if write_frame(&mut write_half, &answer).await.is_ok() {
                            let _ = write_half.flush().await;
                        }
                    }
                    return;
                }
                _ => return,
            };
            let PeerFrame::Hello { from, name, peer_url, client_url, lock_url } = hello.clone() else {
                return;
            };
            let info = MemberInfo { name, peer_url, client_url, lock_url };
            directory.lock().expect("directory lock").insert(from, info);
            // The hello goes on too: the receiver opens its own link back.
            if deliver.send((from, hello)).is_err() {
                return;
            }
            while let Ok(Some(frame)) = read_frame(&mut r).await {
                if deliver.send((from, frame)).is_err() {
                    return;
                }
            }
        });
    }
}
