//! Range validation and the lock modes.

use core::ops::Range;

use crate::error::RangeError;

/// How a range is held.
///
/// Overlapping `Shared` holders are compatible with each other; an `Exclusive` holder is
/// compatible with nothing that overlaps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Excludes every overlapping holder (a writer).
    Exclusive,
    /// Compatible with overlapping shared holders (a reader).
    Shared,
}

impl Mode {
    /// Whether two holders in these modes may overlap.
    #[inline]
    pub fn compatible(self, other: Mode) -> bool {
        matches!((self, other), (Mode::Shared, Mode::Shared))
    }
}

/// Checks that `range` is a non-empty half-open range `[start, end)`.
///
/// Every lock in this crate locks half-open ranges over `u64`: `0..u64::MAX` is the whole
/// domain, `0..1` is the first unit, and `a..b` and `b..c` are adjacent and never overlap.
#[inline]
pub fn check_range(range: &Range<u64>) -> Result<(), RangeError> {
    if range.start < range.end {
        Ok(())
    } else {
        Err(RangeError::half_open(range.start, range.end))
    }
}

/// Whether two valid half-open ranges share at least one unit.
#[inline]
pub fn overlaps(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // inverted ranges are the input under test
    fn empty_and_inverted_ranges_are_rejected() {
        assert!(check_range(&(5..5)).is_err());
        assert!(check_range(&(6..5)).is_err());
        assert!(check_range(&(0..1)).is_ok());
        assert!(check_range(&(0..u64::MAX)).is_ok());
        let err = check_range(&(7..3)).unwrap_err();
        assert_eq!(err.to_string(), "invalid range 7..3: a range must be non-empty (start < end)");
    }

    #[test]
    fn adjacent_ranges_do_not_overlap() {
        assert!(!overlaps(&(0..10), &(10..20)));
        assert!(overlaps(&(0..11), &(10..20)));
        assert!(overlaps(&(0..u64::MAX), &(u64::MAX - 1..u64::MAX)));
    }

    #[test]
    fn only_shared_pairs_are_compatible() {
        assert!(Mode::Shared.compatible(Mode::Shared));
        assert!(!Mode::Shared.compatible(Mode::Exclusive));
        assert!(!Mode::Exclusive.compatible(Mode::Shared));
        assert!(!Mode::Exclusive.compatible(Mode::Exclusive));
    }
}
