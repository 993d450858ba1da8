//! Where responses go: a session's [`ReplySink`], written to the socket by whoever
//! produced the response when the socket can take it, else by the session's writer task.
//!
//! # Why
//!
//! Handing every response to a writer task costs a task wake-up (and usually a worker
//! thread wake-up: futex + context switch) per response, on top of the `write` itself. On
//! a loaded machine the wake-ups cost more than the loopback write. So the thread that
//! produces a response — the combiner, a handler holding the table, a handler of the
//! rangelock engine granting another session's waiter — appends its encoded frame to the session's buffer, and at the
//! end of its batch ([`flush_pending`]) writes each touched session's buffer with one
//! non-blocking `write`. Only when the socket is full (the peer reads slowly) does the
//! rest go to the writer task, which waits for the socket to become writable.
//!
//! # Algorithm and invariants
//!
//! A [`SocketSink`] has one buffer of encoded frames under a mutex, and a `writer_busy`
//! flag. Bytes leave the buffer only from its front and only (a) under the mutex, by a
//! non-blocking write when `writer_busy` is clear, or (b) by the writer task, which takes
//! the whole buffer under the mutex and sets `writer_busy` while it writes outside it.
//! Hence writes never interleave and frames reach the socket whole and in buffer order.
//! A flush that finds `writer_busy` leaves its bytes in the buffer: the writer re-checks
//! the buffer under the mutex after each write before it clears the flag, so nothing is
//! stranded. A flush whose non-blocking write comes up short wakes the writer.
//!
//! A transport may take bytes it cannot send yet (TLS: records sealed but not accepted
//! by the full socket; [`DirectWrite::try_flush`] sends them). A flush whose every byte
//! was taken but some held back wakes the writer as a short write does; the writer sends
//! what is held back after each chunk, before it sleeps and before it ends. See the `tls`
//! module for why this keeps responses in order and strands nothing.
//!
//! Batching: [`queue`] appends a frame and, on the first frame since the last flush,
//! records the sink in a thread-local list; [`flush_pending`] flushes every recorded sink
//! once. The combiner flushes after draining its queue, other engines after each command,
//! so one `write` carries every response a batch produced for a session (for example the
//! answers to a pipelined `UNLOCK` and the `LOCK` after it).
//!
//! The session ends its sink by dropping every [`SinkHandle`] (the table's and the read
//! loop's); the writer then writes what is left and returns, and dropping the write half
//! shuts the socket's write side down.
//!
//! Bound: a session's unwritten bytes (`buf` plus what the writer is writing) may not
//! pass its limit (`ServerConfig::max_output_bytes`). A frame that would pass it marks the
//! sink broken, drops the buffer and signals [`SocketSink::overflowed`]; the session then
//! ends as on a disconnect. (Counting frames alone did not bound memory: one `STATS`
//! answer can be 40 KB.)
//!
//! # Trade-offs
//!
//! The combiner now pays the `write` system calls of the responses it produces (serially,
//! on one thread) instead of a cross-thread hand-off per response; one `write` per
//! session per batch bounds that cost. A slow reader cannot stall the combiner: its
//! write returns `WouldBlock` and the writer task takes over.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::protocol::ResponseFrame;

/// Something that takes a session's responses.
pub trait ReplyTo: Send + Sync + fmt::Debug {
    /// Takes `r` (or buffers it). Returns `true` when the caller must call
    /// [`ReplyTo::flush`] later — the first buffered frame since the last flush.
    fn queue(&self, r: &ResponseFrame) -> bool;
    /// Sends what [`ReplyTo::queue`] buffered.
    fn flush(&self);
}

/// Where a session's responses go.
pub type ReplySink = Arc<dyn ReplyTo>;

/// An unbounded channel takes responses as they come (tests drive tables with it).
impl ReplyTo for tokio::sync::mpsc::UnboundedSender<ResponseFrame> {
    fn queue(&self, r: &ResponseFrame) -> bool {
        let _ = self.send(r.clone());
        false
    }

    fn flush(&self) {}
}

thread_local! {
    /// Sinks with buffered frames, to flush at the end of this thread's batch.
    static PENDING: RefCell<Vec<ReplySink>> = const { RefCell::new(Vec::new()) };
}

