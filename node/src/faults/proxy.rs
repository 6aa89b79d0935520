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

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

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
        let task = tokio::spawn(accept_loop(listener, target, framing, fault.subscribe()));
        Ok(LinkProxy { addr, target, framing, fault, task })
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
        if !(0.0..=1.0).contains(&fault.loss) {
            return Err(format!("loss {} is not a probability in [0, 1]", fault.loss));
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
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, framing: Framing, fault: watch::Receiver<LinkFault>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        tokio::spawn(carry(client, target, framing, fault.clone()));
    }
}

/// Closes `fd` with a reset rather than a clean end when it is dropped.
fn reset_on_close(fd: RawFd) {
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
async fn carry(client: TcpStream, target: SocketAddr, framing: Framing, mut fault: watch::Receiver<LinkFault>) {
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
    let forward = pump(client_read, upstream_write, framing, fault.clone());
    let backward = pump(upstream_read, client_write, Framing::Opaque, fault.clone());
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
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, framing: Framing, fault: watch::Receiver<LinkFault>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut release = Instant::now();
        let mut first = true;
        while let Some(unit) = read_unit(&mut from, framing).await {
            let now = *fault.borrow();
            let droppable = framing == Framing::PeerFrames && !first && unit.len() <= MAX_FRAME_BYTES + 4;
            first = false;
            if droppable && now.loss > 0.0 && rand::random::<f64>() < now.loss {
                continue;
            }
            let jitter_ms = if now.jitter_ms > 0 { rand::random::<u64>() % (now.jitter_ms + 1) } else { 0 };
            release = release.max(Instant::now() + Duration::from_millis(now.delay_ms + jitter_ms));
            if tx.send((release, unit)).is_err() {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((release, unit)) = rx.recv().await {
            tokio::time::sleep_until(release).await;
            if to.write_all(&unit).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
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
