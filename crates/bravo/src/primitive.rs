//! Synchronization primitives, swapped for [loom]'s under `cfg(loom)`.
//!
//! The lock's atomics, `Arc`, the writers' yield and the underlying reader-writer lock come
//! from here, so the loom models run the code that ships. The underlying lock is
//! `parking_lot`'s raw lock outside loom and a loom spin lock with the same six operations
//! under it (a parked `parking_lot` waiter would block loom's scheduler).
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

/// Ends either side of the fast-reader/writer handshake (after the reader's slot CAS, after
/// the writer's bias clear). The argument in the crate docs needs only the `SeqCst`
/// accesses themselves, so outside loom this is nothing; loom checks `SeqCst` fences
/// exactly but `SeqCst` accesses more weakly, and without the fence its models report the
/// fast reader and the writer inside together.
#[inline(always)]
pub(crate) fn handshake_fence() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// The underlying reader-writer lock: slow readers and all writers.
#[cfg(not(loom))]
pub(crate) struct RawRwLock(parking_lot::RawRwLock);

#[cfg(not(loom))]
impl std::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawRwLock")
            .field("locked", &lock_api::RawRwLock::is_locked(&self.0))
            .finish()
    }
}

#[cfg(not(loom))]
impl RawRwLock {
    pub(crate) const fn new() -> Self {
        RawRwLock(<parking_lot::RawRwLock as lock_api::RawRwLock>::INIT)
    }

    #[inline]
    pub(crate) fn lock_shared(&self) {
        lock_api::RawRwLock::lock_shared(&self.0);
    }

    #[inline]
    pub(crate) fn try_lock_shared(&self) -> bool {
        lock_api::RawRwLock::try_lock_shared(&self.0)
    }

    #[inline]
    pub(crate) fn lock_exclusive(&self) {
        lock_api::RawRwLock::lock_exclusive(&self.0);
    }

    #[inline]
    pub(crate) fn try_lock_exclusive(&self) -> bool {
        lock_api::RawRwLock::try_lock_exclusive(&self.0)
    }

    /// # Safety
    ///
    /// The caller holds the lock in shared mode (and gives that hold up).
    #[inline]
    pub(crate) unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { lock_api::RawRwLock::unlock_shared(&self.0) }
    }

    /// # Safety
    ///
    /// The caller holds the lock exclusively (and gives that hold up).
    #[inline]
    pub(crate) unsafe fn unlock_exclusive(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { lock_api::RawRwLock::unlock_exclusive(&self.0) }
    }
}

/// The loom stand-in of the underlying lock: one word, `WRITER` or the number of readers.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct RawRwLock(AtomicUsize);

#[cfg(loom)]
const WRITER: usize = usize::MAX;

#[cfg(loom)]
impl RawRwLock {
    pub(crate) fn new() -> Self {
        RawRwLock(AtomicUsize::new(0))
    }

    pub(crate) fn lock_shared(&self) {
        while !self.try_lock_shared() {
            yield_now();
        }
    }

    pub(crate) fn try_lock_shared(&self) -> bool {
        let n = self.0.load(Ordering::Relaxed);
        // Acquire: enters after the last writer's Release unlock.
        n != WRITER
            && self.0.compare_exchange(n, n + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    pub(crate) fn lock_exclusive(&self) {
        while !self.try_lock_exclusive() {
            yield_now();
        }
    }

    pub(crate) fn try_lock_exclusive(&self) -> bool {
        // Acquire: enters after every earlier holder's Release unlock.
        self.0.compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// # Safety
    ///
    /// The caller holds the lock in shared mode.
    pub(crate) unsafe fn unlock_shared(&self) {
        // Release: publishes the reader's accesses to the next writer.
        self.0.fetch_sub(1, Ordering::Release);
    }

    /// # Safety
    ///
    /// The caller holds the lock exclusively.
    pub(crate) unsafe fn unlock_exclusive(&self) {
        // Release: publishes the writer's accesses to the next holder.
        self.0.store(0, Ordering::Release);
    }
}