/// Queues `r` on `sink`; the sink is flushed by this thread's next [`flush_pending`].
#[inline]
pub(crate) fn queue(sink: &ReplySink, r: ResponseFrame) {
    if sink.queue(&r) {
        PENDING.with(|p| p.borrow_mut().push(sink.clone()));
    }
}

/// Queues `r` on `sink` and flushes it now.
#[inline]
pub(crate) fn send_now(sink: &ReplySink, r: ResponseFrame) {
    if sink.queue(&r) {
        sink.flush();
    }
}

/// Flushes every sink this thread queued frames on since its last call.
pub(crate) fn flush_pending() {
    let sinks = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for s in &sinks {
        s.flush();
    }
    // Give the (now empty) vector back to keep its capacity, unless frames were queued
    // meanwhile (they cannot be: flushing queues nothing).
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_empty() {
            let mut sinks = sinks;
            sinks.clear();
            *p = sinks;
        }
    });
}

/// The write half of a session's socket: non-blocking writes usable from any thread.
pub(crate) trait DirectWrite: Send + Sync + fmt::Debug + 'static {
    /// One non-blocking write (`WouldBlock` when the socket is full). `Ok(n)` means the
    /// first `n` bytes are taken; a transport that encodes them (TLS) may hold some of
    /// the encoded bytes back until [`DirectWrite::try_flush`] sends them.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    /// Sends what an earlier [`DirectWrite::try_write`] took but could not send yet (a
    /// TLS session's records that did not fit into the socket): `Ok` once nothing is
    /// held back, `WouldBlock` while the socket is full. A plain socket holds nothing
    /// back.
    #[inline]
    fn try_flush(&self) -> io::Result<()> {
        Ok(())
    }
    /// Waits until the socket may be writable (inside the runtime).
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
}

impl DirectWrite for tokio::net::tcp::OwnedWriteHalf {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        tokio::net::tcp::OwnedWriteHalf::try_write(self, buf)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        tokio::net::tcp::OwnedWriteHalf::writable(self)
    }
}

impl DirectWrite for tokio::net::unix::OwnedWriteHalf {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        tokio::net::unix::OwnedWriteHalf::try_write(self, buf)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        tokio::net::unix::OwnedWriteHalf::writable(self)
    }
}

/// Writes all of `buf` from inside the runtime, including what the transport holds back
/// ([`DirectWrite::try_flush`]).
pub(crate) async fn write_all<W: DirectWrite>(w: &W, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match w.try_write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => w.writable().await?,
            Err(e) => return Err(e),
        }
    }
    flush(w).await
}

/// Sends what the transport holds back ([`DirectWrite::try_flush`]), waiting for the
/// socket as needed.
pub(crate) async fn flush<W: DirectWrite>(w: &W) -> io::Result<()> {
    loop {
        match w.try_flush() {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => w.writable().await?,
            Err(e) => return Err(e),
        }
    }
}

/// The buffer and flags of a [`SocketSink`]; see the module docs.
#[derive(Debug, Default)]
struct Out {
    buf: Vec<u8>,
    /// Frames in `buf` (counted as written once `buf` is fully written).
    frames: u64,
    /// A flush is owed (set by the first `queue` after a flush).
    dirty: bool,
    /// The writer task is writing bytes it took from `buf`.
    writer_busy: bool,
    /// Writing failed: the connection is broken; frames are dropped.
    broken: bool,
    /// Every handle is gone: the writer finishes and returns.
    ended: bool,
    /// Bytes the writer task took from `buf` and is writing.
    in_flight: usize,
}

/// A session's response buffer and socket; see the module docs.
#[derive(Debug)]
pub(crate) struct SocketSink<W> {
    out: Mutex<Out>,
    wr: W,
    /// Wakes the writer task (more bytes for it, or the end).
    wake: Notify,
    /// Frames written so far.
    written: AtomicU64,
    /// Notified after frames were written.
    pub(crate) progress: Notify,
    /// Largest `buf` + `in_flight`, in bytes; see [`SocketSink::overflowed`].
    max_bytes: usize,
    /// Notified (once) when the output limit is passed.
    overflow: Notify,
}

