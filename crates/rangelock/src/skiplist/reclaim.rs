//! Node allocation and reclamation: sharded pools, batched epoch retirement.
//!
//! A node that was ever visible to other threads (linked into the list or announced in a
//! reader slot) is *retired*: pushed to the retiring thread's shard buffer. Every
//! [`BATCH`] retirements the buffer is handed to the epoch framework with one `bump_with`,
//! whose action pushes the batch to the shard's free list once no thread can still be
//! traversing with a pointer to those nodes. Allocation pops from the thread's shard (then
//! tries the other shards without blocking) and only calls the allocator when the pools are
//! empty, so the steady state allocates nothing.
//!
//! Nodes are never returned to the allocator before the lock drops: that keeps them
//! type-stable (waiters read a node's wait word without a guard; see `node`). Memory is
//! bounded by the peak number of nodes in use plus `BATCH` per shard plus what waits in the
//! epoch's drain list.
//!
//! Shards are picked by thread index, so threads rarely share a shard mutex; the mutexes
//! guard one `Vec` operation each and are never held across an epoch call (an epoch action
//! may run inside `protect`/guard drop/`bump_with` and takes a shard mutex itself).
//!
//! The epoch is `epvs::epoch::LightEpoch`, one instance per lock, under loom too (with a
//! small table and a [`BATCH`] of one node, so retired nodes come back from the pool within
//! a model run and the models exercise reuse: generations, and traversals that must not
//! reach a reused node). A model too large with the real epoch can reclaim through
//! `DeferredEpoch` instead, which defers every retirement to the drop of the lock.

use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::node::Node;
use super::pool_lock::{PoolGuard, PoolLock};
use super::rng::thread_index;
use super::wait::Wait;
#[cfg(loom)]
use crate::primitive::{lock, Mutex};
use crate::primitive::{Arc, AtomicUsize, Ordering};

/// Retirements per epoch bump.
///
/// While a bump's action waits for its grace period, every guard drop of every thread runs
/// the epoch's drain check (a fence and a scan of the slot table). With 64, a 2-thread W1
/// run spent about a fifth of the lock's own time there (perf: 2.9% of the run against
/// ~13% for the whole lock); 256 cut that to a quarter (0.7%). The price is up to 256
/// retired nodes (~46 KB) per shard waiting for their batch to fill.
///
/// Under loom a batch is one node, so every retirement bumps the epoch and a node can come
/// back from the pool within a model run.
pub(crate) const BATCH: usize = if cfg!(loom) { 1 } else { 256 };

/// Epoch slots under loom: one per thread of the largest model (3), so `protect` never waits
/// for a slot there.
#[cfg(loom)]
const LOOM_SLOTS: usize = 3;

#[cfg(not(loom))]
type Epoch = epvs::epoch::LightEpoch;
/// An epoch guard: proof that the holder is protected, so retired nodes it may reach are not
/// reused.
#[cfg(not(loom))]
pub(crate) type Guard<'a> = epvs::epoch::EpochGuard<'a>;

/// See the non-loom `Guard`; `None` under [`DeferredEpoch`].
#[cfg(loom)]
pub(crate) type Guard<'a> = Option<epvs::epoch::EpochGuard<'a>>;

/// A node pointer that may cross threads inside a retirement batch.
struct NodePtr(NonNull<Node>);

// SAFETY: a `NodePtr` in a pool or batch is owned by that pool or batch (no other thread
// uses the node until it is popped again), and `Node` itself is made of atomics.
unsafe impl Send for NodePtr {}

/// One shard: a free list and a retirement buffer.
struct Shard {
    free: PoolLock<Vec<NodePtr>>,
    retired: PoolLock<Vec<NodePtr>>,
}

/// The pools, shared with the epoch actions (which must be `'static`).
struct Pools {
    shards: Box<[CachePadded<Shard>]>,
    /// Nodes allocated from the allocator and not yet freed (pooled, in use or retired).
    allocated: AtomicUsize,
}

