//! `segments`: static segmentation with one reader-writer counter per segment (DSLR /
//! bitmap style).
//!
//! # Algorithm
//!
//! The domain `[0, domain_units)` is cut into fixed segments of `segment_size` units;
//! segment `i` covers `[i * segment_size, (i + 1) * segment_size)`. Each segment has one
//! 32-bit word, used as a reader-writer lock exactly as in Kim et al.'s segment locks
//! (concurrent-range-locking thesis §2.1.4, server-sided thesis's DSLR baseline):
//!
//! | bits  | meaning                                   |
//! |-------|-------------------------------------------|
//! | 31    | `WRITER`: an exclusive holder owns it      |
//! | 0..31 | number of shared holders                  |
//!
//! A writer CASes the word from `0` to `WRITER`; a reader CASes it from `n` to `n + 1`
//! when `WRITER` is clear. A range locks every segment it touches, in ascending order; a
//! blocking acquisition waits on each segment in turn (spin, then yield), and a `try` or
//! timed acquisition that fails part-way releases the segments it already took, in
//! reverse order. Release clears `WRITER` or decrements the reader count.
//!
//! # Ranges past the domain
//!
//! The raw trait cannot reject a valid range, so units at or beyond `domain_units` are
//! *clamped*: they all map to the last segment. Mutual exclusion is preserved (two
//! overlapping ranges share a unit, hence a segment), but ranges past the domain conflict
//! with each other and with the last segment even when they do not overlap. Size the
//! domain to the address space you lock.
//!
//! # Invariants and correctness
//!
//! * Two overlapping ranges share at least one unit and therefore one segment; holding a
//!   segment word in incompatible modes at once is impossible (the CASes above), so
//!   overlapping incompatible holders are excluded.
//! * Segments are always taken in ascending index order and waiting only ever happens on
//!   the next segment to take, so the waits-for graph follows increasing indices and has
//!   no cycle: no deadlock.
//! * Acquire CASes pair with Release on the release path, so a holder sees what earlier
//!   holders of any of its segments wrote.
//!
//! # Trade-offs
//!
//! Fast and latch-free for small ranges: one CAS per touched segment and no shared
//! structure. Costs grow with the range length (`len / segment_size` CASes), false
//! conflicts appear between disjoint ranges in one segment, the memory is proportional to
//! the domain, and there is no fairness: a stream of readers can starve a writer on a
//! segment, and a writer holding early segments blocks readers of them while it waits
//! for later ones.

use core::fmt;
use core::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use super::sync::Backoff;
use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// Bit 31 of a segment word: an exclusive holder owns the segment.
const WRITER: u32 = 1 << 31;

/// A range lock over a fixed domain, cut into fixed-size segments with one
/// reader-writer word each.
///
/// See the [module documentation](self), in particular for ranges past the domain.
pub struct Segments {
    /// One reader-writer word per segment; bit layout in the module docs.
    words: Box<[AtomicU32]>,
    /// Units per segment (at least 1).
    segment_size: u64,
}

/// A range held in a [`Segments`] lock: the segment indices it holds and its mode.
#[derive(Debug)]
pub struct SegmentsToken {
    first: usize,
    last: usize,
    mode: Mode,
}

impl Segments {
    /// A lock over units `[0, domain_units)` cut into segments of `segment_size` units.
    ///
    /// # Panics
    ///
    /// If `segment_size` is 0, or the domain needs more segments than fit in memory
    /// (`usize`).
    pub fn new(domain_units: u64, segment_size: u64) -> Self {
        assert!(segment_size > 0, "segments: segment_size must be at least 1");
        let count = domain_units.div_ceil(segment_size).max(1);
        let count = usize::try_from(count).expect("segments: domain has too many segments");
        Segments { words: (0..count).map(|_| AtomicU32::new(0)).collect(), segment_size }
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.words.len()
    }

    /// Units per segment.
    pub fn segment_size(&self) -> u64 {
        self.segment_size
    }

    /// The segment holding `unit`, clamped to the last segment.
    #[inline]
    fn segment_of(&self, unit: u64) -> usize {
        let index = unit / self.segment_size;
        usize::try_from(index).map_or(self.words.len() - 1, |i| i.min(self.words.len() - 1))
    }

    /// First and last segment touched by a valid range.
    #[inline]
    fn span(&self, range: &Range<u64>) -> (usize, usize) {
        (self.segment_of(range.start), self.segment_of(range.end - 1))
    }

    /// One attempt to take segment `i` in `mode`.
    #[inline]
    fn try_segment(&self, i: usize, mode: Mode) -> bool {
        let word = &self.words[i];
        match mode {
            // Acquire: the previous holders' critical sections happen before ours; pairs
            // with the Release in `release_segment`.
            Mode::Exclusive => {
                word.compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed).is_ok()
            }
            Mode::Shared => {
                let mut cur = word.load(Ordering::Relaxed);
                loop {
                    if cur & WRITER != 0 || cur == WRITER - 1 {
                        return false;
                    }
                    // Acquire: as above.
                    match word.compare_exchange_weak(
                        cur,
                        cur + 1,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return true,
                        Err(actual) => cur = actual,
                    }
                }
            }
        }
    }

    /// Releases segment `i` held in `mode`.
    #[inline]
    fn release_segment(&self, i: usize, mode: Mode) {
        let word = &self.words[i];
        // Release: publishes our critical section to the next holder; pairs with the
        // Acquire CASes in `try_segment`.
        match mode {
            Mode::Exclusive => word.store(0, Ordering::Release),
            Mode::Shared => {
                word.fetch_sub(1, Ordering::Release);
            }
        }
    }

    /// Releases segments `first..end` in reverse order.
    fn release_span(&self, first: usize, end: usize, mode: Mode) {
        for i in (first..end).rev() {
            self.release_segment(i, mode);
        }
    }

    /// Takes segment `i`, waiting until `deadline` (forever when `None`).
    #[cold]
    fn wait_segment(&self, i: usize, mode: Mode, deadline: Option<Instant>) -> bool {
        let mut backoff = Backoff::new();
        loop {
            if self.try_segment(i, mode) {
                return true;
            }
            if backoff.is_completed() && deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            backoff.snooze();
        }
    }

    fn acquire(
        &self,
        range: Range<u64>,
        mode: Mode,
        wait: bool,
        deadline: Option<Instant>,
    ) -> Option<SegmentsToken> {
        let (first, last) = self.span(&range);
        for i in first..=last {
            let taken = self.try_segment(i, mode) || (wait && self.wait_segment(i, mode, deadline));
            if !taken {
                self.release_span(first, i, mode);
                return None;
            }
        }
        Some(SegmentsToken { first, last, mode })
    }
}

impl fmt::Debug for Segments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segments")
            .field("segments", &self.words.len())
            .field("segment_size", &self.segment_size)
            .finish()
    }
}

// SAFETY: see "Invariants and correctness" in the module docs: overlapping ranges share a
// segment, a segment word admits only compatible holders, and the word's Acquire/Release
// operations order a release before the next acquisition of that segment.
unsafe impl RawRangeLock for Segments {
    type Token = SegmentsToken;

    const NAME: &'static str = "segments";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, false, None)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        rangelock::internals::assert_valid(&range);
        match self.acquire(range, mode, true, None) {
            Some(token) => token,
            None => unreachable!("segments: a wait without deadline gave up"),
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, true, Some(deadline))
    }

    #[inline]
    unsafe fn unlock(&self, token: Self::Token) {
        self.release_span(token.first, token.last + 1, token.mode);
    }
}
