//! One directed link's fault: a userspace TCP proxy that a runner puts
//! between a dialer and the address it dials (a member's link to a peer,
//! or a client's connection to a member), and that can cut, delay or lose
//! what passes.
//!
//! - *Cut* (a partition): every open connection is reset (SO_LINGER 0,
//!   then closed, so both ends see a reset rather than a clean end) and new
//!   ones are accepted and reset at once, until the cut is lifted.
//! - *Delay*: every unit (a peer frame, or a chunk of an opaque stream) is
//!   held `delay_ms` plus a uniform draw in `[0, jitter_ms]`, never
//!   overtaking the one before (TCP keeps order, so must the proxy).
//! - *Duplicate* (`[network] duplicate`): a Raft frame is written twice,
//!   the copy with its own delay draw. Only Raft frames: a forwarded
//!   client request or its answer written twice would be a client's
//!   message delivered twice, which TCP never does to a real client.
//! - *Aimed* faults (`aimed.rs`): frames of one Raft kind delayed,
//!   reordered, dropped or duplicated. A delayed or reordered frame is held
//!   apart and the frames behind it pass (the receiver reads whole frames,
//!   so the proxy may reorder them as the simulator's network does).
//! - *Loss*: only where the framing lets whole messages be dropped. Peer
//!   links carry length-prefixed frames (`frame.rs`), each one Raft
//!   message or forwarded request, and Raft tolerates lost messages; so a
//!   lost unit is a whole frame, never the connection's opening hello
//!   (without it the receiver closes the connection, which would be a cut,
//!   not a loss). Client links carry HTTP/2 (gRPC) or WebSocket streams, in
//!   which dropping bytes corrupts the stream rather than losing one
//!   request: loss is refused there (cut and delay remain). Peer TLS also
//!   hides the framing: do not ask for loss on a TLS peer link.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::aimed::{aim, classify, AimedFault};

/// How the bytes of a link are cut into units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// leasesim-node's peer frames: a u32 little-endian length, then the body.
    PeerFrames,
    /// Anything else (gRPC, WebSocket, HTTP): chunks as they are read.
    Opaque,
}

/// What a link does to its traffic now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFault {
    #[serde(default)]
    pub cut: bool,
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub jitter_ms: u64,
    /// The chance each frame is dropped, in [0, 1].
    #[serde(default)]
    pub loss: f64,
    /// The chance each Raft frame is written twice, in [0, 1].
    #[serde(default)]
    pub duplicate: f64,
}

/// What a pump reads for each unit: the link's fault and the aimed faults.
#[derive(Clone)]
struct Faults {
    link: watch::Receiver<LinkFault>,
    aimed: watch::Receiver<Vec<AimedFault>>,
}

/// A frame larger than this is carried but never dropped (it would be a
/// snapshot, which transport.rs caps at 512 MiB too).
const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;
const CHUNK_BYTES: usize = 64 * 1024;

/// One directed link's proxy: listens on `addr()`, forwards to `target`.
pub struct LinkProxy {
    addr: SocketAddr,
    target: SocketAddr,
    framing: Framing,
    fault: watch::Sender<LinkFault>,
    aimed: watch::Sender<Vec<AimedFault>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.task.abort();
        // Open connections see the sender go and close.
        self.fault.send_replace(LinkFault { cut: true, ..LinkFault::default() });
    }
}

impl LinkProxy {
    /// Listens on `listen` (port 0: an ephemeral one) in front of `target`.
    pub async fn start(listen: SocketAddr, target: SocketAddr, framing: Framing) -> std::io::Result<LinkProxy> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (fault, _) = watch::channel(LinkFault::default());
        let (aimed, _) = watch::channel(Vec::new());
        let faults = Faults { link: fault.subscribe(), aimed: aimed.subscribe() };
        let task = tokio::spawn(accept_loop(listener, target, framing, faults));
        Ok(LinkProxy { addr, target, framing, fault, aimed, task })
    }

    /// Where dialers must connect instead of `target`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn target(&self) -> SocketAddr {
        self.target
    }

    pub fn fault(&self) -> LinkFault {
        *self.fault.borrow()
    }

    /// Sets the link's fault from now on (a cut resets open connections).
    pub fn set(&self, fault: LinkFault) -> Result<(), String> {
        for (what, p) in [("loss", fault.loss), ("duplicate", fault.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{what} {p} is not a probability in [0, 1]"));
            }
        }
        if fault.duplicate > 0.0 && self.framing == Framing::Opaque {
            return Err(format!(
                "duplicate on the link to {}: it carries a byte stream (gRPC, WebSocket) that TCP delivers once",
                self.target
            ));
        }
        if fault.loss > 0.0 && self.framing == Framing::Opaque {
            return Err(format!(
                "loss on the link to {}: it carries a byte stream (gRPC, WebSocket) in which no message can be dropped whole; cut or delay it instead",
                self.target
            ));
        }
        self.fault.send_replace(fault);
        Ok(())
    }

    /// Sets the faults aimed at kinds of Raft frame from now on (replacing
    /// the ones before; empty: none).
    pub fn aim(&self, faults: Vec<AimedFault>) -> Result<(), String> {
        if self.framing == Framing::Opaque && !faults.is_empty() {
            return Err(format!("faults aimed at Raft messages on the link to {}: it carries no peer frames", self.target));
        }
        if let Some(bad) = faults.iter().find_map(|f| match f.effect {
            super::aimed::FrameEffect::Drop(p) if !(0.0..=1.0).contains(&p) => Some(p),
            _ => None,
        }) {
            return Err(format!("drop {bad} is not a probability in [0, 1]"));
        }
        self.aimed.send_replace(faults);
        Ok(())
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, framing: Framing, faults: Faults) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        tokio::spawn(carry(client, target, framing, faults.clone()));
    }
}

