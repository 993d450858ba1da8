//! From what the caller wrote (`impl RangeBounds<u64>`) to the half-open range the locks
//! work on, and the panic of the blocking calls on a range that locks nothing.

use core::ops::{Bound, Range, RangeBounds};

use crate::error::RangeError;

/// The half-open range `start..end` that `bounds` stands for, if it locks something:
/// `start < end <= u64::MAX` (so `..=u64::MAX` and `u64::MAX..` lock nothing: `u64::MAX`
/// is only ever an end bound).
#[inline]
pub(crate) fn half_open(bounds: &impl RangeBounds<u64>) -> Result<Range<u64>, RangeError> {
    let (start, end) = (bounds.start_bound().cloned(), bounds.end_bound().cloned());
    let lo = match start {
        Bound::Included(s) => Some(s),
        Bound::Excluded(s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let hi = match end {
        Bound::Included(e) => e.checked_add(1),
        Bound::Excluded(e) => Some(e),
        Bound::Unbounded => Some(u64::MAX),
    };
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo < hi => Ok(lo..hi),
        _ => Err(RangeError::new(start, end)),
    }
}

/// [`half_open`] for a blocking call, which panics on a range that locks nothing, as slice
/// indexing does.
#[inline]
#[track_caller]
pub(crate) fn expect_valid(bounds: &impl RangeBounds<u64>) -> Range<u64> {
    match half_open(bounds) {
        Ok(range) => range,
        Err(e) => invalid(e),
    }
}

#[cold]
#[track_caller]
fn invalid(e: RangeError) -> ! {
    panic!("{e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // inverted ranges are the input under test
    fn every_bound_form_maps_to_its_half_open_range() {
        assert_eq!(half_open(&(3..7)), Ok(3..7));
        assert_eq!(half_open(&(3..=7)), Ok(3..8));
        assert_eq!(half_open(&(..7)), Ok(0..7));
        assert_eq!(half_open(&(..=7)), Ok(0..8));
        assert_eq!(half_open(&(3..)), Ok(3..u64::MAX));
        assert_eq!(half_open(&(..)), Ok(0..u64::MAX));
        assert_eq!(half_open(&(u64::MAX - 1..=u64::MAX - 1)), Ok(u64::MAX - 1..u64::MAX));
        let excluded = (Bound::Excluded(3), Bound::Included(4));
        assert_eq!(half_open(&excluded), Ok(4..5));
        for bad in [half_open(&(5..5)), half_open(&(6..5)), half_open(&(0..0))] {
            assert!(bad.is_err());
        }
        assert!(half_open(&(0..=u64::MAX)).is_err());
        assert!(half_open(&(u64::MAX..)).is_err());
        assert!(half_open(&(Bound::Excluded(u64::MAX), Bound::Unbounded)).is_err());
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)]
    fn errors_echo_the_bounds_as_written() {
        let msg = |r: Result<Range<u64>, RangeError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(half_open(&(7..3))),
            "invalid range 7..3: a range must be non-empty (start < end)"
        );
        assert_eq!(
            msg(half_open(&(9..=2))),
            "invalid range 9..=2: a range must be non-empty (start < end)"
        );
        assert_eq!(
            msg(half_open(&(5..=u64::MAX))),
            "invalid range 5..=18446744073709551615: the last unit is u64::MAX - 1 (u64::MAX \
             is only ever an end bound)"
        );
    }

    #[test]
    #[should_panic(expected = "invalid range 4..4: a range must be non-empty")]
    fn blocking_calls_panic_like_slice_indexing() {
        expect_valid(&(4..4));
    }
}