impl Drop for Pools {
    fn drop(&mut self) {
        // Runs after the epoch ran every pending action (`Reclaim` drops its epoch first and
        // each action holds an `Arc<Pools>`), so every node is in a free list or a buffer.
        for shard in self.shards.iter() {
            let free = core::mem::take(&mut *shard.free.lock());
            let retired = core::mem::take(&mut *shard.retired.lock());
            for NodePtr(node) in free.into_iter().chain(retired) {
                // SAFETY: pooled and retired nodes came from `Box::into_raw` in
                // `Reclaim::alloc`, are owned by the pool, and no thread can reach them any
                // more (the lock is being dropped, so no guard or waiter borrows it).
                drop(unsafe { Box::from_raw(node.as_ptr()) });
                self.allocated.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Allocation and epoch-based reclamation of the nodes of one lock.
pub(crate) struct Reclaim {
    // Field order matters: the epoch drops first and runs its pending actions, which return
    // their batches to `pools`.
    epoch: Epoch,
    pools: Arc<Pools>,
}

impl Reclaim {
    /// Pools sized from the machine's parallelism, and a fresh epoch instance.
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        let epoch = Epoch::new();
        #[cfg(loom)]
        let epoch = Epoch::Light(epvs::epoch::LightEpoch::with_slots(LOOM_SLOTS));
        Self::with_epoch(epoch)
    }

    /// Under loom: reclamation through [`DeferredEpoch`], which reuses no node while the
    /// model runs (for models too large with the real epoch).
    #[cfg(all(loom, test))]
    pub(crate) fn deferred() -> Self {
        Self::with_epoch(Epoch::Deferred(DeferredEpoch::new()))
    }

    fn with_epoch(epoch: Epoch) -> Self {
        // Four shards per core: oversubscribed threads (more threads than cores) then rarely
        // share a shard lock, whose holder may be preempted. `bench w2` and `bench held`
        // (K = 16) at 16 threads on 2 cores, two interleaved runs each of a build with one
        // shard per core and of this one (`--rounds 3 --duration-ms 300`): one shard per core
        // gave 10.7M/8.6M and 15.8M/12.7M ops/s, four gave 14.9M/12.8M and 32.7M/34.3M;
        // 1 and 2 threads did not change (w1: 9.4M/9.5M and 18.7M/19.5M vs 9.0M/9.7M and
        // 19.7M/19.8M).
        #[cfg(not(loom))]
        let shards = std::thread::available_parallelism()
            .map_or(16, |n| n.get() * 4)
            .next_power_of_two()
            .clamp(4, 64);
        #[cfg(loom)]
        let shards = 1;
        let shards = (0..shards)
            .map(|_| {
                CachePadded::new(Shard {
                    free: PoolLock::new(Vec::new()),
                    retired: PoolLock::new(Vec::with_capacity(BATCH)),
                })
            })
            .collect();
        Reclaim { epoch, pools: Arc::new(Pools { shards, allocated: AtomicUsize::new(0) }) }
    }

    /// Protects the calling thread: nodes it reaches stay unreused until the guard drops.
    /// Waits (parks) while every slot of the epoch table is taken.
    #[inline]
    pub(crate) fn pin(&self) -> Guard<'_> {
        self.epoch.protect()
    }

    /// [`pin`](Self::pin) as an acquisition that may wait as `wait` says: `None` if the
    /// epoch table stays full (more threads inside lock operations than it has slots) until
    /// the deadline, at once for `Wait::Never`.
    #[inline]
    pub(crate) fn pin_for(&self, wait: Wait) -> Option<Guard<'_>> {
        match wait {
            Wait::Until(None) => Some(self.epoch.protect()),
            Wait::Never => self.epoch.try_protect(std::time::Duration::ZERO).ok(),
            Wait::Until(Some(deadline)) => {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                self.epoch.try_protect(left).ok()
            }
        }
    }

    /// Nodes allocated and not freed (in use, retired or pooled).
    pub(crate) fn allocated(&self) -> usize {
        self.pools.allocated.load(Ordering::Relaxed)
    }

    fn home(&self) -> usize {
        thread_index() & (self.pools.shards.len() - 1)
    }

    /// A private node: from the pools if possible, else from the allocator. Never waits for
    /// another thread: a shard whose lock is taken is skipped.
    #[inline]
    pub(crate) fn alloc(&self) -> NonNull<Node> {
        let shards = &self.pools.shards;
        let home = self.home();
        if let Some(NodePtr(node)) = shards[home].free.try_lock().and_then(|mut free| free.pop()) {
            return node;
        }
        self.alloc_slow(home)
    }

    #[cold]
    fn alloc_slow(&self, home: usize) -> NonNull<Node> {
        let shards = &self.pools.shards;
        for i in 1..shards.len() {
            let shard = &shards[(home + i) & (shards.len() - 1)];
            // Never block on another thread's shard: a busy shard is skipped.
            if let Some(mut free) = shard.free.try_lock() {
                if let Some(NodePtr(node)) = free.pop() {
                    return node;
                }
            }
        }
        self.pools.allocated.fetch_add(1, Ordering::Relaxed);
        NonNull::from(Box::leak(Box::new(Node::new())))
    }

    /// Returns a node that was never visible to another thread straight to the pool.
    pub(crate) fn free_private(&self, node: NonNull<Node>) {
        let mut free = self.shard(|shard| &shard.free);
        free.push(NodePtr(node));
    }

    /// The lock of `part` of the first shard, from the thread's home on, that can be taken
    /// without waiting; the home shard's, waiting, only if every shard is busy at once.
    /// Shards are shared by threads whose indexes are equal modulo the shard count, so a
    /// waiting `lock` could wait for a preempted thread.
    #[inline]
    fn shard<'a>(
        &'a self,
        part: impl Fn(&'a Shard) -> &'a PoolLock<Vec<NodePtr>>,
    ) -> PoolGuard<'a, Vec<NodePtr>> {
        let shards = &self.pools.shards;
        let home = self.home();
        (0..shards.len())
            .find_map(|i| part(&shards[(home + i) & (shards.len() - 1)]).try_lock())
            .unwrap_or_else(|| part(&shards[home]).lock())
    }

