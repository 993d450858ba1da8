//! [`CachedClient`] and [`CachedResource`]: the lock calls, the fast path inside kept
//! extents and the `LOCK_CACHED` round trip.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rangelock::{OwnedRangeGuard, RangeLock};
use rangelock_proto::{
    CachedGrant, GrantMode, Mode, Request, ResponseFrame, Status, Wait, CACHE_REPORTS_USE,
};
use tokio::sync::mpsc;

use super::callbacks;
use super::guard::CachedGuard;
use super::handover::{Exact, Extent, Grant, Handover, Lost, Name};
use super::options::CacheOptions;
use crate::connection::{AsyncClient, Outgoing};
use crate::endpoint::Endpoint;
use crate::error::{check_name, check_wait, ClientError, ConnectionLoss};
use crate::guard::AsyncLockGuard;
use crate::options::ConnectOptions;

/// What the client, its guards and its callback task share.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) client: AsyncClient,
    /// The server accepted `CACHE_ON`.
    pub(crate) cached: bool,
    /// The server takes `used` in `GIVE_BACK` ([`rangelock_proto::CACHE_REPORTS_USE`]).
    pub(crate) reports_use: bool,
    pub(crate) options: CacheOptions,
    pub(crate) handover: Handover,
    /// The callback task's queue: a callback that came before its lock was settled is
    /// queued again from here.
    pub(crate) callbacks: mpsc::UnboundedSender<(u64, rangelock_proto::Callback)>,
    /// How long after [`Core::alive_at`](crate::connection::Core::alive_at) the kept
    /// extents serve local locks: the lease less a tenth (for clock rates and the time
    /// between the check and the grant). The server keeps the session, and so the extents,
    /// at least a lease after that keepalive was sent.
    pub(crate) trust: Duration,
    /// A cluster client's session with one node: when the session is lost, the cluster
    /// client carries the extents with local holders to the partitions' new owners
    /// instead of forgetting them, and every lock takes the local lock.
    pub(crate) cluster: bool,
}

/// What a lock at the server came to: a guard, or the server's refusal whole (a cluster
/// client routes on it).
pub(crate) type Answer = Result<Result<CachedGuard, ResponseFrame>, ClientError>;

/// What the fast path's second look found.
pub(crate) enum Confirmed {
    /// A guard inside a kept extent.
    Guard(CachedGuard),
    /// No kept extent covers the range any more: ask the server.
    Gone,
    /// The session has not been heard from for [`Inner::trust`]: it may have ended at the
    /// server, so the extents serve nothing until a keepalive is answered.
    Unsure,
}

/// An async client that keeps the extents the server grants as cached and serves later
/// locks inside them without a round trip; see the [module docs](super). Cheap to clone
/// (clones share the connection, the session and the kept extents).
#[derive(Clone, Debug)]
pub struct CachedClient {
    pub(crate) inner: Arc<Inner>,
}

/// A named resource of a [`CachedClient`] ([`CachedClient::resource`]); cheap to clone.
#[derive(Clone, Debug)]
pub struct CachedResource {
    client: CachedClient,
    name: Name,
}

impl CachedClient {
    /// Connects with the default options.
    pub async fn connect(endpoint: &Endpoint) -> Result<CachedClient, ClientError> {
        Self::connect_with(endpoint, &ConnectOptions::default(), CacheOptions::default()).await
    }

    /// Connects with `options`, and asks for cached locks (`CACHE_ON`). A server that
    /// refuses (`CACHE_UNAVAILABLE`: its engine or its policy; `UNKNOWN_OP`: an older
    /// server) or that delivers grants by polling gives an uncached client, whose every
    /// lock is an ordinary `LOCK` ([`CachedClient::is_cached`]).
    pub async fn connect_with(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        cache: CacheOptions,
    ) -> Result<CachedClient, ClientError> {
        let client = AsyncClient::connect_with(endpoint, options).await?;
        Ok(CachedClient { inner: Inner::start(client, cache, false).await? })
    }

    /// Whether the server accepted `CACHE_ON`: `false` means every lock is an ordinary
    /// `LOCK` (one round trip each).
    pub fn is_cached(&self) -> bool {
        self.inner.cached
    }

