//! The blocking client's connection: plain blocking socket I/O on the calling thread.
//!
//! # Why not the async client on a private runtime
//!
//! Driving [`AsyncClient`](crate::AsyncClient) from a blocking caller costs two thread
//! hand-offs per request: the caller wakes the runtime's writer task, and the runtime's
//! reader task wakes the caller with the response. On a loaded machine those wake-ups
//! (futex + context switch each) cost more than the loopback round trip itself. Here the
//! caller writes its request frame itself and reads the response itself: one `write` and
//! (usually) one `read` per request, nothing else.
//!
//! # Algorithm (leader/follower reading)
//!
//! Any number of threads may share a connection. A caller registers its request id in
//! `waiting` *before* writing the frame (so no response can arrive unclaimed), writes it
//! under the writer mutex, then waits for its response:
//!
//! * if the response is already in `ready`, it takes it;
//! * else, if nobody is reading (`reading == false`), it becomes the reader: sets
//!   `reading`, reads one frame outside the state lock, routes it (into `ready` if its id
//!   is in `waiting`; a pipelined unlock's status into `deferred_error` if it failed;
//!   anything else is dropped), clears `reading` and wakes every waiter;
//! * else it sleeps on the condition variable until the reader routes a frame.
//!
//! Invariants: at most one thread reads (`reading` is only set under the state lock by a
//! thread that saw it clear); every frame read is routed before `reading` is cleared and
//! waiters are notified after every routing, so a waiter whose response was routed wakes,
//! and a waiter that needs a reader wakes when the reader steps down. Sleepers are
//! counted under the state lock (`sleepers`): the reader skips the notification — a
//! `futex` system call per frame even when nobody sleeps — when the count is zero, which
//! is safe because a thread increments it under the same lock before it waits. A read error or EOF
//! sets `closed` (and wakes everyone): every waiting and later call then fails with
//! [`ClientError::ConnectionLost`].
//!
//! **TLS.** With TLS the writer and the reader are the two halves of one rustls
//! connection (the `sync_tls` module): the reader waits for the socket without holding
//! the connection's lock, so the leader waiting for a lock never keeps another thread
//! from writing. The plain-socket path is unchanged: two clones of the socket.
//!
//! **Keepalive.** A background thread (holding only a weak reference) sends `KEEPALIVE`
//! every third of the lease as an ordinary call, so an idle client's socket is also read
//! (its keepalive responses do not pile up, and a lost connection is noticed).
//!
//! **Loss.** Whoever finds the connection gone (a failed write, a read error or EOF, an
//! undecodable frame) records a [`ConnectionLoss`] with `closed` and wakes the `lost`
//! condition variable, on which [`SyncCore::wait_lost`] sleeps. The keepalive thread needs
//! no other thread's help to find a loss: after a stall (SIGSTOP, starvation) longer than
//! the lease, the server has closed the connection, and the keepalive thread's next call,
//! at most a third of a lease after the process runs again, reads EOF (or fails to write).
//!
//! **Pipelined unlock.** [`SyncCore::unlock_pipelined`] writes the `UNLOCK` and returns;
//! its id goes into `deferred`. The response is routed by whichever call reads next; a
//! failure status is kept in `deferred_error` and returned by the next
//! [`Client::lock`](crate::Client::lock) or [`Client::flush`](crate::Client::flush).
//! Frames of one connection are handled by the server in the order they were written, so
//! a later request of this client is served after the unlock took effect.

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use rangelock_proto::{
    op, EndReason, Request, RequestFrame, ResponseFrame, ServerHello, Status, FRAME_HEADER_LEN,
    SERVER_HELLO_LEN,
};

use crate::endpoint::Endpoint;
use crate::error::{ClientError, ConnectionLoss, LossCause};
use crate::options::ConnectOptions;
use crate::shm::{ShmView, DRAIN_AT, SPIN_FOR, YIELD_UNTIL};
use crate::sync_tls::{TlsReader, TlsWriter};

