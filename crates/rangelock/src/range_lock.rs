//! [`RangeLock`]: the product's API over the skip-list core.

use core::fmt;
use core::ops::RangeBounds;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bounds::{expect_valid, half_open};
use crate::error::LockError;
use crate::guard::{ManyGuard, OwnedRangeGuard, RangeGuard};
use crate::lock::{deadline_after, Lock};
#[cfg(not(loom))]
use crate::many::prepare;
use crate::many::LockRequest;
use crate::range::Mode;
use crate::skiplist::{Builder, SkipList};
#[cfg(not(loom))]
use crate::skiplist::{
    LockFuture, ManyLockFuture, OwnedLockFuture, OwnedTryLockFuture, TryLockFuture,
    TryManyLockFuture,
};

/// A range lock over `u64` units: exclusive and shared holds of half-open ranges, blocking,
/// `try_`, timed, async and many-at-once acquisition, released by dropping the guard.
///
/// Ranges are any `impl RangeBounds<u64>` (`a..b`, `a..=b`, `..b`, `a..`, `..`) and stand
/// for `start..end` with `start < end <= u64::MAX`: every unit from 0 to `u64::MAX - 1` can
/// be locked, and `u64::MAX` is only ever an end bound. Blocking calls panic on a range that
/// locks nothing (empty, inverted, or `..=u64::MAX`), as slice indexing does; `try_`
/// calls (timed ones too) answer it with [`LockError::InvalidRange`].
///
/// **Not reentrant.** A thread that holds a range and then asks, with a blocking call, for
/// an overlapping range in a conflicting mode waits for itself forever; use a `try_` or
/// timed call where a thread may already hold part of a range.
///
/// ```
/// use std::time::Duration;
/// use rangelock::{LockError, RangeLock};
///
/// let LOCK = RangeLock::new();
///
/// let page = LOCK.lock(4096..8192);                  // exclusive, waits as long as it takes
/// let next = LOCK.try_lock(8192..=12287)?;           // adjacent: no conflict
/// assert_eq!(LOCK.try_lock_shared(..5000).unwrap_err(), LockError::WouldBlock);
/// assert_eq!(
///     LOCK.try_lock_for(5000..5001, Duration::from_millis(1)).unwrap_err(),
///     LockError::TimedOut
/// );
/// drop((page, next));
/// let a = LOCK.lock_shared(..);                      // shared holders overlap freely
/// let b = LOCK.lock_shared(10..20);
/// # drop((a, b));
/// # Ok::<(), LockError>(())
/// ```
pub struct RangeLock {
    inner: Lock<SkipList>,
}

