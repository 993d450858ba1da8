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
//! non-blocking write when `writer_busy` is clear (a flush, or a queue that would pass the
//! output bound, see below), or (b) by the writer task, which takes
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
//! Bound: a session's unwritten bytes — `buf`, plus what the writer task took and the
//! socket has not accepted yet (`in_flight`, counted down as the socket takes it) — may
//! not pass its limit (`ServerConfig::max_output_bytes`). Bytes the kernel has accepted
//! do not count (on Linux TCP that is up to the server's send buffer plus the client's
//! receive buffer: megabytes). The limit is judged only on what the socket will not
//! take: when a new frame would pass it, [`queue`] first writes the buffer as a flush
//! would (if the writer task is not writing), because an engine flushes only at the end
//! of its batch, and the combiner's batch may hold many answers the socket has never
//! been offered. So every engine counts the same bytes, and an answer that a reading
//! client takes at once never ends its session. If the new frame still does not fit, the
//! sink is marked broken, drops the buffer and signals [`SocketSink::overflowed`]; the
//! session then ends as on a disconnect. Every answer fits in an empty buffer: the
//! server refuses a limit below its largest fixed-size answer, and cuts a `STATS` list to
//! fit (`ServerConfig::largest_fixed_answer`, `ServerConfig::stats_entries_cap`). Memory
//! per session stays within the limit (and a TLS session's one batch of sealed records,
//! see the `tls` module). (Counting frames alone did not bound memory: one `STATS` answer
//! can be 40 KB.)
//!
//! # Trade-offs
//!
//! The combiner now pays the `write` system calls of the responses it produces (serially,
//! on one thread) instead of a cross-thread hand-off per response; one `write` per
//! session per batch bounds that cost. A slow reader cannot stall the combiner: its
//! write returns `WouldBlock` and the writer task takes over. A frame that would pass the
//! output bound is written at once, where it is queued: inside the engine's critical
//! section (the table mutex of tree-mutex), which only a session near its limit costs.
//! The writer task takes its mutex once per partial write to count `in_flight` down; it
//! runs only for sessions whose socket was full.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::protocol::{EndReason, ResponseFrame, Status};

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

/// Drops every response: the sink of a session whose connection is gone while its locks
/// stay ([`Command::Detach`](crate::table::Command::Detach)).
#[derive(Debug)]
pub(crate) struct Discard;

impl ReplyTo for Discard {
    fn queue(&self, _: &ResponseFrame) -> bool {
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
    /// Bytes the writer task took from `buf` that the socket has not accepted yet.
    in_flight: usize,
    /// The session's end is settled: its `SESSION_ENDED` notice is in `buf` (or was
    /// written), or it gets none ([`SocketSink::end_session`]).
    end_settled: bool,
}

/// What a non-blocking write of a sink's buffer did ([`SocketSink::send_locked`]); the
/// caller reports it once it has released the buffer's mutex.
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
struct Sent {
    /// Frames fully written.
    frames: u64,
    /// The writer task must take over (a short write, or bytes the transport holds back).
    wake_writer: bool,
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
    /// Largest `buf` + `in_flight`, in bytes (see the module docs).
    max_bytes: usize,
    /// Notified (once) when the output limit is passed.
    overflow: Notify,
    /// The session speaks protocol version 4: it gets a `SESSION_ENDED` notice when the
    /// server ends it (`docs/PROTOCOL.md` §2.1).
    end_notices: bool,
}

impl<W: DirectWrite> SocketSink<W> {
    /// A sink writing to `wr` that holds at most `max_bytes` of unwritten responses.
    /// `end_notices`: the session gets `SESSION_ENDED` notices (version 4); then the sink
    /// puts the shutdown notice before the session's first `SHUTTING_DOWN` answer.
    pub(crate) fn new(wr: W, max_bytes: usize, end_notices: bool) -> Arc<Self> {
        Arc::new(SocketSink {
            out: Mutex::new(Out::default()),
            wr,
            wake: Notify::new(),
            written: AtomicU64::new(0),
            progress: Notify::new(),
            max_bytes,
            overflow: Notify::new(),
            end_notices,
        })
    }

