//! [`BlockingClusterClient`]: the cluster client for code without an async runtime, as
//! [`crate::Client`] is for a single server.
//!
//! It owns a small tokio runtime (one worker thread) on which the cluster client's tasks
//! run — node keepalives, notices, reclaims after a failover — while the caller's thread
//! blocks in [`BlockingClusterClient::lock`] or does its own work. Do not call it from
//! inside a tokio runtime (blocking there panics); use [`ClusterClient`] there.

use std::ops::Range;
use std::sync::Arc;

use rangelock_proto::{ClusterMap, Mode, NodeInfo, StatsBody, Wait};
use tokio::runtime::Runtime;

use super::{
    ClusterClient, ClusterError, ClusterGuard, ClusterOptions, ClusterResource, GuardPiece,
    LostReason,
};
use crate::error::ClientError;

/// A blocking cluster client; see the module docs. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlockingClusterClient {
    rt: Arc<Runtime>,
    client: ClusterClient,
}

impl BlockingClusterClient {
    /// [`ClusterClient::connect`], blocking.
    pub fn connect(
        seeds: &[String],
        options: ClusterOptions,
    ) -> Result<BlockingClusterClient, ClusterError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rangelock-cluster-client")
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Client(ClientError::Io(e)))?;
        let client = rt.block_on(ClusterClient::connect(seeds, options))?;
        Ok(BlockingClusterClient { rt: Arc::new(rt), client })
    }

    /// [`ClusterClient::lock`], blocking.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingClusterGuard, ClusterError> {
        let guard = self.rt.block_on(self.client.lock(range, mode, wait))?;
        Ok(BlockingClusterGuard { rt: self.rt.clone(), guard: Some(guard) })
    }

    /// [`ClusterClient::resource`]: the named resource `name`, with blocking lock calls.
    ///
    /// Errors: [`ClientError::InvalidName`] for an empty name or one over 1024 bytes.
    pub fn resource(
        &self,
        name: impl AsRef<[u8]>,
    ) -> Result<BlockingClusterResource, ClusterError> {
        let resource = self.client.resource(name)?;
        Ok(BlockingClusterResource { rt: self.rt.clone(), resource })
    }

    /// The cached cluster map.
    pub fn map(&self) -> Arc<ClusterMap> {
        self.client.map()
    }

    /// [`ClusterClient::stats_all`], blocking.
    pub fn stats_all(&self, max_entries: u32) -> Result<Vec<(NodeInfo, StatsBody)>, ClusterError> {
        self.rt.block_on(self.client.stats_all(max_entries))
    }

    /// The async client underneath.
    pub fn as_async(&self) -> &ClusterClient {
        &self.client
    }
}

/// A named resource of a [`BlockingClusterClient`] ([`BlockingClusterClient::resource`]):
/// [`ClusterResource`] with blocking lock calls. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlockingClusterResource {
    rt: Arc<Runtime>,
    resource: ClusterResource,
}

impl BlockingClusterResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        self.resource.name()
    }

    /// [`ClusterResource::lock`], blocking.
    pub fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<BlockingClusterGuard, ClusterError> {
        let guard = self.rt.block_on(self.resource.lock(range, mode, wait))?;
        Ok(BlockingClusterGuard { rt: self.rt.clone(), guard: Some(guard) })
    }
}

/// A held cluster lock of a [`BlockingClusterClient`]: [`ClusterGuard`] with blocking
/// methods. Dropping it releases every piece.
#[derive(Debug)]
pub struct BlockingClusterGuard {
    rt: Arc<Runtime>,
    /// `None` once unlocked.
    guard: Option<ClusterGuard>,
}

impl BlockingClusterGuard {
    fn inner(&self) -> &ClusterGuard {
        self.guard.as_ref().expect("present until unlock consumes the guard")
    }

    /// The whole range.
    pub fn range(&self) -> Range<u64> {
        self.inner().range()
    }

    /// Shared or exclusive.
    pub fn mode(&self) -> Mode {
        self.inner().mode()
    }

    /// One fencing token per piece (see [`ClusterGuard::pieces`]).
    pub fn pieces(&self) -> Vec<GuardPiece> {
        self.inner().pieces()
    }

    /// Whether the guard was lost (see [`ClusterGuard::is_lost`]).
    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// `Err(ClusterError::Lost)` once lost.
    pub fn check(&self) -> Result<(), ClusterError> {
        self.inner().check()
    }

    /// Runs `f` once the guard is lost (on the client's runtime thread).
    pub fn on_lost(&self, f: impl FnOnce(&LostReason) + Send + 'static) {
        self.inner().on_lost(f)
    }

    /// Blocks until the guard is lost (which may be never).
    pub fn wait_lost(&self) -> LostReason {
        self.rt.block_on(self.inner().lost())
    }

    /// Releases every piece and waits for the answers ([`ClusterGuard::unlock`]).
    pub fn unlock(mut self) -> Result<(), ClusterError> {
        let guard = self.guard.take().expect("present until unlock");
        self.rt.block_on(guard.unlock())
    }
}
