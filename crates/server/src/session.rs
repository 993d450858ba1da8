//! One connection = one session: handshake, the read loop that decodes frames and submits
//! commands, and the session's [`SocketSink`] (responses are written by whoever produced
//! them, or by the sink's writer task when the socket is full; see the `reply` module).
//!
//! # Lifecycle
//!
//! 1. Handshake: read the client hello (head, then its token if any) within the lease;
//!    refuse a bad magic or unknown flags by closing, a version outside
//!    `MIN_VERSION..=VERSION` with [`HelloStatus::UnsupportedVersion`] (the session
//!    speaks the client's version otherwise), a bad token length with
//!    [`HelloStatus::AuthFailed`]. With an auth table, refuse a hello without a token
//!    ([`HelloStatus::AuthRequired`]) or with one the table does not know
//!    ([`HelloStatus::AuthFailed`]), logged at WARN (rate-limited, never the token); else
//!    register the session with the engine (`Open`) and answer [`ServerHello`].
//! 2. Loop: read a frame within the lease (any frame renews it; when the lease timer
//!    runs out, the `lapse` module judges whether the client really fell silent). A
//!    frame that does not decode gets an error response addressed by its op and id and
//!    the loop goes on; a `LOCK` or `RECLAIM` outside the ranges of the session's token
//!    gets `FORBIDDEN` before anything else sees it, and the loop goes on; a frame whose
//!    length prefix is over the limit or under the header size gets one error response
//!    (id 0) and the connection closes — the byte stream can no longer be split into
//!    frames.
//!    Every request gets exactly one response, so `requests read - responses written`
//!    counts queued responses plus waiting locks; when it exceeds
//!    `max_locks_per_session + MAX_BACKLOG` (a client that sends without reading) the
//!    loop stops reading until the writer makes progress, or ends the session after a
//!    lease without progress. Memory per session stays bounded. On a cluster node, a
//!    session that sent `WATCH_MAP` also gets a `MAP_CHANGED` notice from this loop each
//!    time the node's map changes (changes while the loop waits for the writer coalesce
//!    into one notice of the newest revision).
//! 3. End (EOF, I/O error, lease expiry, bad framing, server shutdown, the session's token
//!    revoked by a reload of the auth file: the `reload` module): a version 4 session
//!    that the server ends on its own gets a `SESSION_ENDED` notice with the
//!    [`EndReason`] first (`docs/PROTOCOL.md` §2.1). At shutdown the engine may answer
//!    the session's waiting LOCKs `SHUTTING_DOWN` before the loop sees the shutdown: the
//!    sink then puts the shutdown notice ahead of the first such answer
//!    ([`SocketSink::end_session`]), so the order holds on every engine. Then submit
//!    `Close`, which releases every lock of the session and withdraws its waits, waking
//!    other sessions.
//!    Timers of the session are aborted. The writer drains what is queued and shuts the
//!    socket down once the table and the read loop have dropped their sink handles.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};

use crate::auth::{self, AuthTable, Principal};
use crate::config::{CachePolicy, EngineKind, ServerConfig};
use crate::end_log::EndLog;
use crate::engine::Engine;
use crate::lapse::{self, Verdict};
use crate::metrics::{ErrorCounts, ServerMetrics};
use crate::ownership::Admission;
use crate::protocol::{
    self, op, read_frame, ClientHelloHead, DecodeError, EndReason, FrameError, HelloStatus, Mode,
    Request, RequestFrame, ResponseFrame, ServerHello, Status, Wait, ALL_PARTITIONS,
    CLIENT_HELLO_LEN, MAX_TOKEN_LEN, MIN_VERSION, VERSION,
};
use crate::reload::Live;
use crate::reply::{self, DirectWrite, ReplySink, SinkHandle, SocketSink};
use crate::shm::{ShmArea, ShmSink};
use crate::table::{Command, StatsKind};

/// Whether a session may lock named resources (`LOCK_NAMED`, `docs/design/names.md`);
/// before version 5 the named ops are unknown to it (`op::introduced_in`, checked before
/// anything else).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Names {
    /// Served: a session of a single server (any engine) or of a cluster node,
    /// without authentication.
    Served,
    /// Served for the names its token's prefixes allow (`FORBIDDEN` for the others): an
    /// authenticated session of a single server.
    Scoped(Arc<Principal>),
}

/// Responses a session may have queued beyond its waiting locks before its read loop
/// pauses.
pub(crate) const MAX_BACKLOG: u64 = 1024;

/// Bytes of a session's read buffer.
const READ_BUFFER: usize = 4096;

