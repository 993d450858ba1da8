//! The async client: one connection = one server session.
//!
//! # Structure
//!
//! Three tasks per connection: a *writer* that drains an unbounded channel of request
//! frames into the socket (batching), a *reader* that decodes responses and completes the
//! oneshot registered under the request id, and a *keepalive* that sends `KEEPALIVE`
//! every third of the lease while the client lives. Requests are pipelined: any number of
//! tasks may wait on the same connection.
//!
//! The reader recognises a server-pushed **notice** (a cluster node gave partitions up;
//! `docs/PROTOCOL.md` §7.6) by its op byte, not its id, and hands it to every receiver of
//! [`AsyncClient::notices`]. A `CALLBACK` notice (cached locks, version 6) goes instead to
//! the unbounded channel a cached client installed ([`CallbackSink`]), so none is lost to
//! a lagging receiver: a lost callback would leave another client waiting for good.
//!
//! # An unresponsive server
//!
//! A server that is stopped (`SIGSTOP`, a suspended VM) keeps its TCP connections open:
//! nothing fails, nothing is ever answered. The keepalive task therefore waits for the
//! answers of its keepalives: when one stays unanswered for a whole lease, the client
//! declares the connection lost ([`LossCause::Unresponsive`]) and closes it. The server,
//! if it ever runs again, has ended the session by then anyway (it heard nothing for a
//! lease either).
//!
//! # Reconnect semantics
//!
//! There is no automatic reconnect. A session's locks live exactly as long as its
//! connection: if the connection drops (network, server restart, lease expiry because the
//! process stalled), the server releases them and every waiting or future call on this
//! client returns [`ClientError::ConnectionLost`]. Guards obtained earlier are then
//! stale — check [`AsyncClient::is_connected`] and use the fencing token
//! ([`AsyncLockGuard::token`]) to let storage reject writes from a stale holder. To go on,
//! connect a new client and lock again.
//!
//! # Cancellation
//!
//! Dropping a `lock` future while it waits withdraws the request (the client sends
//! `UNLOCK` of that lock id, which cancels a waiting lock or releases one granted
//! meanwhile); dropping a guard releases the lock.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rangelock_proto::{
    read_frame, Callback, EndReason, FrameError, GrantMode, Mode, Request, RequestFrame,
    ResponseFrame, ServerHello, StatsBody, Status, Wait, ALL_PARTITIONS, SERVER_HELLO_LEN, VERSION,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::endpoint::Endpoint;
use crate::error::{
    check_name, check_wait, fallback_version, ClientError, ConnectionLoss, LossCause,
};
use crate::guard::AsyncLockGuard;
use crate::options::ConnectOptions;
use crate::poll::PollSchedule;

/// Largest response frame the client accepts (a `STATS` reply can be large).
const MAX_RESPONSE_FRAME: u32 = 16 * 1024 * 1024;

/// Notices buffered per receiver of [`AsyncClient::notices`] before it lags.
const NOTICE_BUFFER: usize = 256;

/// A notice a cluster node pushed without a request (`docs/PROTOCOL.md` §7.6): it no
/// longer serves some partitions, and the locks this session held on them are gone; or,
/// after a `WATCH_MAP`, its map changed (§7.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Notice {
    /// [`Status::NotOwner`] (the partitions moved, or the node's ownership of them was
    /// lost), [`Status::Fenced`] (the node lost its etcd lease) or
    /// [`Status::MapChanged`] (the node's map changed: no lock is affected).
    pub status: Status,
    /// The partition, or `None` for every partition of the node (on the wire
    /// `0xffffffffffffffff`; a value that names no partition also reads as all). For
    /// `MapChanged`: the new map's revision, if it fits.
    pub partition: Option<u32>,
    /// The notice's `value` as sent: the partition, or for `MapChanged` the revision.
    pub value: u64,
}

impl Notice {
    fn of(r: &ResponseFrame) -> Notice {
        let partition = match r.value {
            ALL_PARTITIONS => None,
            v => u32::try_from(v).ok(),
        };
        Notice { status: r.status, partition, value: r.value }
    }

    /// Whether the notice concerns partition `p`: the node gave it up (a `MapChanged`
    /// notice concerns no partition).
    pub fn covers(&self, p: u32) -> bool {
        self.status != Status::MapChanged && self.partition.is_none_or(|q| q == p)
    }

    /// The revision of a `MapChanged` notice.
    pub fn map_revision(&self) -> Option<u64> {
        (self.status == Status::MapChanged).then_some(self.value)
    }
}

/// Where the reader delivers `CALLBACK` notices: `(lock id, part wanted)`. Unset until a
/// cached client installs it; while unset they go to [`AsyncClient::notices`] as any other.
pub(crate) type CallbackSink = Arc<Mutex<Option<mpsc::UnboundedSender<(u64, Callback)>>>>;