impl<W: DirectWrite> SocketSink<W> {
    /// A sink writing to `wr` that holds at most `max_bytes` of unwritten responses.
    pub(crate) fn new(wr: W, max_bytes: usize) -> Arc<Self> {
        Arc::new(SocketSink {
            out: Mutex::new(Out::default()),
            wr,
            wake: Notify::new(),
            written: AtomicU64::new(0),
            progress: Notify::new(),
            max_bytes,
            overflow: Notify::new(),
        })
    }

    /// Completes once the session's unwritten responses passed its output limit (a client
    /// that sends requests, such as `STATS`, faster than it reads the answers). From then
    /// on the sink drops every frame; the session must end (releasing its locks).
    pub(crate) async fn overflowed(&self) {
        self.overflow.notified().await
    }

    fn lock(&self) -> MutexGuard<'_, Out> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Frames written to the socket so far.
    pub(crate) fn written(&self) -> u64 {
        // Acquire: pairs with the Release increments; only a counter, no data.
        self.written.load(Ordering::Acquire)
    }

    fn count_written(&self, frames: u64) {
        if frames > 0 {
            // Release: pairs with the Acquire load in `written` (a counter only).
            self.written.fetch_add(frames, Ordering::Release);
            self.progress.notify_one();
        }
    }

    /// The writer task: writes what flushes left behind, until every handle is gone.
    pub(crate) async fn run_writer(self: Arc<Self>) {
        let mut chunk = Vec::new();
        loop {
            let (frames, ended) = {
                let mut o = self.lock();
                if o.broken {
                    return;
                }
                if o.buf.is_empty() {
                    (None, o.ended)
                } else {
                    o.writer_busy = true;
                    std::mem::swap(&mut chunk, &mut o.buf);
                    (Some(std::mem::take(&mut o.frames)), false)
                }
            };
            let Some(frames) = frames else {
                // What the transport still holds back (TLS records a flush could not
                // send) goes out before the writer sleeps or ends.
                if flush(&self.wr).await.is_err() {
                    self.lock().broken = true;
                    return;
                }
                if ended {
                    return;
                }
                self.wake.notified().await;
                continue;
            };
            self.lock().in_flight = chunk.len();
            let res = write_all(&self.wr, &chunk).await;
            chunk.clear();
            let mut o = self.lock();
            o.writer_busy = false;
            o.in_flight = 0;
            if res.is_err() {
                o.broken = true;
                return;
            }
            drop(o);
            self.count_written(frames);
        }
    }

    fn end(&self) {
        self.lock().ended = true;
        self.wake.notify_one();
    }
}

impl<W: DirectWrite> ReplyTo for SocketSink<W> {
    fn queue(&self, r: &ResponseFrame) -> bool {
        let mut o = self.lock();
        if o.broken {
            return false;
        }
        r.encode(&mut o.buf);
        o.frames += 1;
        if o.buf.len() + o.in_flight > self.max_bytes {
            // The peer does not read what it asks for. Keeping the bytes would let one
            // session grow the server without bound; drop them and end the session.
            o.broken = true;
            o.buf = Vec::new();
            o.frames = 0;
            drop(o);
            self.overflow.notify_one();
            self.wake.notify_one();
            return false;
        }
        !std::mem::replace(&mut o.dirty, true)
    }

