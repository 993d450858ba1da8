//! [`ClusterClient`]: the map, the node connections, and locking through them.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rangelock_proto::{
    name_hash, ClusterMap, Mode, NodeInfo, Request, StatsBody, Status, Wait, MAX_RESOURCE_NAME_LEN,
    NAME_STRIPE_SHIFT,
};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::acquire::{self, Failure};
use super::backoff::Backoff;
use super::error::ClusterError;
use super::guard::ClusterGuard;
use super::nodes::{self, NodePool};
use super::options::ClusterOptions;
use super::registry::Registry;
use crate::cached::CacheOptions;
use crate::error::{check_wait, ClientError};

/// What the client, its guards and its background tasks share.
pub(super) struct Shared {
    seeds: Vec<String>,
    pub(super) options: ClusterOptions,
    /// The newest map read (by revision); set before [`ClusterClient::connect`] returns.
    map: Mutex<Option<Arc<ClusterMap>>>,
    pub(super) nodes: NodePool,
    pub(super) registry: Registry,
    next_guard: AtomicU64,
    /// Counts the map changes nodes pushed (`MAP_CHANGED`), each counted once the client
    /// has read the node's new map: a pause between retries ends at the next one.
    map_news: watch::Sender<u64>,
    /// A [`CachedClusterClient`](super::CachedClusterClient)'s: every node session asks
    /// for cached locks (`CACHE_ON`).
    pub(super) cache: Option<CacheOptions>,
}

impl core::fmt::Debug for Shared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let revision = self.lock_map().as_ref().map(|m| m.revision);
        f.debug_struct("Shared")
            .field("seeds", &self.seeds)
            .field("options", &self.options)
            .field("map_revision", &revision)
            .field("connected", &self.nodes.live())
            .finish()
    }
}

impl Shared {
    fn lock_map(&self) -> MutexGuard<'_, Option<Arc<ClusterMap>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached map.
    pub(super) fn map(&self) -> Arc<ClusterMap> {
        self.lock_map().clone().expect("a map is read before the client is handed out")
    }

    /// A new backoff, as the options say.
    pub(super) fn backoff(&self) -> Backoff {
        Backoff::new(self.options.backoff_first, self.options.backoff_max)
    }

    /// A receiver of the map changes nodes push from now on.
    pub(super) fn map_news(&self) -> watch::Receiver<u64> {
        self.map_news.subscribe()
    }

