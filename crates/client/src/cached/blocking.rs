//! [`BlockingCachedClient`]: the cached client for code without an async runtime.
//!
//! It owns a small tokio runtime (one worker thread) that drives the connection and the
//! callback task. A lock inside a kept extent never goes through it: the calling thread
//! checks the extent map and takes the in-process lock itself. Only a request to the
//! server runs on the runtime (`block_on` on the calling thread). Do not call it from
//! inside a tokio runtime (blocking there panics); use [`CachedClient`] there.

use std::ops::{Deref, Range};
use std::sync::Arc;

use rangelock_proto::{Mode, StatsBody, Wait};
use tokio::runtime::Runtime;

use super::client::{
    check, deadline, local_blocking, CachedClient, CachedResource, Confirmed, Inner,
};
use super::guard::CachedGuard;
use super::handover::Name;
use super::options::CacheOptions;
use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::options::ConnectOptions;

/// A blocking cached client; see the module docs. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlockingCachedClient {
    client: CachedClient,
    rt: Arc<Runtime>,
}

/// A named resource of a [`BlockingCachedClient`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct BlockingCachedResource {
    resource: CachedResource,
    rt: Arc<Runtime>,
}

/// A held lock of a [`BlockingCachedClient`]: a [`CachedGuard`] (its accessors through
/// `Deref`) that releases on drop, with a blocking [`unlock`](Self::unlock).
#[derive(Debug)]
pub struct BlockingCachedGuard {
    // Before `rt`: a guard that outlives its client drops before the runtime does.
    guard: CachedGuard,
    rt: Arc<Runtime>,
}

impl BlockingCachedClient {
    /// [`CachedClient::connect`], blocking.
    pub fn connect(endpoint: &Endpoint) -> Result<BlockingCachedClient, ClientError> {
        Self::connect_with(endpoint, &ConnectOptions::default(), CacheOptions::default())
    }

    /// [`CachedClient::connect_with`], blocking.
    pub fn connect_with(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        cache: CacheOptions,
    ) -> Result<BlockingCachedClient, ClientError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rangelock-cached-client")
            .enable_all()
            .build()?;
        let client = rt.block_on(CachedClient::connect_with(endpoint, options, cache))?;
        Ok(BlockingCachedClient { client, rt: Arc::new(rt) })
    }

    /// Whether the server accepted `CACHE_ON` ([`CachedClient::is_cached`]).
    pub fn is_cached(&self) -> bool {
        self.client.is_cached()
    }

    /// How many extents the client keeps now.
    pub fn kept_extents(&self) -> usize {
        self.client.kept_extents()
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// The async client underneath.
    pub fn as_async(&self) -> &CachedClient {
        &self.client
    }

    /// The server's counters and up to `max_entries` holders/waiters, blocking.
    pub fn stats(&self, max_entries: u32) -> Result<StatsBody, ClientError> {
        self.rt.block_on(self.client.as_async().stats(max_entries))
    }

    /// [`CachedClient::lock`], blocking; inside a kept extent without the runtime.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingCachedGuard, ClientError> {
        lock(&self.rt, &self.client.inner, &Name::from(&[][..]), range, mode, wait)
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub fn lock_exclusive(&self, range: Range<u64>) -> Result<BlockingCachedGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// Locks `range` shared, waiting as long as it takes.
    pub fn lock_shared(&self, range: Range<u64>) -> Result<BlockingCachedGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever)
    }

    /// [`CachedClient::resource`], with blocking lock calls.
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<BlockingCachedResource, ClientError> {
        let resource = self.client.resource(name)?;
        Ok(BlockingCachedResource { resource, rt: self.rt.clone() })
    }
}

impl BlockingCachedResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        self.resource.name()
    }

    /// [`BlockingCachedClient::lock`] on this resource.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingCachedGuard, ClientError> {
        let (inner, name) = (&self.resource.client().inner, self.resource.name_arc());
        lock(&self.rt, inner, name, range, mode, wait)
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub fn lock_exclusive(&self, range: Range<u64>) -> Result<BlockingCachedGuard, ClientError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// Locks `range` of this resource shared, waiting as long as it takes.
    pub fn lock_shared(&self, range: Range<u64>) -> Result<BlockingCachedGuard, ClientError> {
        self.lock(range, Mode::Shared, Wait::Forever)
    }
}

impl BlockingCachedGuard {
    /// [`CachedGuard::unlock`], blocking.
    pub fn unlock(self) -> Result<(), ClientError> {
        let BlockingCachedGuard { guard, rt } = self;
        rt.block_on(guard.unlock())
    }
}

impl Deref for BlockingCachedGuard {
    type Target = CachedGuard;

    fn deref(&self) -> &CachedGuard {
        &self.guard
    }
}

/// A lock on `name`: the fast path on the calling thread, else the server request on the
/// runtime.
fn lock(
    rt: &Arc<Runtime>,
    inner: &Arc<Inner>,
    name: &Name,
    range: Range<u64>,
    mode: Mode,
    wait: Wait,
) -> Result<BlockingCachedGuard, ClientError> {
    check(&range, wait)?;
    let wrap = |guard| BlockingCachedGuard { guard, rt: rt.clone() };
    if !inner.cached {
        return rt.block_on(inner.lock(name, range, mode, wait)).map(wrap);
    }
    let deadline = deadline(wait);
    let local = inner.handover.local_lock(name);
    while inner.handover.find(name, &range, mode) {
        let g = local_blocking(&local, &range, mode, wait, deadline)?;
        match inner.confirm(name, &range, mode, g) {
            Confirmed::Guard(guard) => return Ok(wrap(guard)),
            Confirmed::Gone => {}
            Confirmed::Unsure => rt.block_on(inner.client.core().reassure())?,
        }
    }
    match rt.block_on(inner.lock_at_server(name, &local, range, mode, wait, deadline, 0, true))? {
        Ok(guard) => Ok(wrap(guard)),
        Err(r) => Err(ClientError::from_status(r.status)),
    }
}