/// Why a session whose unwritten responses passed `max_output_bytes` ended.
pub(crate) const OUTPUT_OVER_LIMIT: &str = "unread responses over the output limit";

/// A connection that splits into an async read half and a [`DirectWrite`] half.
pub(crate) trait Transport: Send + 'static {
    /// The read half.
    type Read: AsyncRead + Unpin + Send + 'static;
    /// The write half.
    type Write: DirectWrite;
    /// Splits the connection.
    fn into_halves(self) -> (Self::Read, Self::Write);
    /// The socket under the read half (to look for unread input: the `lapse` module).
    fn socket_fd(read: &Self::Read) -> RawFd;
}

impl Transport for tokio::net::TcpStream {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
    fn socket_fd(read: &Self::Read) -> RawFd {
        AsRef::<tokio::net::TcpStream>::as_ref(read).as_raw_fd()
    }
}

impl Transport for tokio::net::UnixStream {
    type Read = tokio::net::unix::OwnedReadHalf;
    type Write = tokio::net::unix::OwnedWriteHalf;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
    fn socket_fd(read: &Self::Read) -> RawFd {
        AsRef::<tokio::net::UnixStream>::as_ref(read).as_raw_fd()
    }
}

/// What every session shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) engine: Engine,
    pub(crate) config: ServerConfig,
    pub(crate) next_session: AtomicU64,
    /// Error responses the handlers sent themselves, per status.
    pub(crate) handler_errors: Arc<ErrorCounts>,
    /// Metrics on: the clock and the session-end counters.
    pub(crate) metrics: Option<ServerMetrics>,
    /// Rate-limits the log lines of sessions that end badly.
    pub(crate) end_log: EndLog,
    /// The shared-memory slots (`ServerConfig::shm_slots > 0`).
    pub(crate) shm: Option<Arc<ShmArea>>,
    /// The auth table and TLS acceptor in force (the `reload` module); the auth table of
    /// `config` is only the one the server started with.
    pub(crate) live: Arc<Live>,
}

