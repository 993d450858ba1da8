//! A test-and-test-and-set spinlock around a value: the lock of a node-pool shard
//! (`skiplist::pool_lock`). The kernel-style baselines (Song's skip list and the interval
//! tree, `crates/baselines`) sit under the same spinlock (`internals::SpinLock`), so the
//! product and the locks it is compared with share one spinlock.

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_utils::Backoff;

/// A spinlock protecting a `T`.
///
/// Waiters spin on a plain load (no cache-line ping-pong while the lock is held) with
/// exponential backoff, then yield: the machines we measure on are oversubscribed, and a
/// spinner that never yields can starve the holder it waits for.
pub struct SpinLock<T> {
    /// `true` while a [`SpinGuard`] exists.
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `SpinGuard`, and at most one guard exists at a
// time (the `locked` flag), so sharing the lock shares `T` only by moving access between
// threads, which `T: Send` allows.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: the lock owns its `T`; sending the lock sends the `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A new, unlocked spinlock.
    pub const fn new(value: T) -> Self {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Takes the lock, spinning (then yielding) until it is free.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        // Acquire: the critical section of the previous holder happens before ours; pairs
        // with the Release store in `SpinGuard::drop`.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        SpinGuard { lock: self }
    }

    /// Takes the lock if it is free, without waiting.
    // Only the pool shards call it, and under loom they are loom mutexes instead.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline]
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        // Acquire: as in `lock`.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // The guard exists only on success: dropping one unlocks.
            .then(|| SpinGuard { lock: self })
    }

    #[cold]
    fn lock_slow(&self) {
        let backoff = Backoff::new();
        loop {
            while self.locked.load(Ordering::Relaxed) {
                backoff.snooze();
            }
            // Acquire: as in `lock`.
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl<T> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinLock").field("locked", &self.locked.load(Ordering::Relaxed)).finish()
    }
}

/// Exclusive access to the value of a [`SpinLock`]; unlocks on drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinGuard").finish_non_exhaustive()
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one in existence (the `locked` flag), so no other
        // reference to the value is live.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: publishes our critical section to the next holder; pairs with the
        // Acquire CAS in `SpinLock::lock` / `lock_slow`.
        self.lock.locked.store(false, Ordering::Release);
    }
}