    /// Settles how the session ends: queues `notice` (its `SESSION_ENDED` notice) and
    /// flushes, unless the session's end was settled already — by an earlier call, or by
    /// a `SHUTTING_DOWN` answer, which [`ReplyTo::queue`] put the shutdown notice before.
    /// `None` (the client closed the session, or another notice stood in for this one):
    /// no notice, and none later. A session without end notices gets none either way.
    pub(crate) fn end_session(&self, notice: Option<&ResponseFrame>) {
        let mut o = self.lock();
        if std::mem::replace(&mut o.end_settled, true) || !self.end_notices {
            return;
        }
        if let Some(n) = notice {
            if self.push(o, n) {
                self.flush();
            }
        }
    }

    /// Completes once the session's unwritten responses would pass its output limit (a
    /// client that sends requests, such as `STATS`, faster than it reads the answers).
    /// From then on the sink drops every frame; the session must end (releasing its
    /// locks).
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

    /// Reports a [`Sent`], outside the buffer's mutex.
    fn report(&self, sent: Sent) {
        self.count_written(sent.frames);
        if sent.wake_writer {
            self.wake.notify_one();
        }
    }

    /// Under the buffer's mutex: writes as much of `buf` as the socket takes without
    /// blocking, unless the writer task is writing (it owns the front of the stream then;
    /// it re-checks the buffer before it clears `writer_busy`).
    fn send_locked(&self, o: &mut Out) -> Sent {
        if o.writer_busy || o.broken || o.buf.is_empty() {
            return Sent::default();
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
            // Every byte is taken; a transport that held some back (TLS records that did
            // not fit) leaves them to the writer task, as a short write does.
            let held_back = self.wr.try_flush().is_err();
            Sent { frames: std::mem::take(&mut o.frames), wake_writer: held_back }
        } else {
            o.buf.drain(..off);
            Sent { frames: 0, wake_writer: true }
        }
    }

    /// Writes a chunk the writer task took from `buf`, waiting for the socket as needed,
    /// and counts `in_flight` down as the socket takes it; then sends what the transport
    /// holds back.
    async fn write_chunk(&self, mut chunk: &[u8]) -> io::Result<()> {
        while !chunk.is_empty() {
            match self.wr.try_write(chunk) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    chunk = &chunk[n..];
                    self.lock().in_flight = chunk.len();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wr.writable().await?,
                Err(e) => return Err(e),
            }
        }
        flush(&self.wr).await
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
                    o.in_flight = chunk.len();
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
            let res = self.write_chunk(&chunk).await;
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
        // The server is stopping. A version 4 session learns it from the notice first,
        // then from the answers of its requests (`docs/PROTOCOL.md` §2.1): whichever comes
        // first — the engine answering a waiting LOCK, or the session's read loop
        // ending — puts the notice in the buffer, under this mutex, ahead of the answer.
        if r.status == Status::ShuttingDown
            && !r.is_notice()
            && self.end_notices
            && !std::mem::replace(&mut o.end_settled, true)
        {
            ResponseFrame::session_ended(EndReason::Shutdown).encode(&mut o.buf);
            o.frames += 1;
        }
        self.push(o, r)
    }

    fn flush(&self) {
        let mut o = self.lock();
        o.dirty = false;
        let sent = self.send_locked(&mut o);
        drop(o);
        self.report(sent);
    }
}