/// Runs one connection to completion. `local`: the peer is on this host (a Unix socket or
/// a loopback address), so it may map a shared-memory slot. `_alive` is dropped when the
/// session is over, which is how shutdown knows every session has finished.
pub(crate) async fn run<S: Transport>(
    stream: S,
    peer: String,
    local: bool,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
) {
    let (rd, wr) = stream.into_halves();
    let fd = S::socket_fd(&rd);
    // Buffered: a frame is a length prefix and a body, and a pipelining client sends
    // several per write; unbuffered, each would cost two `recv` calls.
    let mut rd = tokio::io::BufReader::with_capacity(READ_BUFFER, rd);
    let lease = shared.config.lease;
    let hello = match tokio::time::timeout(lease, read_hello(&mut rd)).await {
        Ok(Ok(h)) => h,
        Ok(Err(_)) => return shared.end_log.bad_end(&peer, 0, "closed before or during its hello"),
        Err(_) => return shared.end_log.bad_end(&peer, 0, "no hello within the lease"),
    };
    let refuse = |status, reason: &str| {
        match status {
            HelloStatus::AuthRequired | HelloStatus::AuthFailed => {
                shared.end_log.auth_refused(&peer, reason)
            }
            _ => shared.end_log.bad_end(&peer, 0, reason),
        }
        shared.server_hello(status, 0)
    };
    let (version, token) = match hello {
        HelloRead::Ours { version, token } => (version, token),
        HelloRead::NotHello(e) | HelloRead::BadFlags(e) => {
            return shared.end_log.bad_end(&peer, 0, &format!("bad hello: {e}"))
        }
        HelloRead::Version(v) => {
            let reason =
                format!("client speaks protocol version {v}, not {MIN_VERSION} to {VERSION}");
            return refuse_hello(&wr, refuse(HelloStatus::UnsupportedVersion, &reason)).await;
        }
        HelloRead::BadTokenLen(n) => {
            let reason = format!("token length {n} (1 to {MAX_TOKEN_LEN} allowed)");
            return refuse_hello(&wr, refuse(HelloStatus::AuthFailed, &reason)).await;
        }
    };
    // Who the session is, with an auth table (without one a token is ignored). The token
    // goes no further than this: logs name the principal, never the token. Subscribed
    // before the table is read, so that a reload after this read is seen by the loop.
    let mut auth_rx = shared.live.auth.subscribe();
    let table = auth_rx.borrow_and_update().clone();
    let principal = match (&table, token) {
        (None, _) => None,
        (Some(_), None) => {
            let reply = refuse(HelloStatus::AuthRequired, "no authentication token");
            return refuse_hello(&wr, reply).await;
        }
        (Some(table), Some(token)) => {
            let digest = auth::token_digest(&token);
            match table.by_digest(&digest) {
                Some(p) => Some((digest, p.clone())),
                None => {
                    let reply = refuse(HelloStatus::AuthFailed, "unknown authentication token");
                    return refuse_hello(&wr, reply).await;
                }
            }
        }
    };
    drop(table);
    let session = shared.next_session.fetch_add(1, Ordering::Relaxed) + 1;
    // The hello goes out before the session can receive any response.
    let mut out = Vec::with_capacity(64);
    ServerHello { version, ..shared.server_hello(HelloStatus::Accepted, session) }.encode(&mut out);
    if reply::write_all(&wr, &out).await.is_err() {
        return;
    }
    let sink = SocketSink::new(wr, shared.config.max_output_bytes, version >= 4);
    let mut tx: ReplySink = Arc::new(SinkHandle(sink.clone()));
    // On a server with slots every session's answers pass through a `ShmSink`, which
    // publishes them once the session attaches a slot (and returns the slot when the
    // table and this loop drop it).
    let shm = shared.shm.as_ref().map(|_| Arc::new(ShmSink::new(tx.clone())));
    if let Some(s) = &shm {
        tx = s.clone();
    }
    shared.engine.submit(Command::Open { session, sink: tx.clone() });
    match &principal {
        Some((_, p)) => tracing::debug!(%peer, session, token_name = %p.name(), "session opened"),
        None => tracing::debug!(%peer, session, "session opened"),
    }
    let writer = tokio::spawn(sink.clone().run_writer());
    let backlog_limit = shared.config.max_locks_per_session as u64 + MAX_BACKLOG;
    let mut read: u64 = 0;
    // When the last frame was read (at first: the hello).
    let mut last_frame = tokio::time::Instant::now();

    let mut handler = Handler {
        shared: &shared,
        session,
        tx,
        shm,
        local,
        // Only a token with ranges costs a check per LOCK and RECLAIM.
        limits: principal.as_ref().map(|(_, p)| p.clone()).filter(|p| p.ranges().is_some()),
        names: match &principal {
            Some((_, p)) => Names::Scoped(p.clone()),
            None => Names::Served,
        },
        version,
        nonce: 0,
        timers: JoinSet::new(),
        timer_of: HashMap::new(),
        map_watch: None,
        cache_on: false,
    };
    let mut buf = Vec::new();
    // The session ended after a `NOTICE FENCED` for all partitions (`lapse` module).
    let mut fenced = false;
    // Ends when a reload revokes the session's token (never without authentication).
    let revoked = revocation(auth_rx, principal.clone());
    tokio::pin!(revoked);
    let reason = loop {
        if *shutdown.borrow() {
            break "server shutdown";
        }
        if read.saturating_sub(sink.written()) > backlog_limit {
            tokio::select! {
                r = tokio::time::timeout(lease, sink.progress.notified()) => {
                    if r.is_err() {
                        break "peer stopped reading";
                    }
                    continue;
                }
                _ = shutdown.changed() => break "server shutdown",
                _ = sink.overflowed() => break OUTPUT_OVER_LIMIT,
                () = &mut revoked => break "token revoked",
            }
        }
        // The next frame, within the lease. A lease timer that runs out is judged before
        // the session ends (the `lapse` module): the read goes on meanwhile.
        let res = {
            let read = read_frame(&mut rd, &mut buf, shared.config.max_frame);
            tokio::pin!(read);
            let mut deadline = tokio::time::Instant::now() + lease;
            loop {
                tokio::select! {
                    r = &mut read => break Ok(r),
                    _ = shutdown.changed() => break Err(Ended::Shutdown),
                    _ = sink.overflowed() => break Err(Ended::OutputOverLimit),
                    () = &mut revoked => break Err(Ended::Revoked),
                    Some(revision) = map_changed(&mut handler.map_watch) => {
                        reply::send_now(&handler.tx, ResponseFrame::map_changed(revision));
                    }
                    () = tokio::time::sleep_until(deadline) => {
                        match lapse::judge(fd, shared.config.cluster.as_deref(), lease) {
                            Verdict::Alive(again) => {
                                deadline = tokio::time::Instant::now() + again
                            }
                            Verdict::Lapsed => break Err(Ended::Lapsed),
                            Verdict::Fenced => {
                                tracing::info!(%peer, session, "lease ran out while the node \
                                    was fenced: its locks were given up; telling the client");
                                let notice = ResponseFrame::notice(Status::Fenced, ALL_PARTITIONS);
                                reply::send_now(&handler.tx, notice);
                                break Err(Ended::Fenced);
                            }
                        }
                    }
                }
            }
        };
        let res = match res {
            Ok(r) => r,
            Err(Ended::Shutdown) => break "server shutdown",
            Err(Ended::OutputOverLimit) => break OUTPUT_OVER_LIMIT,
            Err(Ended::Lapsed) => break "lease expired",
            Err(Ended::Revoked) => break "token revoked",
            Err(Ended::Fenced) => {
                // The FENCED notice told the client to reclaim its locks at the new
                // owner; a SESSION_ENDED "lease expired" would tell it they are lost.
                fenced = true;
                break "lease expired";
            }
        };
        match res {
            Err(FrameError::Closed) => break "closed by client",
            Err(e @ (FrameError::TooLarge { .. } | FrameError::TooShort(_))) => {
                let status = match e {
                    FrameError::TooLarge { .. } => Status::FrameTooLarge,
                    _ => Status::Malformed,
                };
                handler.error(0, 0, status);
                break "bad framing";
            }
            Err(FrameError::Io(_)) => break "i/o error",
            Ok(()) => {
                read += 1;
                last_frame = tokio::time::Instant::now();
                handler.frame(&buf)
            }
        }
    };
    // Tell a version 4 client why the server ends its session (PROTOCOL.md §2.1), before
    // the answers still owed (the sink ignores this when a `SHUTTING_DOWN` answer already
    // put the shutdown notice first; a version 3 session gets no notice).
    let notice = end_reason(reason).filter(|_| !fenced).map(ResponseFrame::session_ended);
    sink.end_session(notice.as_ref());
    match reason {
        "closed by client" | "server shutdown" => {
            tracing::debug!(%peer, session, reason, "session closing")
        }
        // The operator's doing, once per session: not rate-limited as a bad end is.
        "token revoked" => {
            let name = principal.as_ref().map(|(_, p)| p.name()).unwrap_or_default();
            tracing::info!(%peer, session, token_name = name,
                "session ended: its token was revoked; its locks are released")
        }
        _ => shared.end_log.bad_end(&peer, session, reason),
    }
    if let Some(m) = &shared.metrics {
        m.session_ends.count(reason);
    }
    // A caching client serves its threads from its kept extents until 0.9 of a lease
    // after its last answered keepalive (docs/CACHING.md), and may not have read the
    // notice of an end the server chose. So the server closes the connection of such a
    // session now but keeps its locks until a lease after its last frame, as if its
    // lease had lapsed: nobody else is granted them while the client may still use them.
    // (At shutdown the process ends; a restarted server knows nothing of them.)
    let keep = handler.cache_on
        && matches!(reason, "token revoked" | OUTPUT_OVER_LIMIT | "bad framing")
        && !*shutdown.borrow();
    shared.engine.submit(if keep {
        Command::Detach { session }
    } else {
        Command::Close { session }
    });
    drop(handler);
    drop(sink);
    if keep {
        // The connection closes now; the locks wait below.
        drop(rd);
    }
    // The writer ends once the table has dropped the session's sink handle (after
    // `Close` or `Detach`). A peer that stopped reading could block it forever: give it
    // one lease, then drop it.
    let abort = writer.abort_handle();
    if tokio::time::timeout(lease.max(Duration::from_millis(100)), writer).await.is_err() {
        abort.abort();
    }
    if keep {
        tokio::select! {
            () = tokio::time::sleep_until(last_frame + lease) => {}
            _ = shutdown.changed() => {}
        }
        shared.engine.submit(Command::Close { session });
    }
}