    fn flush(&self) {
        let mut o = self.lock();
        o.dirty = false;
        if o.writer_busy || o.broken || o.buf.is_empty() {
            // The writer re-checks the buffer before it clears `writer_busy`.
            return;
        }
        let mut off = 0;
        let complete = loop {
            match self.wr.try_write(&o.buf[off..]) {
                Ok(0) => break false,
                Ok(n) => {
                    off += n;
                    if off == o.buf.len() {
                        break true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Full socket (or readiness not known to the reactor yet): the writer
                // task waits for it. A real error shows there too.
                Err(_) => break false,
            }
        };
        if complete {
            o.buf.clear();
            let frames = std::mem::take(&mut o.frames);
            // Every byte is taken; a transport that held some back (TLS records that did
            // not fit) leaves them to the writer task, as a short write does.
            let held_back = self.wr.try_flush().is_err();
            drop(o);
            self.count_written(frames);
            if held_back {
                self.wake.notify_one();
            }
        } else {
            o.buf.drain(..off);
            drop(o);
            self.wake.notify_one();
        }
    }
}

/// One owner's handle on a [`SocketSink`]; the sink ends when every handle is dropped.
#[derive(Debug)]
pub(crate) struct SinkHandle<W: DirectWrite>(pub(crate) Arc<SocketSink<W>>);

impl<W: DirectWrite> ReplyTo for SinkHandle<W> {
    fn queue(&self, r: &ResponseFrame) -> bool {
        self.0.queue(r)
    }

    fn flush(&self) {
        self.0.flush()
    }
}

impl<W: DirectWrite> Drop for SinkHandle<W> {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{op, Status};

    /// A transport that, like TLS, takes bytes it cannot send yet and holds them back
    /// until the "socket" has room.
    #[derive(Debug, Default)]
    struct HoldBack {
        state: Mutex<HoldBackState>,
        room: Notify,
    }

    #[derive(Debug, Default)]
    struct HoldBackState {
        sent: Vec<u8>,
        held: Vec<u8>,
        full: bool,
    }

    impl HoldBack {
        fn state(&self) -> MutexGuard<'_, HoldBackState> {
            self.state.lock().unwrap()
        }
    }

    impl DirectWrite for Arc<HoldBack> {
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            let mut st = self.state();
            if !st.held.is_empty() && st.full {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            st.held.extend_from_slice(buf);
            if !st.full {
                let held = std::mem::take(&mut st.held);
                st.sent.extend_from_slice(&held);
            }
            Ok(buf.len())
        }

        fn try_flush(&self) -> io::Result<()> {
            let mut st = self.state();
            if st.held.is_empty() {
                return Ok(());
            }
            if st.full {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let held = std::mem::take(&mut st.held);
            st.sent.extend_from_slice(&held);
            Ok(())
        }

        async fn writable(&self) -> io::Result<()> {
            loop {
                let room = self.room.notified();
                if !self.state().full {
                    return Ok(());
                }
                room.await;
            }
        }
    }

    fn frame(id: u64) -> ResponseFrame {
        ResponseFrame::new(op::KEEPALIVE, id, Status::Ok, 0)
    }

    fn ids(bytes: &[u8]) -> Vec<u64> {
        bytes.chunks(22).map(|f| ResponseFrame::decode(&f[4..]).unwrap().id).collect()
    }

    /// A flush whose every byte was taken but partly held back hands the rest to the
    /// writer task, which sends it once the socket has room; later frames follow in
    /// order, and the end sends what is held back before the writer returns.
    #[tokio::test]
    async fn bytes_held_back_by_the_transport_are_not_stranded() {
        let t = Arc::new(HoldBack::default());
        t.state().full = true;
        let sink = SocketSink::new(t.clone(), 1 << 20);
        let writer = tokio::spawn(sink.clone().run_writer());
        // Let the writer go idle (the test runs on one thread).
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let handle = SinkHandle(sink.clone());
        assert!(handle.queue(&frame(1)));
        handle.flush();
        assert_eq!(t.state().held.len(), 22, "taken, held back");
        // The socket gets room: only the writer task can send the held bytes now.
        t.state().full = false;
        t.room.notify_waiters();
        tokio::time::timeout(Duration::from_secs(10), async {
            while t.state().sent.is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the writer task sends what the transport held back");
        assert!(handle.queue(&frame(2)));
        handle.flush();
        // Full again: frame 3 is held back, and the session ends.
        t.state().full = true;
        assert!(handle.queue(&frame(3)));
        handle.flush();
        drop(handle);
        t.state().full = false;
        t.room.notify_waiters();
        tokio::time::timeout(Duration::from_secs(10), writer).await.unwrap().unwrap();
        let st = t.state();
        assert!(st.held.is_empty());
        assert_eq!(ids(&st.sent), [1, 2, 3]);
    }

    use std::time::Duration;
}