/// Requests waiting for their response, and whether the connection is gone.
#[derive(Debug)]
struct PendingMap {
    closed: bool,
    /// How the connection was lost; set together with `closed`.
    loss: Option<ConnectionLoss>,
    /// When the last keepalive the server answered was sent (at first: the handshake).
    last_keepalive: Instant,
    /// When the last keepalive was sent (at first: the handshake).
    last_sent: Instant,
    /// The gaps between keepalives sent after `last_keepalive` (when each ended, how
    /// long): a few, as a keepalive goes out every third of a lease and the connection
    /// is given up after a lease without an answer.
    quiet: Vec<(Instant, Duration)>,
    waiters: HashMap<u64, oneshot::Sender<ResponseFrame>>,
}

impl PendingMap {
    fn new(now: Instant) -> PendingMap {
        PendingMap {
            closed: false,
            loss: None,
            last_keepalive: now,
            last_sent: now,
            quiet: Vec::new(),
            waiters: HashMap::new(),
        }
    }

    /// A keepalive goes out `now`.
    fn sent_keepalive(&mut self, now: Instant) {
        let gap = now.saturating_duration_since(self.last_sent);
        self.quiet.push((now, gap));
        self.last_sent = now;
    }

    /// The server answered the keepalive sent at `sent`: it had the session then.
    fn answered(&mut self, sent: Instant) {
        if sent > self.last_keepalive {
            self.last_keepalive = sent;
        }
        let alive = self.last_keepalive;
        self.quiet.retain(|&(ended, _)| ended > alive);
    }

    /// How the connection, found lost `now`, was lost.
    fn loss(&self, cause: LossCause, lease: Duration, now: Instant) -> ConnectionLoss {
        let alive_at = self.last_keepalive;
        let since_sent = now.saturating_duration_since(self.last_sent);
        let quiet_for = self.quiet.iter().map(|q| q.1).fold(since_sent, Duration::max);
        let silent_for = now.saturating_duration_since(alive_at);
        ConnectionLoss { cause, silent_for, lease, alive_at, quiet_for }
    }
}

#[derive(Debug)]
struct Pending {
    map: Mutex<PendingMap>,
    /// Woken when the connection is marked gone (see [`AsyncClient::lost`]).
    lost: tokio::sync::Notify,
    lease: Duration,
    /// The handshake: what `alive` counts from.
    base: Instant,
    /// `PendingMap::last_keepalive`, in nanoseconds after `base`, for readers that must
    /// not take the mutex (the cached client's fast path, [`Core::alive_at`]).
    alive: AtomicU64,
}

impl Pending {
    fn new(lease: Duration) -> Pending {
        let base = Instant::now();
        let map = PendingMap::new(base);
        let lost = tokio::sync::Notify::new();
        Pending { map: Mutex::new(map), lost, lease, base, alive: AtomicU64::new(0) }
    }

