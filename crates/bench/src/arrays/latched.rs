//! Latched arrays: `rwlock-std`, `rwlock-parking-lot` and `bravo` (seed 2 §6.1's "latched"
//! baseline, and BRAVO).
//!
//! One reader-writer lock guards the *buffer pointer*: `read`, `write` and `push` take it in
//! shared mode (elements are atomics, so concurrent element writes are fine under a shared
//! lock), and a resize takes it exclusively, copies into a doubled buffer (plus the
//! configured delay) and swaps it in. The element count is an atomic outside the lock; a
//! push reserves its position with `fetch_add`, and if the position is beyond the buffer it
//! drops the shared lock, resizes (or finds that another thread did), and retries.
//!
//! Correctness: the exclusive lock excludes every element access during the copy, so no
//! write can land in the old buffer after its slot was copied; positions are distinct
//! (`fetch_add`), so concurrent pushes never overwrite each other.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::PoisonError;
use std::time::Duration;

use super::{grown_capacity, grown_copy, zeroed_atomics, ArrayConfig, ArraySession, BenchArray};
use crate::peers::bravo::{Bravo, VisibleReaders};

/// A reader-writer lock type usable by [`LatchedArray`] (and other latched baselines).
pub trait RwFamily<T>: Send + Sync {
    /// The variant name of an array guarded by this lock.
    const NAME: &'static str;
    /// Shared guard.
    type Read<'a>: Deref<Target = T>
    where
        Self: 'a;
    /// Exclusive guard.
    type Write<'a>: DerefMut<Target = T>
    where
        Self: 'a;
    /// A lock holding `value`.
    fn new(value: T) -> Self;
    /// A lock holding `value` whose reader table (if it has one) has `slots` slots;
    /// `None`, or a lock without a table: [`new`](RwFamily::new).
    fn with_table_slots(value: T, slots: Option<usize>) -> Self
    where
        Self: Sized,
    {
        let _ = slots;
        Self::new(value)
    }
    /// Shared access.
    fn read(&self) -> Self::Read<'_>;
    /// Exclusive access.
    fn write(&self) -> Self::Write<'_>;
}

/// `std::sync::RwLock`. Poisoning is ignored: the guarded buffers stay consistent even if
/// a benchmark thread panics (a swap of the buffer is a single assignment).
impl<T: Send + Sync> RwFamily<T> for std::sync::RwLock<T> {
    const NAME: &'static str = "rwlock-std";
    type Read<'a>
        = std::sync::RwLockReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = std::sync::RwLockWriteGuard<'a, T>
    where
        T: 'a;
    fn new(value: T) -> Self {
        std::sync::RwLock::new(value)
    }
    #[inline]
    fn read(&self) -> Self::Read<'_> {
        std::sync::RwLock::read(self).unwrap_or_else(PoisonError::into_inner)
    }
    #[inline]
    fn write(&self) -> Self::Write<'_> {
        std::sync::RwLock::write(self).unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Send + Sync> RwFamily<T> for parking_lot::RwLock<T> {
    const NAME: &'static str = "rwlock-parking-lot";
    type Read<'a>
        = parking_lot::RwLockReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = parking_lot::RwLockWriteGuard<'a, T>
    where
        T: 'a;
    fn new(value: T) -> Self {
        parking_lot::RwLock::new(value)
    }
    #[inline]
    fn read(&self) -> Self::Read<'_> {
        parking_lot::RwLock::read(self)
    }
    #[inline]
    fn write(&self) -> Self::Write<'_> {
        parking_lot::RwLock::write(self)
    }
}

impl<T: Send + Sync> RwFamily<T> for Bravo<T> {
    const NAME: &'static str = "bravo";
    type Read<'a>
        = crate::peers::bravo::BravoReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = crate::peers::bravo::BravoWriteGuard<'a, T>
    where
        T: 'a;
    fn new(value: T) -> Self {
        Bravo::new(value)
    }
    fn with_table_slots(value: T, slots: Option<usize>) -> Self {
        match slots {
            Some(n) => Bravo::with_table(value, std::sync::Arc::new(VisibleReaders::new(n))),
            None => Bravo::new(value),
        }
    }
    #[inline]
    fn read(&self) -> Self::Read<'_> {
        Bravo::read(self)
    }
    #[inline]
    fn write(&self) -> Self::Write<'_> {
        Bravo::write(self)
    }
}

/// A session for variants without per-thread state: just a shared reference.
#[derive(Debug)]
pub struct SharedSession<'a, A>(pub &'a A);

