//! The synchronization primitives the crate is built on, swapped for loom's under `cfg(loom)`.
//!
//! Every atomic, lock and thread operation in `epvs` goes through this module so the loom
//! models exercise exactly the code that ships.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

/// Gives other threads a chance to run (loom: a scheduling point).
#[cfg(not(loom))]
#[allow(dead_code)] // used by waits that only exist in some configurations
#[inline]
pub(crate) fn yield_now() {
    std::thread::yield_now();
}

/// Gives other threads a chance to run (loom: a scheduling point).
#[cfg(loom)]
#[inline]
pub(crate) fn yield_now() {
    loom::thread::yield_now();
}

/// A hint for which epoch-table slot this thread should try first.
///
/// Threads are numbered in order of first use, so the first `n` threads that use a table of
/// `n` slots each land on a slot of their own and claim it with one uncontended CAS. The hint
/// is only a starting point for probing: correctness never depends on it.
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_hint() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;

    static NEXT: StdAtomicUsize = StdAtomicUsize::new(1);
    thread_local! {
        static HINT: Cell<usize> = const { Cell::new(0) };
    }
    HINT.with(|h| {
        let v = h.get();
        if v != 0 {
            return v;
        }
        // Relaxed: a unique number is all we need; nothing is published through it.
        let v = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        h.set(v);
        v
    })
}

/// Under loom every thread starts probing at slot 0, which exercises slot contention.
#[cfg(loom)]
#[inline]
pub(crate) fn thread_hint() -> usize {
    0
}

/// Under loom: a SeqCst fence after a region ends. Hardware makes a store visible to a
/// spinning reader eventually; loom's model does not, so a waiter that re-drains the epoch
/// until it sees a released slot could spin forever in the model. The fence (only in loom
/// builds) stands for that eventual visibility. Nothing in the real protocol relies on it:
/// waiters re-drain with bounded parks.
#[inline]
pub(crate) fn eventually_visible() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}
