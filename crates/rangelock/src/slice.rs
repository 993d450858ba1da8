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
//! [`into_inner`](SliceLock::into_inner)), which no guard can outlive. Hence the bounds, as
//! for `RwLock<[T]>`: `SliceLock<T>` is `Sync` when `T: Send + Sync` (exclusive guards move
//! values between threads; shared guards share `&T`), and `Send` when `T: Send`.

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Bound, Deref, DerefMut, Range, RangeBounds};
use std::time::Duration;

use crate::bounds::half_open;
use crate::error::LockError;
use crate::guard::RangeGuard;
use crate::RangeLock;

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
    pub fn try_lock(&self, range: impl RangeBounds<usize>) -> Result<SliceGuard<'_, T>, LockError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock(units(&range))?;
        Ok(SliceGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` shared if no writer holds any of them now; never waits.
    pub fn try_lock_shared(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<SliceReadGuard<'_, T>, LockError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.try_lock_shared(units(&range))?;
        Ok(SliceReadGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` exclusively, giving up after `timeout`.
    pub fn lock_timeout(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<SliceGuard<'_, T>, LockError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.lock_timeout(units(&range), timeout)?;
        Ok(SliceGuard { guard, elements: self.elements(range) })
    }

    /// Locks elements `range` shared, giving up after `timeout`.
    pub fn lock_shared_timeout(
        &self,
        range: impl RangeBounds<usize>,
        timeout: Duration,
    ) -> Result<SliceReadGuard<'_, T>, LockError> {
        let range = self.in_bounds(&range)?;
        let guard = self.lock.lock_shared_timeout(units(&range), timeout)?;
        Ok(SliceReadGuard { guard, elements: self.elements(range) })
    }

    /// `range` as element indices, if it is non-empty and inside the slice (an unbounded
    /// end is the slice's end).
    fn in_bounds(&self, range: &impl RangeBounds<usize>) -> Result<Range<usize>, LockError> {
        let len = self.data.len() as u64;
        let as_u64 = |b: Bound<&usize>| b.map(|&i| i as u64);
        let end = match range.end_bound() {
            Bound::Unbounded => Bound::Excluded(len),
            bound => as_u64(bound),
        };
        let units = half_open(&(as_u64(range.start_bound()), end))?;
        if units.end > len {
            return Err(LockError::OutOfBounds { range: (units.start, units.end), len });
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
fn invalid(e: LockError) -> ! {
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
            assert_eq!(lock.try_lock(19..21).unwrap_err(), LockError::WouldBlock);
        }
        assert!(lock.get_mut()[10..20].iter().all(|&x| x == 7));
        assert_eq!(lock.get_mut()[9], 9);
        assert_eq!(lock.into_inner().len(), 100);
    }

    #[test]
    fn out_of_bounds_is_an_error_or_a_panic() {
        let lock = SliceLock::new(vec![0u8; 8]);
        assert!(matches!(lock.try_lock_shared(3..3), Err(LockError::InvalidRange(_))));
        assert!(lock.try_lock(..).is_ok());
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(lock.lock(..=8))))
            .unwrap_err();
        let msg = err.downcast_ref::<String>().expect("a formatted panic");
        assert_eq!(msg, "SliceLock: range 0..9 is out of bounds for a slice of 8 elements");
        assert!(matches!(
            lock.try_lock(4..9),
            Err(LockError::OutOfBounds { range: (4, 9), len: 8 })
        ));
    }
}