    /// The server answered a keepalive sent at `sent`: it had the session then.
    fn answered(&self, sent: Instant) {
        self.lock().answered(sent);
        let ns = u64::try_from(sent.saturating_duration_since(self.base).as_nanos());
        // Relaxed: a time, not a publication; a reader that sees an older one only trusts
        // the session less long.
        self.alive.fetch_max(ns.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PendingMap> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection gone (the first cause wins); dropping the senders fails every
    /// waiter, and the reader and writer tasks stop, which closes the socket.
    fn close(&self, cause: LossCause) {
        {
            let mut p = self.lock();
            if p.loss.is_none() {
                p.loss = Some(p.loss(cause, self.lease, Instant::now()));
            }
            p.closed = true;
            p.waiters.clear();
        }
        self.lost.notify_waiters();
    }

    /// Completes once the connection is marked gone (at once if it already is).
    async fn closed(&self) {
        loop {
            let notified = self.lost.notified();
            tokio::pin!(notified);
            // Registered before the check, so a close in between still wakes us.
            notified.as_mut().enable();
            if self.lock().closed {
                return;
            }
            notified.await;
        }
    }
}

/// Closes the pending map when the reader task ends for any reason (EOF, error, or the
/// runtime dropping it), with the cause the reader found.
struct CloseOnDrop {
    pending: Arc<Pending>,
    cause: LossCause,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.pending.close(self.cause);
    }
}

/// A request on its way to the writer task: a frame, or a named lock, whose frame would
/// borrow its name.
#[derive(Debug)]
pub(crate) enum Outgoing {
    Frame(RequestFrame<'static>),
    LockNamed {
        id: u64,
        start: u64,
        end: u64,
        mode: Mode,
        wait: Wait,
        name: Arc<[u8]>,
    },
    ReclaimNamed {
        id: u64,
        start: u64,
        end: u64,
        mode: Mode,
        token: u64,
        name: Arc<[u8]>,
    },
    /// `LOCK_CACHED` (an empty name: the unnamed resource).
    LockCached {
        id: u64,
        start: u64,
        end: u64,
        mode: Mode,
        wait: Wait,
        desired: (u64, u64),
        name: Arc<[u8]>,
    },
}

impl Outgoing {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Outgoing::Frame(f) => f.encode(out),
            Outgoing::LockNamed { id, start, end, mode, wait, name } => {
                let request =
                    Request::LockNamed { start: *start, end: *end, mode: *mode, wait: *wait, name };
                RequestFrame { id: *id, request }.encode(out)
            }
            Outgoing::ReclaimNamed { id, start, end, mode, token, name } => {
                let (start, end, mode, token) = (*start, *end, *mode, *token);
                let request = Request::ReclaimNamed { start, end, mode, token, name };
                RequestFrame { id: *id, request }.encode(out)
            }
            Outgoing::LockCached { id, start, end, mode, wait, desired, name } => {
                let request = Request::LockCached {
                    start: *start,
                    end: *end,
                    mode: *mode,
                    wait: *wait,
                    desired_start: desired.0,
                    desired_end: desired.1,
                    name,
                };
                RequestFrame { id: *id, request }.encode(out)
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Core {
    out: mpsc::UnboundedSender<Outgoing>,
    pending: Arc<Pending>,
    notices: broadcast::Sender<Notice>,
    callbacks: CallbackSink,
    next_id: AtomicU64,
    hello: ServerHello,
}

impl Core {
    /// How the connection was lost, once it is.
    pub(crate) fn loss(&self) -> Option<ConnectionLoss> {
        self.pending.lock().loss.clone()
    }

    /// When the last keepalive the server answered was sent (at first: the handshake):
    /// the server had the session then, so it keeps it at least a lease after that.
    pub(crate) fn alive_at(&self) -> Instant {
        // Relaxed: see `Pending::answered`.
        let ns = self.pending.alive.load(Ordering::Relaxed);
        self.pending.base + Duration::from_nanos(ns)
    }

    /// Sends a `KEEPALIVE` and waits for its answer, which moves [`Core::alive_at`] to
    /// the time it was sent.
    pub(crate) async fn reassure(&self) -> Result<(), ClientError> {
        let sent = Instant::now();
        let r = self.call(Request::Keepalive).await?;
        if r.status != Status::Ok {
            return Err(ClientError::Server(r.status));
        }
        self.pending.answered(sent);
        Ok(())
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and waits for its response.
    pub(crate) async fn call(
        &self,
        request: Request<'static>,
    ) -> Result<ResponseFrame, ClientError> {
        let id = self.next_id();
        let rx = self.register(id)?;
        self.send(id, request)?;
        rx.await.map_err(|_| ClientError::ConnectionLost)
    }

    /// Registers a waiter for the answer to request `id` (sent next, with [`Core::send`]
    /// or [`Core::send_outgoing`]).
    pub(crate) fn register(
        &self,
        id: u64,
    ) -> Result<oneshot::Receiver<ResponseFrame>, ClientError> {
        let (tx, rx) = oneshot::channel();
        let mut p = self.pending.lock();
        if p.closed {
            return Err(ClientError::ConnectionLost);
        }
        p.waiters.insert(id, tx);
        Ok(rx)
    }

    pub(crate) fn unregister(&self, id: u64) {
        self.pending.lock().waiters.remove(&id);
    }

    pub(crate) fn send(&self, id: u64, request: Request<'static>) -> Result<(), ClientError> {
        self.send_outgoing(Outgoing::Frame(RequestFrame { id, request }))
    }

    pub(crate) fn send_outgoing(&self, o: Outgoing) -> Result<(), ClientError> {
        self.out.send(o).map_err(|_| ClientError::ConnectionLost)
    }

    /// Sends a request whose response nobody awaits (the reader drops it).
    pub(crate) fn send_and_forget(&self, request: Request<'static>) {
        let _ = self.send(self.next_id(), request);
    }

    /// Releases lock `id`, waiting for the server's answer.
    pub(crate) async fn unlock(&self, target: u64) -> Result<(), ClientError> {
        let r = self.call(Request::Unlock { target }).await?;
        match r.status {
            Status::Ok | Status::AlreadyReleased => Ok(()),
            s => Err(ClientError::Server(s)),
        }
    }
}

/// An async client; cheap to clone (clones share the connection and session).
#[derive(Clone, Debug)]
pub struct AsyncClient {
    core: Arc<Core>,
}

impl AsyncClient {
    /// Connects and performs the handshake. Must run inside a tokio runtime, which then
    /// drives the connection's tasks.
    pub async fn connect(endpoint: &Endpoint) -> Result<AsyncClient, ClientError> {
        Self::connect_with(endpoint, &ConnectOptions::default()).await
    }

    /// Connects with `options` (an authentication token) and performs the handshake.
    ///
    /// The client offers protocol version 6; an older server that refuses it naming a
    /// version this client speaks (5, 4 or 3) is connected to again with a hello of that
    /// version (`docs/PROTOCOL.md` §1).
    pub async fn connect_with(
        endpoint: &Endpoint,
        options: &ConnectOptions,
    ) -> Result<AsyncClient, ClientError> {
        match Self::connect_version(endpoint, options, VERSION).await {
            Err(e) => match fallback_version(&e, VERSION) {
                Some(v) => Self::connect_version(endpoint, options, v).await,
                None => Err(e),
            },
            ok => ok,
        }
    }

    async fn connect_version(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        version: u16,
    ) -> Result<AsyncClient, ClientError> {
        match endpoint {
            Endpoint::Tcp(addr) => {
                let tls = options.tls_options().map(|t| t.prepare(endpoint)).transpose()?;
                let s = TcpStream::connect(addr.as_str())
                    .await
                    .map_err(|e| ClientError::connect(endpoint, e))?;
                s.set_nodelay(true)?;
                match tls {
                    None => Self::handshake(endpoint, options, version, s).await,
                    Some((config, name)) => {
                        let s = tokio_rustls::TlsConnector::from(config)
                            .connect(name, s)
                            .await
                            .map_err(|e| crate::tls::io_error(endpoint, true, e))?;
                        Self::handshake(endpoint, options, version, s).await
                    }
                }
            }
            Endpoint::Unix(p) => {
                if options.tls_options().is_some() {
                    return Err(crate::tls::unix_refused(endpoint));
                }
                let s =
                    UnixStream::connect(p).await.map_err(|e| ClientError::connect(endpoint, e))?;
                Self::handshake(endpoint, options, version, s).await
            }
        }
    }

    async fn handshake<S>(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        version: u16,
        stream: S,
    ) -> Result<AsyncClient, ClientError>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut out = Vec::new();
        options.hello(version).encode(&mut out);
        let mut buf = [0u8; SERVER_HELLO_LEN];
        let io = async {
            wr.write_all(&out).await?;
            // A TLS stream may hold records back until flushed (a plain socket never).
            wr.flush().await?;
            rd.read_exact(&mut buf).await.map(drop)
        };
        // On TLS, a server that refuses the client's certificate says so here (TLS 1.3
        // finishes the client's side of the handshake before the server checks it).
        io.await.map_err(|e| crate::tls::io_error(endpoint, false, e))?;
        let hello = ServerHello::decode(&buf).map_err(ClientError::Handshake)?;
        ClientError::check_hello(&hello)?;
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let lease = Duration::from_millis(hello.lease_ms.into());
        let pending = Arc::new(Pending::new(lease));
        let (notices, _) = broadcast::channel(NOTICE_BUFFER);
        let callbacks = CallbackSink::default();
        let core = Arc::new(Core {
            out: out_tx,
            pending: pending.clone(),
            notices: notices.clone(),
            callbacks: callbacks.clone(),
            next_id: AtomicU64::new(1),
            hello,
        });
        tokio::spawn(write_loop(wr, out_rx, pending.clone()));
        tokio::spawn(read_loop(rd, pending.clone(), notices, callbacks));
        tokio::spawn(keepalive_loop(Arc::downgrade(&core), pending, lease));
        Ok(AsyncClient { core })
    }

    /// The connection underneath (for the cached client).
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// From now on, `CALLBACK` notices go to `sink` instead of [`AsyncClient::notices`].
    pub(crate) fn set_callback_sink(&self, sink: mpsc::UnboundedSender<(u64, Callback)>) {
        *self.core.callbacks.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }

    /// The protocol version of the session.
    pub(crate) fn version(&self) -> u16 {
        self.core.hello.version
    }

    /// The server-assigned session id.
    pub fn session(&self) -> u64 {
        self.core.hello.session
    }

    /// How the server delivers grants of queued locks.
    pub fn grant_mode(&self) -> GrantMode {
        self.core.hello.grant
    }

    /// The server's lease: it ends the session after this long without a frame (the
    /// client's keepalive task sends one every third of it).
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.core.hello.lease_ms.into())
    }

