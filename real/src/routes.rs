//! Each client's own route to each member and to the data store, so that a
//! fault can cut one client off from some of them (`isolate = "c5"`, a
//! partition with clients on both sides, a one-way block from a client)
//! while every other client still gets through. The member-to-member
//! links have their proxies already (`leasesim_node::faults::mesh`); the
//! runner's clients dialled the members' own addresses, so no fault could
//! tell two clients apart. Here client c dials member m at a port of its
//! own, a TCP relay in the runner that carries c's connections to m.
//!
//! What a cut does is the simulator's (`sim/src/world/network.rs`): a
//! directed link, and each message's fate decided when it is sent. A
//! message sent while its link is cut is lost, silently: the sender learns
//! nothing and waits out its timeout, and healing the link does not bring
//! it back; what was on its way before the cut still arrives. So the relay
//! never resets a connection for a cut (the peer links' proxies do, and a
//! client would then learn of the cut at once and move on, which no
//! simulated client can): bytes it reads from a side whose direction is cut
//! are dropped, and bytes it had passed on before are already in the
//! receiver's socket. A TCP stream whose bytes were dropped cannot carry a
//! message again (its framing is lost), so that connection stays a black
//! hole both ways, even after the cut heals, until an end closes it: the
//! client's calls on it wait out their timeouts, as a simulated client's
//! lost requests do, and its next connection is clean. One-way cuts come
//! for free: each connection's two directions are read and dropped apart.
//!
//! A member that is down or killed while its link is cut stays silent too
//! (the client could not have heard its reset through a partition); when
//! the link is not cut the client sees the connection reset, as it would
//! dialling the member directly.
//!
//! A client's own crash point, `when = "after-send:request"` on a crash
//! (the simulator's: the first client the selector names that sends a
//! request after the fault's `at` dies right after it), is seen here too:
//! the relay follows the HTTP/2 frames a client sends a member, and when
//! one carrying a request (a DATA frame: a gRPC message) has been passed on
//! whole, that client is cut off from every end at once, as a dead process
//! is, and the runner kills its task (`Reached`, within
//! `crash_points::POLL_NS`) and restarts it after the fault's `for`.
//!
//! A pause at that point (`pause = "random-client"` with the same `when`)
//! is carried out here, by the relay, in the same instant: it closes that
//! client's gate (`gate.rs`) before it reads another byte from it, and
//! stamps the instant; the runner records the pause at that stamp and
//! opens the gate `for` later (`crash_points.rs`). In the simulator the
//! client sleeps at the point (`sim/src/host/mod.rs` `reach`): its request
//! is on its way, the rest of its step's messages leave only after the
//! pause, it takes no message and fires no timer meanwhile, and the
//! replies that came wait in its inbox and are taken once it wakes. Here:
//! the request reaches the member and is answered; every task of the
//! client (its requests, its keep-alives, its lock and watch streams)
//! stops at its next gate, and an answer that arrives waits for the resume
//! before the client acts on it (`Pass::answered`). Where real differs: a
//! task of the client already past its gate when the request left (another
//! of its requests being written, microseconds later) still sends that
//! one, as a process with two threads would, where the simulator's client
//! takes one step at a time; and the relay passes the member's answers on
//! into the client's socket during the pause, where the simulator holds
//! them in the network's inbox. Neither is read before the resume.
//!
//! Why relays in the runner rather than the mesh's proxies or firewall
//! rules: the proxies reset on a cut and carry one fault per link, and
//! firewall rules need root and act on the whole machine, which other
//! runs share. The relays listen on loopback ports picked as the members'
//! are (`procs::free_port`, below the ephemeral range), and exist only in
//! runs whose faults cut a client's links (`needed`), so every other run's
//! clients dial the members as before.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use leasesim_node::faults::event_log::monotonic_ns;
use leasesim_node::faults::proxy::reset_on_close;
use leasesim_scenario::{FaultAction, MessageKind, Point, Scenario, Selector};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::gate::Gate;
use crate::selectors::Who;

/// Where a client's route leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    /// A member, by index (`s1` is 0).
    Member(usize),
    Store,
}

