//! The guards of [`RangeLock`]: a held range ([`RangeGuard`], and [`OwnedRangeGuard`] for
//! an `Arc`-held lock) and the ranges of one many-at-once request ([`ManyGuard`]).

use core::fmt;
use core::mem::ManuallyDrop;
use core::ops::Range;
use std::sync::Arc;

use crate::lock::Guard;
use crate::many::Guards;
use crate::range::Mode;
use crate::raw::{RawRangeLock, RawRangeLockDowngrade};
use crate::skiplist::{SkipList, SkipToken};
use crate::RangeLock;

/// A held range of a [`RangeLock`]; dropping it unlocks the range (through the guard's
/// token: no search by range).
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct RangeGuard<'a>(Guard<'a, SkipList>);

impl<'a> RangeGuard<'a> {
    pub(crate) fn from_inner(guard: Guard<'a, SkipList>) -> Self {
        RangeGuard(guard)
    }

    pub(crate) fn into_inner(self) -> Guard<'a, SkipList> {
        self.0
    }

    /// The range this guard holds, half-open.
    pub fn range(&self) -> Range<u64> {
        self.0.range()
    }

    /// The mode this guard holds its range in.
    pub fn mode(&self) -> Mode {
        self.0.mode()
    }

    /// Turns an exclusive hold into a shared hold of the same range, with no moment in
    /// between at which another writer could take any part of it (readers may join as soon
    /// as this returns). A shared guard is returned unchanged.
    ///
    /// ```
    /// use rangelock::RangeLock;
    ///
    /// let lock = RangeLock::new();
    /// let w = lock.lock(0..100);
    /// // ... write 0..100 ...
    /// let r = w.downgrade();
    /// assert!(lock.try_lock_shared(50..60).is_ok()); // readers join
    /// assert!(lock.try_lock(50..60).is_err()); // writers still wait
    /// # drop(r);
    /// ```
    pub fn downgrade(self) -> RangeGuard<'a> {
        RangeGuard(self.0.downgrade())
    }
}

impl fmt::Debug for RangeGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RangeGuard")
            .field("range", &self.range())
            .field("mode", &self.mode())
            .finish()
    }
}

/// A held range of an `Arc<RangeLock>` ([`RangeLock::lock_owned`] and its siblings): it
/// keeps the lock alive and has no lifetime, so it can move into a thread or a task.
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct OwnedRangeGuard {
    lock: Arc<RangeLock>,
    range: Range<u64>,
    mode: Mode,
    token: ManuallyDrop<SkipToken>,
}

impl OwnedRangeGuard {
    /// Takes over `guard`'s hold on `lock`.
    ///
    /// # Panics
    ///
    /// If `guard` holds a range of another lock than `lock` (a bug in this crate: every
    /// caller passes the guard it just took from `lock`).
    pub(crate) fn new(lock: &Arc<RangeLock>, guard: RangeGuard<'_>) -> Self {
        let guard = guard.into_inner();
        assert!(core::ptr::eq(guard.lock(), lock.inner()), "a guard of another lock");
        let (range, mode) = (guard.range(), guard.mode());
        let token = ManuallyDrop::new(guard.into_token());
        OwnedRangeGuard { lock: Arc::clone(lock), range, mode, token }
    }

    /// The hold of `range` in `mode` on `lock` that `token` names.
    ///
    /// # Safety
    ///
    /// `token` comes from an acquisition of `range` in `mode` on `lock` and has not been
    /// released (the guard releases it on drop).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) unsafe fn from_token(
        lock: Arc<RangeLock>,
        range: Range<u64>,
        mode: Mode,
        token: SkipToken,
    ) -> Self {
        OwnedRangeGuard { lock, range, mode, token: ManuallyDrop::new(token) }
    }

    /// The lock this guard holds a range of.
    pub fn lock(&self) -> &Arc<RangeLock> {
        &self.lock
    }

    /// The range this guard holds, half-open.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }

    /// The mode this guard holds its range in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Turns an exclusive hold into a shared one with no gap, as
    /// [`RangeGuard::downgrade`] does.
    pub fn downgrade(mut self) -> OwnedRangeGuard {
        if self.mode == Mode::Shared {
            return self;
        }
        // SAFETY: the token is taken once, here, and replaced below before `self` can drop.
        let token = unsafe { ManuallyDrop::take(&mut self.token) };
        // SAFETY: `token` is this guard's exclusive hold of `self.range` on this lock, not
        // released (a guard releases only in `Drop`).
        let shared = unsafe { self.lock.inner().raw().downgrade(token, self.range.clone()) };
        self.token = ManuallyDrop::new(shared);
        self.mode = Mode::Shared;
        self
    }
}

impl Drop for OwnedRangeGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `token` came from an acquisition on this lock (`new`) and is taken exactly
        // once, here, so it has not been released before.
        unsafe {
            let token = ManuallyDrop::take(&mut self.token);
            self.lock.inner().raw().unlock(token);
        }
    }
}

impl fmt::Debug for OwnedRangeGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedRangeGuard")
            .field("range", &self.range)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// The ranges of one [`RangeLock::lock_many`] request, all held; dropping it releases them
/// all.
#[must_use = "the ranges are unlocked as soon as the guard is dropped"]
pub struct ManyGuard<'a>(Guards<'a, SkipList>);

impl<'a> ManyGuard<'a> {
    pub(crate) fn from_inner(guards: Guards<'a, SkipList>) -> Self {
        ManyGuard(guards)
    }

    /// The held ranges with their modes, sorted by start.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (Range<u64>, Mode)> + '_ {
        self.0.ranges()
    }

    /// How many ranges are held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the request was empty (nothing is held).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One [`RangeGuard`] per range, sorted by start, to release them separately.
    pub fn into_guards(self) -> Vec<RangeGuard<'a>> {
        self.0.into_guards().into_iter().map(RangeGuard).collect()
    }
}

impl fmt::Debug for ManyGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManyGuard").field("ranges", &self.ranges().collect::<Vec<_>>()).finish()
    }
}