/// Largest response frame the client accepts (a `STATS` reply can be large).
const MAX_RESPONSE_FRAME: u32 = 16 * 1024 * 1024;

/// A connected socket of either kind.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where frames are written: the socket, or TLS over it (see the `sync_tls` module).
#[derive(Debug)]
enum Sink {
    Plain(Stream),
    Tls(TlsWriter),
}

impl Sink {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(s) => s.write_all(buf),
            Sink::Tls(t) => t.send(buf),
        }
    }
}

/// Where frames are read from: the socket, or TLS over it.
#[derive(Debug)]
enum Source {
    Plain(Stream),
    Tls(TlsReader),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::Plain(s) => s.read(buf),
            Source::Tls(t) => t.read(buf),
        }
    }
}

/// The writing side: the socket and a reusable frame buffer.
#[derive(Debug)]
struct Writer {
    stream: Sink,
    out: Vec<u8>,
}

/// The reading side, used only by the thread that set `State::reading`.
#[derive(Debug)]
struct Reader {
    stream: BufReader<Source>,
    buf: Vec<u8>,
}

/// Who waits for what; see the module docs.
#[derive(Debug, Default)]
struct State {
    closed: bool,
    /// How the connection was lost; set together with `closed`.
    loss: Option<ConnectionLoss>,
    /// When the last keepalive the server answered was sent (at first: the handshake).
    last_keepalive: Option<Instant>,
    reading: bool,
    /// Threads sleeping on `routed` (so a reader that routed a frame only calls
    /// `notify_all` — a `futex` system call even with nobody waiting — when one is).
    sleepers: usize,
    waiting: HashSet<u64>,
    ready: HashMap<u64, ResponseFrame>,
    /// Pipelined `UNLOCK`s whose response has not been read: request id -> lock id.
    deferred: HashMap<u64, u64>,
    /// The first failed pipelined unlock not yet reported: (lock id, status).
    deferred_error: Option<(u64, Status)>,
    /// `LOCK`s whose answer was read from the shared-memory slot; their frames, still to
    /// come, are dropped (see the `shm` module).
    early: HashSet<u64>,
    /// The reason of a `SESSION_ENDED` notice (version 4): the server closes next.
    ended: Option<EndReason>,
}

/// Tells the keepalive thread to stop.
#[derive(Debug, Default)]
struct Stop {
    stopped: Mutex<bool>,
    cond: Condvar,
}

