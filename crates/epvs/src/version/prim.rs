//! Synchronization primitives of the version scheme: std's, or loom's under `cfg(loom)`.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicU64},
    Condvar, Mutex, MutexGuard,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicU64},
    Condvar, Mutex, MutexGuard,
};

#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Under loom: a SeqCst fence after a region ends. Hardware makes a store visible to a
/// spinning reader eventually; loom's model does not, so a waiter that re-drains the epoch
/// until it sees a released slot could spin forever in the model. The fence (only in
/// loom builds) stands for that eventual visibility. Nothing in the real protocol relies
/// on it: waiters re-drain with bounded parks.
#[inline]
pub(crate) fn eventually_visible() {
    #[cfg(loom)]
    fence(std::sync::atomic::Ordering::SeqCst);
}
