//! The blocking client: blocking socket I/O on the calling thread (see the `sync_core`
//! module for the connection's algorithm).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rangelock_proto::{GrantMode, Mode, Request, StatsBody, Status, Wait};

use crate::endpoint::Endpoint;
use crate::error::{check_name, check_wait, fallback_version, ClientError, ConnectionLoss};
use crate::guard::grant_accessors;
use crate::options::ConnectOptions;
use crate::poll::PollSchedule;
use crate::sync_core::SyncCore;
use rangelock_proto::VERSION;

/// A blocking client. Any number of threads may share it (`&self` methods); requests of
/// different threads are pipelined on the one connection. Reconnect semantics are those
/// of [`AsyncClient`](crate::AsyncClient): none; a lost connection means every lock of
/// the session is gone, and every later call fails with [`ClientError::ConnectionLost`].
///
/// A background thread sends `KEEPALIVE` every third of the server's lease while the
/// client or one of its guards lives. It needs no help from the threads using the client:
/// a thread that holds a lock and does something else (or nothing) keeps the session. But
/// if the whole process is stopped (SIGSTOP) or starved for longer than the lease, the
/// server ends the session and releases its locks; the keepalive thread then finds the
/// connection gone at most a third of a lease after the process runs again, and
/// [`Client::wait_lost`] returns.
#[derive(Debug)]
pub struct Client {
    core: Arc<SyncCore>,
    /// `POLL` requests sent ([`Client::polls`]).
    polls: AtomicU64,
}

impl Client {
    /// Connects and performs the handshake.
    pub fn connect(endpoint: &Endpoint) -> Result<Client, ClientError> {
        Self::connect_with(endpoint, &ConnectOptions::default())
    }

    /// Connects with `options` (an authentication token) and performs the handshake.
    ///
    /// The client offers protocol version 6; an older server that refuses it naming a
    /// version this client speaks (5, 4 or 3) is connected to again with a hello of that
    /// version (`docs/PROTOCOL.md` §1).
    pub fn connect_with(
        endpoint: &Endpoint,
        options: &ConnectOptions,
    ) -> Result<Client, ClientError> {
        let core = match SyncCore::connect(endpoint, options, VERSION) {
            Err(e) => match fallback_version(&e, VERSION) {
                Some(v) => SyncCore::connect(endpoint, options, v)?,
                None => return Err(e),
            },
            Ok(core) => core,
        };
        Ok(Client { core, polls: AtomicU64::new(0) })
    }

    /// The server-assigned session id.
    pub fn session(&self) -> u64 {
        self.core.hello().session
    }

    /// How the server delivers grants of queued locks.
    pub fn grant_mode(&self) -> GrantMode {
        self.core.hello().grant
    }

