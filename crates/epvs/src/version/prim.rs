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
