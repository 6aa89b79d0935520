//! Client connections that write what several streams have ready in one
//! syscall, as grpc-go's writer (and so etcd) does.
//!
//! Every watch stream and every call on a gRPC connection is a task of its
//! own, and each one's frame wakes the connection's task, which tokio runs
//! next (its LIFO slot): the connection wrote and flushed after every
//! frame. One put seen by 64 watch streams on one connection was 64
//! `writev`s of one 326-byte event each (`strace`: 1503 of 1542 writes in
//! 0.3 s were one event), each also a wake-up of the client's reader. Here
//! a connection gathers its writes and, on a flush, yields: the tasks
//! already woken (the other streams of the batch) queue their frames
//! first, and a later flush writes them all at once.
//!
//! Three details decide how much one write carries (counted in
//! reports/node-conformance.md, "gathered across h2's flushes"):
//! - h2 flushes after every DATA frame it keeps by reference, and with a
//!   vectored writer it keeps every frame of 256 bytes or more (a watch
//!   event is 326): one flush per frame, so a yield on the first flush
//!   and a write on the next carried about two events. Reporting the
//!   connection as not vectored makes h2 copy frames under 1 KiB into its
//!   own 16 KiB buffer and flush once it is full or has nothing more.
//! - A yield goes on while the gathered bytes grew since the last one (the
//!   other streams are still adding frames), up to [`MAX_YIELDS`] times per
//!   write; a lone answer, with nothing added, yields once.
//! - The yield is tokio's `yield_now`: the runtime polls the connection
//!   again once it has run the tasks already ready, without waking a
//!   parked worker for it. A plain self-wake went to the back of the run
//!   queue and woke a parked worker (a futex or eventfd write), which then
//!   often took the connection and flushed before the other streams had
//!   queued their frames.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Gathered bytes written out before more are taken, whatever the flushes
/// say: bounds what a connection holds.
const GATHER_LIMIT: usize = 256 * 1024;
/// Yields before gathered bytes are written even if they keep growing: a
/// bound on what one answer waits for while other tasks keep writing.
/// A fan-out to 64 streams on one connection needs two or three.
const MAX_YIELDS: u32 = 4;

/// A connection whose writes are gathered until a flush (see the module).
pub struct Coalesced<T> {
    inner: T,
    gathered: Vec<u8>,
    /// How much of `gathered` has been written.
    written: usize,
    /// Yields since the last write-out.
    yields: u32,
    /// `gathered.len()` at the last yield: a flush that finds more knows
    /// other tasks are still writing.
    at_yield: usize,
}

impl<T> Coalesced<T> {
    pub fn new(inner: T) -> Self {
        Coalesced { inner, gathered: Vec::new(), written: 0, yields: 0, at_yield: 0 }
    }

    /// The connection beneath (a test checks its socket options).
    #[cfg(test)]
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

impl<T: AsyncWrite + Unpin> Coalesced<T> {
    /// Writes out everything gathered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.gathered.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.gathered[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.gathered.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Whether a flush yields rather than writes: nothing written out yet
    /// (a write begun is finished first), and either no yield yet or the
    /// bytes grew since the last one, within [`MAX_YIELDS`].
    fn yields_now(&self) -> bool {
        let fresh = self.written == 0 && !self.gathered.is_empty();
        fresh && (self.yields == 0 || (self.yields < MAX_YIELDS && self.gathered.len() > self.at_yield))
    }

    /// Room for more: drains first once the limit is reached.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.gathered.len() >= GATHER_LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_room(cx))?;
        this.gathered.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_room(cx))?;
        let mut taken = 0;
        for buf in bufs {
            this.gathered.extend_from_slice(buf);
            taken += buf.len();
        }
        Poll::Ready(Ok(taken))
    }

    /// Not vectored, although writes of several slices are taken whole:
    /// so that h2 copies small frames into its buffer instead of flushing
    /// after each one (see the module).
    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.yields_now() {
            this.yields += 1;
            this.at_yield = this.gathered.len();
            yield_to_ready_tasks(cx);
            return Poll::Pending;
        }
        ready!(this.poll_drain(cx))?;
        this.yields = 0;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Has the task polled again after the tasks already ready have run:
