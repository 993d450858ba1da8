//! [`SliceLock`]: a slice whose elements are locked by index range, handing out `&mut [T]`
//! and `&[T]` for exactly the locked range.
//!
//! # Soundness
//!
//! The elements live in a `Box<[UnsafeCell<T>]>` that the lock owns and never resizes, so
//! the address of element `i` is fixed for the lock's life. A guard of range `a..b` made
//! from a [`RangeLock`] hold of the units `a..b` gives access to elements `a..b` only:
//!
//! * an exclusive guard hands out `&mut [T]` over them. While it lives, the range lock
//!   grants no other hold that overlaps `a..b` (its exclusion guarantee), so no other guard
//!   reaches any of those elements: the `&mut` is unique;
//! * a shared guard hands out `&[T]` over them. While it lives, only other shared guards
//!   overlap it, and they too only read;
//! * a release happens before the next conflicting acquisition (the range lock's unlock is
//!   Release, its acquisition Acquire), so writes under one guard are visible to the next
//!   holder.
//!
//! Access without a guard needs `&mut self` ([`get_mut`](SliceLock::get_mut),
//! [`into_inner`](SliceLock::into_inner)), which no guard can outlive: a borrowed guard
//! borrows the lock, and an owned guard holds a clone of its `Arc`, so `Arc::get_mut` and
//! `Arc::try_unwrap` fail while it lives. A many-range guard is one guard per range, each
//! with its own elements. Hence the bounds, as
//! for `RwLock<[T]>`: `SliceLock<T>` is `Sync` when `T: Send + Sync` (exclusive guards move
//! values between threads; shared guards share `&T`), and `Send` when `T: Send`.

use core::cell::UnsafeCell;
use core::fmt;
#[cfg(not(loom))]
use core::future::Future;
use core::mem::ManuallyDrop;
use core::ops::{Bound, Deref, DerefMut, Range, RangeBounds};
#[cfg(not(loom))]
use core::pin::Pin;
#[cfg(not(loom))]
use core::task::{ready, Context, Poll};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bounds::half_open;
use crate::error::SliceError;
use crate::guard::{ManyGuard, RangeGuard};
use crate::lock::deadline_after;
use crate::many::{prepare, LockRequest};
use crate::range::Mode;
use crate::raw::RawRangeLock;
use crate::skiplist::SkipToken;
use crate::RangeLock;
#[cfg(not(loom))]
use crate::{LockFuture, TryLockFuture};

/// A slice whose elements are locked by index range: [`lock`](Self::lock) hands out a guard
/// that derefs to `&mut [T]` for exactly the locked elements, [`lock_shared`](Self::lock_shared)
/// one that derefs to `&[T]`. Disjoint ranges are written in parallel with no `unsafe` at the
/// call site.
///
/// Not reentrant, like [`RangeLock`]: a blocking call for a range that overlaps one this
/// thread holds in a conflicting mode waits forever.
///
/// ```
/// use rangelock::SliceLock;
///
/// let pages = SliceLock::new(vec![0u8; 16 * 4096]);
/// std::thread::scope(|s| {
///     for p in 0..16 {
///         let pages = &pages;
///         s.spawn(move || pages.lock(p * 4096..(p + 1) * 4096).fill(p as u8));
///     }
/// });
/// let page3 = pages.lock_shared(3 * 4096..4 * 4096);
/// assert!(page3.iter().all(|&b| b == 3));
/// ```
pub struct SliceLock<T> {
    lock: RangeLock,
    data: Box<[UnsafeCell<T>]>,
}

// SAFETY: the lock owns its elements; sending it sends them (module docs, "Soundness").
unsafe impl<T: Send> Send for SliceLock<T> {}
// SAFETY: through `&SliceLock`, elements are reached only through guards, which the range
// lock keeps from aliasing mutably (module docs, "Soundness"); exclusive guards can move
// values between threads (`T: Send`), shared guards share `&T` (`T: Sync`).
unsafe impl<T: Send + Sync> Sync for SliceLock<T> {}

impl<T> SliceLock<T> {
    /// A lock over `data`'s elements (a `Vec<T>`, a `Box<[T]>`, …).
    pub fn new(data: impl Into<Box<[T]>>) -> Self {
        let data: Box<[T]> = data.into();
        let len = data.len();
        let raw = Box::into_raw(data) as *mut [UnsafeCell<T>];
        // SAFETY: `UnsafeCell<T>` has the layout of `T` (`repr(transparent)`), so the boxed
        // slice of `T` is a boxed slice of `UnsafeCell<T>` of the same length, allocated with
        // the same layout; ownership passes from the old box to the new one.
        let data = unsafe { Box::from_raw(raw) };
        debug_assert_eq!(data.len(), len);
        SliceLock { lock: RangeLock::new(), data }
    }

