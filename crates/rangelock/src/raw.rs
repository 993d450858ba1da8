//! The raw range-lock interface every variant implements.

use core::ops::Range;
use std::time::Instant;

use crate::range::Mode;

/// A raw range lock: the unsafe core behind the generic [`Lock`](crate::lock::Lock).
///
/// Implementors lock half-open ranges `[start, end)` of `u64` in [`Mode::Exclusive`] or
/// [`Mode::Shared`] mode. The safe wrapper validates ranges (non-empty, `start < end`) and
/// answers invalid ones with [`LockError::InvalidRange`](crate::LockError::InvalidRange);
/// the acquisition methods here are safe and reachable through
/// [`Lock::raw`](crate::lock::Lock::raw), so every implementation also checks (with
/// [`assert_valid`]) and panics on an empty or inverted range rather than lock something
/// else (the wrapper's check and this one compile to one comparison after inlining).
///
/// # Safety
///
/// Implementations must guarantee mutual exclusion: between a successful acquisition of
/// range `a` in mode `m` returning a token and the matching [`unlock`](Self::unlock), no
/// other acquisition of a range overlapping `a` in a mode incompatible with `m` (see
/// [`Mode::compatible`]) may succeed. A successful acquisition must also *happen before*
/// nothing and *happen after* the unlock of every conflicting holder it waited for: the
/// unlock has Release semantics and the acquisition Acquire semantics, so data written
/// under a range is visible to the next holder of an overlapping range. The same holds for
/// each token [`lock_ordered`](Self::lock_ordered) returns, with its range and mode.
pub unsafe trait RawRangeLock: Send + Sync {
    /// Identifies one held range; handed back to [`unlock`](Self::unlock).
    type Token: Send;

    /// Short stable name used by benchmarks and reports (e.g. `"kogan-list"`).
    const NAME: &'static str;

    /// Tries to acquire `range` in `mode` without waiting.
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token>;

    /// Acquires `range` in `mode`, waiting as long as it takes.
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token;

    /// Acquires `range` in `mode`, giving up at `deadline`.
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token>;

    /// Whether the variant has [`lock_ordered`](Self::lock_ordered), the fair path of
    /// [`RangeLock::lock_many`](crate::RangeLock::lock_many). `false` unless the variant says so.
    const ORDERED: bool = false;

    /// Acquires every range of `request` in its mode, all or nothing, taking them one by
    /// one in the order given and waiting for each while holding the ones before it;
    /// `None` (with nothing held) if `deadline` passes first. The tokens come back in
    /// request order.
    ///
    /// `request` is sorted by start, its ranges valid and pairwise disjoint. A variant
    /// implements this (and sets [`ORDERED`](Self::ORDERED)) only if such waits cannot
    /// deadlock with each other nor with single-range waiters that hold nothing; [`Lock`]
    /// calls it only when `ORDERED` is set. The default panics.
    ///
    /// [`Lock`]: crate::lock::Lock
    fn lock_ordered(
        &self,
        request: &[(Range<u64>, Mode)],
        deadline: Option<Instant>,
    ) -> Option<Vec<Self::Token>> {
        let _ = (request, deadline);
        unimplemented!("{} has no ordered acquisition (ORDERED is false)", Self::NAME)
    }

    /// Releases a range acquired from this lock.
    ///
    /// # Safety
    ///
    /// `token` must have been returned by an acquisition on `self` and not released since.
    unsafe fn unlock(&self, token: Self::Token);
}

/// A raw range lock whose exclusive holds can become shared in place.
///
/// # Safety
///
/// [`downgrade`](Self::downgrade) must keep the range held throughout: from the call until
/// the returned shared token is released, no acquisition incompatible with a shared hold of
/// the range (an exclusive one overlapping it) may succeed, while shared acquisitions may
/// succeed as soon as the call returns (or earlier).
pub unsafe trait RawRangeLockDowngrade: RawRangeLock {
    /// Turns the exclusive hold of `range` that `token` names into a shared hold of the same
    /// range and returns its token.
    ///
    /// # Safety
    ///
    /// `token` was returned by an exclusive acquisition of `range` on `self` and has not been
    /// released.
    unsafe fn downgrade(&self, token: Self::Token, range: Range<u64>) -> Self::Token;
}

/// Panics unless `range` is non-empty (`start < end`): the check every raw acquisition makes
/// (see [`RawRangeLock`]).
#[inline]
#[track_caller]
pub fn assert_valid(range: &Range<u64>) {
    if range.start >= range.end {
        invalid(range);
    }
}

#[cold]
#[track_caller]
fn invalid(range: &Range<u64>) -> ! {
    panic!("{}", crate::RangeError::half_open(range.start, range.end))
}
