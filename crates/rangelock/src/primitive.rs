//! Synchronization primitives, swapped for [loom]'s under `cfg(loom)`.
//!
//! Everything a lock-free protocol in this crate touches (atomics, `Arc`, thread-locals, and
//! under loom the mutex behind the pool locks of `skiplist::pool_lock`) is imported from
//! here, so the loom models exercise the code that ships. Two documented exceptions: the pool
//! locks are loom mutexes under loom, and the reader/writer handshake fence is a compiler
//! fence on x86 (`skiplist::readers::handshake_fence`).
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::fence;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread_local;

/// Locks a loom mutex, ignoring poisoning: the data behind our mutexes (free lists of
/// nodes, deferred actions) stays consistent even if a holder panicked, because every
/// critical section is a single `Vec` operation. (Outside loom the pools use
/// `skiplist::pool_lock`.)
#[cfg(loom)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