    /// Whether the connection is still up (a `false` means every lock is gone).
    pub fn is_connected(&self) -> bool {
        !self.core.pending.lock().closed
    }

    /// Completes once the connection is gone (at once if it already is): every lock of
    /// this client is then released. The keepalive task keeps the socket busy, so a
    /// server that ends the session (say, its lease lapsed while the process was stopped)
    /// is noticed within a third of the lease of the process running again, and a server
    /// that stops answering (stopped itself) within about a lease and a third
    /// ([`LossCause::Unresponsive`]).
    pub async fn lost(&self) {
        self.core.pending.closed().await
    }

    /// How the connection was lost, once it is ([`AsyncClient::lost`]); `None` while it
    /// is up.
    pub fn loss(&self) -> Option<ConnectionLoss> {
        self.core.pending.lock().loss.clone()
    }

    /// A future that completes when the connection is gone, with how it was lost, without
    /// keeping the connection alive (for watchers that must not hold a client).
    pub(crate) fn lost_signal(
        &self,
    ) -> impl Future<Output = Option<ConnectionLoss>> + Send + 'static {
        let pending = self.core.pending.clone();
        async move {
            pending.closed().await;
            let loss = pending.lock().loss.clone();
            loss
        }
    }

    /// The notices a cluster node pushes from now on ([`Notice`]; a single server sends
    /// none). Each receiver sees every notice that arrives after it was created; one that
    /// falls more than 256 notices behind gets
    /// [`RecvError::Lagged`](tokio::sync::broadcast::error::RecvError::Lagged) and should
    /// assume every partition was affected. The channel closes when the client and its
    /// connection are gone.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.core.notices.subscribe()
    }