    /// The node at `addr` pushed a `MAP_CHANGED` notice with `revision`: reads its map if
    /// it may be newer than the cached one (a change of the same revision, such as a
    /// grace period's end, counts), then wakes every pause.
    pub(super) async fn map_pushed(self: &Arc<Self>, addr: &str, revision: u64) {
        // On the connection that brought the notice, if it is still up (not through
        // `nodes::node`, which would connect again).
        let conn = self.nodes.cached(addr);
        if let Some(conn) = conn.filter(|_| revision >= self.map().revision) {
            let limit = self.options.connect_timeout;
            match tokio::time::timeout(limit, conn.client.raw(Request::Map)).await {
                Ok(Ok(r)) if r.status == Status::Ok => {
                    if let Some(map) = r.map {
                        if let Err(e) = self.offer(map) {
                            tracing::debug!(addr, error = %e, "a pushed map refused");
                        }
                    }
                }
                r => {
                    tracing::debug!(addr, answer = ?r.map(|r| r.map(|r| r.status)), "no pushed map")
                }
            }
        }
        self.map_news.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A node answered `CROSSES_PARTITION` for `partition` (the map's partitioning is not
    /// its own): counts it in `crossings`, fails past the redirect bound, else re-reads
    /// the map for the lock to start over.
    pub(super) async fn crossed(
        self: &Arc<Self>,
        partition: u32,
        crossings: &mut u32,
    ) -> Result<(), ClusterError> {
        *crossings += 1;
        if *crossings > self.options.max_redirects {
            return Err(ClusterError::TooManyRedirects { partition, redirects: *crossings });
        }
        tracing::debug!(partition, "CROSSES_PARTITION: re-reading the map");
        self.refresh_map(None).await.map(drop)
    }

    pub(super) fn next_guard_id(&self) -> u64 {
        self.next_guard.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `map` if it is at least as new as the cached one; returns the newest. A map
    /// of another partition count is refused: a cluster's count never changes.
    fn offer(&self, map: ClusterMap) -> Result<Arc<ClusterMap>, ClusterError> {
        map.check().map_err(|e| ClusterError::BadMap(e.to_string()))?;
        let mut cached = self.lock_map();
        match &*cached {
            Some(old) if old.partitions != map.partitions => Err(ClusterError::BadMap(format!(
                "{} partitions, but the cluster has {}",
                map.partitions, old.partitions
            ))),
            Some(old) if old.revision > map.revision => Ok(old.clone()),
            _ => {
                let map = Arc::new(map);
                *cached = Some(map.clone());
                Ok(map)
            }
        }
    }

    /// Reads the map of the node at `addr`.
    async fn read_map(self: &Arc<Self>, addr: &str) -> Result<ClusterMap, ClusterError> {
        let conn = nodes::node(self, addr).await?;
        let limit = self.options.connect_timeout;
        let r = match tokio::time::timeout(limit, conn.client.raw(Request::Map)).await {
            Ok(r) => r?,
            Err(_) => {
                let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer to MAP");
                return Err(ClientError::Io(e).into());
            }
        };
        match (r.status, r.map) {
            (Status::Ok, Some(map)) => Ok(map),
            (status, _) => Err(ClusterError::Server(status)),
        }
    }

    /// Where to ask for the map: nodes with a live connection, the map's nodes, the seeds
    /// — without `avoid`, a node that is gone.
    fn candidates(&self, avoid: Option<&str>) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let map_nodes = self.lock_map().as_ref().map(|m| m.nodes.clone()).unwrap_or_default();
        let all = self
            .nodes
            .live()
            .into_iter()
            .chain(map_nodes.into_iter().map(|n| n.addr))
            .chain(self.seeds.iter().cloned());
        all.filter(|addr| Some(addr.as_str()) != avoid && seen.insert(addr.clone())).collect()
    }

    /// Re-reads the map, looking for a newer one than the cached: asks the candidates
    /// ([`Shared::candidates`]) in turn until one has a newer map, and `avoid` only if no
    /// other answered. Returns the newest map known, even if nobody had a newer one; an
    /// error only if no node answered.
    pub(super) async fn refresh_map(
        self: &Arc<Self>,
        avoid: Option<&str>,
    ) -> Result<Arc<ClusterMap>, ClusterError> {
        let cached = self.map().revision;
        let mut failures = Vec::new();
        let mut bad_map = None;
        let mut answered = false;
        let last_resort = avoid.map(str::to_owned);
        let candidates = self.candidates(avoid).into_iter().map(|a| (a, false));
        for (addr, is_last_resort) in candidates.chain(last_resort.map(|a| (a, true))) {
            if is_last_resort && answered {
                break;
            }
            let map = match self.read_map(&addr).await {
                Ok(map) => map,
                Err(e) => {
                    failures.push(format!("{addr}: {e}"));
                    continue;
                }
            };
            let revision = map.revision;
            match self.offer(map) {
                Ok(newest) if revision > cached => return Ok(newest),
                Ok(_) => answered = true,
                Err(e) => {
                    failures.push(format!("{addr}: {e}"));
                    bad_map = Some(e);
                }
            }
        }
        match (answered, bad_map) {
            (true, _) => Ok(self.map()),
            (false, Some(bad)) => Err(bad),
            (false, None) => Err(ClusterError::NoNode(failures.join("; "))),
        }
    }
}

/// A client of a rangelock cluster; cheap to clone (clones share the map, the node
/// connections and the reclaim machinery). See the [module docs](super).
#[derive(Clone, Debug)]
pub struct ClusterClient {
    shared: Arc<Shared>,
}

impl ClusterClient {
    /// Connects to the cluster: reads the MAP from the first of `seeds` (node addresses,
    /// `host:port`) that answers. Must run inside a tokio runtime, which then drives the
    /// node connections and the reclaims.
    ///
    /// While the seeds that answer have no map yet (they are starting, or fenced), it asks
    /// again after a backoff pause, for up to [`ClusterOptions::map_wait`].
    ///
    /// Errors: [`ClusterError::NoNode`] (with what each seed said) if none answers with a
    /// map; a node that is not part of a cluster answers `NOT_CLUSTERED`. If none answers
    /// and a seed refused the token of [`ClusterOptions::connect`]:
    /// [`ClusterError::Client`] with [`ClientError::AuthRequired`] or
    /// [`ClientError::AuthFailed`].
    pub async fn connect(
        seeds: &[String],
        options: ClusterOptions,
    ) -> Result<ClusterClient, ClusterError> {
        Self::connect_cached(seeds, options, None).await
    }

    /// [`ClusterClient::connect`]; with `cache`, every node session asks for cached locks.
    pub(super) async fn connect_cached(
        seeds: &[String],
        options: ClusterOptions,
        cache: Option<CacheOptions>,
    ) -> Result<ClusterClient, ClusterError> {
        if seeds.is_empty() {
            return Err(ClusterError::NoNode("no seed address given".into()));
        }
        let shared = Arc::new(Shared {
            seeds: seeds.to_vec(),
            options,
            map: Mutex::new(None),
            nodes: NodePool::default(),
            registry: Registry::default(),
            next_guard: AtomicU64::new(1),
            map_news: watch::Sender::new(0),
            cache,
        });
        let started = Instant::now();
        let mut backoff = Backoff::new(shared.options.backoff_first, shared.options.backoff_max);
        loop {
            let mut failures = Vec::new();
            let mut refused = None;
            let mut starting = false;
            for seed in seeds {
                match shared.read_map(seed).await {
                    Ok(map) => {
                        shared.offer(map)?;
                        return Ok(ClusterClient { shared });
                    }
                    Err(ClusterError::Client(
                        e @ (ClientError::AuthRequired | ClientError::AuthFailed),
                    )) => {
                        failures.push(format!("{seed}: {e}"));
                        refused.get_or_insert(e);
                    }
                    Err(e) => {
                        // A node answers MAP with FENCED until it has registered in etcd
                        // and read the cluster's keys (or while its lease is in doubt).
                        starting |= matches!(e, ClusterError::Server(Status::Fenced));
                        failures.push(format!("{seed}: {e}"));
                    }
                }
            }
            // A node that refused the token is the one thing the caller can fix.
            if let Some(e) = refused {
                return Err(ClusterError::Client(e));
            }
            let pause = backoff.next_pause();
            if !starting || started.elapsed() + pause > shared.options.map_wait {
                return Err(ClusterError::NoNode(failures.join("; ")));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Locks `range` in `mode`, waiting as `wait` says, across as many partitions as it
    /// touches: all pieces or none (see the [module docs](super#acquiring-a-range)).
    /// [`Wait::Timeout`] bounds the whole acquisition.
    ///
    /// Errors: [`ClusterError::WouldBlock`] and [`ClusterError::Unavailable`] (a try),
    /// [`ClusterError::TimedOut`], [`ClusterError::TooManyRedirects`],
    /// [`ClusterError::Client`] for an empty range or a timeout the protocol cannot carry
    /// (refused before anything is sent), [`ClusterError::Lost`] when a piece already
    /// acquired was lost while later pieces were being acquired (its node failed and the
    /// reclaim was refused) — and in every case nothing is held.
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<ClusterGuard, ClusterError> {
        self.lock_on(None, range, mode, wait).await
    }

    /// The named resource `name` of the cluster (`docs/design/names.md`): its locks take
    /// the client's calls, and locks on different names never conflict. Its units are
    /// placed by the name's hash, stripe by stripe
    /// ([`rangelock_proto::Partitioning::split_named`]), so many names spread over the
    /// nodes and one name's ranges over the partitions.
    ///
    /// Errors: [`ClientError::InvalidName`] for an empty name or one over 1024 bytes,
    /// refused before anything is sent. (Nodes before protocol version 5 answer its locks
    /// `UNKNOWN_OP`: [`ClusterError::Server`].)
    pub fn resource(&self, name: impl AsRef<[u8]>) -> Result<ClusterResource, ClusterError> {
        let name = name.as_ref();
        if name.is_empty() || name.len() > MAX_RESOURCE_NAME_LEN {
            return Err(ClientError::InvalidName { len: name.len() }.into());
        }
        let hash = name_hash(name);
        Ok(ClusterResource { client: self.clone(), name: Arc::from(name), hash })
    }

    /// [`ClusterClient::lock`] on the resource `name` (with its hash; `None`: the unnamed
    /// resource).
    async fn lock_on(
        &self,
        name: Option<(Arc<[u8]>, u64)>,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<ClusterGuard, ClusterError> {
        let deadline = check_lock(name.is_some(), &range, wait)?;
        let shared = &self.shared;
        let mut crossings = 0;
        loop {
            let guard = ClusterGuard::new(shared, range.clone(), mode, name.clone());
            match acquire::acquire(shared, guard.state(), None, wait, deadline).await {
                Ok(()) => return Ok(guard),
                Err(Failure::Crosses { partition }) => {
                    guard.abandon().await;
                    shared.crossed(partition, &mut crossings).await?;
                }
                Err(Failure::Error(e)) => {
                    guard.abandon().await;
                    return Err(e);
                }
            }
        }
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The cached map (the newest the client has read).
    pub fn map(&self) -> Arc<ClusterMap> {
        self.shared.map()
    }

    /// Re-reads the map from a node (one the client is connected to, one the map names,
    /// or a seed) and returns the newest map the client now knows.
    pub async fn refresh_map(&self) -> Result<Arc<ClusterMap>, ClusterError> {
        self.shared.refresh_map(None).await
    }

    /// `STATS` of every node the map lists (after re-reading it), in the map's order:
    /// counters and up to `max_entries` holders and waiters each.
    ///
    /// Errors: [`ClusterError::NoNode`] naming the first node that could not be asked
    /// (a node that died stays in the map until its etcd lease expires).
    pub async fn stats_all(
        &self,
        max_entries: u32,
    ) -> Result<Vec<(NodeInfo, StatsBody)>, ClusterError> {
        let map = match self.refresh_map().await {
            Ok(map) => map,
            Err(_) => self.map(),
        };
        let mut asks = JoinSet::new();
        for (i, node) in map.nodes.iter().enumerate() {
            let (shared, addr) = (self.shared.clone(), node.addr.clone());
            asks.spawn(async move {
                let ask = async {
                    let conn = nodes::node(&shared, &addr).await?;
                    conn.client.stats(max_entries).await
                };
                let limit = shared.options.connect_timeout * 2;
                let answer = match tokio::time::timeout(limit, ask).await {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within {limit:?}")),
                };
                (i, answer)
            });
        }
        let mut stats: Vec<Option<StatsBody>> = vec![None; map.nodes.len()];
        while let Some(joined) = asks.join_next().await {
            let (i, answer) = joined.map_err(|e| ClusterError::NoNode(e.to_string()))?;
            let node = &map.nodes[i];
            stats[i] = Some(answer.map_err(|e| {
                ClusterError::NoNode(format!("node {} at {}: {e}", node.id, node.addr))
            })?);
        }
        Ok(map.nodes.iter().cloned().zip(stats.into_iter().map(|s| s.expect("all"))).collect())
    }
}

/// Refuses a lock before anything is sent: an empty range, a named range over more than
/// [`MAX_NAMED_PIECES`] stripes, a timeout the protocol cannot carry. The deadline of a
/// [`Wait::Timeout`].
pub(super) fn check_lock(
    named: bool,
    range: &Range<u64>,
    wait: Wait,
) -> Result<Option<Instant>, ClusterError> {
    if range.start >= range.end {
        return Err(ClientError::InvalidRange { start: range.start, end: range.end }.into());
    }
    if named {
        let stripes =
            ((range.end - 1) >> NAME_STRIPE_SHIFT) - (range.start >> NAME_STRIPE_SHIFT) + 1;
        if stripes > MAX_NAMED_PIECES {
            return Err(ClusterError::TooManyPieces { stripes });
        }
    }
    check_wait(wait)?;
    Ok(match wait {
        Wait::Timeout(d) => Instant::now().checked_add(d),
        _ => None,
    })
}

/// The most pieces a lock on a named resource may have: a named range spans at most this
/// many stripes of `2^`[`NAME_STRIPE_SHIFT`] units ([`ClusterError::TooManyPieces`]). As
/// many as a cluster may have partitions, the most pieces an unnamed range has.
pub const MAX_NAMED_PIECES: u64 = rangelock_proto::MAX_PARTITIONS as u64;

/// A named resource of a cluster ([`ClusterClient::resource`]); cheap to clone. Its lock
/// calls are the client's, its guards [`ClusterGuard`]s with one piece per stripe the
/// range touches (each with its partition's fencing token), reclaimed by name
/// (`RECLAIM_NAMED`) after a failover or move.
#[derive(Clone, Debug)]
pub struct ClusterResource {
    client: ClusterClient,
    name: Arc<[u8]>,
    hash: u64,
}

impl ClusterResource {
    /// The resource's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The name's placement hash ([`rangelock_proto::name_hash`]).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Locks `range` of this resource in `mode`, waiting as `wait` says: as
    /// [`ClusterClient::lock`] does on the unnamed resource (all pieces or none, taken
    /// in ascending unit order). Also [`ClusterError::TooManyPieces`] for a range over
    /// more than [`MAX_NAMED_PIECES`] stripes.
    pub async fn lock(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: Wait,
    ) -> Result<ClusterGuard, ClusterError> {
        let name = Some((self.name.clone(), self.hash));
        self.client.lock_on(name, range, mode, wait).await
    }

    /// Locks `range` of this resource exclusively, waiting as long as it takes.
    pub async fn lock_exclusive(&self, range: Range<u64>) -> Result<ClusterGuard, ClusterError> {
        self.lock(range, Mode::Exclusive, Wait::Forever).await
    }

    /// Locks `range` of this resource shared, waiting as long as it takes.
    pub async fn lock_shared(&self, range: Range<u64>) -> Result<ClusterGuard, ClusterError> {
        self.lock(range, Mode::Shared, Wait::Forever).await
    }
}
