//! Node recycling for the lock-free variants: a per-lock node pool refilled through
//! epoch-based reclamation.
//!
//! # Protocol
//!
//! * Every traversal of a shared structure runs inside a [`Pin`] (an epoch guard).
//! * A node unlinked from the structure is [`retire`](Reclaim::retire)d: pushed on the
//!   *limbo* stack. Every [`BATCH`] retirements the limbo stack is detached as a whole and
//!   handed to the epoch scheme as one deferred action, which runs once every thread that
//!   was pinned when the batch was detached has unpinned, and pushes the batch onto the
//!   *pool* stack. A batch is detached after all its nodes were unlinked, so no thread
//!   that can still reach one of them is left when it reaches the pool.
//! * [`alloc`](Reclaim::alloc) pops a node from the pool (or allocates one). The pop runs
//!   pinned, and a node only re-enters the pool after a grace period that started after it
//!   left the pool, so the pop's CAS cannot suffer ABA: while our pop is pinned, the head
//!   we read cannot have been popped *and* pushed back. A popper may still read the link
//!   of a node someone else has just popped; links are atomics, nodes are only freed when
//!   the lock drops, so that read is harmless and its CAS fails.
//! * A node that was allocated but never published is retired too (a concurrent popper may
//!   still be looking at it), never pushed back directly.
//! * Limbo and pool chain nodes through a dedicated [`Recyclable::link`] field: a node in
//!   limbo is still read by pinned walkers, who must keep seeing its frozen fields.
//! * The three shared words (pool head, limbo head, limbo count) sit on their own cache
//!   lines.
//!
//! The epoch scheme is `epvs::epoch::LightEpoch`, one instance per lock (owned by the
//! [`Reclaim`]): [`Pin`] is its guard, `refresh` re-announces, and a batch is handed over
//! with one `bump_with`. Actions still pending when the lock drops run in the epoch's own
//! drop, so a dropped lock leaves nothing behind. Under `cfg(loom)` there is no epoch
//! scheme: retired nodes stay in limbo until the lock drops, and `alloc` always allocates
//! (loom checks the list protocol; the epoch has its own models in `epvs`).
//!
//! # Trade-offs
//!
//! Retirement costs one CAS on the shared limbo head plus one counter increment; the pool
//! pop is one CAS on a shared head. Both are per-lock cache lines that every thread
//! touches, which is cheaper than the allocator under churn but is a point of contention
//! of its own. Memory is bounded by the peak of live nodes plus what waits for a grace
//! period; the pool is only freed with the lock.

// Under loom nothing is recycled (see above), so the pool half of this file is unused.
#![cfg_attr(loom, allow(dead_code))]

use core::fmt;
use core::marker::PhantomData;
use core::ptr;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::sync::{AtomicPtr, AtomicUsize, Ordering};

/// Retirements per deferred batch.
pub(crate) const BATCH: usize = 64;

/// A node type the pool can chain through one of its own atomic fields.
///
/// # Safety
///
/// `link` must return a pointer to an `AtomicUsize` inside `*this` that the structure
/// never uses: a retired node sits in limbo while pinned threads may still read every
/// other field of it. `reinit` must only write the node's fields with atomic stores or raw
/// writes (no `&mut` to the whole node) and leave the link alone, since stale poppers may
/// read the link meanwhile.
pub(crate) unsafe trait Recyclable: Sized + 'static {
    /// The atomic field used as the pool link.
    ///
    /// # Safety
    ///
    /// `this` points to a live node.
    unsafe fn link(this: *const Self) -> *const AtomicUsize;

    /// Overwrites a recycled node with `value`'s contents.
    ///
    /// # Safety
    ///
    /// `this` points to a live node owned by the caller (popped from the pool).
    unsafe fn reinit(this: *mut Self, value: Self);
}

/// A Treiber stack of nodes chained through [`Recyclable::link`].
struct Stack<T: Recyclable> {
    head: AtomicPtr<T>,
}

impl<T: Recyclable> Stack<T> {
    fn new() -> Self {
        Stack { head: AtomicPtr::new(ptr::null_mut()) }
    }

    /// Pushes the chain `first ..= last` (linked through `link`).
    ///
    /// # Safety
    ///
    /// The caller owns the chain; `last` is reachable from `first`.
    unsafe fn push_chain(&self, first: *mut T, last: *mut T) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller owns `last`.
            unsafe { &*T::link(last) }.store(head.expose_provenance(), Ordering::Relaxed);
            // Release: the chain's links (and node contents) are visible to whoever pops
            // or detaches it; pairs with the Acquire in `pop` / `take_all`.
            match self.head.compare_exchange_weak(head, first, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => head = actual,
            }
        }
    }

    /// Pops one node. Only ABA-safe under the pool discipline in the module docs.
    #[cfg(not(loom))]
    fn pop(&self) -> Option<*mut T> {
        // Acquire: pairs with the Release in `push_chain`.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            if head.is_null() {
                return None;
            }
            // SAFETY: nodes are only freed when the pool drops; the link is an atomic, so a
            // concurrent pop of the same node is a harmless race that fails our CAS.
            let next = unsafe { &*T::link(head) }.load(Ordering::Relaxed);
            let next: *mut T = ptr::with_exposed_provenance_mut(next);
            // Acquire: as above.
            match self.head.compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return Some(head),
                Err(actual) => head = actual,
            }
        }
    }

    /// Detaches the whole stack.
    fn take_all(&self) -> *mut T {
        // Acquire: pairs with the Release in `push_chain`.
        self.head.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Frees every node of a detached chain.
    ///
    /// # Safety
    ///
    /// The caller owns the chain and every node was allocated with `Box`.
    unsafe fn free_chain(mut cur: *mut T) {
        while !cur.is_null() {
            // SAFETY: the caller owns the chain.
            let next = unsafe { &*T::link(cur) }.load(Ordering::Relaxed);
            // SAFETY: allocated with `Box` (see `Reclaim::alloc`), owned by the caller.
            drop(unsafe { Box::from_raw(cur) });
            cur = ptr::with_exposed_provenance_mut(next);
        }
    }

    /// Last node of a chain.
    ///
    /// # Safety
    ///
    /// The caller owns the non-empty chain.
    unsafe fn last(mut cur: *mut T) -> *mut T {
        loop {
            // SAFETY: the caller owns the chain.
            let next = unsafe { &*T::link(cur) }.load(Ordering::Relaxed);
            if next == 0 {
                return cur;
            }
            cur = ptr::with_exposed_provenance_mut(next);
        }
    }
}