    /// How many elements there are.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no elements (every range is out of bounds).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// All elements, with no locking: `&mut self` proves no guard is alive.
    pub fn get_mut(&mut self) -> &mut [T] {
        let len = self.data.len();
        // SAFETY: `&mut self` excludes every guard (they borrow `self`), so nothing else
        // reaches the elements; `UnsafeCell<T>` has the layout of `T`.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_mut_ptr().cast::<T>(), len) }
    }

    /// The elements, back as a boxed slice.
    pub fn into_inner(self) -> Box<[T]> {
        let raw = Box::into_raw(self.data) as *mut [T];
        // SAFETY: the inverse of the cast in `new`: same layout, same allocation.
        unsafe { Box::from_raw(raw) }
    }

    /// Locks elements `range` exclusively, waiting as long as it takes; the guard derefs to
    /// `&mut [T]` over exactly them.
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds, as slice indexing does.
    #[track_caller]
    pub fn lock(&self, range: impl RangeBounds<usize>) -> SliceGuard<'_, T> {
        let range = self.expect_in_bounds(&range);
        let guard = self.lock.lock(units(&range));
        SliceGuard { guard, elements: self.elements(range) }
    }

    /// Locks elements `range` shared, waiting as long as it takes; the guard derefs to
    /// `&[T]` over exactly them.
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds.
    #[track_caller]
    pub fn lock_shared(&self, range: impl RangeBounds<usize>) -> SliceReadGuard<'_, T> {
        let range = self.expect_in_bounds(&range);
        let guard = self.lock.lock_shared(units(&range));
        SliceReadGuard { guard, elements: self.elements(range) }
    }

    /// Locks elements `range` exclusively if nobody holds any of them now; never waits.
    pub fn try_lock(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<SliceGuard<'_, T>, SliceError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock(units(&range))?;
        Ok(SliceGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` shared if no writer holds any of them now; never waits.
    pub fn try_lock_shared(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<SliceReadGuard<'_, T>, SliceError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock_shared(units(&range))?;
        Ok(SliceReadGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` exclusively, giving up with [`SliceError::TimedOut`] after
    /// `timeout`.
    pub fn try_lock_for(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<SliceGuard<'_, T>, SliceError> {
        self.try_lock_until(range, deadline_after(timeout))
    }

    /// Locks elements `range` shared, giving up with [`SliceError::TimedOut`] after
    /// `timeout`.
    pub fn try_lock_shared_for(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<SliceReadGuard<'_, T>, SliceError> {
        self.try_lock_shared_until(range, deadline_after(timeout))
    }

    /// Locks elements `range` exclusively, giving up with [`SliceError::TimedOut`] at
    /// `deadline`.
    pub fn try_lock_until(
        &self,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> Result<SliceGuard<'_, T>, SliceError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock_until(units(&range), deadline)?;
        Ok(SliceGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` shared, giving up with [`SliceError::TimedOut`] at
    /// `deadline`.
    pub fn try_lock_shared_until(
        &self,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> Result<SliceReadGuard<'_, T>, SliceError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock_shared_until(units(&range), deadline)?;
        Ok(SliceReadGuard { guard, elements: self.elements(range) })
    }

    /// [`lock`](Self::lock) through an `Arc`: the guard keeps the slice alive and has no
    /// lifetime, so it can move into a spawned thread or task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rangelock::SliceLock;
    ///
    /// let buf = Arc::new(SliceLock::new(vec![0u32; 100]));
    /// let mut part = buf.lock_owned(10..20);
    /// std::thread::spawn(move || part.fill(7)).join().unwrap();
    /// assert!(buf.lock_shared(10..20).iter().all(|&x| x == 7));
    /// ```
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds.
    #[track_caller]
    pub fn lock_owned(self: &Arc<Self>, range: impl RangeBounds<usize>) -> OwnedSliceGuard<T> {
        let guard = self.lock(range);
        OwnedSliceGuard::new(self, guard.guard, guard.elements)
    }

    /// [`lock_shared`](Self::lock_shared) through an `Arc` (see
    /// [`lock_owned`](Self::lock_owned)).
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds.
    #[track_caller]
    pub fn lock_shared_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
    ) -> OwnedSliceReadGuard<T> {
        let guard = self.lock_shared(range);
        OwnedSliceReadGuard::new(self, guard.guard, guard.elements)
    }

    /// [`try_lock`](Self::try_lock) through an `Arc`.
    pub fn try_lock_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
    ) -> Result<OwnedSliceGuard<T>, SliceError> {
        let guard = self.try_lock(range)?;
        Ok(OwnedSliceGuard::new(self, guard.guard, guard.elements))
    }

    /// [`try_lock_shared`](Self::try_lock_shared) through an `Arc`.
    pub fn try_lock_shared_owned(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
    ) -> Result<OwnedSliceReadGuard<T>, SliceError> {
        let guard = self.try_lock_shared(range)?;
        Ok(OwnedSliceReadGuard::new(self, guard.guard, guard.elements))
    }

    /// [`try_lock_for`](Self::try_lock_for) through an `Arc`.
    pub fn try_lock_owned_for(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<OwnedSliceGuard<T>, SliceError> {
        self.try_lock_owned_until(range, deadline_after(timeout))
    }

    /// [`try_lock_shared_for`](Self::try_lock_shared_for) through an `Arc`.
    pub fn try_lock_shared_owned_for(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<OwnedSliceReadGuard<T>, SliceError> {
        self.try_lock_shared_owned_until(range, deadline_after(timeout))
    }

    /// [`try_lock_until`](Self::try_lock_until) through an `Arc`.
    pub fn try_lock_owned_until(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> Result<OwnedSliceGuard<T>, SliceError> {
        let guard = self.try_lock_until(range, deadline)?;
        Ok(OwnedSliceGuard::new(self, guard.guard, guard.elements))
    }

    /// [`try_lock_shared_until`](Self::try_lock_shared_until) through an `Arc`.
    pub fn try_lock_shared_owned_until(
        self: &Arc<Self>,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> Result<OwnedSliceReadGuard<T>, SliceError> {
        let guard = self.try_lock_shared_until(range, deadline)?;
        Ok(OwnedSliceReadGuard::new(self, guard.guard, guard.elements))
    }

    #[cfg(not(loom))]
    /// Locks elements `range` exclusively, waiting asynchronously as long as it takes: a
    /// cancel-safe future for any executor, as [`RangeLock::lock_async`].
    ///
    /// ```
    /// # async fn demo(buf: &rangelock::SliceLock<u8>) {
    /// buf.lock_async(..4096).await.fill(1);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds (when called, not when polled).
    #[track_caller]
    pub fn lock_async(&self, range: impl RangeBounds<usize>) -> SliceLockFuture<'_, T> {
        let range = self.expect_in_bounds(&range);
        SliceLockFuture { slice: self, inner: self.lock.lock_async(units(&range)), range }
    }

    #[cfg(not(loom))]
    /// Locks elements `range` shared, waiting asynchronously as long as it takes.
    ///
    /// # Panics
    ///
    /// If `range` is empty, inverted or out of bounds (when called, not when polled).
    #[track_caller]
    pub fn lock_shared_async(&self, range: impl RangeBounds<usize>) -> SliceReadFuture<'_, T> {
        let range = self.expect_in_bounds(&range);
        SliceReadFuture { slice: self, inner: self.lock.lock_shared_async(units(&range)), range }
    }

    #[cfg(not(loom))]
    /// Locks elements `range` exclusively, waiting asynchronously and giving up with
    /// [`SliceError::TimedOut`] after `timeout`; a bad range resolves to its error.
    pub fn try_lock_async_for(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> SliceTryLockFuture<'_, T> {
        self.try_lock_async_until(range, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// Locks elements `range` shared, waiting asynchronously and giving up with
    /// [`SliceError::TimedOut`] after `timeout`; a bad range resolves to its error.
    pub fn try_lock_shared_async_for(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> SliceTryReadFuture<'_, T> {
        self.try_lock_shared_async_until(range, deadline_after(timeout))
    }

    #[cfg(not(loom))]
    /// Locks elements `range` exclusively, waiting asynchronously and giving up with
    /// [`SliceError::TimedOut`] at `deadline`; a bad range resolves to its error.
    pub fn try_lock_async_until(
        &self,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> SliceTryLockFuture<'_, T> {
        let (range, inner) = match self.in_bounds(&range) {
            Ok(range) => {
                let inner = self.lock.try_lock_async_until(units(&range), deadline);
                (range, Ok(inner))
            }
            Err(e) => (0..0, Err(e)),
        };
        SliceTryLockFuture { slice: self, inner, range }
    }

    #[cfg(not(loom))]
    /// Locks elements `range` shared, waiting asynchronously and giving up with
    /// [`SliceError::TimedOut`] at `deadline`; a bad range resolves to its error.
    pub fn try_lock_shared_async_until(
        &self,
        range: impl RangeBounds<usize>,
        deadline: Instant,
    ) -> SliceTryReadFuture<'_, T> {
        let (range, inner) = match self.in_bounds(&range) {
            Ok(range) => {
                let inner = self.lock.try_lock_shared_async_until(units(&range), deadline);
                (range, Ok(inner))
            }
            Err(e) => (0..0, Err(e)),
        };
        SliceTryReadFuture { slice: self, inner, range }
    }

    /// Locks every range of element indices in `request` in its mode, all or nothing,
    /// waiting as long as it takes, as [`RangeLock::lock_many`] does (same protocol, no
    /// deadlock); the ranges must be pairwise disjoint.
    ///
    /// ```
    /// use rangelock::{Mode, SliceLock};
    ///
    /// let buf = SliceLock::new((0..10u8).collect::<Vec<_>>());
    /// let mut both = buf.lock_many([(6..8, Mode::Exclusive), (0..2, Mode::Shared)]);
    /// assert_eq!(both.get(0), [0, 1]);              // parts sorted by start
    /// both.get_mut(1).expect("exclusive").fill(0);
    /// assert!(both.get_mut(0).is_none(), "a shared part is read-only");
    /// drop(both);
    /// assert_eq!(buf.lock_shared(..)[..], [0, 1, 2, 3, 4, 5, 0, 0, 8, 9]);
    /// ```
    ///
    /// # Panics
    ///
    /// If a range is empty, inverted or out of bounds, or two ranges overlap
    /// ([`try_lock_many`](Self::try_lock_many) and the timed forms return those as errors).
    #[track_caller]
    pub fn lock_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest<usize>>,
    ) -> SliceManyGuard<'_, T> {
        let units = self.units_of(request).unwrap_or_else(|e| invalid(e));
        // Overlaps are reported here, in element indices, rather than by `RangeLock`.
        let units = prepare(units).unwrap_or_else(|e| invalid(e.into()));
        self.many(self.lock.lock_many(units))
    }

    /// Locks every range of `request` in its mode if none conflicts with a holder now;
    /// otherwise locks nothing and fails with [`SliceError::WouldBlock`].
    pub fn try_lock_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest<usize>>,
    ) -> Result<SliceManyGuard<'_, T>, SliceError> {
        let units = self.units_of(request)?;
        Ok(self.many(self.lock.try_lock_many(&units)?))
    }

    /// [`lock_many`](Self::lock_many), giving up after `timeout` with
    /// [`SliceError::TimedOut`] (and nothing held).
    pub fn try_lock_many_for(
        &self,
        request: impl IntoIterator<Item = impl LockRequest<usize>>,
        timeout: Duration,
    ) -> Result<SliceManyGuard<'_, T>, SliceError> {
        self.try_lock_many_until(request, deadline_after(timeout))
    }

    /// [`lock_many`](Self::lock_many), giving up at `deadline` with
    /// [`SliceError::TimedOut`] (and nothing held).
    pub fn try_lock_many_until(
        &self,
        request: impl IntoIterator<Item = impl LockRequest<usize>>,
        deadline: Instant,
    ) -> Result<SliceManyGuard<'_, T>, SliceError> {
        let units = self.units_of(request)?;
        Ok(self.many(self.lock.try_lock_many_until(&units, deadline)?))
    }

    /// The lock's units of a request's element ranges, each in bounds.
    fn units_of(
        &self,
        request: impl IntoIterator<Item = impl LockRequest<usize>>,
    ) -> Result<Vec<(Range<u64>, Mode)>, SliceError> {
        request
            .into_iter()
            .map(|item| Ok((units(&self.in_bounds(&item.bounds())?), item.mode())))
            .collect()
    }

    /// The slice guard of the ranges `guard` holds.
    fn many<'a>(&'a self, guard: ManyGuard<'a>) -> SliceManyGuard<'a, T> {
        let parts = guard
            .into_guards()
            .into_iter()
            .map(|guard| {
                let r = guard.range();
                let elements = self.elements(r.start as usize..r.end as usize);
                (guard, elements)
            })
            .collect();
        SliceManyGuard { parts }
    }

    /// `range` as element indices, if it is non-empty and inside the slice (an unbounded
    /// end is the slice's end).
    fn in_bounds(&self, range: &impl RangeBounds<usize>) -> Result<Range<usize>, SliceError> {
        let len = self.data.len() as u64;
        let as_u64 = |b: Bound<&usize>| b.map(|&i| i as u64);
        let end = match range.end_bound() {
            Bound::Unbounded => Bound::Excluded(len),
            bound => as_u64(bound),
        };
        let units = half_open(&(as_u64(range.start_bound()), end))?;
        if units.end > len {
            return Err(SliceError::OutOfBounds {
                // `units.start < units.end`, and `units.end` is at most `usize::MAX + 1`.
                range: (units.start as usize, units.end.min(usize::MAX as u64) as usize),
                len: self.data.len(),
            });
        }
        Ok(units.start as usize..units.end as usize)
    }

    #[track_caller]
    fn expect_in_bounds(&self, range: &impl RangeBounds<usize>) -> Range<usize> {
        match self.in_bounds(range) {
            Ok(range) => range,
            Err(e) => invalid(e),
        }
    }

    /// The elements of `range`, which a guard of it holds.
    fn elements(&self, range: Range<usize>) -> *mut [T] {
        let cells = &self.data[range];
        core::ptr::slice_from_raw_parts_mut(UnsafeCell::raw_get(cells.as_ptr()), cells.len())
    }
}

