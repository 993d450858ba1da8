//! Synchronization primitives, swapped for [loom]'s under `cfg(loom)`.
//!
//! Everything a lock-free protocol in this crate touches (atomics, the mutexes of the node
//! pools, `Arc`, thread-locals, spin and yield hints) is imported from here, so the loom
//! models exercise exactly the code that ships.
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread_local;

/// Locks a mutex, ignoring poisoning: the data behind our mutexes (free lists of nodes)
/// stays consistent even if a holder panicked, because every critical section is a single
/// `Vec` push/pop/extend.
#[cfg(not(loom))]
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// See the non-loom `lock`.
#[cfg(loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