impl RangeLock {
    /// A range lock with the default options ([`RangeLock::builder`] for others). It
    /// allocates nothing, so it can be a `static`: a lock costs its 72 bytes until two
    /// holds overlap in time, when it builds its tables (module docs of `skiplist`).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RangeLock { inner: Lock::from_raw(SkipList::new()) }
    }

    /// A range lock with the default options (under loom, whose atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        RangeLock { inner: Lock::from_raw(SkipList::new()) }
    }

    /// Options for a lock that differs from [`RangeLock::new`]'s defaults.
    ///
    /// ```
    /// use rangelock::RangeLock;
    ///
    /// // 4 KiB stripes over 8192 slots, for page-sized locks spread over 32 MiB.
    /// let lock = RangeLock::builder().stripes(12, 8192).build();
    /// let page = lock.lock(4096..8192);
    /// # drop(page);
    /// // No stripe table: every exclusive range goes to the skip list.
    /// let listed = RangeLock::builder().stripes(0, 0).max_height(8).build();
    /// # drop(listed);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) fn from_raw(raw: SkipList) -> Self {
        RangeLock { inner: Lock::from_raw(raw) }
    }

    /// The generic wrapper underneath (the `internals` feature's way in).
    pub(crate) fn inner(&self) -> &Lock<SkipList> {
        &self.inner
    }

    /// The raw core underneath: for the project's tests and benchmarks, not part of the API.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn raw(&self) -> &SkipList {
        self.inner.raw()
    }

    /// Locks `range` exclusively, waiting as long as it takes.
    ///
    /// Not reentrant: if this thread already holds an overlapping range, this waits forever.
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (empty, inverted, or `..=u64::MAX`).
    #[inline]
    #[track_caller]
    pub fn lock(&self, range: impl RangeBounds<u64>) -> RangeGuard<'_> {
        self.lock_mode(range, Mode::Exclusive)
    }

    /// Locks `range` shared, waiting as long as it takes.
    ///
    /// Not reentrant: if this thread already holds an overlapping range exclusively (or a
    /// writer waits for a range this thread reads), this can wait forever.
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (empty, inverted, or `..=u64::MAX`).
    #[inline]
    #[track_caller]
    pub fn lock_shared(&self, range: impl RangeBounds<u64>) -> RangeGuard<'_> {
        self.lock_mode(range, Mode::Shared)
    }

    /// Locks `range` in `mode`, waiting as long as it takes.
    ///
    /// Not reentrant: see [`lock`](Self::lock).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing.
    #[inline]
    #[track_caller]
    pub fn lock_mode(&self, range: impl RangeBounds<u64>, mode: Mode) -> RangeGuard<'_> {
        let range = expect_valid(&range);
        match self.inner.lock_mode(range, mode) {
            Ok(guard) => RangeGuard::from_inner(guard),
            Err(_) => unreachable!("the range was checked"),
        }
    }

    /// Locks `range` exclusively if no holder overlaps it right now; never waits.
    #[inline]
    pub fn try_lock(&self, range: impl RangeBounds<u64>) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode(range, Mode::Exclusive)
    }

    /// Locks `range` shared if no exclusive holder overlaps it right now; never waits.
    #[inline]
    pub fn try_lock_shared(
        &self,
        range: impl RangeBounds<u64>,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode(range, Mode::Shared)
    }

    /// Locks `range` in `mode` without waiting: [`LockError::WouldBlock`] if an
    /// incompatible holder overlaps it.
    #[inline]
    pub fn try_lock_mode(
        &self,
        range: impl RangeBounds<u64>,
        mode: Mode,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.inner.try_lock_mode(half_open(&range)?, mode).map(RangeGuard::from_inner)
    }

    /// Locks `range` exclusively, giving up with [`LockError::TimedOut`] after `timeout`.
    #[inline]
    pub fn try_lock_for(
        &self,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode_until(range, Mode::Exclusive, deadline_after(timeout))
    }

    /// Locks `range` shared, giving up with [`LockError::TimedOut`] after `timeout`.
    #[inline]
    pub fn try_lock_shared_for(
        &self,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode_until(range, Mode::Shared, deadline_after(timeout))
    }

    /// Locks `range` in `mode`, giving up with [`LockError::TimedOut`] after `timeout`.
    #[inline]
    pub fn try_lock_mode_for(
        &self,
        range: impl RangeBounds<u64>,
        mode: Mode,
        timeout: Duration,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode_until(range, mode, deadline_after(timeout))
    }

    /// Locks `range` exclusively, giving up with [`LockError::TimedOut`] at `deadline`.
    #[inline]
    pub fn try_lock_until(
        &self,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode_until(range, Mode::Exclusive, deadline)
    }

    /// Locks `range` shared, giving up with [`LockError::TimedOut`] at `deadline`.
    #[inline]
    pub fn try_lock_shared_until(
        &self,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.try_lock_mode_until(range, Mode::Shared, deadline)
    }

    /// Locks `range` in `mode`, giving up with [`LockError::TimedOut`] at `deadline`.
    ///
    /// Not reentrant: a conflict with this thread's own holds times out.
    #[inline]
    pub fn try_lock_mode_until(
        &self,
        range: impl RangeBounds<u64>,
        mode: Mode,
        deadline: Instant,
    ) -> Result<RangeGuard<'_>, LockError> {
        self.inner
            .try_lock_mode_until(half_open(&range)?, mode, deadline)
            .map(RangeGuard::from_inner)
    }

    #[cfg(not(loom))]
    /// Locks `range` exclusively, waiting asynchronously as long as it takes: a cancel-safe
    /// future (dropping it leaves nothing behind) for any executor.
    ///
    /// Not reentrant: see [`lock`](Self::lock).
    ///
    /// ```
    /// # async fn demo(lock: &rangelock::RangeLock) {
    /// let page = lock.lock_async(4096..8192).await;
    /// // ... write the page ...
    /// drop(page);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called, not when polled).
    #[track_caller]
    pub fn lock_async(&self, range: impl RangeBounds<u64>) -> LockFuture<'_> {
        LockFuture::new(self, expect_valid(&range), Mode::Exclusive)
    }

    #[cfg(not(loom))]
    /// Locks `range` shared, waiting asynchronously as long as it takes: a cancel-safe
    /// future (dropping it leaves nothing behind) for any executor.
    ///
    /// Not reentrant: see [`lock`](Self::lock).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called, not when polled).
    #[track_caller]
    pub fn lock_shared_async(&self, range: impl RangeBounds<u64>) -> LockFuture<'_> {
        LockFuture::new(self, expect_valid(&range), Mode::Shared)
    }

    #[cfg(not(loom))]
    /// Locks `range` in `mode`, waiting asynchronously as long as it takes: a cancel-safe
    /// future (dropping it leaves nothing behind) for any executor.
    ///
    /// Not reentrant: see [`lock`](Self::lock).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called, not when polled).
    #[track_caller]
    pub fn lock_mode_async(&self, range: impl RangeBounds<u64>, mode: Mode) -> LockFuture<'_> {
        LockFuture::new(self, expect_valid(&range), mode)
    }

    #[cfg(not(loom))]
    /// Locks `range` exclusively, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] after `timeout`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_async_for(
        &self,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), Mode::Exclusive, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// Locks `range` shared, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] after `timeout`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_shared_async_for(
        &self,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), Mode::Shared, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// Locks `range` in `mode`, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] after `timeout`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_mode_async_for(
        &self,
        range: impl RangeBounds<u64>,
        mode: Mode,
        timeout: Duration,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), mode, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// Locks `range` exclusively, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] at `deadline`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_async_until(
        &self,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), Mode::Exclusive, deadline)
    }

    #[cfg(not(loom))]
    /// Locks `range` shared, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] at `deadline`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_shared_async_until(
        &self,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), Mode::Shared, deadline)
    }

    #[cfg(not(loom))]
    /// Locks `range` in `mode`, waiting asynchronously and giving up with
    /// [`LockError::TimedOut`] at `deadline`; a range that locks nothing resolves to
    /// [`LockError::InvalidRange`].
    pub fn try_lock_mode_async_until(
        &self,
        range: impl RangeBounds<u64>,
        mode: Mode,
        deadline: Instant,
    ) -> TryLockFuture<'_> {
        TryLockFuture::new(self, half_open(&range), mode, deadline)
    }

    /// [`lock`](Self::lock) through an `Arc`: the guard keeps the lock alive and
    /// has no lifetime, so it can move into a spawned thread or task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rangelock::RangeLock;
    ///
    /// let lock = Arc::new(RangeLock::new());
    /// let guard = lock.lock_owned(0..10);
    /// std::thread::spawn(move || drop(guard)).join().unwrap();
    /// assert!(lock.try_lock(0..10).is_ok());
    /// ```
    ///
    /// # Panics
    ///
    /// If `range` locks nothing.
    #[track_caller]
    pub fn lock_owned(self: &Arc<Self>, range: impl RangeBounds<u64>) -> OwnedRangeGuard {
        OwnedRangeGuard::new(self, self.lock_mode(range, Mode::Exclusive))
    }

    /// [`lock_shared`](Self::lock_shared) through an `Arc`: the guard keeps the lock alive and
    /// has no lifetime, so it can move into a spawned thread or task.
    ///
    /// # Panics
    ///
    /// If `range` locks nothing.
    #[track_caller]
    pub fn lock_shared_owned(self: &Arc<Self>, range: impl RangeBounds<u64>) -> OwnedRangeGuard {
        OwnedRangeGuard::new(self, self.lock_mode(range, Mode::Shared))
    }

    /// [`lock_mode`](Self::lock_mode) through an `Arc`: the guard keeps the lock alive and
    /// has no lifetime, so it can move into a spawned thread or task.
    ///
    /// # Panics
    ///
    /// If `range` locks nothing.
    #[track_caller]
    pub fn lock_mode_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
    ) -> OwnedRangeGuard {
        OwnedRangeGuard::new(self, self.lock_mode(range, mode))
    }

    /// [`try_lock`](Self::try_lock) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode(range, Mode::Exclusive)?))
    }

    /// [`try_lock_shared`](Self::try_lock_shared) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_shared_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode(range, Mode::Shared)?))
    }

    /// [`try_lock_mode`](Self::try_lock_mode) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_mode_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode(range, mode)?))
    }

    /// [`try_lock_for`](Self::try_lock_for) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_owned_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(
            self,
            self.try_lock_mode_until(range, Mode::Exclusive, deadline_after(timeout))?,
        ))
    }

    /// [`try_lock_shared_for`](Self::try_lock_shared_for) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_shared_owned_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(
            self,
            self.try_lock_mode_until(range, Mode::Shared, deadline_after(timeout))?,
        ))
    }

    /// [`try_lock_mode_for`](Self::try_lock_mode_for) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_mode_owned_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
        timeout: Duration,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(
            self,
            self.try_lock_mode_until(range, mode, deadline_after(timeout))?,
        ))
    }

    /// [`try_lock_until`](Self::try_lock_until) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_owned_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode_until(range, Mode::Exclusive, deadline)?))
    }

    /// [`try_lock_shared_until`](Self::try_lock_shared_until) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_shared_owned_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode_until(range, Mode::Shared, deadline)?))
    }

    /// [`try_lock_mode_until`](Self::try_lock_mode_until) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    pub fn try_lock_mode_owned_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
        deadline: Instant,
    ) -> Result<OwnedRangeGuard, LockError> {
        Ok(OwnedRangeGuard::new(self, self.try_lock_mode_until(range, mode, deadline)?))
    }

    #[cfg(not(loom))]
    /// [`lock_async`](Self::lock_async) through an `Arc`: a `'static` future whose
    /// guard can move between tasks (`tokio::spawn`).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called).
    #[track_caller]
    pub fn lock_owned_async(self: &Arc<Self>, range: impl RangeBounds<u64>) -> OwnedLockFuture {
        OwnedLockFuture::new(Arc::clone(self), expect_valid(&range), Mode::Exclusive)
    }

    #[cfg(not(loom))]
    /// [`lock_shared_async`](Self::lock_shared_async) through an `Arc`: a `'static` future whose
    /// guard can move between tasks (`tokio::spawn`).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called).
    #[track_caller]
    pub fn lock_shared_owned_async(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
    ) -> OwnedLockFuture {
        OwnedLockFuture::new(Arc::clone(self), expect_valid(&range), Mode::Shared)
    }

    #[cfg(not(loom))]
    /// [`lock_mode_async`](Self::lock_mode_async) through an `Arc`: a `'static` future whose
    /// guard can move between tasks (`tokio::spawn`).
    ///
    /// # Panics
    ///
    /// If `range` locks nothing (when called).
    #[track_caller]
    pub fn lock_mode_owned_async(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
    ) -> OwnedLockFuture {
        OwnedLockFuture::new(Arc::clone(self), expect_valid(&range), mode)
    }

    #[cfg(not(loom))]
    /// [`try_lock_async_for`](Self::try_lock_async_for) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_owned_async_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(
            Arc::clone(self),
            half_open(&range),
            Mode::Exclusive,
            deadline_after(timeout),
        )
    }

    #[cfg(not(loom))]
    /// [`try_lock_shared_async_for`](Self::try_lock_shared_async_for) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_shared_owned_async_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        timeout: Duration,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(
            Arc::clone(self),
            half_open(&range),
            Mode::Shared,
            deadline_after(timeout),
        )
    }

    #[cfg(not(loom))]
    /// [`try_lock_mode_async_for`](Self::try_lock_mode_async_for) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_mode_owned_async_for(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
        timeout: Duration,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(Arc::clone(self), half_open(&range), mode, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// [`try_lock_async_until`](Self::try_lock_async_until) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_owned_async_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(Arc::clone(self), half_open(&range), Mode::Exclusive, deadline)
    }

    #[cfg(not(loom))]
    /// [`try_lock_shared_async_until`](Self::try_lock_shared_async_until) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_shared_owned_async_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        deadline: Instant,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(Arc::clone(self), half_open(&range), Mode::Shared, deadline)
    }

    #[cfg(not(loom))]
    /// [`try_lock_mode_async_until`](Self::try_lock_mode_async_until) through an `Arc`: a
    /// `'static` future.
    pub fn try_lock_mode_owned_async_until(
        self: &Arc<Self>,
        range: impl RangeBounds<u64>,
        mode: Mode,
        deadline: Instant,
    ) -> OwnedTryLockFuture {
        OwnedTryLockFuture::new(Arc::clone(self), half_open(&range), mode, deadline)
    }

    /// Locks every range of `request` in its mode, all or nothing, waiting as long as it
    /// takes; the ranges must be pairwise disjoint (adjacent is fine).
    ///
    /// The call cannot deadlock with other `lock_many` calls or single-range acquisitions,
    /// provided the calling thread holds no other guard of this lock. It waits only while it
    /// holds nothing: it waits for one range (at first the lowest), then tries the others
    /// without waiting, and on a conflict releases everything, yields, and waits for the
    /// range that failed. After two failed attempts it takes its ranges one by one in
    /// ascending order as skip-list writers, whose waits cannot form a cycle and are served
    /// in arrival order, which bounds its wait. The `internals`' `lock_many` docs give the
    /// whole argument, including why sorting alone would deadlock on a range lock.
    ///
    /// ```
    /// use rangelock::{Mode, RangeLock};
    ///
    /// let lock = RangeLock::new();
    /// let both = lock.lock_many([(100..200, Mode::Exclusive), (0..50, Mode::Shared)]);
    /// assert_eq!(
    ///    both.ranges().collect::<Vec<_>>(),
    ///    [(0..50, Mode::Shared), (100..200, Mode::Exclusive)] // sorted by start
    /// );
    /// assert!(lock.try_lock(150..151).is_err());
    /// assert!(lock.try_lock_shared(10..20).is_ok());
    /// drop(both); // releases both ranges
    /// assert!(lock.try_lock(0..200).is_ok());
    /// ```
    ///
    /// # Panics
    ///
    /// If a range locks nothing or two ranges overlap ([`try_lock_many`](Self::try_lock_many)
    /// and the timed forms answer those with an error instead).
    #[track_caller]
    pub fn lock_many(&self, request: impl IntoIterator<Item = impl LockRequest>) -> ManyGuard<'_> {
        match self.inner.lock_many(request) {
            Ok(guards) => ManyGuard::from_inner(guards),
            Err(e) => invalid_request(e),
        }
    }

    /// Locks every range of `request` in its mode if none of them conflicts with a holder
    /// right now; otherwise locks nothing and fails with [`LockError::WouldBlock`].
    ///
    /// ```
    /// use rangelock::{LockError, Mode, RangeLock};
    ///
    /// let lock = RangeLock::new();
    /// let held = lock.lock(25..26);
    /// let request = [(0..10, Mode::Exclusive), (20..30, Mode::Shared)];
    /// assert_eq!(lock.try_lock_many(request.clone()).unwrap_err(), LockError::WouldBlock);
    /// assert!(lock.try_lock(0..10).is_ok(), "the failed request holds nothing");
    /// drop(held);
    /// let guard = lock.try_lock_many(request)?;
    /// assert_eq!(guard.len(), 2);
    /// assert_eq!(
    ///    lock.try_lock_many([(0..10, Mode::Shared), (5..15, Mode::Shared)]).unwrap_err(),
    ///    LockError::Overlapping { first: (0, 10), second: (5, 15) }
    /// );
    /// # Ok::<(), LockError>(())
    /// ```
    pub fn try_lock_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
    ) -> Result<ManyGuard<'_>, LockError> {
        self.inner.try_lock_many(request).map(ManyGuard::from_inner)
    }

    /// [`lock_many`](Self::lock_many), giving up after `timeout` with
    /// [`LockError::TimedOut`] (and nothing held). The timeout bounds the whole call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rangelock::{LockError, Mode, RangeLock};
    ///
    /// let lock = RangeLock::new();
    /// let held = lock.lock_shared(40..50);
    /// let request = [(0..10, Mode::Shared), (45..46, Mode::Exclusive)];
    /// let ms = Duration::from_millis(5);
    /// assert_eq!(lock.try_lock_many_for(request.clone(), ms).unwrap_err(), LockError::TimedOut);
    /// assert!(lock.try_lock(0..10).is_ok(), "the timed-out request holds nothing");
    /// drop(held);
    /// assert!(lock.try_lock_many_for(request, ms).is_ok());
    /// ```
    pub fn try_lock_many_for(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        timeout: Duration,
    ) -> Result<ManyGuard<'_>, LockError> {
        self.try_lock_many_until(request, deadline_after(timeout))
    }

    /// [`lock_many`](Self::lock_many), giving up at `deadline` with
    /// [`LockError::TimedOut`] (and nothing held).
    pub fn try_lock_many_until(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        deadline: Instant,
    ) -> Result<ManyGuard<'_>, LockError> {
        self.inner.try_lock_many_until(request, deadline).map(ManyGuard::from_inner)
    }

    #[cfg(not(loom))]
    /// [`lock_many`](Self::lock_many), waiting asynchronously: a cancel-safe future that
    /// resolves to the [`ManyGuard`].
    ///
    /// It runs the protocol's steps 1 to 3 (wait for one range holding nothing, take the
    /// others without waiting, on a conflict release all, yield once and wait for the range
    /// that failed), but not the fair path of the blocking call, whose ordered waits park
    /// the thread: against a steady stream of lockers of its ranges it can starve, and the
    /// timed forms are what bound its wait.
    ///
    /// ```
    /// use rangelock::{Mode, RangeLock};
    /// # async fn demo(lock: &RangeLock) {
    /// let both = lock.lock_many_async([(0..10, Mode::Exclusive), (20..30, Mode::Shared)]).await;
    /// assert_eq!(both.len(), 2);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// When called, if a range locks nothing or two ranges overlap.
    #[track_caller]
    pub fn lock_many_async(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
    ) -> ManyLockFuture<'_> {
        ManyLockFuture::new(self, prepare(request).unwrap_or_else(|e| invalid_request(e)))
    }

    #[cfg(not(loom))]
    /// [`lock_many_async`](Self::lock_many_async), giving up after `timeout` with
    /// [`LockError::TimedOut`] (and nothing held); an invalid request resolves to its error.
    pub fn try_lock_many_async_for(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        timeout: Duration,
    ) -> TryManyLockFuture<'_> {
        self.try_lock_many_async_until(request, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// [`lock_many_async`](Self::lock_many_async), giving up at `deadline` with
    /// [`LockError::TimedOut`] (and nothing held); an invalid request resolves to its error.
    pub fn try_lock_many_async_until(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        deadline: Instant,
    ) -> TryManyLockFuture<'_> {
        TryManyLockFuture::new(self, prepare(request), deadline)
    }
}

#[cold]
#[track_caller]
fn invalid_request(e: LockError) -> ! {
    panic!("RangeLock::lock_many: {e}")
}

impl Default for RangeLock {
    fn default() -> Self {
        RangeLock::new()
    }
}

impl fmt::Debug for RangeLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RangeLock").finish_non_exhaustive()
    }
}