/// The lock's units for element indices (a `usize` always fits a `u64`).
fn units(range: &Range<usize>) -> Range<u64> {
    range.start as u64..range.end as u64
}

#[cold]
#[track_caller]
fn invalid(e: SliceError) -> ! {
    panic!("SliceLock: {e}")
}

impl<T> From<Vec<T>> for SliceLock<T> {
    fn from(data: Vec<T>) -> Self {
        SliceLock::new(data)
    }
}

impl<T> fmt::Debug for SliceLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceLock").field("len", &self.data.len()).finish_non_exhaustive()
    }
}

/// Exclusive access to the elements of one range of a [`SliceLock`]: derefs to `&mut [T]`.
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct SliceGuard<'a, T> {
    guard: RangeGuard<'a>,
    /// The elements of `guard`'s range (module docs, "Soundness").
    elements: *mut [T],
}

// SAFETY: the guard is the unique access to its elements (module docs); sending it sends
// `&mut [T]`, which needs `T: Send`, and the range guard itself may move between threads.
unsafe impl<T: Send> Send for SliceGuard<'_, T> {}
// SAFETY: sharing the guard shares `&[T]` only (`Deref`), which needs `T: Sync`.
unsafe impl<T: Sync> Sync for SliceGuard<'_, T> {}