/// One route's state: how many faults cut each of its directions now
/// (overlapping faults each cut and each mend, as the simulator counts
/// them), and its client's.
struct Cuts {
    /// From the client to the end.
    up: AtomicU32,
    /// From the end to the client.
    down: AtomicU32,
    client: u64,
    /// Whether the end is a member (whose traffic is HTTP/2).
    member: bool,
    /// Set when the client reached its crash point: all its routes are
    /// cut both ways until it restarts.
    dead: Arc<AtomicBool>,
    points: Arc<Points>,
    /// Bytes dropped, client to end and end to client (what a cut cost,
    /// and what a test waits on).
    dropped: [std::sync::atomic::AtomicU64; 2],
}

struct Route {
    addr: SocketAddr,
    cuts: Arc<Cuts>,
    task: tokio::task::JoinHandle<()>,
}

/// Every client's routes: client `c`'s to member `i` and to the store.
pub struct Routes {
    routes: BTreeMap<(u64, End), Route>,
    /// Client `c`'s crash flag at `c - 1`.
    dead: Vec<Arc<AtomicBool>>,
    points: Arc<Points>,
}

/// A client crash or pause point armed (`when = "after-send:request"`).
#[derive(Clone, Debug)]
pub struct ClientPoint {
    /// The fault's order in the timeline.
    pub order: usize,
    pub line: usize,
    /// The client it waits for (`None`: any client, `random-client`).
    pub client: Option<u64>,
    pub for_ns: Option<u64>,
    /// A pause (the relay closes the client's gate), else a crash.
    pub pause: bool,
}

/// A client that reached its armed point: the runner must crash it, or
/// record its pause (its gate is closed already).
#[derive(Clone, Debug)]
pub struct Reached {
    pub point: ClientPoint,
    pub client: u64,
    /// When its request had left (CLOCK_MONOTONIC).
    pub at_ns: u64,
}

/// The client points armed, and those reached and not yet carried out.
#[derive(Default)]
struct Points {
    armed: std::sync::Mutex<Vec<ClientPoint>>,
    reached: std::sync::Mutex<Vec<Reached>>,
    /// Client `c`'s gate at `c - 1`, closed by a pause point
    /// (`Routes::pause_with`).
    gates: std::sync::OnceLock<Vec<Gate>>,
}

impl Points {
    /// Client `client` sent a request whole: the first point armed for it
    /// fires, once; a pause closes its gate before this returns. Whether
    /// the client is dead from here on (a crash point fired).
    ///
    /// The armed list stays locked until the point is in `reached` and the
    /// gate closed, so that `Routes::disarm` followed by `take_reached`
    /// sees every point that fired (none is left holding a gate shut).
    fn request_sent(&self, client: u64) -> bool {
        let mut armed = self.armed.lock().expect("points");
        let gate = self.gates.get().and_then(|gates| gates.get(client as usize - 1));
        // A client sleeping at a point sends nothing in the simulator, so
        // reaches no other: a request it had written before its gate shut
        // leaves the points armed for the next.
        if gate.is_some_and(Gate::held_at_point) {
            return false;
        }
        let Some(at) = armed.iter().position(|p| p.client.is_none_or(|c| c == client)) else { return false };
        let point = armed.remove(at);
        let pause = point.pause;
        if pause {
            // `Routes::arm` took no pause without the gates.
            gate.expect("a pause point is armed with the clients' gates").hold_at_point();
        } else if let Some(gate) = gate {
            // Dead from here: none of its tasks passes its gate again (nor
            // reaches its timer point) before the runner kills it.
            gate.hold_crashed();
        }
        self.reached.lock().expect("points").push(Reached { point, client, at_ns: monotonic_ns() });
        !pause
    }
}

impl Drop for Routes {
    fn drop(&mut self) {
        for route in self.routes.values() {
            route.task.abort();
        }
    }
}