/// The next change of the node's map after `WATCH_MAP`, with the new map's revision;
/// never without `WATCH_MAP`, nor once the node's ownership is gone.
async fn map_changed(watch: &mut Option<watch::Receiver<u64>>) -> Option<u64> {
    let Some(w) = watch else { return std::future::pending().await };
    match w.changed().await {
        Ok(()) => Some(*w.borrow_and_update()),
        Err(_) => {
            *watch = None;
            None
        }
    }
}

/// The reason a `SESSION_ENDED` notice gives for a session that ended with `reason` (one
/// of the read loop's); `None` when the server did not end it on its own (the client
/// closed it, or the socket failed).
fn end_reason(reason: &str) -> Option<EndReason> {
    match reason {
        "lease expired" => Some(EndReason::LeaseExpired),
        "server shutdown" => Some(EndReason::Shutdown),
        OUTPUT_OVER_LIMIT => Some(EndReason::OutputOverLimit),
        "peer stopped reading" => Some(EndReason::NotReading),
        "bad framing" => Some(EndReason::BadFraming),
        "token revoked" => Some(EndReason::TokenRevoked),
        _ => None,
    }
}

/// Returns once a reload puts in force an auth table that no longer admits the session
/// of `who` (the token's digest and principal); never without authentication.
async fn revocation(
    mut auth: tokio::sync::watch::Receiver<Option<Arc<AuthTable>>>,
    who: Option<([u8; 32], Arc<Principal>)>,
) {
    let Some((digest, who)) = who else { return std::future::pending().await };
    // `changed` fails only once the server is gone, and then so is the session.
    while auth.changed().await.is_ok() {
        if !auth.borrow_and_update().as_ref().is_some_and(|t| t.still_admits(&digest, &who)) {
            return;
        }
    }
    std::future::pending().await
}