impl<'a, T> SliceGuard<'a, T> {
    /// The element indices this guard holds.
    pub fn range(&self) -> Range<usize> {
        let r = self.guard.range();
        r.start as usize..r.end as usize
    }

    /// Turns the exclusive hold into a shared one with no moment in between at which a
    /// writer could take any of its elements.
    pub fn downgrade(self) -> SliceReadGuard<'a, T> {
        SliceReadGuard { guard: self.guard.downgrade(), elements: self.elements }
    }
}

impl<T> Deref for SliceGuard<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the guard's exclusive hold makes these elements its own (module docs).
        unsafe { &*self.elements }
    }
}

impl<T> DerefMut for SliceGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` keeps this the only reference made through it.
        unsafe { &mut *self.elements }
    }
}

impl<T: fmt::Debug> fmt::Debug for SliceGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceGuard").field("range", &self.range()).field("data", &&**self).finish()
    }
}

/// Shared access to the elements of one range of a [`SliceLock`]: derefs to `&[T]`.
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct SliceReadGuard<'a, T> {
    guard: RangeGuard<'a>,
    elements: *const [T],
}

// SAFETY: a shared guard gives `&[T]` only: moving or sharing it needs `T: Sync`.
unsafe impl<T: Sync> Send for SliceReadGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SliceReadGuard<'_, T> {}

impl<T> SliceReadGuard<'_, T> {
    /// The element indices this guard holds.
    pub fn range(&self) -> Range<usize> {
        let r = self.guard.range();
        r.start as usize..r.end as usize
    }
}

impl<T> Deref for SliceReadGuard<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: a shared hold: only readers overlap it while it lives (module docs).
        unsafe { &*self.elements }
    }
}

impl<T: fmt::Debug> fmt::Debug for SliceReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceReadGuard")
            .field("range", &self.range())
            .field("data", &&**self)
            .finish()
    }
}

/// Exclusive access to the elements of one range of an `Arc<SliceLock<T>>`
/// ([`SliceLock::lock_owned`] and its siblings): derefs to `&mut [T]`, keeps the slice
/// alive and has no lifetime, so it can move into a thread or a task.
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct OwnedSliceGuard<T> {
    hold: OwnedHold<T>,
}

/// Shared access to the elements of one range of an `Arc<SliceLock<T>>`
/// ([`SliceLock::lock_shared_owned`] and its siblings): derefs to `&[T]`.
#[must_use = "the range is unlocked as soon as the guard is dropped"]
pub struct OwnedSliceReadGuard<T> {
    hold: OwnedHold<T>,
}

/// A hold of a range of an `Arc<SliceLock<T>>`, released on drop: the body of the owned
/// guards.
struct OwnedHold<T> {
    slice: Arc<SliceLock<T>>,
    range: Range<u64>,
    token: ManuallyDrop<SkipToken>,
    /// The elements of `range` (module docs, "Soundness"); the `Arc` keeps them in place.
    elements: *mut [T],
}

impl<T> OwnedHold<T> {
    /// Takes over `guard`, a hold of `slice`'s lock over `elements`.
    fn new(slice: &Arc<SliceLock<T>>, guard: RangeGuard<'_>, elements: *mut [T]) -> Self {
        let guard = guard.into_inner();
        debug_assert!(core::ptr::eq(guard.lock(), slice.lock.inner()));
        let range = guard.range();
        let token = ManuallyDrop::new(guard.into_token());
        OwnedHold { slice: Arc::clone(slice), range, token, elements }
    }

    fn range(&self) -> Range<usize> {
        self.range.start as usize..self.range.end as usize
    }
}

impl<T> Drop for OwnedHold<T> {
    fn drop(&mut self) {
        // SAFETY: `token` came from an acquisition on this slice's lock (`new`) and is taken
        // exactly once, here, so it has not been released before.
        unsafe {
            let token = ManuallyDrop::take(&mut self.token);
            self.slice.lock.inner().raw().unlock(token);
        }
    }
}

// SAFETY: an owned guard gives `&mut [T]` (so moving it moves access to `T`s: `T: Send`) and
// holds an `Arc<SliceLock<T>>`, which is `Send` and `Sync` when `T: Send + Sync`.
unsafe impl<T: Send + Sync> Send for OwnedSliceGuard<T> {}
// SAFETY: sharing the guard shares `&[T]` and the `Arc` (as above).
unsafe impl<T: Send + Sync> Sync for OwnedSliceGuard<T> {}
// SAFETY: a shared hold gives `&[T]` only; the `Arc` needs `T: Send + Sync`.
unsafe impl<T: Send + Sync> Send for OwnedSliceReadGuard<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for OwnedSliceReadGuard<T> {}

impl<T> OwnedSliceGuard<T> {
    fn new(slice: &Arc<SliceLock<T>>, guard: RangeGuard<'_>, elements: *mut [T]) -> Self {
        OwnedSliceGuard { hold: OwnedHold::new(slice, guard, elements) }
    }

    /// The element indices this guard holds.
    pub fn range(&self) -> Range<usize> {
        self.hold.range()
    }

    /// The slice this guard holds elements of.
    pub fn slice(&self) -> &Arc<SliceLock<T>> {
        &self.hold.slice
    }
}

impl<T> OwnedSliceReadGuard<T> {
    fn new(slice: &Arc<SliceLock<T>>, guard: RangeGuard<'_>, elements: *const [T]) -> Self {
        // Only ever read through (`Deref`).
        OwnedSliceReadGuard { hold: OwnedHold::new(slice, guard, elements.cast_mut()) }
    }

    /// The element indices this guard holds.
    pub fn range(&self) -> Range<usize> {
        self.hold.range()
    }

    /// The slice this guard holds elements of.
    pub fn slice(&self) -> &Arc<SliceLock<T>> {
        &self.hold.slice
    }
}

impl<T> Deref for OwnedSliceGuard<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the guard's exclusive hold makes these elements its own (module docs).
        unsafe { &*self.hold.elements }
    }
}

impl<T> DerefMut for OwnedSliceGuard<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` keeps this the only reference made through it.
        unsafe { &mut *self.hold.elements }
    }
}