/// Whether `s`'s faults cut some link of a client or of the data store
/// (the only links routes carry), or wait for a client's point: then the
/// run needs routes.
pub fn needed(s: &Scenario) -> bool {
    let client_point = Some(Point::AfterSend(MessageKind::Request));
    s.faults.iter().any(|f| f.when == client_point)
        || s.faults.iter().any(|f| match &f.action {
            FaultAction::Partition(groups) => groups.iter().flatten().any(is_clientish),
            // An isolated server is cut off from the clients too.
            FaultAction::Isolate(_) => true,
            FaultAction::Block { from, to } => is_clientish(from) || to.iter().any(is_clientish),
            _ => false,
        })
}

/// A selector that names a client or the store, never a server.
pub fn is_clientish(s: &Selector) -> bool {
    matches!(s, Selector::Client(_) | Selector::RandomClient | Selector::Holder(_) | Selector::Store)
}

impl Routes {
    /// Starts a route from each of `clients` clients (ids 1…) to each of
    /// `members` (their client APIs, `127.0.0.1:PORT`) and to `store`.
    pub async fn start(clients: u64, members: &[String], store: &str) -> Result<Routes, String> {
        let mut routes = BTreeMap::new();
        let dead: Vec<Arc<AtomicBool>> = (0..clients).map(|_| Arc::default()).collect();
        let points = Arc::new(Points::default());
        let ends = members.iter().enumerate().map(|(i, m)| (End::Member(i), m.as_str())).chain([(End::Store, store)]);
        let ends: Vec<(End, SocketAddr)> =
            ends.map(|(end, a)| Ok((end, a.parse().map_err(|e| format!("{a}: {e}"))?))).collect::<Result<_, String>>()?;
        for client in 1..=clients {
            for (end, target) in &ends {
                let cuts = Cuts {
                    up: AtomicU32::new(0),
                    down: AtomicU32::new(0),
                    client,
                    member: *end != End::Store,
                    dead: dead[client as usize - 1].clone(),
                    points: points.clone(),
                    dropped: Default::default(),
                };
                routes.insert((client, *end), Route::start(*target, cuts).await?);
            }
        }
        Ok(Routes { routes, dead, points })
    }

    /// The clients' gates, which a pause point closes (client `c`'s at
    /// `c - 1`); set once, before any pause point is armed.
    pub fn pause_with(&self, gates: Vec<Gate>) -> Result<(), String> {
        self.points.gates.set(gates).map_err(|_| "the clients' gates were given to the routes twice".to_string())
    }

    /// Arms a client crash or pause point.
    pub fn arm(&self, point: ClientPoint) -> Result<(), String> {
        if point.pause && self.points.gates.get().is_none() {
            return Err(format!("line {}: a pause at a client's point, and the routes have no gates to close", point.line));
        }
        self.points.armed.lock().expect("points").push(point);
        Ok(())
    }

    /// Whether some client point waits.
    pub fn armed(&self) -> bool {
        !self.points.armed.lock().expect("points").is_empty()
    }

    /// The points clients reached since the last call.
    pub fn take_reached(&self) -> Vec<Reached> {
        std::mem::take(&mut *self.points.reached.lock().expect("points"))
    }

    /// The points nobody reached, disarmed.
    pub fn disarm(&self) -> Vec<ClientPoint> {
        std::mem::take(&mut *self.points.armed.lock().expect("points"))
    }

    /// Bytes dropped so far on client `client`'s route to `end`: from the
    /// client (`up`), or to it.
    #[cfg(test)]
    pub fn dropped(&self, client: u64, end: End, up: bool) -> u64 {
        self.routes.get(&(client, end)).map_or(0, |r| r.cuts.dropped[usize::from(!up)].load(Ordering::SeqCst))
    }

    /// Client `client` starts afresh after a crash: its routes carry again.
    pub fn revive(&self, client: u64) {
        self.dead[client as usize - 1].store(false, Ordering::SeqCst);
    }

    /// Where client `client` dials each member, in member order.
    pub fn endpoints(&self, client: u64) -> Vec<String> {
        let members = self.routes.range((client, End::Member(0))..(client, End::Store));
        members.map(|(_, route)| route.addr.to_string()).collect()
    }