    /// The connection underneath (its `stats`, `ping`, `lost`, …). Locks taken through
    /// it directly are not ordered with this client's.
    pub fn as_async(&self) -> &AsyncClient {
        &self.inner.client
    }

    /// Whether the connection is still up (`false`: every lock and kept extent is gone).
    pub fn is_connected(&self) -> bool {
        self.inner.client.is_connected()
    }

    /// How the connection was lost, once it is.
    pub fn loss(&self) -> Option<ConnectionLoss> {
        self.inner.client.loss()
    }

    /// How many extents the client keeps now.
    pub fn kept_extents(&self) -> usize {
        self.inner.handover.kept()
    }

    /// Locks `range` of the unnamed resource in `mode`, waiting as `wait` says: locally if
    /// a kept extent covers it, else at the server (see the [module docs](super)).
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedGuard, ClientError> {
        self.inner.lock(&Name::from(&[][..]), range, mode, wait).await
    }

    /// Locks `range` of the unnamed resource exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(&self, range: Range<u64>) -> Result<CachedGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` of the unnamed resource shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<CachedGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }

    /// The named resource `name`, with the same lock calls. Refused before anything is
    /// sent: a name of 0 or more than 1024 bytes ([`ClientError::InvalidName`]), a session
    /// before protocol version 5 ([`ClientError::NamesUnsupported`]).
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<CachedResource, ClientError> {
        let name = check_name(name.as_ref(), self.inner.client.version())?;
        Ok(CachedResource { client: self.clone(), name })
    }
}