impl<T> Deref for OwnedSliceReadGuard<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: a shared hold: only readers overlap it while it lives (module docs).
        unsafe { &*self.hold.elements }
    }
}

impl<T: fmt::Debug> fmt::Debug for OwnedSliceGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSliceGuard")
            .field("range", &self.range())
            .field("data", &&**self)
            .finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for OwnedSliceReadGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSliceReadGuard")
            .field("range", &self.range())
            .field("data", &&**self)
            .finish()
    }
}

/// The ranges of one [`SliceLock::lock_many`] request, all held, sorted by start; part `i`
/// is the `i`-th range in that order. Dropping it releases them all.
#[must_use = "the ranges are unlocked as soon as the guard is dropped"]
pub struct SliceManyGuard<'a, T> {
    /// Each range's hold and its elements (module docs, "Soundness").
    parts: Vec<(RangeGuard<'a>, *mut [T])>,
}

// SAFETY: as for `SliceGuard`: exclusive parts give `&mut [T]` (`T: Send` to move them),
// shared parts `&[T]` (`T: Sync` to move or share them).
unsafe impl<T: Send + Sync> Send for SliceManyGuard<'_, T> {}
// SAFETY: sharing the guard shares `&[T]` only (`get`).
unsafe impl<T: Sync> Sync for SliceManyGuard<'_, T> {}