    /// Where client `client` reaches the data store.
    pub fn store(&self, client: u64) -> String {
        self.routes[&(client, End::Store)].addr.to_string()
    }

    /// One more fault cuts each of `links` (directed; a link with no
    /// client on it, or to a member no client knows, is not a route's).
    pub fn cut(&self, links: &[(Who, Who)]) {
        for cuts in self.directions(links) {
            cuts.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// One fault fewer cuts each of `links`.
    pub fn mend(&self, links: &[(Who, Who)]) {
        for cuts in self.directions(links) {
            // Never below zero: `heal` may have cleared it already.
            let _ = cuts.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        }
    }

    /// No route is cut any more (the settle phase).
    pub fn heal(&self) {
        for route in self.routes.values() {
            route.cuts.up.store(0, Ordering::SeqCst);
            route.cuts.down.store(0, Ordering::SeqCst);
        }
    }

    /// The counters of the directions `links` name.
    fn directions<'a>(&'a self, links: &'a [(Who, Who)]) -> impl Iterator<Item = &'a AtomicU32> + 'a {
        links.iter().filter_map(|(from, to)| {
            let (client, end, up) = match (*from, *to) {
                (Who::Client(c), other) => (c, end_of(other)?, true),
                (other, Who::Client(c)) => (c, end_of(other)?, false),
                _ => return None,
            };
            let cuts = &self.routes.get(&(client, end))?.cuts;
            Some(if up { &cuts.up } else { &cuts.down })
        })
    }
}

fn end_of(who: Who) -> Option<End> {
    match who {
        Who::Server(i) => Some(End::Member(i)),
        Who::Store => Some(End::Store),
        Who::Client(_) => None,
    }
}

impl Route {
    async fn start(target: SocketAddr, cuts: Cuts) -> Result<Route, String> {
        let listener = bind().await?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let cuts = Arc::new(cuts);
        let task = tokio::spawn(accept_loop(listener, target, cuts.clone()));
        Ok(Route { addr, cuts, task })
    }
}

/// A listener on a loopback port below the ephemeral range, picked as the
/// members' ports are (`procs::free_port`), retried if another process
/// took the port in between.
async fn bind() -> Result<TcpListener, String> {
    let mut last = String::new();
    for _ in 0..20 {
        let port = crate::procs::free_port()?;
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => return Ok(listener),
            Err(e) => last = format!("127.0.0.1:{port}: {e}"),
        }
    }
    Err(format!("no port for a client's route: {last}"))
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, cuts: Arc<Cuts>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        tokio::spawn(carry(client, target, cuts.clone()));
    }
}

/// Carries one connection both ways until an end closes it.
async fn carry(client: TcpStream, target: SocketAddr, cuts: Arc<Cuts>) {
    let _ = client.set_nodelay(true);
    let upstream = match TcpStream::connect(target).await {
        Ok(upstream) => upstream,
        Err(_) => return end_unreached(client, &cuts).await,
    };
    let _ = upstream.set_nodelay(true);
    let client_fd = client.as_raw_fd();
    // Set once a byte was dropped either way: the stream is spoiled.
    let spoiled = Arc::new(AtomicBool::new(false));
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let up = pass_on(client_read, upstream_write, Direction { cuts: cuts.clone(), up: true, spoiled: spoiled.clone() });
    let down = pass_on(upstream_read, client_write, Direction { cuts, up: false, spoiled: spoiled.clone() });
    tokio::select! {
        // The client closed (or its task died): the member sees it go.
        _ = up => {}
        // The member closed or died: the client sees a reset, unless that
        // could not reach it, and then it hears nothing until it closes.
        _ = down => {
            if !spoiled.load(Ordering::SeqCst) {
                reset_on_close(client_fd);
            }
        }
    }
}

/// The member could not be dialled (it is down): as a refused dial, a
/// reset, unless the route is cut, which a reset could not cross either.
async fn end_unreached(client: TcpStream, cuts: &Cuts) {
    let cut = cuts.up.load(Ordering::SeqCst) > 0 || cuts.down.load(Ordering::SeqCst) > 0;
    if !cut && !cuts.dead.load(Ordering::SeqCst) {
        reset_on_close(client.as_raw_fd());
        return;
    }
    black_hole(client).await;
}

