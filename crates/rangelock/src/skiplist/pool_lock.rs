//! The lock of one pool shard: the test-and-test-and-set spin lock of the baselines
//! ([`crate::spin`]), which backs off and then yields.
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
    /// The baselines' test-and-test-and-set spin lock (`crate::spin`), which backs off
    /// and then yields.
    pub(crate) use crate::spin::{SpinGuard as PoolGuard, SpinLock as PoolLock};
}

#[cfg(loom)]
mod imp {
    use crate::primitive::{lock, Mutex};

    /// Under loom: loom's mutex with the same interface.
    pub(crate) struct PoolLock<T>(Mutex<T>);

    /// The guard of a pool lock under loom.
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

pub(crate) use imp::{PoolGuard, PoolLock};

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