/// tokio's `yield_now`, whose first poll hands the waker to the scheduler
/// (which keeps it after the future is dropped) and is pending. Inside a
/// runtime the scheduler wakes it once the worker has run out of ready
/// tasks, without waking another worker; outside one it wakes at once.
fn yield_to_ready_tasks(cx: &mut Context<'_>) {
    let yielding = std::pin::pin!(tokio::task::yield_now());
    let first = std::future::Future::poll(yielding, cx);
    debug_assert!(first.is_pending(), "yield_now's first poll is pending");
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: tonic::transport::server::Connected> tonic::transport::server::Connected for Coalesced<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// A writer that records each write it is given.
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.get_mut().writes.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn write(conn: &mut Coalesced<Recorder>, cx: &mut Context<'_>, frame: &[u8]) {
        assert!(matches!(Pin::new(conn).poll_write(cx, frame), Poll::Ready(Ok(n)) if n == frame.len()));
    }

    fn wakes_and_writes(wakes: &Wakes, conn: &Coalesced<Recorder>) -> (usize, usize) {
        (wakes.0.load(Ordering::Relaxed), conn.inner.writes.len())
    }

    /// A lone answer: one yield, then one write, however often it flushes.
    #[test]
    fn a_lone_frame_yields_once_then_leaves() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut conn = Coalesced::new(Recorder::default());
        write(&mut conn, &mut cx, b"answer");
        assert!(Pin::new(&mut conn).poll_flush(&mut cx).is_pending());
        assert_eq!(wakes_and_writes(&wakes, &conn), (1, 0));
        assert!(matches!(Pin::new(&mut conn).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(conn.inner.writes, vec![b"answer".to_vec()]);
        // Nothing gathered: a flush neither yields nor writes.
        assert!(matches!(Pin::new(&mut conn).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(wakes_and_writes(&wakes, &conn), (1, 1));
    }

    /// Frames added while the connection yielded (other streams' events)
    /// make it yield again, and all of them leave in one write once a
    /// yield adds nothing.
    #[test]
    fn frames_added_during_a_yield_leave_in_the_same_write() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut conn = Coalesced::new(Recorder::default());
        write(&mut conn, &mut cx, b"one");
        assert!(Pin::new(&mut conn).poll_flush(&mut cx).is_pending());
        write(&mut conn, &mut cx, b"two");
        let more = [io::IoSlice::new(b"thr"), io::IoSlice::new(b"ee")];
        assert!(matches!(Pin::new(&mut conn).poll_write_vectored(&mut cx, &more), Poll::Ready(Ok(5))));
        assert!(Pin::new(&mut conn).poll_flush(&mut cx).is_pending());
        assert_eq!(wakes_and_writes(&wakes, &conn), (2, 0));
        assert!(matches!(Pin::new(&mut conn).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(conn.inner.writes, vec![b"onetwothree".to_vec()]);
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2);
    }

    /// Bytes that keep growing stop the yielding after MAX_YIELDS: an
    /// answer waits for at most that many turns of the other tasks.
    #[test]
    fn yields_are_bounded_while_bytes_keep_growing() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut conn = Coalesced::new(Recorder::default());
        let mut flushes = 0;
        loop {
            write(&mut conn, &mut cx, b"x");
            flushes += 1;
            if Pin::new(&mut conn).poll_flush(&mut cx).is_ready() {
                break;
            }
        }
        assert_eq!(flushes, MAX_YIELDS + 1);
        assert_eq!(wakes_and_writes(&wakes, &conn), (MAX_YIELDS as usize, 1));
        assert_eq!(conn.inner.writes[0].len(), flushes as usize);
        // The count starts again after a write.
        write(&mut conn, &mut cx, b"y");
        assert!(Pin::new(&mut conn).poll_flush(&mut cx).is_pending());
    }

    /// h2 (0.4) copies a DATA frame under 1 KiB into its own buffer only
    /// when the writer is not vectored, and otherwise flushes after it:
    /// this is what lets a flush see more than one frame.
    #[test]
    fn the_connection_tells_h2_it_is_not_vectored() {
        assert!(!Coalesced::new(Recorder::default()).is_write_vectored());
    }

    /// Past the limit, a write first writes out what was gathered.
    #[test]
    fn gathering_stops_at_the_limit() {
        let waker = Waker::from(Arc::new(Wakes::default()));
        let mut cx = Context::from_waker(&waker);
        let mut conn = Coalesced::new(Recorder::default());
        let big = vec![7u8; GATHER_LIMIT];
        assert!(Pin::new(&mut conn).poll_write(&mut cx, &big).is_ready());
        assert!(conn.inner.writes.is_empty());
        assert!(Pin::new(&mut conn).poll_write(&mut cx, b"x").is_ready());
        assert_eq!(conn.inner.writes.iter().map(Vec::len).collect::<Vec<_>>(), vec![GATHER_LIMIT]);
        assert!(matches!(Pin::new(&mut conn).poll_shutdown(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(conn.inner.writes.last().unwrap(), b"x");
    }
}