    /// The server's lease.
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.core.hello().lease_ms.into())
    }

    /// Whether the connection is still up, as far as this client has seen: a lost
    /// connection is noticed by the next request or keepalive (`false` means every lock
    /// is gone).
    pub fn is_connected(&self) -> bool {
        self.core.is_connected()
    }

    /// Blocks until the connection is found lost (see [`Client::is_connected`]), and
    /// says how. From then on every lock of this client is gone (the server released
    /// them, or will as soon as it sees the connection close), and every call fails with
    /// [`ClientError::ConnectionLost`].
    ///
    /// Meant for a watcher thread of a process that holds a lock while it does something
    /// else: the client's keepalive thread finds a loss on its own, so this returns within
    /// a third of the lease of the server closing the connection, without any other
    /// call. A server that becomes unreachable without closing the connection (a dead
    /// network path) is only noticed when TCP gives up.
    pub fn wait_lost(&self) -> ConnectionLoss {
        self.core.wait_lost(None).expect("waits without a timeout")
    }

    /// [`Client::wait_lost`] for at most `timeout`: `None` if the connection is still up
    /// then.
    pub fn wait_lost_timeout(&self, timeout: Duration) -> Option<ConnectionLoss> {
        self.core.wait_lost(Some(timeout))
    }

    /// Asks the server for a shared-memory answer slot and maps it (`docs/PROTOCOL.md`
    /// §9); returns the slot's index. From then on, [`Client::lock`] learns the answer to
    /// its `LOCK` by polling the slot (a ready flag in the server's memory) for up to
    /// ~50 us before it waits for the answer frame as before; results are the same either
    /// way. The slot is the session's until the connection closes.
    ///
    /// Errors: [`ClientError::ShmRefused`] with `SHM_UNAVAILABLE` (the server has no
    /// slots, runs poll grants, or this connection is not from its host), `SHM_FULL`,
    /// `SHM_ALREADY_ATTACHED` (asked twice), or `UNKNOWN_OP` (an older server);
    /// [`ClientError::ShmMap`] if the file cannot be mapped.
    pub fn attach_shm(&self) -> Result<u32, ClientError> {
        self.core.attach_shm()
    }

    /// How many `LOCK` answers this client read from its shared-memory slot rather than
    /// from their frame (0 without [`Client::attach_shm`]).
    pub fn shm_hits(&self) -> u64 {
        self.core.shm_hits()
    }

    /// How many `POLL` requests this client has sent: in poll grant mode, a `LOCK` that
    /// must wait is answered `PENDING` and [`Client::lock`] polls until the grant, one
    /// round trip per poll (0 with push grants). For counting round trips per lock.
    pub fn polls(&self) -> u64 {
        // Relaxed: a counter read for statistics; it orders nothing.
        self.polls.load(Ordering::Relaxed)
    }

    /// The attached shared-memory slot ([`Client::attach_shm`]): its index and the file.
    pub fn shm_slot(&self) -> Option<(u32, &str)> {
        self.core.shm_slot()
    }

    /// Locks `range` in `mode`, waiting as `wait` says. In poll grant mode this polls the
    /// server until the grant (the seed's RPC-poll client).
    ///
    /// An empty range ([`ClientError::InvalidRange`]) or a timeout longer than
    /// [`MAX_TIMEOUT`](crate::MAX_TIMEOUT) ([`ClientError::TimeoutTooLong`]) is refused
    /// before anything is sent.
    ///
    /// If a pipelined unlock ([`LockGuard::unlock_pipelined`] or a dropped guard) of this
    /// client has failed since the last report, that failure is returned as
    /// [`ClientError::DeferredUnlock`] instead (a lock granted meanwhile is released).
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<LockGuard, ClientError> {
        self.lock_after_unlock(None, None, range, mode, wait)
    }

    /// The named resource `name` of this client's server (`docs/PROTOCOL.md` §2.2): its
    /// locks take the same calls as the client's, which lock the unnamed resource. Locks
    /// on different names never conflict.
    ///
    /// Refused before anything is sent: a name of 0 or more than
    /// [`MAX_RESOURCE_NAME_LEN`](rangelock_proto::MAX_RESOURCE_NAME_LEN) bytes
    /// ([`ClientError::InvalidName`]), and a session older than protocol version 5
    /// ([`ClientError::NamesUnsupported`]).
    ///
    /// ```no_run
    /// # use rangelock_client::{Client, Endpoint};
    /// # fn main() -> Result<(), rangelock_client::ClientError> {
    /// let client = Client::connect(&Endpoint::Tcp("127.0.0.1:7878".into()))?;
    /// let orders = client.resource("db/orders")?;
    /// let rows = orders.lock_exclusive(0..100)?;       // rows 0..100 of db/orders
    /// let other = client.resource("db/users")?.lock_exclusive(0..100)?; // no conflict
    /// drop((rows, other));
    /// # Ok(()) }
    /// ```
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<Resource<'_>, ClientError> {
        let name = check_name(name.as_ref(), self.core.hello().version)?;
        Ok(Resource { client: self, name })
    }

    /// Locks after writing a pipelined `UNLOCK` of lock `unlock` in the same write; on
    /// the resource `name` (`None`: the unnamed resource).
    fn lock_after_unlock(
        &self,
        unlock: Option<u64>,
        name: Option<&[u8]>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<LockGuard, ClientError> {
        let valid = if range.start >= range.end {
            Err(ClientError::InvalidRange { start: range.start, end: range.end })
        } else {
            check_wait(wait)
        };
        if let Err(e) = valid {
            if let Some(target) = unlock {
                self.core.unlock_pipelined(target)?;
            }
            return Err(e);
        }
        let (start, end) = (range.start, range.end);
        let lock = match name {
            None => Request::Lock { start, end, mode, wait },
            Some(name) => Request::LockNamed { start, end, mode, wait, name },
        };
        let r = self.core.call_after_unlock(unlock, lock)?;
        let id = r.id;
        let token = match r.status {
            Status::Ok => r.value,
            Status::Pending => self.poll_until_granted(id)?,
            s => {
                return Err(self.core.take_deferred_error().unwrap_or(ClientError::from_status(s)))
            }
        };
        let guard = LockGuard { core: self.core.clone(), id, token, range, mode, released: false };
        match self.core.take_deferred_error() {
            None => Ok(guard),
            Some(e) => {
                drop(guard);
                Err(e)
            }
        }
    }

    #[cold]
    fn poll_until_granted(&self, id: u64) -> Result<u64, ClientError> {
        let mut schedule = PollSchedule::new();
        loop {
            // Relaxed: see `Client::polls`.
            self.polls.fetch_add(1, Ordering::Relaxed);
            let r = self.core.call(Request::Poll { target: id })?;
            if let Some(outcome) = PollSchedule::outcome(&r) {
                return outcome;
            }
            match schedule.next_wait() {
                Some(wait) => std::thread::sleep(wait),
                None => std::thread::yield_now(),
            }
        }
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub fn lock_exclusive(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// Locks `range` shared, waiting as long as it takes.
    pub fn lock_shared(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever)
    }

    /// Waits until every pipelined unlock of this client has been answered; returns the
    /// first failure not reported yet.
    pub fn flush(&self) -> Result<(), ClientError> {
        self.core.flush()
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
    pub fn stats(&self, max_entries: u32) -> Result<StatsBody, ClientError> {
        let r = match self.core.hello().version {
            6.. => self.core.call(Request::StatsCached { max_entries })?,
            5 => self.core.call(Request::StatsNamed { max_entries })?,
            _ => self.core.call(Request::Stats { max_entries })?,
        };
        match (r.status, r.stats) {
            (Status::Ok, Some(s)) => Ok(s),
            (s, _) => Err(ClientError::Server(s)),
        }
    }

    /// One `KEEPALIVE` round trip.
    pub fn ping(&self) -> Result<(), ClientError> {
        let r = self.core.call(Request::Keepalive)?;
        match r.status {
            Status::Ok => Ok(()),
            s => Err(ClientError::Server(s)),
        }
    }
}

/// A named resource of a [`Client`]'s server ([`Client::resource`]): a name plus the
/// ranges of its own number line. Its lock calls are the client's; its guards are the
/// client's [`LockGuard`]s.
#[derive(Debug, Clone)]
pub struct Resource<'c> {
    client: &'c Client,
    name: Arc<[u8]>,
}

impl Resource<'_> {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Locks `range` of this resource in `mode`, waiting as `wait` says: as
    /// [`Client::lock`] does on the unnamed resource.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<LockGuard, ClientError> {
        self.client.lock_after_unlock(None, Some(&self.name), range, mode, wait)
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub fn lock_exclusive(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// Locks `range` of this resource shared, waiting as long as it takes.
    pub fn lock_shared(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever)
    }
}