    /// Retires a node that other threads may still reach: it is reused only after every
    /// thread protected now has left its protected region.
    ///
    /// The node must be unreachable for threads that protect *after* this call (unlinked
    /// from every level, or cleared from its reader slot).
    pub(crate) fn retire(&self, node: NonNull<Node>) {
        let home = self.home();
        let batch = {
            let mut retired = self.shard(|shard| &shard.retired);
            retired.push(NodePtr(node));
            if retired.len() < BATCH {
                return;
            }
            core::mem::replace(&mut *retired, Vec::with_capacity(BATCH))
        };
        let pools = Arc::clone(&self.pools);
        self.epoch.bump_with(move || {
            pools.shards[home].free.lock().extend(batch);
        });
    }
}

/// Under loom, the epoch of a [`Reclaim`]: the real one, or [`DeferredEpoch`].
#[cfg(loom)]
#[cfg_attr(not(test), allow(dead_code))] // `Deferred`: only the models build one
#[allow(clippy::large_enum_variant)] // one per lock: like the unboxed non-loom field
enum Epoch {
    Light(epvs::epoch::LightEpoch),
    Deferred(DeferredEpoch),
}

#[cfg(loom)]
impl Epoch {
    fn protect(&self) -> Guard<'_> {
        match self {
            Epoch::Light(epoch) => Some(epoch.protect()),
            Epoch::Deferred(_) => None,
        }
    }

    fn try_protect(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Guard<'_>, epvs::epoch::EpochError> {
        match self {
            Epoch::Light(epoch) => epoch.try_protect(timeout).map(Some),
            Epoch::Deferred(_) => Ok(None),
        }
    }

    fn bump_with(&self, action: impl FnOnce() + Send + 'static) {
        match self {
            Epoch::Light(epoch) => {
                epoch.bump_with(action);
            }
            Epoch::Deferred(epoch) => epoch.bump_with(action),
        }
    }
}

/// The loom stand-in for the epoch framework in models too large for the real one:
/// protection is a no-op and every deferred action runs when the instance drops (nothing is
/// reused while the model runs).
#[cfg(loom)]
pub(crate) struct DeferredEpoch {
    actions: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

#[cfg(loom)]
impl DeferredEpoch {
    #[cfg(test)]
    fn new() -> Self {
        DeferredEpoch { actions: Mutex::new(Vec::new()) }
    }

    fn bump_with(&self, action: impl FnOnce() + Send + 'static) {
        lock(&self.actions).push(Box::new(action));
    }
}

#[cfg(loom)]
impl Drop for DeferredEpoch {
    fn drop(&mut self) {
        for action in core::mem::take(&mut *lock(&self.actions)) {
            action();
        }
    }
}
