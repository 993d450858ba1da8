//! [`BlockingCachedClusterClient`]: the cached cluster client for code without an async
//! runtime, as [`BlockingClusterClient`](super::BlockingClusterClient) is for the plain
//! one. It owns a small tokio runtime (one worker thread) for the node sessions, the
//! callbacks and the reclaims; a lock runs on the calling thread (inside a kept extent,
//! without a round trip). Do not call it from inside a tokio runtime.

use std::ops::{Deref, Range};
use std::sync::Arc;

use rangelock_proto::{Mode, Wait};
use tokio::runtime::Runtime;

use super::{
    CachedClusterClient, CachedClusterGuard, CachedClusterResource, ClusterError, ClusterOptions,
    LostReason,
};
use crate::cached::CacheOptions;
use crate::error::ClientError;

/// A blocking cached cluster client; see the module docs. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlockingCachedClusterClient {
    rt: Arc<Runtime>,
    client: CachedClusterClient,
}

/// A named resource of a [`BlockingCachedClusterClient`], with blocking lock calls.
#[derive(Clone, Debug)]
pub struct BlockingCachedClusterResource {
    rt: Arc<Runtime>,
    resource: CachedClusterResource,
}

/// A range held by a [`BlockingCachedClusterClient`]: a [`CachedClusterGuard`] (its
/// methods through `Deref`) with a blocking [`wait_lost`](Self::wait_lost).
#[derive(Debug)]
pub struct BlockingCachedClusterGuard {
    rt: Arc<Runtime>,
    guard: CachedClusterGuard,
}

impl BlockingCachedClusterClient {
    /// [`CachedClusterClient::connect`], blocking.
    pub fn connect(
        seeds: &[String],
        options: ClusterOptions,
        cache: CacheOptions,
    ) -> Result<BlockingCachedClusterClient, ClusterError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rangelock-cached-cluster-client")
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Client(ClientError::Io(e)))?;
        let client = rt.block_on(CachedClusterClient::connect(seeds, options, cache))?;
        Ok(BlockingCachedClusterClient { rt: Arc::new(rt), client })
    }

    /// [`CachedClusterClient::lock`], blocking.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingCachedClusterGuard, ClusterError> {
        let guard = self.rt.block_on(self.client.lock(range, mode, wait))?;
        Ok(BlockingCachedClusterGuard { rt: self.rt.clone(), guard })
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub fn lock_exclusive(
        &self,
        range: Range<u64>,
    ) -> Result<BlockingCachedClusterGuard, ClusterError> {
        self.lock(range, Mode::Exclusive, Wait::Forever)
    }

    /// [`CachedClusterClient::resource`], with blocking lock calls.
    pub fn resource(
        &self,
        name: impl AsRef<[u8]>,
    ) -> Result<BlockingCachedClusterResource, ClusterError> {
        let resource = self.client.resource(name)?;
        Ok(BlockingCachedClusterResource { rt: self.rt.clone(), resource })
    }

    /// How many extents the client keeps now, on every node.
    pub fn kept_extents(&self) -> usize {
        self.client.kept_extents()
    }

    /// The async client underneath.
    pub fn as_async(&self) -> &CachedClusterClient {
        &self.client
    }
}

impl BlockingCachedClusterResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        self.resource.name()
    }

    /// [`CachedClusterResource::lock`], blocking.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingCachedClusterGuard, ClusterError> {
        let guard = self.rt.block_on(self.resource.lock(range, mode, wait))?;
        Ok(BlockingCachedClusterGuard { rt: self.rt.clone(), guard })
    }
}

impl BlockingCachedClusterGuard {
    /// Blocks until a piece is lost (which may be never).
    pub fn wait_lost(&self) -> LostReason {
        self.rt.block_on(self.guard.lost())
    }

    /// [`CachedClusterGuard::unlock`].
    pub fn unlock(self) -> Result<(), ClusterError> {
        self.guard.unlock()
    }
}

impl Deref for BlockingCachedClusterGuard {
    type Target = CachedClusterGuard;

    fn deref(&self) -> &CachedClusterGuard {
        &self.guard
    }
}