/// A held range lock of a blocking [`Client`]. It keeps the connection (and so the
/// session and its keepalive) alive; dropping it releases the lock with a pipelined
/// `UNLOCK` (see [`LockGuard::unlock_pipelined`]).
#[derive(Debug)]
pub struct LockGuard {
    core: Arc<SyncCore>,
    id: u64,
    token: u64,
    range: Range<u64>,
    mode: Mode,
    released: bool,
}

impl LockGuard {
    grant_accessors!();

    /// Releases the lock and waits for the server to confirm (one round trip).
    pub fn unlock(mut self) -> Result<(), ClientError> {
        self.released = true;
        let r = self.core.call(Request::Unlock { target: self.id })?;
        match r.status {
            Status::Ok | Status::AlreadyReleased => Ok(()),
            s => Err(ClientError::Server(s)),
        }
    }

    /// Releases this lock and locks `range` of the same client, writing the `UNLOCK` and
    /// the `LOCK` in one write (one round trip for both). The server handles the
    /// `UNLOCK` first; if it fails, the failure is returned (as
    /// [`ClientError::DeferredUnlock`]) and a lock granted meanwhile is released.
    ///
    /// # Panics
    ///
    /// If `client` is not the client this guard came from.
    pub fn unlock_and_lock(
        mut self,
        client: &Client,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<LockGuard, ClientError> {
        assert!(Arc::ptr_eq(&self.core, &client.core), "a guard of another client");
        self.released = true;
        client.lock_after_unlock(Some(self.id), None, range, mode, wait)
    }

    /// Releases the lock without waiting for the server's answer: the `UNLOCK` is written
    /// and this returns. Every later request of the client is handled after it (the
    /// server serves a connection's frames in order). The answer is read by the client's
    /// next call; a failure is returned by the next [`Client::lock`] or
    /// [`Client::flush`] as [`ClientError::DeferredUnlock`]. An error here means the
    /// connection is gone (and with it the lock).
    pub fn unlock_pipelined(mut self) -> Result<(), ClientError> {
        self.released = true;
        self.core.unlock_pipelined(self.id)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.core.unlock_pipelined(self.id);
        }
    }
}
