//! [`CachedClusterClient`]: cached locks ([`crate::cached`]) in a cluster — the cluster
//! client's routing, with one caching session per node.

use std::future::Future as _;
use std::ops::Range;
use std::sync::Arc;

use rangelock_proto::{Mode, Wait};

use super::acquire::{self, CachedPieces, Failure};
use super::client::{check_lock, ClusterClient};
use super::error::ClusterError;
use super::guard::{ClusterGuard, GuardPiece};
use super::options::ClusterOptions;
use crate::cached::{CacheOptions, CachedGuard};

/// A cluster client whose node sessions keep the extents the nodes grant, as a
/// [`CachedClient`](crate::CachedClient) does with one server: a lock inside a kept extent
/// takes no round trip. Cheap to clone. See `docs/CACHING.md`, "In a cluster".
///
/// A lock is split at partition boundaries and taken piece by piece in ascending order,
/// each at its partition's owner, as [`ClusterClient::lock`] does. Each piece is a
/// [`CachedGuard`] of the client's session with that node, whose fencing token is the
/// highest the session was granted *in that partition*.
///
/// When a node gives a partition up or fails, the client carries every kept extent or
/// exact grant of it that has local holders to the new owner (`RECLAIM`, with its token);
/// the holders' guards stay valid. One that cannot be carried in time makes its guards
/// lost ([`CachedClusterGuard::check`]).
///
/// ```no_run
/// # async fn run() -> Result<(), rangelock_client::cluster::ClusterError> {
/// use rangelock_client::cluster::{CachedClusterClient, ClusterOptions};
/// use rangelock_client::CacheOptions;
/// let seeds = ["10.0.0.1:7878".to_owned()];
/// let cache = CacheOptions { granule: 1 << 20, ..CacheOptions::default() };
/// let client = CachedClusterClient::connect(&seeds, ClusterOptions::default(), cache).await?;
/// let a = client.lock_exclusive(0..4096).await?; // LOCK_CACHED at the owner; kept
/// drop(a);
/// let b = client.lock_exclusive(4096..8192).await?; // no round trip
/// b.check()?; // before each write, and write with b.pieces()[i].token
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CachedClusterClient {
    client: ClusterClient,
}

/// A named resource of a [`CachedClusterClient`] ([`CachedClusterClient::resource`]).
#[derive(Clone, Debug)]
pub struct CachedClusterResource {
    client: CachedClusterClient,
    name: Arc<[u8]>,
    hash: u64,
}

/// A range held by a [`CachedClusterClient`]: one [`CachedGuard`] per partition the range
/// touches. Dropping it releases every piece (inside kept extents only locally).
#[derive(Debug)]
pub struct CachedClusterGuard {
    range: Range<u64>,
    mode: Mode,
    pieces: Vec<(u32, CachedGuard)>,
}

impl CachedClusterClient {
    /// Connects as [`ClusterClient::connect`] does; every node session asks for cached
    /// locks with `cache` (a node that refuses serves it uncached).
    pub async fn connect(
        seeds: &[String],
        options: ClusterOptions,
        cache: CacheOptions,
    ) -> Result<CachedClusterClient, ClusterError> {
        let client = ClusterClient::connect_cached(seeds, options, Some(cache)).await?;
        Ok(CachedClusterClient { client })
    }

    /// Locks `range` in `mode`, waiting as `wait` says, across as many partitions as it
    /// touches: all pieces or none. Errors as [`ClusterClient::lock`].
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedClusterGuard, ClusterError> {
        self.lock_on(None, range, mode, wait).await
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(
        &self,
        range: Range<u64>,
    ) -> Result<CachedClusterGuard, ClusterError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<CachedClusterGuard, ClusterError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }

    /// The named resource `name`, as [`ClusterClient::resource`].
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<CachedClusterResource, ClusterError> {
        let r = self.client.resource(name)?;
        let (name, hash) = (Arc::from(r.name()), r.hash());
        Ok(CachedClusterResource { client: self.clone(), name, hash })
    }

