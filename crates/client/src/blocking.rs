//! The blocking client: the async client driven by a private one-worker runtime.

use std::ops::Range;
use std::sync::Arc;

use rangelock_server::protocol::{GrantMode, Mode, StatsBody, Wait};
use tokio::runtime::Runtime;

use crate::connection::AsyncClient;
use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::guard::AsyncLockGuard;

/// A blocking client. Do not call it from inside an async runtime (use
/// [`AsyncClient`] there). Reconnect semantics are those of [`AsyncClient`].
#[derive(Debug)]
pub struct Client {
    rt: Arc<Runtime>,
    inner: AsyncClient,
}

impl Client {
    /// Connects and performs the handshake.
    pub fn connect(endpoint: &Endpoint) -> Result<Client, ClientError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rangelock-client")
            .enable_all()
            .build()?;
        let inner = rt.block_on(AsyncClient::connect(endpoint))?;
        Ok(Client { rt: Arc::new(rt), inner })
    }

    /// The server-assigned session id.
    pub fn session(&self) -> u64 {
        self.inner.session()
    }

    /// How the server delivers grants of queued locks.
    pub fn grant_mode(&self) -> GrantMode {
        self.inner.grant_mode()
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }

    /// Locks `range` in `mode`, waiting as `wait` says.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<LockGuard, ClientError> {
        let g = self.rt.block_on(self.inner.lock(range, mode, wait))?;
        Ok(LockGuard { inner: Some(g), rt: self.rt.clone() })
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub fn lock_exclusive(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// Locks `range` shared, waiting as long as it takes.
    pub fn lock_shared(&self, range: Range<u64>) -> Result<LockGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever)
    }

    /// Counters and up to `max_entries` holders/waiters.
    pub fn stats(&self, max_entries: u32) -> Result<StatsBody, ClientError> {
        self.rt.block_on(self.inner.stats(max_entries))
    }

    /// One `KEEPALIVE` round trip.
    pub fn ping(&self) -> Result<(), ClientError> {
        self.rt.block_on(self.inner.ping())
    }

    /// The async client sharing this connection (usable only from this client's runtime
    /// through [`Client::block_on`]).
    pub fn as_async(&self) -> &AsyncClient {
        &self.inner
    }

    /// Runs a future on this client's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

/// A held range lock of a blocking [`Client`]. It keeps the client's runtime (and so the
/// connection and the session's keepalive) alive; dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    inner: Option<AsyncLockGuard>,
    rt: Arc<Runtime>,
}

impl LockGuard {
    fn g(&self) -> &AsyncLockGuard {
        self.inner.as_ref().expect("present until unlock or drop")
    }

    /// The fencing token of this grant.
    pub fn token(&self) -> u64 {
        self.g().token()
    }

    /// The locked range.
    pub fn range(&self) -> Range<u64> {
        self.g().range()
    }

    /// Shared or exclusive.
    pub fn mode(&self) -> Mode {
        self.g().mode()
    }

    /// Releases the lock and waits for the server to confirm.
    pub fn unlock(mut self) -> Result<(), ClientError> {
        let g = self.inner.take().expect("present until unlock or drop");
        self.rt.block_on(g.unlock())
    }
}
