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
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rangelock_proto::{
    read_frame, ClientHello, FrameError, GrantMode, HelloStatus, Mode, Request, RequestFrame,
    ResponseFrame, ServerHello, StatsBody, Status, Wait, SERVER_HELLO_LEN, VERSION,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{mpsc, oneshot};

use crate::endpoint::Endpoint;
use crate::error::{check_wait, ClientError};
use crate::guard::AsyncLockGuard;
use crate::poll::PollSchedule;

/// Largest response frame the client accepts (a `STATS` reply can be large).
const MAX_RESPONSE_FRAME: u32 = 16 * 1024 * 1024;

/// Requests waiting for their response, and whether the connection is gone.
#[derive(Debug, Default)]
struct PendingMap {
    closed: bool,
    waiters: HashMap<u64, oneshot::Sender<ResponseFrame>>,
}

#[derive(Debug, Default)]
struct Pending {
    map: Mutex<PendingMap>,
    /// Woken when the connection is marked gone (see [`AsyncClient::lost`]).
    lost: tokio::sync::Notify,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingMap> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection gone; dropping the senders fails every waiter.
    fn close(&self) {
        {
            let mut p = self.lock();
            p.closed = true;
            p.waiters.clear();
        }
        self.lost.notify_waiters();
    }
}

/// Closes the pending map when the reader task ends for any reason (EOF, error, or the
/// runtime dropping it).
struct CloseOnDrop(Arc<Pending>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[derive(Debug)]
pub(crate) struct Core {
    out: mpsc::UnboundedSender<RequestFrame>,
    pending: Arc<Pending>,
    next_id: AtomicU64,
    hello: ServerHello,
}

impl Core {
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and waits for its response.
    pub(crate) async fn call(&self, request: Request) -> Result<ResponseFrame, ClientError> {
        let id = self.next_id();
        let rx = self.register(id)?;
        self.send(id, request)?;
        rx.await.map_err(|_| ClientError::ConnectionLost)
    }

    fn register(&self, id: u64) -> Result<oneshot::Receiver<ResponseFrame>, ClientError> {
        let (tx, rx) = oneshot::channel();
        let mut p = self.pending.lock();
        if p.closed {
            return Err(ClientError::ConnectionLost);
        }
        p.waiters.insert(id, tx);
        Ok(rx)
    }

    fn unregister(&self, id: u64) {
        self.pending.lock().waiters.remove(&id);
    }

    fn send(&self, id: u64, request: Request) -> Result<(), ClientError> {
        self.out.send(RequestFrame { id, request }).map_err(|_| ClientError::ConnectionLost)
    }

    /// Sends a request whose response nobody awaits (the reader drops it).
    pub(crate) fn send_and_forget(&self, request: Request) {
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
        match endpoint {
            Endpoint::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str())
                    .await
                    .map_err(|e| ClientError::connect(endpoint, e))?;
                s.set_nodelay(true)?;
                Self::handshake(endpoint, s).await
            }
            Endpoint::Unix(p) => {
                let s =
                    UnixStream::connect(p).await.map_err(|e| ClientError::connect(endpoint, e))?;
                Self::handshake(endpoint, s).await
            }
        }
    }

    async fn handshake<S>(endpoint: &Endpoint, stream: S) -> Result<AsyncClient, ClientError>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut out = Vec::new();
        ClientHello { version: VERSION }.encode(&mut out);
        let mut buf = [0u8; SERVER_HELLO_LEN];
        let io = async {
            wr.write_all(&out).await?;
            rd.read_exact(&mut buf).await.map(drop)
        };
        io.await.map_err(|e| ClientError::connect(endpoint, e))?;
        let hello = ServerHello::decode(&buf).map_err(ClientError::Handshake)?;
        if hello.status == HelloStatus::UnsupportedVersion {
            return Err(ClientError::UnsupportedVersion { server: hello.version, client: VERSION });
        }
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Pending::default());
        let core = Arc::new(Core {
            out: out_tx,
            pending: pending.clone(),
            next_id: AtomicU64::new(1),
            hello,
        });
        tokio::spawn(write_loop(wr, out_rx));
        tokio::spawn(read_loop(rd, pending));
        let lease = Duration::from_millis(hello.lease_ms.into());
        tokio::spawn(keepalive_loop(Arc::downgrade(&core), lease));
        Ok(AsyncClient { core })
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
    /// is noticed within a third of the lease of the process running again.
    pub async fn lost(&self) {
        let pending = &self.core.pending;
        loop {
            let notified = pending.lost.notified();
            tokio::pin!(notified);
            // Registered before the check, so a close in between still wakes us.
            notified.as_mut().enable();
            if pending.lock().closed {
                return;
            }
            notified.await;
        }
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
        if range.start >= range.end {
            return Err(ClientError::InvalidRange { start: range.start, end: range.end });
        }
        check_wait(wait)?;
        let core = &self.core;
        let id = core.next_id();
        let rx = core.register(id)?;
        // From here on, dropping this future withdraws the request.
        let mut withdraw = WithdrawOnDrop { core, id, armed: true };
        core.send(id, Request::Lock { start: range.start, end: range.end, mode, wait })?;
        let r = rx.await.map_err(|_| ClientError::ConnectionLost)?;
        let token = match r.status {
            Status::Ok => r.value,
            Status::Pending => self.poll_until_granted(id).await?,
            s => {
                withdraw.armed = false;
                return Err(ClientError::from_status(s));
            }
        };
        withdraw.armed = false;
        Ok(AsyncLockGuard::new(self.core.clone(), id, token, range, mode))
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

    /// Counters and up to `max_entries` holders/waiters.
    pub async fn stats(&self, max_entries: u32) -> Result<StatsBody, ClientError> {
        let r = self.core.call(Request::Stats { max_entries }).await?;
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

    /// Sends any request and returns the raw response (for tools and tests).
    pub async fn raw(&self, request: Request) -> Result<ResponseFrame, ClientError> {
        self.core.call(request).await
    }
}

/// Withdraws a lock request whose future was dropped before it finished.
struct WithdrawOnDrop<'a> {
    core: &'a Core,
    id: u64,
    armed: bool,
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
    mut rx: mpsc::UnboundedReceiver<RequestFrame>,
) {
    let mut out = Vec::with_capacity(4096);
    while let Some(f) = rx.recv().await {
        out.clear();
        f.encode(&mut out);
        while out.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(f) => f.encode(&mut out),
                Err(_) => break,
            }
        }
        if wr.write_all(&out).await.is_err() {
            return;
        }
    }
    // Every handle is gone: close our side; the server ends the session.
    let _ = wr.shutdown().await;
}

async fn read_loop<S: AsyncRead>(mut rd: ReadHalf<S>, pending: Arc<Pending>) {
    let _close = CloseOnDrop(pending.clone());
    let mut buf = Vec::new();
    loop {
        match read_frame(&mut rd, &mut buf, MAX_RESPONSE_FRAME).await {
            Ok(()) => {}
            Err(FrameError::Closed) => return,
            Err(e) => {
                tracing::debug!(error = %e, "connection lost");
                return;
            }
        }
        let r = match ResponseFrame::decode(&buf) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "undecodable response; closing");
                return;
            }
        };
        let waiter = pending.lock().waiters.remove(&r.id);
        if let Some(w) = waiter {
            let _ = w.send(r);
        }
    }
}

async fn keepalive_loop(core: Weak<Core>, lease: Duration) {
    let period = (lease / 3).max(Duration::from_millis(10));
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(core) = core.upgrade() else { return };
        if core.pending.lock().closed {
            return;
        }
        core.send_and_forget(Request::Keepalive);
    }
}