/// One part of a [`SliceManyGuard`], released on its own ([`SliceManyGuard::into_parts`]).
#[derive(Debug)]
pub enum SlicePart<'a, T> {
    /// An exclusive part.
    Exclusive(SliceGuard<'a, T>),
    /// A shared part.
    Shared(SliceReadGuard<'a, T>),
}

impl<'a, T> SliceManyGuard<'a, T> {
    /// The held element ranges with their modes, sorted by start.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (Range<usize>, Mode)> + '_ {
        self.parts.iter().map(|(guard, _)| {
            let r = guard.range();
            (r.start as usize..r.end as usize, guard.mode())
        })
    }

    /// How many ranges are held.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether the request was empty (nothing is held).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The elements of part `i`, exclusive or shared.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    pub fn get(&self, i: usize) -> &[T] {
        // SAFETY: the part is held (exclusively or shared) while `self` lives, and `&self`
        // makes no `&mut` through it (module docs, "Soundness").
        unsafe { &*self.parts[i].1 }
    }

    /// The elements of part `i` if it is held exclusively; `None` for a shared part.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut [T]> {
        let (guard, elements) = &self.parts[i];
        // SAFETY: an exclusive part is this guard's own; `&mut self` keeps this the only
        // reference made through it.
        (guard.mode() == Mode::Exclusive).then(|| unsafe { &mut **elements })
    }

    /// One guard per part, sorted by start, to use or release them separately.
    pub fn into_parts(self) -> Vec<SlicePart<'a, T>> {
        self.parts
            .into_iter()
            .map(|(guard, elements)| match guard.mode() {
                Mode::Exclusive => SlicePart::Exclusive(SliceGuard { guard, elements }),
                Mode::Shared => {
                    SlicePart::Shared(SliceReadGuard { guard, elements: elements.cast_const() })
                }
            })
            .collect()
    }
}