/// Reads and drops everything until the client closes.
async fn black_hole(mut client: TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    while matches!(client.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// One direction of a connection.
struct Direction {
    cuts: Arc<Cuts>,
    /// Client to end (else end to client).
    up: bool,
    spoiled: Arc<AtomicBool>,
}

impl Direction {
    fn cut(&self) -> bool {
        let n = if self.up { &self.cuts.up } else { &self.cuts.down };
        n.load(Ordering::SeqCst) > 0 || self.cuts.dead.load(Ordering::SeqCst)
    }
}

/// Passes what `from` sends on to `to`, dropping it while the direction
/// is cut and, once anything was dropped either way, for good. Returns
/// when `from` closes; a spoiled connection then keeps `to`'s side open
/// (dropped, the write half would tell that end).
async fn pass_on(mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf, dir: Direction) {
    let mut buf = vec![0u8; 64 * 1024];
    // A client's frames to a member, to see its requests leave.
    let mut frames = (dir.up && dir.cuts.member).then(Frames::new);
    loop {
        let n = match from.read(&mut buf).await {
            Ok(n) if n > 0 => n,
            _ => break,
        };
        if dir.cut() {
            dir.spoiled.store(true, Ordering::SeqCst);
        }
        if dir.spoiled.load(Ordering::SeqCst) {
            dir.cuts.dropped[usize::from(!dir.up)].fetch_add(n as u64, Ordering::SeqCst);
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        if frames.as_mut().is_some_and(|f| f.feed(&buf[..n])) && dir.cuts.points.request_sent(dir.cuts.client) {
            // Dead from here on, on every route of this client.
            dir.cuts.dead.store(true, Ordering::SeqCst);
        }
    }
    if dir.spoiled.load(Ordering::SeqCst) || dir.cut() {
        dir.spoiled.store(true, Ordering::SeqCst);
        // Keep `to` open: its end hears nothing, as through a cut link.
        std::future::pending::<()>().await;
    }
    let _ = to.shutdown().await;
}

/// Follows the HTTP/2 frames a client writes (RFC 9113 §3.4, §4.1: the
/// 24-byte preface, then frames of a 9-byte header, whose first three
/// bytes are the payload's length and fourth its type) to tell when a
/// request has left whole: a DATA frame (type 0) with a payload, which in
/// gRPC carries one message. Headers, settings, pings and window updates
/// are not requests; neither is the empty DATA frame that ends a stream.
struct Frames {
    preface_left: usize,
    header: Vec<u8>,
    body_left: usize,
    data: bool,
}

impl Frames {
    fn new() -> Frames {
        Frames { preface_left: 24, header: Vec::with_capacity(9), body_left: 0, data: false }
    }

    /// Follows `bytes`; whether a request ended in them.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        let mut ended = false;
        while !bytes.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(bytes.len());
                self.preface_left -= n;
                bytes = &bytes[n..];
            } else if self.body_left > 0 {
                let n = self.body_left.min(bytes.len());
                self.body_left -= n;
                bytes = &bytes[n..];
                ended |= self.body_left == 0 && self.data;
            } else {
                let n = (9 - self.header.len()).min(bytes.len());
                self.header.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                if self.header.len() == 9 {
                    let h = std::mem::take(&mut self.header);
                    self.body_left = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    self.data = h[3] == 0 && self.body_left > 0;
                }
            }
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's bytes: its header, then `len` payload bytes.
    fn frame(kind: u8, len: usize) -> Vec<u8> {
        let l = (len as u32).to_be_bytes();
        let mut f = vec![l[1], l[2], l[3], kind, 0, 0, 0, 0, 1];
        f.resize(9 + len, 7);
        f
    }

    #[test]
    fn a_request_ends_with_its_data_frame_however_the_bytes_are_cut() {
        let mut stream = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        assert_eq!(stream.len(), 24);
        stream.extend(frame(4, 6)); // SETTINGS
        stream.extend(frame(1, 40)); // HEADERS
        let data_end = stream.len() + 9 + 17;
        stream.extend(frame(0, 17)); // DATA: the request
        stream.extend(frame(0, 0)); // an empty DATA frame (END_STREAM)
        stream.extend(frame(8, 4)); // WINDOW_UPDATE
        for chunk in [1, 5, 9, 64, stream.len()] {
            let mut frames = Frames::new();
            let mut ends = Vec::new();
            for (i, piece) in stream.chunks(chunk).enumerate() {
                if frames.feed(piece) {
                    ends.push((i + 1) * chunk);
                }
            }
            // Exactly one request, in the chunk that holds its last byte.
            assert_eq!(ends.len(), 1, "chunks of {chunk}: {ends:?}");
            assert!(ends[0] >= data_end && ends[0] < data_end + chunk, "chunks of {chunk}: ended at {ends:?}, data ends at {data_end}");
        }
    }

    /// An end that echoes what it reads and tells `log` each chunk, tagged
    /// with its name.
    async fn echo(name: &'static str, log: tokio::sync::mpsc::UnboundedSender<(&'static str, Vec<u8>)>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n @ 1..) = conn.read(&mut buf).await {
                        log.send((name, buf[..n].to_vec())).unwrap();
                        if conn.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Sends `what` on `conn` and reads its echo whole.
    async fn round_trip(conn: &mut TcpStream, what: &[u8]) {
        conn.write_all(what).await.unwrap();
        let mut back = vec![0u8; what.len()];
        conn.read_exact(&mut back).await.unwrap();
        assert_eq!(back, what);
    }

    /// Waits until `f` holds, looking every millisecond, at most 10 000
    /// times (a budget of looks, not of seconds: the relays take
    /// microseconds to move a few bytes, so a loaded machine only makes
    /// the wait longer, never the test fail).
    async fn until(f: impl Fn() -> bool) {
        for _ in 0..10_000 {
            if f() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("the condition never held");
    }

    /// What each end read so far, in order (chunks joined: TCP may cut
    /// them anywhere).
    fn drain(log: &mut tokio::sync::mpsc::UnboundedReceiver<(&'static str, Vec<u8>)>) -> BTreeMap<&'static str, String> {
        let mut read: BTreeMap<&'static str, String> = BTreeMap::new();
        while let Ok((end, bytes)) = log.try_recv() {
            read.entry(end).or_default().push_str(&String::from_utf8_lossy(&bytes));
        }
        read
    }

    /// c1 cut off from s1 both ways: what c1 sends s1 is lost (and stays
    /// lost on that connection after the heal), while c2 still reaches s1
    /// and c1 still reaches s2; once healed, c1's next connection to s1
    /// carries again. Ordered by conditions, never by time.
    #[tokio::test]
    async fn a_cut_between_c1_and_s1_drops_only_c1s_traffic_to_s1_and_heals() {
        let (tx, mut log) = tokio::sync::mpsc::unbounded_channel();
        let (s1, s2, store) = (echo("s1", tx.clone()).await, echo("s2", tx.clone()).await, echo("store", tx).await);
        let routes = Routes::start(2, &[s1, s2], &store).await.unwrap();
        let dial = |c: u64, i: usize| TcpStream::connect(routes.endpoints(c)[i].clone());
        let mut c1_s1 = dial(1, 0).await.unwrap();
        round_trip(&mut c1_s1, b"before").await;
        let cut = [(Who::Client(1), Who::Server(0)), (Who::Server(0), Who::Client(1))];
        routes.cut(&cut);
        c1_s1.write_all(b"lost").await.unwrap();
        until(|| routes.dropped(1, End::Member(0), true) == 4).await;
        let mut c2_s1 = dial(2, 0).await.unwrap();
        round_trip(&mut c2_s1, b"c2 to s1").await;
        let mut c1_s2 = dial(1, 1).await.unwrap();
        round_trip(&mut c1_s2, b"c1 to s2").await;
        routes.mend(&cut);
        // The spoiled connection stays silent; a new one carries.
        c1_s1.write_all(b"spoiled").await.unwrap();
        until(|| routes.dropped(1, End::Member(0), true) == 11).await;
        let mut again = dial(1, 0).await.unwrap();
        round_trip(&mut again, b"healed").await;
        let read = drain(&mut log);
        assert_eq!(read.get("s1").map(String::as_str), Some("beforec2 to s1healed"), "s1 never read c1's lost bytes");
        assert_eq!(read.get("s2").map(String::as_str), Some("c1 to s2"));
        let mut buf = [0u8; 16];
        assert!(matches!(c1_s1.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "the cut lost c1's bytes");
    }

    /// A one-way cut from s1 to c1: c1's request reaches s1, its answer is
    /// lost, and c1 hears nothing (no reset) while c2's answers come.
    #[tokio::test]
    async fn a_one_way_cut_loses_only_that_direction() {
        let (tx, mut log) = tokio::sync::mpsc::unbounded_channel();
        let (s1, store) = (echo("s1", tx.clone()).await, echo("store", tx).await);
        let routes = Routes::start(2, &[s1], &store).await.unwrap();
        routes.cut(&[(Who::Server(0), Who::Client(1))]);
        let mut c1 = TcpStream::connect(routes.endpoints(1)[0].clone()).await.unwrap();
        c1.write_all(b"asked").await.unwrap();
        until(|| routes.dropped(1, End::Member(0), false) == 5).await;
        let mut c2 = TcpStream::connect(routes.endpoints(2)[0].clone()).await.unwrap();
        round_trip(&mut c2, b"c2").await;
        assert_eq!(drain(&mut log).get("s1").map(String::as_str), Some("askedc2"), "s1 got c1's request");
        let mut buf = [0u8; 16];
        assert!(matches!(c1.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "c1 heard nothing");
    }

    /// A point armed for any client fires for the first that sends a whole
    /// request to a member, once: that client is cut off everywhere (the
    /// store too) until revived, and the other still gets through.
    #[tokio::test]
    async fn a_client_point_cuts_off_the_first_client_whose_request_left() {
        let (tx, _log) = tokio::sync::mpsc::unbounded_channel();
        let (s1, store) = (echo("s1", tx.clone()).await, echo("store", tx).await);
        let routes = Routes::start(2, &[s1], &store).await.unwrap();
        routes.arm(ClientPoint { order: 3, line: 9, client: None, for_ns: None, pause: false }).unwrap();
        let mut c2 = TcpStream::connect(routes.endpoints(2)[0].clone()).await.unwrap();
        let mut request = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        request.extend(frame(1, 3));
        round_trip(&mut c2, &request).await;
        assert!(routes.take_reached().is_empty(), "headers alone are no request");
        // Its echo cannot come back: c2 is dead from the point on.
        c2.write_all(&frame(0, 5)).await.unwrap();
        until(|| !routes.armed()).await;
        let reached = routes.take_reached();
        assert_eq!(reached.iter().map(|r| (r.client, r.point.order)).collect::<Vec<_>>(), vec![(2, 3)]);
        let mut c2_store = TcpStream::connect(routes.store(2)).await.unwrap();
        c2_store.write_all(b"dead").await.unwrap();
        until(|| routes.dropped(2, End::Store, true) == 4).await;
        let mut c1 = TcpStream::connect(routes.endpoints(1)[0].clone()).await.unwrap();
        round_trip(&mut c1, &request).await;
        routes.revive(2);
        let mut c2_again = TcpStream::connect(routes.store(2)).await.unwrap();
        round_trip(&mut c2_again, b"back").await;
    }

    /// Gates for `n` clients, on clocks that read true time.
    fn gates(n: u64) -> (Vec<Gate>, Vec<crate::gate::Pass>) {
        let clock = || std::sync::Arc::new(crate::clients::clock::ClientClock::new(monotonic_ns(), None).unwrap());
        (1..=n).map(|c| crate::gate::gate(c, clock(), Arc::default())).unzip()
    }

    /// A pause point for c2 closes c2's gate the moment its request has
    /// left: its task, which passes its gate before each request, sends no
    /// other and does not read the answer to the one that left until the
    /// gate opens; then it reads it and goes on. Ordered by counts and
    /// states; the looks are a hang guard, and the quiet stretch can only
    /// miss a leak on a slow machine, never fail a correct gate.
    #[tokio::test]
    async fn a_pause_point_stops_every_step_of_the_client_until_its_gate_opens() {
        let (tx, _log) = tokio::sync::mpsc::unbounded_channel();
        let (s1, store) = (echo("s1", tx.clone()).await, echo("store", tx).await);
        let routes = Routes::start(2, &[s1], &store).await.unwrap();
        let point = ClientPoint { order: 4, line: 12, client: Some(2), for_ns: Some(1), pause: true };
        assert!(routes.arm(point.clone()).is_err(), "no pause point without gates to close");
        let (gates, mut passes) = gates(2);
        routes.pause_with(gates.clone()).unwrap();
        routes.arm(point).unwrap();
        let (sent, read) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let (mut pass, endpoint) = (passes.remove(1), routes.endpoints(2)[0].clone());
        let (sent_by, read_by) = (sent.clone(), read.clone());
        let client = tokio::spawn(async move {
            let mut conn = TcpStream::connect(endpoint).await.unwrap();
            let mut opening = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            opening.extend(frame(1, 3));
            round_trip(&mut conn, &opening).await;
            loop {
                pass.pass().await;
                conn.write_all(&frame(0, 5)).await.unwrap();
                sent_by.fetch_add(1, Ordering::SeqCst);
                let mut echo = [0u8; 14];
                pass.answered(conn.read_exact(&mut echo)).await.unwrap();
                read_by.fetch_add(1, Ordering::SeqCst);
            }
        });
        until(|| !routes.armed()).await;
        let before = monotonic_ns();
        let reached = routes.take_reached();
        assert_eq!(reached.iter().map(|r| (r.client, r.point.order, r.point.pause)).collect::<Vec<_>>(), vec![(2, 4, true)]);
        assert!(reached[0].at_ns <= before, "stamped when the request left");
        assert!(gates[1].held_at_point() && !gates[0].held_at_point(), "only c2's gate closed");
        for _ in 0..200 {
            assert_eq!((sent.load(Ordering::SeqCst), read.load(Ordering::SeqCst)), (1, 0), "a paused client neither sends nor reads");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert!(gates[1].release_point(), "the point held it");
        until(|| read.load(Ordering::SeqCst) >= 1 && sent.load(Ordering::SeqCst) >= 3).await;
        assert!(routes.take_reached().is_empty(), "a pause fires once, and leaves the client's routes carrying");
        client.abort();
    }

    /// A client held at a point reaches no other (the simulator's sleeps
    /// there and sends nothing): a request it had already written leaves
    /// the next point armed; once its gate opens, its next request fires it.
    #[test]
    fn a_client_held_at_a_point_reaches_no_other_until_released() {
        let points = Points::default();
        let (gates, _passes) = gates(2);
        assert!(points.gates.set(gates.clone()).is_ok());
        let pause = |order| ClientPoint { order, line: 0, client: None, for_ns: None, pause: true };
        points.armed.lock().unwrap().extend([pause(1), pause(2)]);
        assert!(!points.request_sent(1), "a pause does not kill the client");
        assert!(gates[0].held_at_point());
        assert!(!points.request_sent(1));
        assert_eq!(points.armed.lock().unwrap().len(), 1, "the second waits while c1 is held");
        assert!(!points.request_sent(2) && gates[1].held_at_point(), "another client reaches it");
        assert!(gates[0].release_point() && !gates[0].release_point(), "released once");
        let reached: Vec<(u64, usize)> = points.reached.lock().unwrap().iter().map(|r| (r.client, r.point.order)).collect();
        assert_eq!(reached, vec![(1, 1), (2, 2)]);
        // A crash point still kills.
        points.armed.lock().unwrap().push(ClientPoint { pause: false, ..pause(3) });
        assert!(points.request_sent(1), "a crash point cuts the client off");
    }
}
