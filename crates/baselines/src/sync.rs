//! Synchronization primitives for the lock-free variants, swapped for loom's under
//! `cfg(loom)` so the loom models in `kogan_list` explore every interleaving.
//!
//! Only the lock-free code (the Kogan list and its reclamation helper) goes through this
//! module; the spinlock- and mutex-based variants use `std` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// Gives the CPU (or, under loom, the model scheduler) to another thread.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// One pause instruction (a yield under loom, where spinning would never end).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Spin-then-yield backoff for waits that have no parking place.
///
/// `snooze` spins `2^step` pause instructions for the first [`Backoff::SPIN_LIMIT`] steps,
/// then yields the thread on every call. [`Backoff::is_completed`] tells a caller that
/// the spinning phase is over (callers that hold resources, e.g. an epoch pin, use it to
/// drop them before they start yielding).
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Steps of exponential spinning before yielding (2^6 = 64 pauses at most per step).
    const SPIN_LIMIT: u32 = 6;

    /// A fresh backoff, in its spinning phase.
    #[inline]
    pub(crate) const fn new() -> Self {
        Backoff { step: 0 }
    }

    /// Waits a little: spins while young, yields once the spinning phase is over.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        if self.step <= Self::SPIN_LIMIT {
            for _ in 0..(1u32 << self.step) {
                spin_hint();
            }
            self.step += 1;
        } else {
            yield_now();
        }
    }

    /// Whether the spinning phase is over (every further `snooze` yields).
    #[inline]
    pub(crate) fn is_completed(&self) -> bool {
        self.step > Self::SPIN_LIMIT
    }
}