/// One connection = one server session; shared by a [`Client`](crate::Client) and its
/// guards.
#[derive(Debug)]
pub(crate) struct SyncCore {
    hello: ServerHello,
    next_id: AtomicU64,
    writer: Mutex<Writer>,
    reader: Mutex<Reader>,
    state: Mutex<State>,
    routed: Condvar,
    /// Signalled when `closed` is set (see [`SyncCore::wait_lost`]).
    lost: Condvar,
    stop: Arc<Stop>,
    /// A handle to the socket for shutting it down on drop.
    socket: Stream,
    /// The session's shared-memory slot, once attached.
    shm: OnceLock<ShmView>,
    /// `LOCK` answers read from the slot (rather than from their frame).
    shm_hits: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SyncCore {
    /// Connects, performs the handshake and starts the keepalive thread.
    pub(crate) fn connect(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        version: u16,
    ) -> Result<Arc<SyncCore>, ClientError> {
        let stream = match endpoint {
            Endpoint::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str())
                    .map_err(|e| ClientError::connect(endpoint, e))?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Endpoint::Unix(_) if options.tls_options().is_some() => {
                return Err(crate::tls::unix_refused(endpoint));
            }
            Endpoint::Unix(p) => {
                Stream::Unix(UnixStream::connect(p).map_err(|e| ClientError::connect(endpoint, e))?)
            }
        };
        let (mut sink, mut source) = match (options.tls_options(), &stream) {
            (Some(tls), Stream::Tcp(tcp)) => {
                let (config, name) = tls.prepare(endpoint)?;
                let (rd, wr) = crate::sync_tls::connect(tcp.try_clone()?, config, name)
                    .map_err(|e| crate::tls::io_error(endpoint, true, e))?;
                (Sink::Tls(wr), Source::Tls(rd))
            }
            _ => (Sink::Plain(stream.try_clone()?), Source::Plain(stream.try_clone()?)),
        };
        let mut out = Vec::new();
        options.hello(version).encode(&mut out);
        let mut buf = [0u8; SERVER_HELLO_LEN];
        // On TLS, a server that refuses the client's certificate says so here (TLS 1.3
        // finishes the client's side of the handshake before the server checks it).
        sink.write_all(&out)
            .and_then(|()| source.read_exact(&mut buf))
            .map_err(|e| crate::tls::io_error(endpoint, false, e))?;
        let hello = ServerHello::decode(&buf).map_err(ClientError::Handshake)?;
        ClientError::check_hello(&hello)?;
        let core = Arc::new(SyncCore {
            hello,
            next_id: AtomicU64::new(1),
            writer: Mutex::new(Writer { stream: sink, out: Vec::with_capacity(64) }),
            reader: Mutex::new(Reader {
                stream: BufReader::with_capacity(8192, source),
                buf: Vec::new(),
            }),
            state: Mutex::new(State { last_keepalive: Some(Instant::now()), ..State::default() }),
            routed: Condvar::new(),
            lost: Condvar::new(),
            stop: Arc::new(Stop::default()),
            socket: stream,
            shm: OnceLock::new(),
            shm_hits: AtomicU64::new(0),
        });
        let lease = Duration::from_millis(hello.lease_ms.into());
        let (weak, stop) = (Arc::downgrade(&core), core.stop.clone());
        std::thread::Builder::new()
            .name("rangelock-keepalive".into())
            .spawn(move || keepalive_loop(weak, stop, lease))?;
        Ok(core)
    }

    pub(crate) fn hello(&self) -> &ServerHello {
        &self.hello
    }

    pub(crate) fn is_connected(&self) -> bool {
        !lock(&self.state).closed
    }