impl<T: fmt::Debug> fmt::Debug for SliceManyGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<_> = (0..self.len()).map(|i| self.get(i)).collect();
        f.debug_struct("SliceManyGuard")
            .field("ranges", &self.ranges().collect::<Vec<_>>())
            .field("data", &parts)
            .finish()
    }
}

#[cfg(not(loom))]
/// The future of [`SliceLock::lock_async`]: resolves to a [`SliceGuard`]; cancel-safe as
/// [`LockFuture`].
#[must_use = "futures do nothing unless polled"]
pub struct SliceLockFuture<'a, T> {
    slice: &'a SliceLock<T>,
    inner: LockFuture<'a>,
    range: Range<usize>,
}

#[cfg(not(loom))]
/// The future of [`SliceLock::lock_shared_async`]: resolves to a [`SliceReadGuard`];
/// cancel-safe as [`LockFuture`].
#[must_use = "futures do nothing unless polled"]
pub struct SliceReadFuture<'a, T> {
    slice: &'a SliceLock<T>,
    inner: LockFuture<'a>,
    range: Range<usize>,
}

#[cfg(not(loom))]
/// The future of [`SliceLock::try_lock_async_for`] and
/// [`try_lock_async_until`](SliceLock::try_lock_async_until): resolves to a
/// [`SliceGuard`] or a [`SliceError`]; cancel-safe as [`LockFuture`].
#[must_use = "futures do nothing unless polled"]
pub struct SliceTryLockFuture<'a, T> {
    slice: &'a SliceLock<T>,
    inner: Result<TryLockFuture<'a>, SliceError>,
    range: Range<usize>,
}