    /// Locks `range` in `mode`, waiting as `wait` says. In poll grant mode this polls the
    /// server until the grant (the seed's RPC-poll client).
    ///
    /// An empty range ([`ClientError::InvalidRange`]) or a timeout longer than
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT) ([`ClientError::TimeoutTooLong`]) is refused
    /// before anything is sent.
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<AsyncLockGuard, ClientError> {
        self.lock_on(None, range, mode, wait).await
    }

    /// [`AsyncClient::lock`] on the resource `name` (`None`: the unnamed resource).
    pub(crate) async fn lock_on(
        &self,
        name: Option<&Arc<[u8]>>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<AsyncLockGuard, ClientError> {
        match self.lock_or_refusal_on(name, range, mode, wait).await? {
            Ok(guard) => Ok(guard),
            Err(r) => Err(ClientError::from_status(r.status)),
        }
    }

    /// The named resource `name` of this client's server, as
    /// [`Client::resource`](crate::Client::resource) gives it to a blocking client: its
    /// locks take the client's calls, and locks on different names never conflict. Refused
    /// before anything is sent: a name of 0 or more than 1024 bytes
    /// ([`ClientError::InvalidName`]), a session before protocol version 5
    /// ([`ClientError::NamesUnsupported`]).
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<AsyncResource, ClientError> {
        let name = check_name(name.as_ref(), self.core.hello.version)?;
        Ok(AsyncResource { client: self.clone(), name })
    }

    /// [`AsyncClient::lock`] on the resource `name` (`None`: the unnamed one), but a
    /// refusal comes back whole (the cluster client needs the value and the owner hint of
    /// `NOT_OWNER`, `IN_GRACE`, `CROSSES_PARTITION`).
    pub(crate) async fn lock_or_refusal_on(
        &self,
        name: Option<&Arc<[u8]>>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<Result<AsyncLockGuard, ResponseFrame>, ClientError> {
        check_range(&range)?;
        check_wait(wait)?;
        let (start, end) = (range.start, range.end);
        let make = |id| match name {
            None => Outgoing::Frame(RequestFrame {
                id,
                request: Request::Lock { start, end, mode, wait },
            }),
            Some(name) => {
                Outgoing::LockNamed { id, start, end, mode, wait, name: Arc::clone(name) }
            }
        };
        let (id, r, mut withdraw) = self.send_lock_outgoing(make).await?;
        let token = match r.status {
            Status::Ok => r.value,
            Status::Pending => self.poll_until_granted(id).await?,
            _ => {
                withdraw.armed = false;
                return Ok(Err(r));
            }
        };
        withdraw.armed = false;
        Ok(Ok(AsyncLockGuard::new(self.core.clone(), id, token, range, mode)))
    }

    /// Sends `RECLAIM` of `range` held with `token` at a cluster partition's previous
    /// owner (`docs/PROTOCOL.md` §7.3): the accepted lock as a guard (same token), or the
    /// refusal. Dropping the future before the answer releases whatever the server
    /// accepts.
    /// `name`: of a named resource (`RECLAIM_NAMED`); `None`: the unnamed one (`RECLAIM`).
    pub(crate) async fn reclaim(
        &self,
        name: Option<&Arc<[u8]>>,
        range: Range<u64>,
        mode: Mode,
        token: u64,
    ) -> Result<Result<AsyncLockGuard, ResponseFrame>, ClientError> {
        check_range(&range)?;
        let (start, end) = (range.start, range.end);
        let make = |id| match name {
            None => Outgoing::Frame(RequestFrame {
                id,
                request: Request::Reclaim { start, end, mode, token },
            }),
            Some(name) => {
                Outgoing::ReclaimNamed { id, start, end, mode, token, name: Arc::clone(name) }
            }
        };
        let (id, r, mut withdraw) = self.send_lock_outgoing(make).await?;
        withdraw.armed = false;
        Ok(match r.status {
            Status::Ok => Ok(AsyncLockGuard::new(self.core.clone(), id, r.value, range, mode)),
            _ => Err(r),
        })
    }

    /// Sends the request that `make` builds for its id, one that creates a lock named by
    /// its id (`LOCK`, `LOCK_NAMED`, `RECLAIM`, `RECLAIM_NAMED`), and waits for its first
    /// answer. The returned guard is armed: dropping it (or this future) withdraws the
    /// request, so a caller that gives up leaves nothing held.
    async fn send_lock_outgoing(
        &self,
        make: impl FnOnce(u64) -> Outgoing,
    ) -> Result<(u64, ResponseFrame, WithdrawOnDrop<'_>), ClientError> {
        let core = &*self.core;
        let id = core.next_id();
        let rx = core.register(id)?;
        let withdraw = WithdrawOnDrop { core, id, armed: true };
        core.send_outgoing(make(id))?;
        let r = rx.await.map_err(|_| ClientError::ConnectionLost)?;
        Ok((id, r, withdraw))
    }

    #[cold]
    async fn poll_until_granted(&self, id: u64) -> Result<u64, ClientError> {
        let mut schedule = PollSchedule::new();
        loop {
            let r = self.core.call(Request::Poll { target: id }).await?;
            if let Some(outcome) = PollSchedule::outcome(&r) {
                return outcome;
            }
            match schedule.next_wait() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => tokio::task::yield_now().await,
            }
        }
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(&self, range: Range<u64>) -> Result<AsyncLockGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<AsyncLockGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }

    /// Counters and up to `max_entries` holders/waiters. The server may list fewer (its
    /// limit, or what fits in its output limit); [`StatsBody::omitted`] counts the ones left
    /// out. In a session of protocol version 5 or later the entries carry their resource's
    /// name ([`StatsEntry::name`](crate::StatsEntry::name)) and the counters the names'
    /// (`STATS_NAMED`); before 5, named locks (which only others can hold) are listed without
    /// names and the names' counters are 0. In a session of version 6 (`STATS_CACHED`) the
    /// counters also carry the cache's ([`Counters::cached_extents`](crate::Counters) and
    /// the three after it) and an entry that is a kept extent says so
    /// ([`StatsEntry::kept`](crate::StatsEntry::kept)); before 6 those counters are 0 and
    /// no entry is kept.
    pub async fn stats(&self, max_entries: u32) -> Result<StatsBody, ClientError> {
        let r = match self.core.hello.version {
            6.. => self.core.call(Request::StatsCached { max_entries }).await?,
            5 => self.core.call(Request::StatsNamed { max_entries }).await?,
            _ => self.core.call(Request::Stats { max_entries }).await?,
        };
        match (r.status, r.stats) {
            (Status::Ok, Some(s)) => Ok(s),
            (s, _) => Err(ClientError::Server(s)),
        }
    }

    /// Sends a `KEEPALIVE` and waits for the answer (a round trip; the background task
    /// already keeps the lease alive).
    pub async fn ping(&self) -> Result<(), ClientError> {
        let r = self.core.call(Request::Keepalive).await?;
        match r.status {
            Status::Ok => Ok(()),
            s => Err(ClientError::Server(s)),
        }
    }

    /// Queues `request` behind those already sent, without waiting for its answer (the
    /// reader drops it).
    pub(crate) fn send_and_forget(&self, request: Request<'static>) {
        self.core.send_and_forget(request);
    }

    /// Sends any request and returns the raw response (for tools and tests).
    pub async fn raw(&self, request: Request<'static>) -> Result<ResponseFrame, ClientError> {
        self.core.call(request).await
    }
}