/// A resizable array whose buffer is guarded by the reader-writer lock `L`.
#[derive(Debug)]
pub struct LatchedArray<L> {
    buf: L,
    /// Elements pushed (including initial ones); positions below it are handed out.
    count: AtomicUsize,
    resize_delay: Duration,
}

/// `rwlock-std`.
pub type RwLockStdArray = LatchedArray<std::sync::RwLock<Box<[AtomicU64]>>>;
/// `rwlock-parking-lot`.
pub type RwLockParkingLotArray = LatchedArray<parking_lot::RwLock<Box<[AtomicU64]>>>;
/// `bravo`.
pub type BravoArray = LatchedArray<Bravo<Box<[AtomicU64]>>>;

impl<L: RwFamily<Box<[AtomicU64]>>> LatchedArray<L> {
    /// Grows the buffer to hold `pos`, unless another thread already did.
    #[cold]
    fn grow_slow(&self, pos: usize) {
        let mut buf = self.buf.write();
        if pos < buf.len() {
            return;
        }
        let new = grown_copy(&buf, grown_capacity(buf.len(), pos));
        if !self.resize_delay.is_zero() {
            // The simulated slow resize (the workload parameter), under the exclusive lock.
            std::thread::sleep(self.resize_delay);
        }
        *buf = new;
    }
}

impl<L: RwFamily<Box<[AtomicU64]>>> BenchArray for LatchedArray<L> {
    const NAME: &'static str = L::NAME;
    type Session<'a>
        = SharedSession<'a, Self>
    where
        L: 'a;

    fn new(cfg: &ArrayConfig) -> Self {
        LatchedArray {
            buf: L::with_table_slots(zeroed_atomics(cfg.initial_capacity()), cfg.table_slots),
            count: AtomicUsize::new(cfg.initial_len),
            resize_delay: cfg.resize_delay,
        }
    }

    fn session(&self) -> Self::Session<'_> {
        SharedSession(self)
    }
}

impl<L: RwFamily<Box<[AtomicU64]>>> ArraySession for SharedSession<'_, LatchedArray<L>> {
    #[inline]
    fn len(&mut self) -> usize {
        // Relaxed: a bound for index choice; element access re-checks under the lock.
        self.0.count.load(Relaxed)
    }

    #[inline]
    fn read(&mut self, index: usize) -> Option<u64> {
        let buf = self.0.buf.read();
        // Relaxed (count and element): the shared lock orders us against resizes; elements
        // need no ordering among themselves.
        if index < self.0.count.load(Relaxed) {
            buf.get(index).map(|x| x.load(Relaxed))
        } else {
            None
        }
    }

    #[inline]
    fn write(&mut self, index: usize, value: u64) -> bool {
        let buf = self.0.buf.read();
        // Relaxed: as in `read`.
        match buf.get(index) {
            Some(x) if index < self.0.count.load(Relaxed) => {
                x.store(value, Relaxed);
                true
            }
            _ => false,
        }
    }

    #[inline]
    fn push(&mut self, value: u64) -> usize {
        // Relaxed: the count only hands out distinct positions.
        let pos = self.0.count.fetch_add(1, Relaxed);
        loop {
            {
                let buf = self.0.buf.read();
                if let Some(x) = buf.get(pos) {
                    // Relaxed: as in `read`.
                    x.store(value, Relaxed);
                    return pos;
                }
            }
            self.0.grow_slow(pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrays::tests::{concurrent_no_lost_updates, sequential_model};

    #[test]
    fn latched_sequential_model() {
        sequential_model::<RwLockStdArray>();
        sequential_model::<RwLockParkingLotArray>();
        sequential_model::<BravoArray>();
    }

    #[test]
    fn latched_concurrent_resizes_lose_nothing() {
        concurrent_no_lost_updates::<RwLockStdArray>(ArrayConfig::default());
        concurrent_no_lost_updates::<RwLockParkingLotArray>(ArrayConfig::default());
        concurrent_no_lost_updates::<BravoArray>(ArrayConfig::default());
    }

    #[test]
    fn latched_resize_with_delay() {
        concurrent_no_lost_updates::<BravoArray>(ArrayConfig {
            resize_delay: Duration::from_micros(200),
            ..ArrayConfig::default()
        });
    }

    #[test]
    fn variant_names() {
        assert_eq!(RwLockStdArray::NAME, "rwlock-std");
        assert_eq!(RwLockParkingLotArray::NAME, "rwlock-parking-lot");
        assert_eq!(BravoArray::NAME, "bravo");
    }
}