/// Closes `fd` with a reset rather than a clean end when it is dropped
/// (also the real runner's client routes, `real/src/routes.rs`).
pub fn reset_on_close(fd: RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `fd` is an open socket owned by a stream that is still alive;
    // the option is a plain struct of the size passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Carries one connection both ways until either end closes or the link
/// is cut.
async fn carry(client: TcpStream, target: SocketAddr, framing: Framing, faults: Faults) {
    let mut fault = faults.link.clone();
    if fault.borrow().cut {
        reset_on_close(client.as_raw_fd());
        return;
    }
    let Ok(upstream) = TcpStream::connect(target).await else {
        reset_on_close(client.as_raw_fd());
        return;
    };
    let _ = (client.set_nodelay(true), upstream.set_nodelay(true));
    let fds = [client.as_raw_fd(), upstream.as_raw_fd()];
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let forward = pump(client_read, upstream_write, framing, faults.clone());
    let backward = pump(upstream_read, client_write, Framing::Opaque, faults);
    tokio::select! {
        _ = async { tokio::join!(forward, backward) } => {}
        _ = fault.wait_for(|f| f.cut) => {
            for fd in fds {
                reset_on_close(fd);
            }
        }
    }
}

/// Reads units from `from` and writes each to `to` once its delay is over.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, framing: Framing, faults: Faults) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut plan = Plan { release: Instant::now(), first: true };
        while let Some(unit) = read_unit(&mut from, framing).await {
            for sent in plan.fate(unit, framing, &faults) {
                if tx.send(sent).is_err() {
                    return;
                }
            }
        }
    };
    let writer = async move {
        // Held units by release time, then arrival: an aimed delay lets
        // the units behind it pass.
        let mut held: BinaryHeap<Reverse<(Instant, u64, Vec<u8>)>> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut open = true;
        while open || !held.is_empty() {
            let next = held.peek().map(|Reverse((at, _, _))| *at);
            tokio::select! {
                got = rx.recv(), if open => match got {
                    Some((release, unit)) => {
                        seq += 1;
                        held.push(Reverse((release, seq, unit)));
                    }
                    None => open = false,
                },
                _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                    let Reverse((_, _, unit)) = held.pop().expect("peeked");
                    if to.write_all(&unit).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

/// The order a link keeps: its own delays never let one unit overtake
/// another (TCP keeps order, so must the proxy); only aimed delays do.
struct Plan {
    release: Instant,
    /// The connection's opening unit (a peer link's hello) is never lost.
    first: bool,
}

impl Plan {
    /// What becomes of one unit: none, one or two (release time, bytes).
    fn fate(&mut self, unit: Vec<u8>, framing: Framing, faults: &Faults) -> Vec<(Instant, Vec<u8>)> {
        let now = *faults.link.borrow();
        let droppable = framing == Framing::PeerFrames && !self.first && unit.len() <= MAX_FRAME_BYTES + 4;
        self.first = false;
        if droppable && now.loss > 0.0 && rand::random::<f64>() < now.loss {
            return Vec::new();
        }
        let kind = if framing == Framing::PeerFrames { classify(&unit[4..]) } else { None };
        let aimed = match kind {
            Some(kind) => aim(&faults.aimed.borrow(), kind, |n| rand::random::<u64>() % (n + 1), |p| rand::random::<f64>() < p),
            None => super::aimed::Aim::default(),
        };
        if aimed.dropped {
            return Vec::new();
        }
        let mut out = Vec::new();
        if kind.is_some() && now.duplicate > 0.0 && rand::random::<f64>() < now.duplicate {
            out.push((self.next(now, 0), unit.clone()));
        }
        let release = self.next(now, aimed.extra_ms);
        if let Some(again_ms) = aimed.again_ms {
            out.push((release + Duration::from_millis(again_ms), unit.clone()));
        }
        out.push((release, unit));
        out
    }

    /// The release time of the next unit: the link's delay and jitter in
    /// order after the one before, then `extra_ms` apart from that order.
    fn next(&mut self, now: LinkFault, extra_ms: u64) -> Instant {
        let jitter_ms = if now.jitter_ms > 0 { rand::random::<u64>() % (now.jitter_ms + 1) } else { 0 };
        self.release = self.release.max(Instant::now() + Duration::from_millis(now.delay_ms + jitter_ms));
        self.release + Duration::from_millis(extra_ms)
    }
}

/// The next unit: a whole frame (its length prefix included) or a chunk;
/// `None` at the end of the stream or on an error.
async fn read_unit(from: &mut OwnedReadHalf, framing: Framing) -> Option<Vec<u8>> {
    match framing {
        Framing::Opaque => {
            let mut buf = vec![0u8; CHUNK_BYTES];
            let n = from.read(&mut buf).await.ok().filter(|n| *n > 0)?;
            buf.truncate(n);
            Some(buf)
        }
        Framing::PeerFrames => {
            let mut len = [0u8; 4];
            from.read_exact(&mut len).await.ok()?;
            let body_len = u32::from_le_bytes(len) as usize;
            // A length past the cap is passed on for the receiver to refuse.
            let mut unit = Vec::with_capacity(4 + body_len.min(CHUNK_BYTES));
            unit.extend_from_slice(&len);
            let mut body = (&mut *from).take(body_len as u64);
            body.read_to_end(&mut unit).await.ok()?;
            (unit.len() == 4 + body_len).then_some(unit)
        }
    }
}