/// Why the wait for a session's next frame ended without one.
enum Ended {
    Shutdown,
    OutputOverLimit,
    /// The lease lapsed ([`lapse::judge`]).
    Lapsed,
    /// The lease ran out while the node was fenced and owned nothing
    /// ([`Verdict::Fenced`]): the client was told to reclaim.
    Fenced,
    /// A reload revoked the session's token.
    Revoked,
}

/// What a client hello read off the wire held ([`read_hello`]).
pub(crate) enum HelloRead {
    /// Not a hello (a bad magic): nothing after the head was read.
    NotHello(DecodeError),
    /// Another protocol version: nothing after the head was read (what follows depends on
    /// the version).
    Version(u16),
    /// Flag bits this version does not define: nothing after the head was read.
    BadFlags(DecodeError),
    /// A token length outside `1..=MAX_TOKEN_LEN`: the token bytes were not read.
    BadTokenLen(u16),
    /// A hello of a version this server speaks (`MIN_VERSION..=VERSION`), with its token
    /// if it carried one.
    Ours {
        /// The client's version, which the session speaks.
        version: u16,
        /// The token, if the hello carried one.
        token: Option<Vec<u8>>,
    },
}

/// Reads a client hello: its head, then its token if the flags say one follows
/// (`docs/PROTOCOL.md` §1). The caller bounds the whole read with one lease.
pub(crate) async fn read_hello<R: AsyncRead + Unpin>(rd: &mut R) -> std::io::Result<HelloRead> {
    let mut head = [0u8; CLIENT_HELLO_LEN];
    rd.read_exact(&mut head).await?;
    let head = match ClientHelloHead::decode(&head) {
        Ok(h) => h,
        Err(e) => return Ok(HelloRead::NotHello(e)),
    };
    if !(MIN_VERSION..=VERSION).contains(&head.version) {
        return Ok(HelloRead::Version(head.version));
    }
    let version = head.version;
    if let Err(e) = head.check_flags() {
        return Ok(HelloRead::BadFlags(e));
    }
    if !head.has_token() {
        return Ok(HelloRead::Ours { version, token: None });
    }
    let n = rd.read_u16_le().await?;
    if n == 0 || usize::from(n) > MAX_TOKEN_LEN {
        return Ok(HelloRead::BadTokenLen(n));
    }
    let mut token = vec![0u8; n.into()];
    rd.read_exact(&mut token).await?;
    Ok(HelloRead::Ours { version, token: Some(token) })
}

impl Shared {
    /// The server hello this server sends with `status` (session `0` on a refusal).
    pub(crate) fn server_hello(&self, status: HelloStatus, session: u64) -> ServerHello {
        ServerHello {
            version: VERSION,
            status,
            grant: self.config.grant,
            session,
            lease_ms: u32::try_from(self.config.lease.as_millis()).unwrap_or(u32::MAX),
            max_frame: self.config.max_frame,
        }
    }
}

/// Sends a refusing server hello; the caller returns, and dropping the write half then
/// shuts the write side down.
pub(crate) async fn refuse_hello<W: DirectWrite>(wr: &W, reply: ServerHello) {
    let mut out = Vec::with_capacity(64);
    reply.encode(&mut out);
    let _ = reply::write_all(wr, &out).await;
}

