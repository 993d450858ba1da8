//! The generic safe wrapper over a [`RawRangeLock`] and its RAII guard: the machinery
//! [`RangeLock`](crate::RangeLock) is built on, and (through the `internals` feature) how
//! the baselines and the benchmarks drive every lock alike.

// Without `internals`, only what `RangeLock` calls is used.
#![cfg_attr(not(feature = "internals"), allow(dead_code))]

use core::fmt;
use core::mem::ManuallyDrop;
use core::ops::Range;
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::range::{check_range, Mode};
use crate::raw::{RawRangeLock, RawRangeLockDowngrade};

/// A range lock over `u64` units, generic over its raw implementation.
///
/// Every method takes a half-open range `start..end` with `start < end`; an empty or
/// inverted range is answered with [`LockError::InvalidRange`] and locks nothing.
pub struct Lock<R: RawRangeLock> {
    raw: R,
}

impl<R: RawRangeLock> Lock<R> {
    /// Wraps a raw lock.
    pub const fn from_raw(raw: R) -> Self {
        Lock { raw }
    }

    /// The raw lock underneath.
    pub fn raw(&self) -> &R {
        &self.raw
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    #[inline]
    pub fn lock(&self, range: Range<u64>) -> Result<Guard<'_, R>, LockError> {
        self.lock_mode(range, Mode::Exclusive)
    }

    /// Locks `range` shared, waiting as long as it takes.
    #[inline]
    pub fn lock_shared(&self, range: Range<u64>) -> Result<Guard<'_, R>, LockError> {
        self.lock_mode(range, Mode::Shared)
    }

    /// Locks `range` in `mode`, waiting as long as it takes.
    #[inline]
    pub fn lock_mode(&self, range: Range<u64>, mode: Mode) -> Result<Guard<'_, R>, LockError> {
        check_range(&range)?;
        let token = self.raw.lock(range.clone(), mode);
        Ok(Guard::new(self, range, mode, token))
    }

    /// Locks `range` exclusively if no incompatible holder overlaps it right now.
    #[inline]
    pub fn try_lock(&self, range: Range<u64>) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode(range, Mode::Exclusive)
    }

    /// Locks `range` shared if no exclusive holder overlaps it right now.
    #[inline]
    pub fn try_lock_shared(&self, range: Range<u64>) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode(range, Mode::Shared)
    }

    /// Locks `range` in `mode` without waiting.
    #[inline]
    pub fn try_lock_mode(&self, range: Range<u64>, mode: Mode) -> Result<Guard<'_, R>, LockError> {
        check_range(&range)?;
        match self.raw.try_lock(range.clone(), mode) {
            Some(token) => Ok(Guard::new(self, range, mode, token)),
            None => Err(LockError::WouldBlock),
        }
    }

    /// Locks `range` exclusively, giving up after `timeout`.
    #[inline]
    pub fn try_lock_for(
        &self,
        range: Range<u64>,
        timeout: Duration,
    ) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode_until(range, Mode::Exclusive, deadline_after(timeout))
    }

    /// Locks `range` shared, giving up after `timeout`.
    #[inline]
    pub fn try_lock_shared_for(
        &self,
        range: Range<u64>,
        timeout: Duration,
    ) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode_until(range, Mode::Shared, deadline_after(timeout))
    }

    /// Locks `range` in `mode`, giving up after `timeout`.
    #[inline]
    pub fn try_lock_mode_for(
        &self,
        range: Range<u64>,
        mode: Mode,
        timeout: Duration,
    ) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode_until(range, mode, deadline_after(timeout))
    }

    /// Locks `range` exclusively, giving up at `deadline`.
    #[inline]
    pub fn try_lock_until(
        &self,
        range: Range<u64>,
        deadline: Instant,
    ) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode_until(range, Mode::Exclusive, deadline)
    }

    /// Locks `range` shared, giving up at `deadline`.
    #[inline]
    pub fn try_lock_shared_until(
        &self,
        range: Range<u64>,
        deadline: Instant,
    ) -> Result<Guard<'_, R>, LockError> {
        self.try_lock_mode_until(range, Mode::Shared, deadline)
    }

    /// Locks `range` in `mode`, giving up at `deadline`.
    #[inline]
    pub fn try_lock_mode_until(
        &self,
        range: Range<u64>,
        mode: Mode,
        deadline: Instant,
    ) -> Result<Guard<'_, R>, LockError> {
        check_range(&range)?;
        match self.raw.lock_until(range.clone(), mode, deadline) {
            Some(token) => Ok(Guard::new(self, range, mode, token)),
            None => Err(LockError::TimedOut),
        }
    }
}

impl<R: RawRangeLock + Default> Default for Lock<R> {
    fn default() -> Self {
        Lock::from_raw(R::default())
    }
}

impl<R: RawRangeLock> fmt::Debug for Lock<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").field("variant", &R::NAME).finish_non_exhaustive()
    }
}

/// A deadline `timeout` from now; a timeout too large to represent waits forever in practice.
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

/// A held range; dropping it unlocks the range through its token (no search by range: a
/// stripe or shared hold is released in O(1), a list-held range is unlinked with one
/// O(log n) search for its exact key).
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct Guard<'a, R: RawRangeLock> {
    lock: &'a Lock<R>,
    range: Range<u64>,
    mode: Mode,
    token: ManuallyDrop<R::Token>,
}

impl<'a, R: RawRangeLock> Guard<'a, R> {
    pub(crate) fn new(lock: &'a Lock<R>, range: Range<u64>, mode: Mode, token: R::Token) -> Self {
        Guard { lock, range, mode, token: ManuallyDrop::new(token) }
    }

    /// The range this guard holds.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }

    /// The mode this guard holds its range in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The lock this guard holds a range of.
    pub fn lock(&self) -> &'a Lock<R> {
        self.lock
    }

    /// Gives up the guard without releasing its range: the token must be released on the
    /// same lock with [`RawRangeLock::unlock`] (an owned guard does that).
    pub fn into_token(self) -> R::Token {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the token is taken once, here; `this` is never dropped, so its `Drop` does
        // not release it.
        unsafe { ManuallyDrop::take(&mut this.token) }
    }
}

impl<'a, R: RawRangeLockDowngrade> Guard<'a, R> {
    /// Turns an exclusive hold into a shared hold of the same range, with no moment in
    /// between at which another writer could take any part of it (readers may join as soon
    /// as this returns). A shared guard is returned unchanged.
    pub fn downgrade(self) -> Guard<'a, R> {
        if self.mode == crate::range::Mode::Shared {
            return self;
        }
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the token is taken once, here; `this` is never dropped, so its `Drop` does
        // not release it again.
        let token = unsafe { ManuallyDrop::take(&mut this.token) };
        let range = this.range.clone();
        // SAFETY: `token` is this guard's exclusive hold of `range` on `this.lock.raw`, not
        // released (a guard releases only in `Drop`, which `ManuallyDrop` skips).
        let shared = unsafe { this.lock.raw.downgrade(token, range.clone()) };
        Guard::new(this.lock, range, crate::range::Mode::Shared, shared)
    }
}

impl<R: RawRangeLock> Drop for Guard<'_, R> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `token` came from an acquisition on `self.lock.raw` (see `Guard::new`'s
        // callers) and is taken exactly once, here, so it has not been released before.
        unsafe {
            let token = ManuallyDrop::take(&mut self.token);
            self.lock.raw.unlock(token);
        }
    }
}

impl<R: RawRangeLock> fmt::Debug for Guard<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("variant", &R::NAME)
            .field("range", &self.range)
            .field("mode", &self.mode)
            .finish()
    }
}