#[cfg(not(loom))]
/// The future of [`SliceLock::try_lock_shared_async_for`] and
/// [`try_lock_shared_async_until`](SliceLock::try_lock_shared_async_until): resolves to a
/// [`SliceReadGuard`] or a [`SliceError`]; cancel-safe as [`LockFuture`].
#[must_use = "futures do nothing unless polled"]
pub struct SliceTryReadFuture<'a, T> {
    slice: &'a SliceLock<T>,
    inner: Result<TryLockFuture<'a>, SliceError>,
    range: Range<usize>,
}

#[cfg(not(loom))]
impl<'a, T> Future for SliceLockFuture<'a, T> {
    type Output = SliceGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let guard = ready!(Pin::new(&mut self.inner).poll(cx));
        let elements = self.slice.elements(self.range.clone());
        Poll::Ready(SliceGuard { guard, elements })
    }
}

#[cfg(not(loom))]
impl<'a, T> Future for SliceReadFuture<'a, T> {
    type Output = SliceReadGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let guard = ready!(Pin::new(&mut self.inner).poll(cx));
        let elements = self.slice.elements(self.range.clone());
        Poll::Ready(SliceReadGuard { guard, elements: elements.cast_const() })
    }
}

#[cfg(not(loom))]
impl<'a, T> Future for SliceTryLockFuture<'a, T> {
    type Output = Result<SliceGuard<'a, T>, SliceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let guard = match &mut self.inner {
            Ok(inner) => ready!(Pin::new(inner).poll(cx))?,
            Err(e) => return Poll::Ready(Err(*e)),
        };
        let elements = self.slice.elements(self.range.clone());
        Poll::Ready(Ok(SliceGuard { guard, elements }))
    }
}

#[cfg(not(loom))]
impl<'a, T> Future for SliceTryReadFuture<'a, T> {
    type Output = Result<SliceReadGuard<'a, T>, SliceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let guard = match &mut self.inner {
            Ok(inner) => ready!(Pin::new(inner).poll(cx))?,
            Err(e) => return Poll::Ready(Err(*e)),
        };
        let elements = self.slice.elements(self.range.clone());
        Poll::Ready(Ok(SliceReadGuard { guard, elements: elements.cast_const() }))
    }
}

#[cfg(not(loom))]
macro_rules! debug_future {
    ($($name:ident),*) => {$(
        impl<T> fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("range", &self.range)
                    .field("inner", &self.inner)
                    .finish()
            }
        }
    )*};
}

#[cfg(not(loom))]
debug_future!(SliceLockFuture, SliceReadFuture, SliceTryLockFuture, SliceTryReadFuture);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_reach_exactly_their_range() {
        let mut lock = SliceLock::new((0..100u32).collect::<Vec<_>>());
        {
            let mut a = lock.lock(10..20);
            assert_eq!(a.len(), 10);
            assert_eq!(a[0], 10);
            a.fill(7);
            let b = lock.try_lock_shared(20..=29).expect("adjacent");
            assert_eq!(&b[..], (20..30).collect::<Vec<_>>());
            assert_eq!(lock.try_lock(19..21).unwrap_err(), SliceError::WouldBlock);
        }
        assert!(lock.get_mut()[10..20].iter().all(|&x| x == 7));
        assert_eq!(lock.get_mut()[9], 9);
        assert_eq!(lock.into_inner().len(), 100);
    }

    #[test]
    fn out_of_bounds_is_an_error_or_a_panic() {
        let lock = SliceLock::new(vec![0u8; 8]);
        assert!(matches!(lock.try_lock_shared(3..3), Err(SliceError::InvalidRange(_))));
        assert!(lock.try_lock(..).is_ok());
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(lock.lock(..=8))))
            .unwrap_err();
        let msg = err.downcast_ref::<String>().expect("a formatted panic");
        assert_eq!(msg, "SliceLock: range 0..9 is out of bounds for a slice of 8 elements");
        assert!(matches!(
            lock.try_lock(4..9),
            Err(SliceError::OutOfBounds { range: (4, 9), len: 8 })
        ));
    }
}