    /// Waits until the connection is found lost, or `timeout` passes (`None`).
    pub(crate) fn wait_lost(&self, timeout: Option<Duration>) -> Option<ConnectionLoss> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.state);
        loop {
            if let Some(loss) = &st.loss {
                return Some(loss.clone());
            }
            st = match (timeout, deadline) {
                (None, _) | (Some(_), None) => {
                    self.lost.wait(st).unwrap_or_else(PoisonError::into_inner)
                }
                (Some(_), Some(deadline)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    self.lost.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }

    /// One keepalive round trip; once answered, records when it was sent (the server
    /// read it, so it heard from us no earlier than that).
    fn keepalive(&self) -> Result<(), ClientError> {
        let sent = Instant::now();
        self.call(Request::Keepalive)?;
        lock(&self.state).last_keepalive = Some(sent);
        Ok(())
    }

    /// Marks the connection gone (first cause wins) and wakes whoever waits for that.
    /// The caller notifies `routed` as it needs.
    fn mark_lost(&self, st: &mut State, cause: LossCause) {
        if !st.closed {
            st.closed = true;
            let alive_at = st.last_keepalive.unwrap_or_else(Instant::now);
            let silent_for = alive_at.elapsed();
            st.loss = Some(ConnectionLoss {
                cause,
                silent_for,
                lease: Duration::from_millis(self.hello.lease_ms.into()),
                alive_at,
                // The keepalive thread waits for each answer: it cannot tell its own
                // silence from the server's.
                quiet_for: silent_for,
            });
        }
        self.lost.notify_all();
    }

    fn next_id(&self) -> u64 {
        // Relaxed: only uniqueness matters.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and waits for its response.
    pub(crate) fn call(&self, request: Request) -> Result<ResponseFrame, ClientError> {
        self.call_after_unlock(None, request)
    }

    /// Sends a pipelined `UNLOCK` of `unlock` (if any) and `request` in one write, and
    /// waits for the response to `request`. The server handles them in this order.
    pub(crate) fn call_after_unlock(
        &self,
        unlock: Option<u64>,
        request: Request,
    ) -> Result<ResponseFrame, ClientError> {
        let id = self.next_id();
        let unlock = unlock.map(|target| (self.next_id(), target));
        {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(ClientError::ConnectionLost);
            }
            st.waiting.insert(id);
            if let Some((uid, target)) = unlock {
                st.deferred.insert(uid, target);
            }
        }
        let mut frames = [None, Some(RequestFrame { id, request })];
        if let Some((uid, target)) = unlock {
            frames[0] = Some(RequestFrame { id: uid, request: Request::Unlock { target } });
        }
        if let Err(e) = self.send_frames(frames.iter().flatten()) {
            lock(&self.state).waiting.remove(&id);
            return Err(e);
        }
        if let (Request::Lock { .. }, Some(shm)) = (request, self.shm.get()) {
            if let Some(r) = self.poll_slot(shm, id) {
                return r;
            }
        }
        self.wait(|st| st.ready.remove(&id).map(Ok)).unwrap_or_else(|| {
            lock(&self.state).waiting.remove(&id);
            Err(ClientError::ConnectionLost)
        })
    }

    /// Asks for a shared-memory slot and maps it; from then on `LOCK` answers are read
    /// from it (see the `shm` module). Returns the slot index.
    pub(crate) fn attach_shm(&self) -> Result<u32, ClientError> {
        let r = self.call(Request::ShmAttach)?;
        let body = match (r.status, r.shm) {
            (Status::Ok, Some(body)) => body,
            (s, _) => return Err(ClientError::ShmRefused(s)),
        };
        let index = u32::try_from(r.value).map_err(|_| {
            ClientError::Protocol(rangelock_proto::DecodeError::BadField(r.value, "shm.slot"))
        })?;
        let view = ShmView::map(&body, index, self.hello.session)?;
        // The server leases one slot per session and refused a second attach above.
        let _ = self.shm.set(view);
        Ok(index)
    }

    /// `LOCK` answers read from the slot so far.
    pub(crate) fn shm_hits(&self) -> u64 {
        // Relaxed: a statistic.
        self.shm_hits.load(Ordering::Relaxed)
    }

    /// The attached slot: index and file.
    pub(crate) fn shm_slot(&self) -> Option<(u32, &str)> {
        self.shm.get().map(|v| (v.index(), v.path()))
    }

    /// Polls the slot for the answer to `LOCK` `id` (see the `shm` module); `None` when
    /// the time to poll is up (the caller waits for the frame).
    fn poll_slot(&self, shm: &ShmView, id: u64) -> Option<Result<ResponseFrame, ClientError>> {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let answer = shm
                .answer_to(id)
                .and_then(|(status, value)| Some((Status::from_code(status).ok()?, value)));
            if let Some((status, value)) = answer {
                let mut st = lock(&self.state);
                // The frame is still to come (drop it when read), or was routed meanwhile.
                if st.waiting.remove(&id) {
                    st.early.insert(id);
                } else {
                    st.ready.remove(&id);
                }
                let owed = st.early.len() + st.deferred.len();
                drop(st);
                // Relaxed: a statistic.
                self.shm_hits.fetch_add(1, Ordering::Relaxed);
                if owed >= DRAIN_AT {
                    // Frames that are sent or about to be: read them off the socket.
                    let _ = self
                        .wait(|st| (st.early.is_empty() && st.deferred.is_empty()).then_some(()));
                }
                return Some(Ok(ResponseFrame::new(op::LOCK, id, status, value)));
            }
            spins += 1;
            if spins % 64 != 0 {
                std::hint::spin_loop();
                continue;
            }
            {
                let mut st = lock(&self.state);
                if let Some(r) = st.ready.remove(&id) {
                    return Some(Ok(r));
                }
                if st.closed {
                    st.waiting.remove(&id);
                    return Some(Err(ClientError::ConnectionLost));
                }
            }
            let elapsed = start.elapsed();
            if elapsed >= YIELD_UNTIL {
                return None;
            }
            if elapsed >= SPIN_FOR {
                std::thread::yield_now();
            }
        }
    }

    /// Writes `UNLOCK` of `target` without waiting for the response (see the module docs).
    pub(crate) fn unlock_pipelined(&self, target: u64) -> Result<(), ClientError> {
        let id = self.next_id();
        {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(ClientError::ConnectionLost);
            }
            st.deferred.insert(id, target);
        }
        self.send_frames([&RequestFrame { id, request: Request::Unlock { target } }])
    }

    /// Takes the failure of a pipelined unlock, if one was read.
    pub(crate) fn take_deferred_error(&self) -> Option<ClientError> {
        lock(&self.state)
            .deferred_error
            .take()
            .map(|(lock, status)| ClientError::DeferredUnlock { lock, status })
    }

    /// Waits until every pipelined unlock has been answered; returns the first failure.
    pub(crate) fn flush(&self) -> Result<(), ClientError> {
        let drained = self.wait(|st| st.deferred.is_empty().then_some(()));
        if let Some(e) = self.take_deferred_error() {
            return Err(e);
        }
        drained.ok_or(ClientError::ConnectionLost)
    }

    /// Writes `frames` with one write.
    fn send_frames<'a>(
        &self,
        frames: impl IntoIterator<Item = &'a RequestFrame<'a>>,
    ) -> Result<(), ClientError> {
        let mut w = lock(&self.writer);
        let w = &mut *w;
        w.out.clear();
        for f in frames {
            f.encode(&mut w.out);
        }
        if let Err(e) = w.stream.write_all(&w.out) {
            self.close(LossCause::of(&ClientError::Io(e)));
            return Err(ClientError::ConnectionLost);
        }
        Ok(())
    }

    /// Marks the connection gone and wakes everyone.
    fn close(&self, cause: LossCause) {
        self.mark_lost(&mut lock(&self.state), cause);
        self.socket.shutdown();
        self.routed.notify_all();
    }

    /// Leader/follower wait until `done` returns `Some`; `None` once the connection is
    /// closed (and `done` still has nothing).
    fn wait<T>(&self, mut done: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let mut st = lock(&self.state);
        loop {
            if let Some(t) = done(&mut st) {
                return Some(t);
            }
            if st.closed {
                return None;
            }
            if st.reading {
                st.sleepers += 1;
                st = self.routed.wait(st).unwrap_or_else(PoisonError::into_inner);
                st.sleepers -= 1;
                continue;
            }
            st.reading = true;
            drop(st);
            let frame = self.read_one();
            st = lock(&self.state);
            st.reading = false;
            match frame {
                Ok(r) => route(&mut st, r),
                Err(e) => {
                    if !st.closed {
                        tracing::debug!(error = %e, "connection lost");
                    }
                    let cause = st.ended.map_or_else(|| LossCause::of(&e), LossCause::SessionEnded);
                    self.mark_lost(&mut st, cause);
                }
            }
            if st.sleepers > 0 {
                self.routed.notify_all();
            }
        }
    }

    /// Reads and decodes one response frame (only the thread that set `reading`).
    fn read_one(&self) -> Result<ResponseFrame, ClientError> {
        let mut rd = lock(&self.reader);
        let rd = &mut *rd;
        let mut len = [0u8; 4];
        rd.stream.read_exact(&mut len)?;
        let len = u32::from_le_bytes(len);
        if len > MAX_RESPONSE_FRAME || (len as usize) < FRAME_HEADER_LEN {
            return Err(ClientError::ConnectionLost);
        }
        rd.buf.clear();
        rd.buf.resize(len as usize, 0);
        rd.stream.read_exact(&mut rd.buf)?;
        ResponseFrame::decode(&rd.buf).map_err(ClientError::Protocol)
    }
}

