//! [`CacheOptions`]: how wide a cached client asks, and how long it keeps what it does not
//! use.

use std::ops::Range;
use std::time::Duration;

/// How a [`CachedClient`](super::CachedClient) asks for and keeps extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// The desired range of a `LOCK_CACHED` is the required range rounded out to
    /// multiples of `granule` (clamped to `0..u64::MAX`). The default, `u64::MAX`, asks for
    /// the whole line; `1` (or `0`) asks for exactly the required range.
    pub granule: u64,
    /// A kept extent without a local lock for this long is given back by the client
    /// itself (default 5 s).
    pub idle: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions { granule: u64::MAX, idle: Duration::from_secs(5) }
    }
}

impl CacheOptions {
    /// The desired range for the required `range` (`start < end`).
    pub(crate) fn desired(&self, range: &Range<u64>) -> (u64, u64) {
        let g = self.granule.max(1);
        let start = range.start - range.start % g;
        let end = match range.end % g {
            0 => range.end,
            r => range.end.saturating_add(g - r),
        };
        (start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_desired_range_is_rounded_out_and_clamped() {
        let o = |granule| CacheOptions { granule, ..CacheOptions::default() };
        assert_eq!(CacheOptions::default().desired(&(5..7)), (0, u64::MAX));
        assert_eq!(o(4096).desired(&(5..7)), (0, 4096));
        assert_eq!(o(4096).desired(&(4096..8193)), (4096, 12288));
        assert_eq!(o(10).desired(&(u64::MAX - 3..u64::MAX)), (u64::MAX - 5, u64::MAX));
        assert_eq!(o(0).desired(&(5..7)), (5, 7));
        assert_eq!(o(1).desired(&(5..7)), (5, 7));
    }
}