/// Per-session state of the read loop.
struct Handler<'a> {
    shared: &'a Shared,
    session: u64,
    tx: ReplySink,
    /// The session's sink when the server has shared-memory slots.
    shm: Option<Arc<ShmSink>>,
    /// The peer is on this host.
    local: bool,
    /// The session's principal when its token may lock only some ranges (`None`: the
    /// whole unit space, or no authentication).
    limits: Option<Arc<Principal>>,
    /// Whether `LOCK_NAMED` is served.
    names: Names,
    /// The protocol version the session speaks.
    version: u16,
    nonce: u64,
    /// Timeout timers of this session's locks; aborted when the session ends.
    timers: JoinSet<()>,
    /// The timers by lock id, so `UNLOCK`/`CANCEL` abort them: the number of pending
    /// timers stays bounded by the live locks instead of growing with every timed request.
    timer_of: HashMap<u64, Vec<AbortHandle>>,
    /// After `WATCH_MAP` (cluster nodes): the node's map changes, each pushed to the
    /// client as a `MAP_CHANGED` notice by the read loop.
    map_watch: Option<watch::Receiver<u64>>,
    /// After `CACHE_ON` (version 6): `LOCK_CACHED` and `GIVE_BACK` are served.
    cache_on: bool,
}

impl Handler<'_> {
    fn error(&self, op: u8, id: u64, status: Status) {
        self.shared.handler_errors.count(status);
        reply::send_now(&self.tx, ResponseFrame::new(op, id, status, 0));
    }

    /// Answers a request the ownership check refused.
    fn refuse(&self, r: Box<ResponseFrame>) {
        self.shared.handler_errors.count(r.status);
        reply::send_now(&self.tx, *r);
    }

    /// Whether the session's token may lock `start..end`; answers `FORBIDDEN` if not.
    /// Checked before anything else looks at a `LOCK` or `RECLAIM` (the engine, the
    /// cluster ownership, or the `NOT_CLUSTERED` answer of a single server).
    fn permitted(&self, op: u8, id: u64, start: u64, end: u64) -> bool {
        let Some(p) = &self.limits else { return true };
        if p.may_lock(start, end) {
            return true;
        }
        let (session, token_name) = (self.session, p.name());
        tracing::debug!(session, %token_name, id, start, end, "outside the token's ranges");
        self.error(op, id, Status::Forbidden);
        false
    }

    fn abort_timers(&mut self, target: u64) {
        for h in self.timer_of.remove(&target).unwrap_or_default() {
            h.abort();
        }
    }

    /// `LOCK`, and `LOCK_NAMED` of `name`: both are answered as `LOCK`s; `LOCK_CACHED`
    /// (with `desired`) is answered as itself.
    #[allow(clippy::too_many_arguments)]
    fn lock(
        &mut self,
        id: u64,
        start: u64,
        end: u64,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        wait: Wait,
        desired: Option<(u64, u64)>,
    ) {
        let answer = if desired.is_some() { op::LOCK_CACHED } else { op::LOCK };
        if !self.permitted(answer, id, start, end) {
            return;
        }
        // A token limited to some ranges: the grant grows only inside them, so a desired
        // range beyond them is not grown at all.
        let desired = match (&self.limits, desired) {
            (Some(p), Some((ds, de))) if !p.may_lock(ds, de) => Some((start, end)),
            (_, d) => d,
        };
        let (session, engine) = (self.session, &self.shared.engine);
        self.nonce += 1;
        let nonce = self.nonce;
        let may_wait = wait != Wait::Try;
        let arrived = self.shared.metrics.as_ref().map_or(0, |m| m.clock.now());
        // On a cluster node a named lock lies in its name's stripe's partition.
        let cluster = self.shared.config.cluster.as_ref();
        let hash = cluster.and(name.as_deref()).map(protocol::name_hash);
        let cmd = Command::Lock {
            session,
            id,
            start,
            end,
            name,
            mode,
            may_wait,
            nonce,
            arrived,
            desired,
        };
        if let Some(own) = cluster {
            let submit = || engine.submit(cmd);
            if let Err(r) = own.admit(Admission::Lock, answer, id, start, end, hash, submit) {
                return self.refuse(r);
            }
        } else {
            engine.submit(cmd);
        }
        if let Wait::Timeout(d) = wait {
            while self.timers.try_join_next().is_some() {}
            let engine = engine.clone();
            let h = self.timers.spawn(async move {
                tokio::time::sleep(d).await;
                engine.submit(Command::Expire { session, target: id, nonce });
            });
            if self.timer_of.len() > 2 * self.shared.config.max_locks_per_session {
                self.timer_of.retain(|_, hs| {
                    hs.retain(|h| !h.is_finished());
                    !hs.is_empty()
                });
            }
            self.timer_of.entry(id).or_default().push(h);
        }
    }

    /// How a named op (`LOCK_NAMED`, `RECLAIM_NAMED`) is refused here, whatever its
    /// payload: `(op, status)` of the answer, `None` where it is served (a token's name
    /// prefixes are checked later, [`Handler::name_permitted`]). `RECLAIM_NAMED` is
    /// unknown on a single server (a cluster's op); sessions before version 5 never get
    /// here (`op::introduced_in`).
    fn named_refusal(&self, named_op: u8) -> Option<(u8, Status)> {
        let reclaim = named_op == op::RECLAIM_NAMED;
        (reclaim && self.shared.config.cluster.is_none())
            .then_some((op::UNKNOWN, Status::UnknownOp))
    }

    /// Whether the session's token may lock the resource `name`; answers the request
    /// (`op`: `LOCK` or `RECLAIM`) `FORBIDDEN` if not (the session goes on).
    fn name_permitted(&self, op: u8, id: u64, name: &[u8]) -> bool {
        let Names::Scoped(p) = &self.names else { return true };
        if p.may_lock_name(name) {
            return true;
        }
        let (session, token_name) = (self.session, p.name());
        let name = name.escape_ascii();
        let why = "the name matches none of the token's prefixes";
        tracing::debug!(session, %token_name, id, %name, "{why}");
        self.error(op, id, Status::Forbidden);
        false
    }

    /// `RECLAIM`, and `RECLAIM_NAMED` of `name` (cluster nodes): both are answered as
    /// `RECLAIM`s.
    fn reclaim(
        &mut self,
        id: u64,
        start: u64,
        end: u64,
        name: Option<Arc<[u8]>>,
        mode: Mode,
        token: u64,
    ) {
        if !self.permitted(op::RECLAIM, id, start, end) {
            return;
        }
        let Some(own) = &self.shared.config.cluster else {
            return self.error(op::RECLAIM, id, Status::NotClustered);
        };
        let (session, engine) = (self.session, &self.shared.engine);
        let hash = name.as_deref().map(protocol::name_hash);
        let cmd = Command::Reclaim { session, id, start, end, name, mode, token };
        let submit = || engine.submit(cmd);
        let what = Admission::Reclaim { token };
        if let Err(r) = own.admit(what, op::RECLAIM, id, start, end, hash, submit) {
            self.refuse(r);
        }
    }

    fn frame(&mut self, body: &[u8]) {
        // An op newer than the session's version is unknown to it, as to a server that
        // predates the op, before its payload is looked at (the op byte alone is read on
        // every request; the header only when it is refused).
        let newer = body.first().is_some_and(|&op| self.version < op::introduced_in(op));
        if let Some((_, id)) = RequestFrame::peek_header(body).filter(|_| newer) {
            return self.error(op::UNKNOWN, id, Status::UnknownOp);
        }
        let frame = match RequestFrame::decode(body) {
            Ok(f) => f,
            Err(e) => {
                let (op, id) = RequestFrame::peek_header(body).unwrap_or((0, 0));
                tracing::debug!(session = self.session, error = %e, "bad request");
                let named = matches!(op, op::LOCK_NAMED | op::RECLAIM_NAMED);
                let (op, status) = match named.then(|| self.named_refusal(op)).flatten() {
                    Some(refusal) => refusal,
                    // A named lock (reclaim) is answered as a lock (reclaim).
                    None if op == op::LOCK_NAMED => (op::LOCK, e.status()),
                    None if op == op::RECLAIM_NAMED => (op::RECLAIM, e.status()),
                    None => (op, e.status()),
                };
                // Never echo an unknown op byte: `0x81` would come back as a LOCK reply.
                let op = if status == Status::UnknownOp { op::UNKNOWN } else { op };
                self.error(op, id, status);
                return;
            }
        };
        let (session, id) = (self.session, frame.id);
        let engine = &self.shared.engine;
        match frame.request {
            Request::Lock { start, end, mode, wait } => {
                self.lock(id, start, end, None, mode, wait, None)
            }
            Request::CacheOn => {
                let config = &self.shared.config;
                // On a cluster node too: a grant grows only inside its partition (or name
                // stripe), and a kept extent is an ordinary hold for moves and failovers,
                // reclaimed as one (docs/CACHING.md, "In a cluster").
                if config.engine == EngineKind::RangeLock || config.cache.policy == CachePolicy::Off
                {
                    self.error(op::CACHE_ON, id, Status::CacheUnavailable);
                } else {
                    self.cache_on = true;
                    engine.submit(Command::CacheOn { session, id });
                }
            }
            Request::LockCached { .. } | Request::GiveBack { .. } if !self.cache_on => {
                self.error(frame.request.op(), id, Status::CacheUnavailable)
            }
            Request::LockCached { start, end, mode, wait, desired_start, desired_end, name } => {
                let desired = Some((desired_start, desired_end));
                if name.is_empty() {
                    return self.lock(id, start, end, None, mode, wait, desired);
                }
                match self.named_refusal(op::LOCK_NAMED) {
                    None if self.name_permitted(op::LOCK_CACHED, id, name) => {
                        self.lock(id, start, end, Some(Arc::from(name)), mode, wait, desired)
                    }
                    None => {}
                    Some((op, status)) => self.error(op, id, status),
                }
            }
            Request::GiveBack { target, start, end, downgrade, used } => engine
                .submit(Command::GiveBack { session, id, target, start, end, downgrade, used }),
            Request::LockNamed { start, end, mode, wait, name } => {
                match self.named_refusal(op::LOCK_NAMED) {
                    None if self.name_permitted(op::LOCK, id, name) => {
                        self.lock(id, start, end, Some(Arc::from(name)), mode, wait, None)
                    }
                    None => {}
                    Some((op, status)) => self.error(op, id, status),
                }
            }
            Request::Unlock { target } => {
                // The lock is released or withdrawn: its timeout no longer matters.
                self.abort_timers(target);
                engine.submit(Command::Unlock { session, id, target })
            }
            Request::Cancel { target } => {
                // Withdrawn, or held (NOT_WAITING) where the timeout is moot anyway.
                self.abort_timers(target);
                engine.submit(Command::Cancel { session, id, target })
            }
            Request::Poll { target } => engine.submit(Command::Poll { session, id, target }),
            Request::ReclaimNamed { start, end, mode, token, name } => {
                match self.named_refusal(op::RECLAIM_NAMED) {
                    None if self.name_permitted(op::RECLAIM, id, name) => {
                        self.reclaim(id, start, end, Some(Arc::from(name)), mode, token)
                    }
                    None => {}
                    Some((op, status)) => self.error(op, id, status),
                }
            }
            Request::Keepalive => {
                reply::send_now(&self.tx, ResponseFrame::new(op::KEEPALIVE, id, Status::Ok, 0));
            }
            // A single server is not a cluster node: RECLAIM and MAP get NOT_CLUSTERED
            // (PROTOCOL.md §7) -- a RECLAIM outside the token's ranges FORBIDDEN first.
            Request::Reclaim { start, end, mode, token } => {
                self.reclaim(id, start, end, None, mode, token)
            }
            Request::Map => match &self.shared.config.cluster {
                Some(own) => match own.map_reply(id) {
                    r if r.status == Status::Ok => reply::send_now(&self.tx, r),
                    // No map yet (starting): counted like any refusal.
                    r => self.refuse(Box::new(r)),
                },
                None => self.error(op::MAP, id, Status::NotClustered),
            },
            Request::WatchMap => match &self.shared.config.cluster {
                Some(own) => {
                    // Subscribed before the revision is read: a change in between is
                    // announced, not lost.
                    let watch = own.watch_map();
                    let revision = own.map().map_or(0, |m| m.revision);
                    // Again: the first watch stays, with any change not pushed yet.
                    self.map_watch.get_or_insert(watch);
                    let r = ResponseFrame::new(op::WATCH_MAP, id, Status::Ok, revision);
                    reply::send_now(&self.tx, r);
                }
                None => self.error(op::WATCH_MAP, id, Status::NotClustered),
            },
            Request::ShmAttach => {
                let r = match (&self.shared.shm, &self.shm) {
                    (Some(area), Some(sink)) => sink.attach(area, session, id, self.local),
                    _ => ResponseFrame::new(op::SHM_ATTACH, id, Status::ShmUnavailable, 0),
                };
                if r.status.is_error() {
                    self.shared.handler_errors.count(r.status);
                    tracing::debug!(session, status = %r.status, "shm attach refused");
                } else {
                    tracing::debug!(session, slot = r.value, "shm slot attached");
                }
                reply::send_now(&self.tx, r);
            }
            Request::Stats { max_entries } => {
                let max_entries = max_entries.min(self.shared.config.stats_entries_cap());
                let kind = StatsKind::Plain;
                engine.submit(Command::Stats { session, id, max_entries, kind })
            }
            Request::StatsNamed { max_entries } => {
                let max_entries = max_entries.min(self.shared.config.stats_entries_cap());
                let kind = StatsKind::Named;
                engine.submit(Command::Stats { session, id, max_entries, kind })
            }
            Request::StatsCached { max_entries } => {
                let max_entries = max_entries.min(self.shared.config.stats_entries_cap());
                let kind = StatsKind::Cached;
                engine.submit(Command::Stats { session, id, max_entries, kind })
            }
        }
    }
}