/// Delivers one response to its waiter, or records a pipelined unlock's outcome.
fn route(st: &mut State, r: ResponseFrame) {
    if r.is_notice() {
        if r.status == Status::SessionEnded {
            st.ended = Some(EndReason::from_code(r.value));
        }
        return; // cluster notices: the blocking client does not reclaim
    }
    if r.op == op::LOCK && st.early.remove(&r.id) {
        // Already taken from the shared-memory slot.
        return;
    }
    if st.waiting.remove(&r.id) {
        st.ready.insert(r.id, r);
    } else if let Some(target) = st.deferred.remove(&r.id) {
        if !matches!(r.status, Status::Ok | Status::AlreadyReleased) {
            st.deferred_error.get_or_insert((target, r.status));
        }
    }
    // Anything else (keepalive answers of a dropped caller) is not awaited.
}

impl Drop for SyncCore {
    fn drop(&mut self) {
        *lock(&self.stop.stopped) = true;
        self.stop.cond.notify_all();
        if let Sink::Tls(t) = &lock(&self.writer).stream {
            t.close();
        }
        // Ends the session: the server sees EOF and releases what is left.
        self.socket.shutdown();
    }
}

fn keepalive_loop(core: Weak<SyncCore>, stop: Arc<Stop>, lease: Duration) {
    let period = (lease / 3).max(Duration::from_millis(10));
    let mut stopped = lock(&stop.stopped);
    loop {
        let (s, timeout) =
            stop.cond.wait_timeout(stopped, period).unwrap_or_else(PoisonError::into_inner);
        stopped = s;
        if *stopped {
            return;
        }
        if !timeout.timed_out() {
            continue;
        }
        drop(stopped);
        {
            let Some(core) = core.upgrade() else { return };
            if core.keepalive().is_err() {
                return;
            }
        }
        stopped = lock(&stop.stopped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_drops_the_frames_of_answers_read_from_the_slot() {
        let mut st = State::default();
        st.early.insert(5);
        st.waiting.insert(6);
        route(&mut st, ResponseFrame::new(op::LOCK, 5, Status::Ok, 9));
        route(&mut st, ResponseFrame::new(op::LOCK, 6, Status::Ok, 10));
        assert!(st.early.is_empty() && st.waiting.is_empty());
        assert_eq!(st.ready.len(), 1);
        assert_eq!(st.ready[&6].value, 10);
    }

    #[test]
    fn routing_delivers_awaited_responses_and_keeps_failed_pipelined_unlocks() {
        let mut st = State::default();
        st.waiting.insert(1);
        st.deferred.insert(2, 10);
        st.deferred.insert(3, 11);
        st.deferred.insert(4, 12);
        route(&mut st, ResponseFrame::new(op::LOCK, 1, Status::Ok, 7));
        route(&mut st, ResponseFrame::new(op::UNLOCK, 2, Status::Ok, 0));
        route(&mut st, ResponseFrame::new(op::UNLOCK, 3, Status::NotHeld, 0));
        route(&mut st, ResponseFrame::new(op::UNLOCK, 4, Status::ShuttingDown, 0));
        route(&mut st, ResponseFrame::new(op::KEEPALIVE, 99, Status::Ok, 0));
        assert_eq!(st.ready.remove(&1).map(|r| r.value), Some(7));
        assert!(st.waiting.is_empty() && st.deferred.is_empty() && st.ready.is_empty());
        // The first failure is kept (lock id and status) until reported.
        assert_eq!(st.deferred_error, Some((11, Status::NotHeld)));
    }
}