impl<W: DirectWrite> SocketSink<W> {
    /// Appends `r` to the buffer `o` of this sink; what [`ReplyTo::queue`] returns.
    fn push(&self, mut o: MutexGuard<'_, Out>, r: &ResponseFrame) -> bool {
        if o.broken {
            return false;
        }
        r.encode(&mut o.buf);
        o.frames += 1;
        let mut sent = Sent::default();
        if o.buf.len() + o.in_flight > self.max_bytes {
            // Judge only what the socket will not take: offer it the buffer first (this
            // batch's answers may never have been offered; see the module docs).
            sent = self.send_locked(&mut o);
            if o.buf.len() + o.in_flight > self.max_bytes {
                // The peer does not read what it asks for. Keeping the bytes would let
                // one session grow the server without bound; drop them and end the
                // session.
                o.broken = true;
                o.buf = Vec::new();
                o.frames = 0;
                drop(o);
                self.count_written(sent.frames);
                self.overflow.notify_one();
                self.wake.notify_one();
                return false;
            }
        }
        let owed = !std::mem::replace(&mut o.dirty, true);
        drop(o);
        self.report(sent);
        owed
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
        let sink = SocketSink::new(t.clone(), 1 << 20, false);
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

    /// A socket with room for a given number of bytes ("the kernel's buffers"); a write
    /// beyond it would block.
    #[derive(Debug, Default)]
    struct Room {
        state: Mutex<RoomState>,
        more: Notify,
    }

    #[derive(Debug, Default)]
    struct RoomState {
        room: usize,
        taken: Vec<u8>,
    }

    impl Room {
        fn with(room: usize) -> Arc<Room> {
            let r = Arc::new(Room::default());
            r.state.lock().unwrap().room = room;
            r
        }

        fn open(&self, bytes: usize) {
            self.state.lock().unwrap().room += bytes;
            self.more.notify_waiters();
        }

        fn taken(&self) -> usize {
            self.state.lock().unwrap().taken.len()
        }
    }

    impl DirectWrite for Arc<Room> {
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            let mut st = self.state.lock().unwrap();
            if st.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = st.room.min(buf.len());
            st.room -= n;
            st.taken.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        async fn writable(&self) -> io::Result<()> {
            loop {
                let more = self.more.notified();
                if self.state.lock().unwrap().room > 0 {
                    return Ok(());
                }
                more.await;
            }
        }
    }

    const FRAME: usize = 22;

    /// Answers queued in one batch (no flush between them) count against the limit only
    /// for what the socket does not take: the combiner flushes at the end of its batch,
    /// the other engines after each command, and both must count the same.
    #[test]
    fn answers_the_socket_takes_do_not_count_even_before_the_batch_is_flushed() {
        let room = Room::with(1 << 20);
        let sink = SocketSink::new(room.clone(), 5 * FRAME, false);
        for id in 0..100 {
            sink.queue(&frame(id));
            assert!(!sink.lock().broken, "closed at frame {id}, the socket took every byte");
        }
        sink.flush();
        assert_eq!(ids(&room.state.lock().unwrap().taken), (0..100).collect::<Vec<_>>());
        assert_eq!(sink.written(), 100);
    }

    /// With a full socket the limit is exact: the frames that fit are kept, the next one
    /// ends the session.
    #[test]
    fn with_a_full_socket_the_frame_that_passes_the_limit_ends_the_session() {
        let room = Room::with(0);
        let sink = SocketSink::new(room.clone(), 3 * FRAME, false);
        for id in 0..3 {
            sink.queue(&frame(id));
        }
        assert!(!sink.lock().broken, "three frames fit exactly");
        sink.queue(&frame(3));
        assert!(sink.lock().broken, "the fourth passes the limit");
        assert!(sink.lock().buf.is_empty(), "its bytes are dropped");
    }

    /// What the writer task holds counts only until the socket takes it: a client that
    /// reads the start of a large backlog makes room for new answers at once.
    #[tokio::test]
    async fn the_writers_bytes_count_down_as_the_socket_takes_them() {
        let room = Room::with(0);
        let sink = SocketSink::new(room.clone(), 3 * FRAME, false);
        let writer = tokio::spawn(sink.clone().run_writer());
        let handle = SinkHandle(sink.clone());
        for id in 0..3 {
            handle.queue(&frame(id));
        }
        handle.flush(); // the socket is full: the writer task takes the three frames
        wait_for(|| sink.lock().in_flight == 3 * FRAME).await;
        room.open(2 * FRAME); // the client reads two frames' worth
        wait_for(|| room.taken() == 2 * FRAME && sink.lock().in_flight == FRAME).await;
        // One frame is still unread: two more fit.
        handle.queue(&frame(3));
        handle.queue(&frame(4));
        assert!(!sink.lock().broken, "{FRAME} bytes in flight and two new frames fit");
        handle.queue(&frame(5));
        assert!(sink.lock().broken, "a third passes the limit");
        drop(handle);
        room.open(1 << 20); // the writer finishes its chunk, then sees the sink broken
        tokio::time::timeout(Duration::from_secs(10), writer).await.unwrap().unwrap();
    }

    /// Waits (yielding; the test runtime has one thread) until `cond` holds.
    async fn wait_for(mut cond: impl FnMut() -> bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !cond() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("condition within 10 s");
    }

    use std::time::Duration;
}