impl<T: Recyclable> Drop for Stack<T> {
    fn drop(&mut self) {
        let chain = self.take_all();
        // SAFETY: `&mut self`: no one else uses the stack; its nodes came from `Box`.
        unsafe { Stack::free_chain(chain) };
    }
}

/// The pool and limbo, shared with deferred actions (which may outlive a `Reclaim`).
struct Shared<T: Recyclable> {
    pool: CachePadded<Stack<T>>,
    limbo: CachePadded<Stack<T>>,
    limbo_len: CachePadded<AtomicUsize>,
}

/// A detached batch of retired nodes on its way to the pool.
struct Batch<T: Recyclable> {
    shared: Arc<Shared<T>>,
    first: *mut T,
}

// SAFETY: the batch owns its chain of nodes exclusively (detached from limbo); nodes are
// plain data that may be freed or reused on any thread.
unsafe impl<T: Recyclable> Send for Batch<T> {}

impl<T: Recyclable> Batch<T> {
    /// Moves the batch into the pool (its grace period has elapsed).
    #[cfg(not(loom))]
    fn recycle(self) {
        // SAFETY: the batch owns its non-empty chain.
        unsafe {
            let last = Stack::last(self.first);
            self.shared.pool.push_chain(self.first, last);
        }
    }
}

/// Epoch protection for one traversal.
pub(crate) struct Pin<'a> {
    #[cfg(not(loom))]
    guard: epvs::epoch::EpochGuard<'a>,
    _not_send: PhantomData<(&'a (), *mut ())>,
}

impl Pin<'_> {
    /// Re-announces the current epoch: every pointer read before is invalid afterwards.
    #[inline]
    pub(crate) fn refresh(&mut self) {
        #[cfg(not(loom))]
        self.guard.refresh();
    }
}

impl fmt::Debug for Pin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pin").finish_non_exhaustive()
    }
}

/// Pool plus deferred reclamation for nodes of type `T`. See the module docs.
pub(crate) struct Reclaim<T: Recyclable> {
    /// Dropped first: runs the batches still waiting for their grace period, which push
    /// into `shared` (kept alive by their own `Arc`).
    #[cfg(not(loom))]
    epoch: epvs::epoch::LightEpoch,
    shared: Arc<Shared<T>>,
}

impl<T: Recyclable> Reclaim<T> {
    pub(crate) fn new() -> Self {
        Reclaim {
            #[cfg(not(loom))]
            epoch: epvs::epoch::LightEpoch::new(),
            shared: Arc::new(Shared {
                pool: CachePadded::new(Stack::new()),
                limbo: CachePadded::new(Stack::new()),
                limbo_len: CachePadded::new(AtomicUsize::new(0)),
            }),
        }
    }

    /// Enters a protected region.
    #[inline]
    pub(crate) fn pin(&self) -> Pin<'_> {
        Pin {
            #[cfg(not(loom))]
            guard: self.epoch.protect(),
            _not_send: PhantomData,
        }
    }

    /// A node holding `value`, recycled from the pool when possible.
    #[inline]
    pub(crate) fn alloc(&self, _pin: &Pin<'_>, value: T) -> *mut T {
        #[cfg(not(loom))]
        if let Some(node) = self.shared.pool.pop() {
            // SAFETY: popped, so owned by us; `reinit` only uses atomic or raw writes.
            unsafe { T::reinit(node, value) };
            return node;
        }
        Box::into_raw(Box::new(value))
    }

    /// Hands an unlinked (or never published) node over for reuse after a grace period.
    ///
    /// # Safety
    ///
    /// `node` came from [`alloc`](Self::alloc) on this `Reclaim`, is no longer reachable
    /// from the shared structure for threads pinning from now on, and is retired once.
    #[inline]
    pub(crate) unsafe fn retire(&self, pin: &Pin<'_>, node: *mut T) {
        // SAFETY: the caller hands the node over; it is its own one-node chain.
        unsafe { self.shared.limbo.push_chain(node, node) };
        let n = self.shared.limbo_len.fetch_add(1, Ordering::Relaxed) + 1;
        if n % BATCH == 0 {
            self.flush(pin);
        }
    }

    /// Detaches limbo and defers it to the pool.
    #[cold]
    fn flush(&self, _pin: &Pin<'_>) {
        #[cfg(not(loom))]
        {
            let first = self.shared.limbo.take_all();
            if !first.is_null() {
                let batch = Batch { shared: Arc::clone(&self.shared), first };
                // The grace period starts now, after every node of the batch was unlinked.
                self.epoch.bump_with(move || batch.recycle());
            }
        }
    }
}

impl<T: Recyclable> fmt::Debug for Reclaim<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reclaim")
            .field("retired", &self.shared.limbo_len.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
