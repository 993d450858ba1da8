//! Errors returned by the range locks.

use core::fmt;
use core::ops::Bound;

/// A range that locks nothing: empty, inverted, or past the last unit (`u64::MAX - 1`).
///
/// Ranges are passed as any `impl RangeBounds<u64>` (`a..b`, `a..=b`, `..b`, `a..`, `..`)
/// and stand for the half-open range `start..end` with `start < end <= u64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeError {
    start: Bound<u64>,
    end: Bound<u64>,
}

impl RangeError {
    /// The error for the bounds as the caller wrote them.
    pub(crate) fn new(start: Bound<u64>, end: Bound<u64>) -> Self {
        RangeError { start, end }
    }

    /// The error for the half-open range `start..end`.
    pub(crate) fn half_open(start: u64, end: u64) -> Self {
        RangeError::new(Bound::Included(start), Bound::Excluded(end))
    }

    /// The start bound the caller passed.
    pub fn start_bound(&self) -> Bound<u64> {
        self.start
    }

    /// The end bound the caller passed.
    pub fn end_bound(&self) -> Bound<u64> {
        self.end
    }
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid range ")?;
        match self.start {
            Bound::Included(s) => write!(f, "{s}")?,
            Bound::Excluded(s) => write!(f, "(excluded {s})")?,
            Bound::Unbounded => {}
        }
        match self.end {
            Bound::Included(e) => write!(f, "..={e}: ")?,
            Bound::Excluded(e) => write!(f, "..{e}: ")?,
            Bound::Unbounded => f.write_str("..: ")?,
        }
        if matches!(self.end, Bound::Included(u64::MAX))
            || matches!(self.start, Bound::Excluded(u64::MAX))
        {
            f.write_str("the last unit is u64::MAX - 1 (u64::MAX is only ever an end bound)")
        } else {
            f.write_str("a range must be non-empty (start < end)")
        }
    }
}

impl std::error::Error for RangeError {}

/// Why a lock call returned without a guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The range locks nothing (a `try_` or timed call; blocking calls panic instead).
    #[error(transparent)]
    InvalidRange(#[from] RangeError),
    /// `try_lock*` found an overlapping incompatible holder.
    #[error("the range is held by an incompatible holder")]
    WouldBlock,
    /// A timed call (`try_lock*_for`, `try_lock*_until`) gave up at its deadline.
    #[error("timed out waiting for the range")]
    TimedOut,
    /// Two ranges of one [`try_lock_many`](crate::RangeLock::try_lock_many) (or timed)
    /// request overlap (in any modes); nothing was locked.
    #[error(
        "ranges {}..{} and {}..{} of one request overlap: the ranges of a request must be \
         disjoint",
        .first.0, .first.1, .second.0, .second.1
    )]
    Overlapping {
        /// The range that starts first, as `(start, end)`.
        first: (u64, u64),
        /// A range of the same request that overlaps it, as `(start, end)`.
        second: (u64, u64),
    },
}

/// Why a [`SliceLock`](crate::SliceLock) call returned without a guard: the errors of
/// [`LockError`], and a range past the slice's end, which only a slice has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SliceError {
    /// The range locks nothing: empty or inverted (a `try_` or timed call; blocking calls
    /// panic instead).
    #[error(transparent)]
    InvalidRange(#[from] RangeError),
    /// The range ends past the last element.
    #[error("range {}..{} is out of bounds for a slice of {len} elements", .range.0, .range.1)]
    OutOfBounds {
        /// The range of element indices, half-open, as `(start, end)`.
        range: (usize, usize),
        /// How many elements the slice has.
        len: usize,
    },
    /// `try_lock*` found an overlapping incompatible holder.
    #[error("the range is held by an incompatible holder")]
    WouldBlock,
    /// A timed call gave up at its deadline.
    #[error("timed out waiting for the range")]
    TimedOut,
    /// Two ranges of one many-range request overlap (in any modes); nothing was locked.
    #[error(
        "ranges {}..{} and {}..{} of one request overlap: the ranges of a request must be \
         disjoint",
        .first.0, .first.1, .second.0, .second.1
    )]
    Overlapping {
        /// The range that starts first, as `(start, end)` element indices.
        first: (usize, usize),
        /// A range of the same request that overlaps it.
        second: (usize, usize),
    },
}

impl From<LockError> for SliceError {
    fn from(e: LockError) -> Self {
        // Units of a slice's lock are element indices, so they fit a `usize`.
        let idx = |(s, e): (u64, u64)| (s as usize, e as usize);
        match e {
            LockError::InvalidRange(e) => SliceError::InvalidRange(e),
            LockError::WouldBlock => SliceError::WouldBlock,
            LockError::TimedOut => SliceError::TimedOut,
            LockError::Overlapping { first, second } => {
                SliceError::Overlapping { first: idx(first), second: idx(second) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `RangeLock` callers match every variant there is: none is a slice's alone (issue 43,
    /// item 3). An exhaustive match (allowed inside the crate) fails to build if one comes
    /// back.
    #[test]
    fn lock_error_has_no_slice_variant() {
        let all = [
            LockError::InvalidRange(RangeError::half_open(2, 1)),
            LockError::WouldBlock,
            LockError::TimedOut,
            LockError::Overlapping { first: (0, 2), second: (1, 3) },
        ];
        for e in all {
            let slice = SliceError::from(e);
            match e {
                LockError::InvalidRange(r) => assert_eq!(slice, SliceError::InvalidRange(r)),
                LockError::WouldBlock => assert_eq!(slice, SliceError::WouldBlock),
                LockError::TimedOut => assert_eq!(slice, SliceError::TimedOut),
                LockError::Overlapping { .. } => {
                    assert_eq!(slice, SliceError::Overlapping { first: (0, 2), second: (1, 3) })
                }
            }
            assert_eq!(slice.to_string(), e.to_string(), "same words for the same error");
        }
    }
}
