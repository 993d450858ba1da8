//! `NoLock`, the examples' ceiling: a "lock" whose every acquisition succeeds at once, so a
//! loop over it costs what the loop alone costs. Included by `w1_loop` and `mixed_loop`
//! (`#[path]`), whose `none` variant it is.

use std::ops::Range;
use std::time::Instant;

use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// No lock: every acquisition succeeds at once (the loop's own cost).
#[derive(Debug)]
pub struct NoLock;

// SAFETY: not a lock at all: only the examples' `none` ceilings use it, whose critical
// sections touch per-thread memory only (disjoint shares, or per-thread buffers).
unsafe impl RawRangeLock for NoLock {
    type Token = ();
    const NAME: &'static str = "none";
    #[inline]
    fn try_lock(&self, _: Range<u64>, _: Mode) -> Option<()> {
        Some(())
    }
    #[inline]
    fn lock(&self, _: Range<u64>, _: Mode) {}
    #[inline]
    fn lock_until(&self, _: Range<u64>, _: Mode, _: Instant) -> Option<()> {
        Some(())
    }
    #[inline]
    unsafe fn unlock(&self, _: ()) {}
}