/// Withdraws a lock request whose future was dropped before it finished.
/// An empty or inverted range, refused before anything is sent.
fn check_range(range: &Range<u64>) -> Result<(), ClientError> {
    if range.start >= range.end {
        return Err(ClientError::InvalidRange { start: range.start, end: range.end });
    }
    Ok(())
}

struct WithdrawOnDrop<'a> {
    core: &'a Core,
    id: u64,
    armed: bool,
}

/// A named resource of an [`AsyncClient`]'s server ([`AsyncClient::resource`]); cheap to
/// clone. Its lock calls are the client's; its guards are [`AsyncLockGuard`]s.
#[derive(Debug, Clone)]
pub struct AsyncResource {
    client: AsyncClient,
    name: Arc<[u8]>,
}

impl AsyncResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Locks `range` of this resource in `mode`, waiting as `wait` says: as
    /// [`AsyncClient::lock`] does on the unnamed resource.
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<AsyncLockGuard, ClientError> {
        self.client.lock_on(Some(&self.name), range, mode, wait).await
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(&self, range: Range<u64>) -> Result<AsyncLockGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` of this resource shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<AsyncLockGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }
}

impl Drop for WithdrawOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.core.unregister(self.id);
            self.core.send_and_forget(Request::Unlock { target: self.id });
        }
    }
}

async fn write_loop<S: AsyncWrite>(
    mut wr: WriteHalf<S>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    pending: Arc<Pending>,
) {
    let mut out = Vec::with_capacity(4096);
    let closed = pending.closed();
    tokio::pin!(closed);
    loop {
        let f = tokio::select! {
            biased;
            f = rx.recv() => match f {
                Some(f) => f,
                None => break,
            },
            // Declared lost (an unresponsive server): drop our half of the socket.
            () = &mut closed => return,
        };
        out.clear();
        f.encode(&mut out);
        while out.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(f) => f.encode(&mut out),
                Err(_) => break,
            }
        }
        let written = tokio::select! {
            biased;
            // `flush`: a TLS stream may hold records back until flushed (a plain socket
            // returns at once).
            r = async { wr.write_all(&out).await?; wr.flush().await } => r.is_ok(),
            () = &mut closed => false,
        };
        if !written {
            return;
        }
    }
    // Every handle is gone: close our side; the server ends the session.
    let _ = wr.shutdown().await;
}

async fn read_loop<S: AsyncRead>(
    mut rd: ReadHalf<S>,
    pending: Arc<Pending>,
    notices: broadcast::Sender<Notice>,
    callbacks: CallbackSink,
) {
    // If the runtime drops this task, the connection is gone without a cause we saw.
    let mut close =
        CloseOnDrop { pending: pending.clone(), cause: LossCause::Io(std::io::ErrorKind::Other) };
    let closed = pending.closed();
    tokio::pin!(closed);
    let mut buf = Vec::new();
    // The reason of a SESSION_ENDED notice (version 4): the server closes next.
    let mut ended = None;
    loop {
        let read = tokio::select! {
            biased;
            r = read_frame(&mut rd, &mut buf, MAX_RESPONSE_FRAME) => r,
            // Declared lost elsewhere (an unresponsive server): stop reading.
            () = &mut closed => return,
        };
        match read {
            Ok(()) => {}
            Err(FrameError::Closed) => {
                close.cause = ended.map_or(LossCause::ClosedByServer, LossCause::SessionEnded);
                return;
            }
            Err(FrameError::Io(e)) => {
                tracing::debug!(error = %e, "connection lost");
                let cause = LossCause::of(&ClientError::Io(e));
                close.cause = ended.map_or(cause, LossCause::SessionEnded);
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "connection lost");
                close.cause = LossCause::Protocol;
                return;
            }
        }
        let r = match ResponseFrame::decode(&buf) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "undecodable response; closing");
                close.cause = LossCause::Protocol;
                return;
            }
        };
        // By the op byte, not the id: FRAME_TOO_LARGE and some MALFORMED answers have
        // id 0 too (PROTOCOL.md §7.6).
        if r.is_notice() && r.status == Status::SessionEnded {
            ended = Some(EndReason::from_code(r.value));
            continue;
        }
        if let (true, Status::Callback, Some(part)) = (r.is_notice(), r.status, r.callback) {
            let sink = callbacks.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(tx) = sink.as_ref() {
                // A closed receiver is fine: the cached client is gone.
                let _ = tx.send((r.value, part));
                continue;
            }
        }
        if r.is_notice() {
            // No receiver is fine: nobody asked.
            let _ = notices.send(Notice::of(&r));
            continue;
        }
        let waiter = pending.lock().waiters.remove(&r.id);
        if let Some(w) = waiter {
            let _ = w.send(r);
        }
    }
}

/// Sends a `KEEPALIVE` every third of the lease while the client lives, and declares the
/// connection lost when one stays unanswered for a lease (see the module docs). Holds
/// only a weak reference, so it does not keep the connection open.
async fn keepalive_loop(core: Weak<Core>, pending: Arc<Pending>, lease: Duration) {
    let period = (lease / 3).max(Duration::from_millis(10));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    // The keepalive whose answer we wait for: when it was sent, and its answer.
    let mut awaited: Option<(Instant, oneshot::Receiver<ResponseFrame>)> = None;
    loop {
        let deadline =
            awaited.as_ref().map(|(sent, _)| tokio::time::Instant::from_std(*sent + lease));
        tokio::select! {
            _ = tick.tick() => {
                let Some(core) = core.upgrade() else { return };
                pending.lock().sent_keepalive(Instant::now());
                if awaited.is_some() {
                    // Still waiting for an earlier answer: keep the lease alive anyway.
                    core.send_and_forget(Request::Keepalive);
                    continue;
                }
                let id = core.next_id();
                let Ok(rx) = core.register(id) else { return };
                let sent = Instant::now();
                if core.send(id, Request::Keepalive).is_err() {
                    return;
                }
                awaited = Some((sent, rx));
            }
            answer = keepalive_answer(&mut awaited), if awaited.is_some() => {
                let Ok(_) = answer else { return }; // the connection is gone
                let (sent, _) = awaited.take().expect("guarded");
                pending.answered(sent);
            }
            () = sleep_until_or_never(deadline), if deadline.is_some() => {
                let (sent, mut rx) = awaited.take().expect("guarded");
                // A process that was itself stopped finds the deadline passed and the
                // answer (or the server's close) waiting in the socket. Give the reader a
                // moment, with the I/O driver running, to deliver what is there before
                // blaming the server: a lapsed session must be reported as closed by the
                // server, not as a silent server.
                tokio::time::sleep((lease / 10).clamp(Duration::from_millis(10), Duration::from_millis(100))).await;
                match rx.try_recv() {
                    Ok(_) => {
                        pending.answered(sent);
                        continue;
                    }
                    Err(oneshot::error::TryRecvError::Closed) => return, // the connection is gone
                    Err(oneshot::error::TryRecvError::Empty) => {}
                }
                tracing::debug!(?lease, "no keepalive answer within the lease: connection lost");
                pending.close(LossCause::Unresponsive);
                return;
            }
        }
    }
}

/// The answer to the awaited keepalive (never, if none is awaited).
async fn keepalive_answer(
    awaited: &mut Option<(Instant, oneshot::Receiver<ResponseFrame>)>,
) -> Result<ResponseFrame, oneshot::error::RecvError> {
    match awaited {
        Some((_, rx)) => rx.await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_or_never(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that stops answering (paused) and then closes the connection has not
    /// lapsed a session whose client kept sending; a client that stopped sending for half
    /// a lease or more (itself stopped) has.
    #[test]
    fn a_lapse_is_the_clients_only_when_it_went_quiet() {
        let lease = Duration::from_millis(900);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Keepalives every 300 ms; the one sent at 300 ms is answered, then nothing is.
        let mut p = PendingMap::new(t0);
        for ms in [300, 600, 900, 1200, 1500] {
            p.sent_keepalive(at(ms));
        }
        p.answered(at(300));
        let loss = p.loss(LossCause::ClosedByServer, lease, at(1550));
        assert_eq!((loss.alive_at, loss.silent_for), (at(300), Duration::from_millis(1250)));
        assert_eq!(loss.quiet_for, Duration::from_millis(300));
        assert!(!loss.lease_lapsed(), "the server was the silent one: {loss:?}");
        // This client stopped from 600 ms to 1700 ms: no keepalive went out.
        let mut p = PendingMap::new(t0);
        for ms in [300, 600, 1700] {
            p.sent_keepalive(at(ms));
        }
        p.answered(at(300));
        let loss = p.loss(LossCause::ClosedByServer, lease, at(1710));
        assert_eq!(loss.quiet_for, Duration::from_millis(1100));
        assert!(loss.lease_lapsed(), "{loss:?}");
        // Still stopped when the close is found: the open gap counts.
        let mut p = PendingMap::new(t0);
        p.sent_keepalive(at(300));
        p.answered(at(300));
        assert!(p.loss(LossCause::ClosedByServer, lease, at(1500)).lease_lapsed());
        // A quiet gap before a keepalive the server answered is forgiven: the session
        // was alive after it.
        let mut p = PendingMap::new(t0);
        for ms in [300, 1400, 1700, 2000, 2300] {
            p.sent_keepalive(at(ms));
        }
        p.answered(at(1400));
        let loss = p.loss(LossCause::ClosedByServer, lease, at(2350));
        assert_eq!(loss.quiet_for, Duration::from_millis(300));
        assert!(!loss.lease_lapsed(), "{loss:?}");
    }
}