impl CachedResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// [`CachedClient::lock`] on this resource.
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedGuard, ClientError> {
        self.client.inner.lock(&self.name, range, mode, wait).await
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(&self, range: Range<u64>) -> Result<CachedGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` of this resource shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<CachedGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }

    pub(crate) fn client(&self) -> &CachedClient {
        &self.client
    }

    pub(crate) fn name_arc(&self) -> &Name {
        &self.name
    }
}

/// Refuses what cannot be sent, before anything is: an empty range, a timeout too long.
pub(crate) fn check(range: &Range<u64>, wait: Wait) -> Result<(), ClientError> {
    if range.start >= range.end {
        return Err(ClientError::InvalidRange { start: range.start, end: range.end });
    }
    check_wait(wait)
}

/// When a wait ends (`None`: never, or at once for `Wait::Try`).
pub(crate) fn deadline(wait: Wait) -> Option<Instant> {
    match wait {
        Wait::Timeout(d) => Some(Instant::now() + d),
        _ => None,
    }
}

/// The error of a local lock that could not be had in time.
fn local_error(wait: Wait) -> ClientError {
    match wait {
        Wait::Try => ClientError::WouldBlock,
        _ => ClientError::TimedOut,
    }
}

/// Takes `range` of `lock` in `mode` as `wait` says (by `deadline` for a timeout).
async fn local_async(
    lock: &Arc<RangeLock>,
    range: &Range<u64>,
    mode: Mode,
    wait: Wait,
    deadline: Option<Instant>,
) -> Result<OwnedRangeGuard, ClientError> {
    match (wait, deadline) {
        (Wait::Forever, _) => Ok(lock.lock_mode_owned_async(range.clone(), mode).await),
        (Wait::Timeout(_), Some(d)) => lock
            .try_lock_mode_owned_async_until(range.clone(), mode, d)
            .await
            .map_err(|_| local_error(wait)),
        _ => lock.try_lock_mode_owned(range.clone(), mode).map_err(|_| local_error(wait)),
    }
}

/// Takes `range` of `lock` in `mode` as `wait` says, blocking the calling thread.
pub(crate) fn local_blocking(
    lock: &Arc<RangeLock>,
    range: &Range<u64>,
    mode: Mode,
    wait: Wait,
    deadline: Option<Instant>,
) -> Result<OwnedRangeGuard, ClientError> {
    match (wait, deadline) {
        (Wait::Forever, _) => Ok(lock.lock_mode_owned(range.clone(), mode)),
        (Wait::Timeout(_), Some(d)) => {
            lock.try_lock_mode_owned_until(range.clone(), mode, d).map_err(|_| local_error(wait))
        }
        _ => lock.try_lock_mode_owned(range.clone(), mode).map_err(|_| local_error(wait)),
    }
}

/// A `LOCK_CACHED` in flight: dropped armed (its future was dropped), it withdraws the
/// request (`UNLOCK` of its id) and forgets the callbacks that came for it.
struct Flight<'a> {
    inner: &'a Inner,
    name: &'a Name,
    id: u64,
    armed: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if self.armed {
            let core = self.inner.client.core();
            core.unregister(self.id);
            core.send_and_forget(Request::Unlock { target: self.id });
            self.inner.handover.settle(self.id, self.name, Grant::None);
        }
    }
}

impl Inner {
    /// The cached side of `client`'s session: `CACHE_ON` (see
    /// [`CachedClient::connect_with`]), and the callback task if the server accepted it.
    /// `cluster`: see [`Inner::cluster`].
    pub(crate) async fn start(
        client: AsyncClient,
        cache: CacheOptions,
        cluster: bool,
    ) -> Result<Arc<Inner>, ClientError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (mut cached, mut reports_use) = (false, false);
        if client.version() >= 6 && client.grant_mode() == GrantMode::Push {
            client.set_callback_sink(tx.clone());
            let r = client.raw(Request::CacheOn).await?;
            reports_use = r.status == Status::Ok && r.value & CACHE_REPORTS_USE != 0;
            cached = match r.status {
                Status::Ok => true,
                Status::CacheUnavailable | Status::UnknownOp => false,
                s => return Err(ClientError::Server(s)),
            };
        }
        let lost = client.lost_signal();
        let trust = client.lease() - client.lease() / 10;
        let inner = Arc::new(Inner {
            client,
            cached,
            reports_use,
            options: cache,
            handover: Handover::default(),
            callbacks: tx,
            trust,
            cluster,
        });
        if cached {
            tokio::spawn(callbacks::run(Arc::downgrade(&inner), rx, lost));
        }
        Ok(inner)
    }

    /// A lock of `range` of resource `name` (empty: the unnamed one).
    pub(crate) async fn lock(
        self: &Arc<Self>,
        name: &Name,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedGuard, ClientError> {
        match self.lock_in(name, range, mode, wait, 0).await? {
            Ok(guard) => Ok(guard),
            Err(r) => Err(ClientError::from_status(r.status)),
        }
    }

    /// [`Inner::lock`] in partition `part`, with the server's refusal whole.
    pub(crate) async fn lock_in(
        self: &Arc<Self>,
        name: &Name,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
        part: u32,
    ) -> Answer {
        check(&range, wait)?;
        if !self.cached {
            return self.plain(name, range, mode, wait, part).await;
        }
        let deadline = deadline(wait);
        let local = self.handover.local_lock(name);
        while self.handover.find(name, &range, mode) {
            let g = local_async(&local, &range, mode, wait, deadline).await?;
            match self.confirm(name, &range, mode, g) {
                Confirmed::Guard(guard) => return Ok(Ok(guard)),
                Confirmed::Gone => {}
                Confirmed::Unsure => self.client.core().reassure().await?,
            }
        }
        self.lock_at_server(name, &local, range, mode, wait, deadline, part, false).await
    }

    /// The fast path's second check, with the local lock `g` held (dropped unless a guard
    /// is made of it): whether a kept extent still covers the range, and whether the
    /// session is known to be alive now, so that the server still holds that extent for
    /// this client. A client cut off from the server, or a process stopped past its
    /// lease, finds out here, before it serves a lock from extents the server may have
    /// given to others; its keepalives alone would tell it only later.
    pub(crate) fn confirm(
        self: &Arc<Self>,
        name: &Name,
        range: &Range<u64>,
        mode: Mode,
        g: OwnedRangeGuard,
    ) -> Confirmed {
        let now = Instant::now();
        if now >= self.client.core().alive_at() + self.trust {
            return Confirmed::Unsure;
        }
        match self.handover.confirm(name, range, mode, now) {
            Some((id, token, lost)) => {
                Confirmed::Guard(CachedGuard::kept(self.clone(), name.clone(), g, id, token, lost))
            }
            None => Confirmed::Gone,
        }
    }

    /// An ordinary `LOCK` (the client is not cached). In a cluster it also takes the
    /// local lock, and is recorded as an exact grant: if its node gives the partition up,
    /// the cluster client carries it to the new owner while the guard lives.
    async fn plain(
        self: &Arc<Self>,
        name: &Name,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
        part: u32,
    ) -> Answer {
        let named = (!name.is_empty()).then_some(name);
        let deadline = deadline(wait);
        let g = match self.client.lock_or_refusal_on(named, range.clone(), mode, wait).await? {
            Ok(g) => g,
            Err(r) => return Ok(Err(r)),
        };
        if !self.cluster {
            return Ok(Ok(CachedGuard::plain(self.clone(), name.clone(), g)));
        }
        let local = self.handover.local_lock(name);
        let held = local_async(&local, &range, mode, wait, deadline).await?;
        let (token, lost) = (g.token(), Some(Lost::default()));
        let exact = Exact { name: name.clone(), range, mode, token, part, lost: lost.clone() };
        if self.handover.settle(g.id(), name, Grant::Exact(exact)).is_none() {
            return Err(ClientError::ConnectionLost);
        }
        Ok(Ok(CachedGuard::exact(self.clone(), name.clone(), g, held, token, lost)))
    }

    /// Sends `LOCK_CACHED` for `range` (no local lock held while the server decides: a
    /// callback may need it), then takes the local lock over `range` (on the calling
    /// thread if `blocking`), and keeps the extent if the server lets it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn lock_at_server(
        self: &Arc<Self>,
        name: &Name,
        local: &Arc<RangeLock>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
        deadline: Option<Instant>,
        part: u32,
        blocking: bool,
    ) -> Answer {
        let core = self.client.core().clone();
        let id = core.next_id();
        self.handover.begin_flight(id);
        let mut flight = Flight { inner: self, name, id, armed: true };
        let rx = core.register(id)?;
        let server_wait = match (wait, deadline) {
            (Wait::Timeout(_), Some(d)) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Wait::Timeout(left),
                _ => Wait::Try,
            },
            _ => wait,
        };
        core.send_outgoing(Outgoing::LockCached {
            id,
            start: range.start,
            end: range.end,
            mode,
            wait: server_wait,
            desired: self.options.desired(&range),
            name: name.clone(),
        })?;
        let r = rx.await.map_err(|_| ClientError::ConnectionLost)?;
        if r.status != Status::Ok {
            flight.armed = false;
            self.handover.settle(id, name, Grant::None);
            return Ok(Err(r));
        }
        let token = r.value;
        self.handover.note_grant(part, token);
        let grant =
            r.grant.unwrap_or(CachedGrant { start: range.start, end: range.end, cached: false });
        let held = if blocking {
            local_blocking(local, &range, mode, wait, deadline)
        } else {
            local_async(local, &range, mode, wait, deadline).await
        };
        flight.armed = false;
        let lost = self.cluster.then(Lost::default);
        if !grant.cached {
            let server = AsyncLockGuard::new(core, id, token, range.clone(), mode);
            let held = match held {
                Ok(held) => held,
                Err(e) => {
                    self.handover.settle(id, name, Grant::None);
                    return Err(e); // `server` dropped: unlocked
                }
            };
            let (name, lost) = (name.clone(), lost.clone());
            let exact = Exact { name: name.clone(), range, mode, token, part, lost: lost.clone() };
            let Some((_, token)) = self.handover.settle(id, &name, Grant::Exact(exact)) else {
                return Err(ClientError::ConnectionLost);
            };
            return Ok(Ok(CachedGuard::exact(self.clone(), name, server, held, token, lost)));
        }
        let now = Instant::now();
        let (start, end, used) = (grant.start, grant.end, 0);
        let extent =
            Extent { start, end, mode, id, last_use: now, used, token, part, lost: lost.clone() };
        let Some((pending, token)) = self.handover.settle(id, name, Grant::Kept(extent)) else {
            return Err(ClientError::ConnectionLost);
        };
        for p in pending {
            let part = rangelock_proto::Callback { start: p.start, end: p.end, mode: p.mode };
            // Closed: the callback task ended with the session.
            let _ = self.callbacks.send((id, part));
        }
        Ok(Ok(CachedGuard::kept(self.clone(), name.clone(), held?, id, token, lost)))
    }
}