    /// The cluster client underneath (its map, `stats_all`, …). Its own locks are not
    /// ordered with this client's.
    pub fn as_cluster(&self) -> &ClusterClient {
        &self.client
    }

    /// How many extents the client keeps now, on every node.
    pub fn kept_extents(&self) -> usize {
        self.client.shared().nodes.caches().iter().map(|c| c.handover.kept()).sum()
    }

    async fn lock_on(
        &self,
        name: Option<(Arc<[u8]>, u64)>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedClusterGuard, ClusterError> {
        let deadline = check_lock(name.is_some(), &range, wait)?;
        let shared = self.client.shared();
        let mut crossings = 0;
        loop {
            // Says what to lock; its pieces stay empty (they are the cached guards).
            let plan = ClusterGuard::new(shared, range.clone(), mode, name.clone());
            let mut pieces = CachedPieces::new();
            let got = acquire::acquire(shared, plan.state(), Some(&mut pieces), wait, deadline);
            let got = got.await;
            match got {
                Ok(()) => return Ok(CachedClusterGuard { range, mode, pieces }),
                Err(Failure::Crosses { partition }) => {
                    drop(pieces);
                    shared.crossed(partition, &mut crossings).await?;
                }
                Err(Failure::Error(e)) => return Err(e),
            }
        }
    }
}

impl CachedClusterResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// [`CachedClusterClient::lock`] on this resource (at most
    /// [`MAX_NAMED_PIECES`](super::MAX_NAMED_PIECES) stripes, as
    /// [`ClusterClient::resource`] says).
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<CachedClusterGuard, ClusterError> {
        let name = Some((self.name.clone(), self.hash));
        self.client.lock_on(name, range, mode, wait).await
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(
        &self,
        range: Range<u64>,
    ) -> Result<CachedClusterGuard, ClusterError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }
}

impl CachedClusterGuard {
    /// The locked range.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }

    /// Shared or exclusive.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The pieces in ascending order, each with the fencing token to write its part with
    /// (compare it only with tokens of the same partition).
    pub fn pieces(&self) -> Vec<GuardPiece> {
        let piece = |(partition, g): &(u32, CachedGuard)| GuardPiece {
            partition: *partition,
            range: g.range(),
            token: g.token(),
        };
        self.pieces.iter().map(piece).collect()
    }

    /// The pieces' guards, with their partitions.
    pub fn guards(&self) -> impl Iterator<Item = (u32, &CachedGuard)> {
        self.pieces.iter().map(|(p, g)| (*p, g))
    }

    /// Whether a piece is lost (another client may hold its range now).
    pub fn is_lost(&self) -> bool {
        self.pieces.iter().any(|(_, g)| g.is_lost())
    }

    /// Completes when a piece is lost (at once if one is); never while all are held.
    pub async fn lost(&self) -> super::LostReason {
        let mut waits: Vec<_> = self.pieces.iter().map(|(_, g)| Box::pin(g.lost())).collect();
        std::future::poll_fn(|cx| {
            for w in &mut waits {
                if let std::task::Poll::Ready(reason) = w.as_mut().poll(cx) {
                    return std::task::Poll::Ready(reason);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }

    /// `Err(ClusterError::Lost(reason))` once a piece is lost, else `Ok(())`. An `Ok` is no
    /// proof (a node may have failed a moment ago): fence writes with the tokens.
    pub fn check(&self) -> Result<(), ClusterError> {
        match self.pieces.iter().find_map(|(_, g)| g.lost_reason()) {
            Some(reason) => Err(ClusterError::Lost(reason)),
            None => Ok(()),
        }
    }

    /// Releases every piece (`UNLOCK`s of pieces held at a node for this guard alone are
    /// sent without waiting). `Err(ClusterError::Lost)` if a piece was lost.
    pub fn unlock(self) -> Result<(), ClusterError> {
        let lost = self.check();
        drop(self);
        lost
    }
}
