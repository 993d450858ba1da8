//! The lock of one pool shard: a test-and-test-and-set spin lock that yields.
//!
//! Every operation of the lock takes its thread's shard twice (one `Vec` pop when allocating
//! a node, one push when retiring it). With `std::sync::Mutex` each of those costs two
//! atomic RMWs (the lock CAS and the unlock swap that checks for sleepers); this lock costs
//! one CAS and a plain Release store. Shards are picked by thread index, so the lock is
//! almost never contended: only a thread stealing from another shard (`try_lock` only) or an
//! epoch action returning a batch to the free list meets the owner. A waiter spins briefly
//! and then yields, so a holder preempted inside its one-`Vec`-operation critical section
//! (oversubscribed runs) gets the CPU back.
//!
//! Under loom the shard lock is loom's `Mutex` (the models check the list protocol, not this
//! lock).

#[cfg(not(loom))]
mod imp {
    use core::cell::UnsafeCell;
    use core::ops::{Deref, DerefMut};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Spins before each yield while the lock is taken.
    const SPINS: u32 = 32;

    /// A spin lock around `T` (see the module docs).
    pub(crate) struct PoolLock<T> {
        /// `true` while a guard exists.
        locked: AtomicBool,
        value: UnsafeCell<T>,
    }

    // SAFETY: the value is reached only through a guard, and at most one guard exists at a
    // time (the `locked` CAS); `T: Send` lets the value move between the threads holding it.
    unsafe impl<T: Send> Sync for PoolLock<T> {}

    /// Access to the value of a [`PoolLock`]; unlocks on drop.
    pub(crate) struct PoolGuard<'a, T> {
        lock: &'a PoolLock<T>,
    }

    impl<T> PoolLock<T> {
        pub(crate) fn new(value: T) -> Self {
            PoolLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
        }

        /// Takes the lock, spinning and then yielding while it is taken.
        #[inline]
        pub(crate) fn lock(&self) -> PoolGuard<'_, T> {
            match self.try_lock() {
                Some(guard) => guard,
                None => self.lock_slow(),
            }
        }

        /// Takes the lock if it is free.
        #[inline]
        pub(crate) fn try_lock(&self) -> Option<PoolGuard<'_, T>> {
            // Acquire: the previous holder's accesses to the value happen before ours; pairs
            // with the Release store in `PoolGuard::drop`.
            match self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed) {
                // The guard exists only on success: dropping one unlocks.
                Ok(_) => Some(PoolGuard { lock: self }),
                Err(_) => None,
            }
        }

        #[cold]
        fn lock_slow(&self) -> PoolGuard<'_, T> {
            loop {
                let mut spins = 0;
                // Relaxed: a hint; the CAS in `try_lock` decides.
                while self.locked.load(Ordering::Relaxed) {
                    if spins < SPINS {
                        core::hint::spin_loop();
                        spins += 1;
                    } else {
                        std::thread::yield_now();
                        spins = 0;
                    }
                }
                if let Some(guard) = self.try_lock() {
                    return guard;
                }
            }
        }
    }

    impl<T> Deref for PoolGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            // SAFETY: this guard is the only one (see `PoolLock`'s Sync impl).
            unsafe { &*self.lock.value.get() }
        }
    }

    impl<T> DerefMut for PoolGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as in `deref`; `&mut self` makes the borrow unique.
            unsafe { &mut *self.lock.value.get() }
        }
    }

    impl<T> Drop for PoolGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            // Release: our accesses to the value happen before the next holder's; pairs with
            // the Acquire CAS in `PoolLock::try_lock`.
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(loom)]
mod imp {
    use crate::primitive::{lock, Mutex};

    /// Under loom: loom's mutex with the same interface.
    pub(crate) struct PoolLock<T>(Mutex<T>);

    /// See the non-loom `PoolGuard`.
    pub(crate) type PoolGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> PoolLock<T> {
        pub(crate) fn new(value: T) -> Self {
            PoolLock(Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> PoolGuard<'_, T> {
            lock(&self.0)
        }

        pub(crate) fn try_lock(&self) -> Option<PoolGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }
}

pub(crate) use imp::PoolLock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::PoolLock;

    #[test]
    fn failed_try_lock_leaves_the_lock_taken() {
        let lock = PoolLock::new(0u32);
        let guard = lock.lock();
        // A failed attempt must not release the holder's lock (a guard built eagerly and
        // dropped would): the second attempt fails too.
        assert!(lock.try_lock().is_none());
        assert!(lock.try_lock().is_none());
        drop(guard);
        assert!(lock.try_lock().is_some());
    }

    #[test]
    fn increments_are_not_lost() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = 20_000;
        let lock = PoolLock::new(0u64);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let lock = &lock;
                s.spawn(move || {
                    for i in 0..ROUNDS {
                        // Half the threads mix in try_lock, the path that steals from other
                        // shards.
                        if t % 2 == 1 && i % 2 == 0 {
                            if let Some(mut g) = lock.try_lock() {
                                *g += 1;
                                continue;
                            }
                        }
                        *lock.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), THREADS * ROUNDS);
    }
}
