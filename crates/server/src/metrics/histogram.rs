//! Latency histograms with fixed buckets from 10 µs to 10 s.
//!
//! A [`Histogram`] is plain counters, for an engine whose table is driven by one thread
//! at a time (the combiner thread, or whoever holds the table's mutex): an observation is
//! a bucket search (a binary search over [`BOUNDS_NS`], five comparisons) and two adds.
//! An [`AtomicHistogram`] is the same with relaxed atomic adds, for the rangelock engine,
//! whose handlers grant and release concurrently. Both keep per-bucket counts
//! (non-cumulative) and the sum in nanoseconds; the exposition cumulates them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (inclusive, as Prometheus' `le`) of the finite buckets, in nanoseconds:
/// 10 µs to 10 s in 1-2.5-5 steps. A last bucket, `+Inf`, takes everything above.
pub const BOUNDS_NS: [u64; 19] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Buckets including `+Inf`.
const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// The bucket of a duration of `ns` nanoseconds: the first whose bound is at least `ns`.
#[inline]
fn bucket(ns: u64) -> usize {
    BOUNDS_NS.partition_point(|&bound| bound < ns)
}

/// A histogram of durations; see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    counts: [u64; BUCKETS],
    sum_ns: u64,
}

impl Histogram {
    /// Records a duration of `ns` nanoseconds.
    #[inline]
    pub fn observe(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.sum_ns = self.sum_ns.wrapping_add(ns);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of the observed durations, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }

    /// `(upper bound in seconds, observations in this bucket)` per bucket, in order; the
    /// last bound is `f64::MAX` (`+Inf`). Counts are per bucket, not cumulative.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        let bounds = BOUNDS_NS.iter().map(|&b| b as f64 / 1e9).chain([f64::MAX]);
        bounds.zip(self.counts).collect()
    }
}

/// A [`Histogram`] that threads record into concurrently, with relaxed atomic adds.
#[derive(Debug, Default)]
pub(crate) struct AtomicHistogram {
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl AtomicHistogram {
    /// Records a duration of `ns` nanoseconds.
    #[inline]
    pub(crate) fn observe(&self, ns: u64) {
        self.counts[bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The counts now (each read on its own: not one atomic picture).
    pub(crate) fn snapshot(&self) -> Histogram {
        Histogram {
            counts: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_everything_has_a_bucket() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(10_000), 0, "le is inclusive");
        assert_eq!(bucket(10_001), 1);
        assert_eq!(bucket(10_000_000_000), BOUNDS_NS.len() - 1);
        assert_eq!(bucket(10_000_000_001), BOUNDS_NS.len(), "+Inf");
        assert_eq!(bucket(u64::MAX), BOUNDS_NS.len());
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn plain_and_atomic_agree() {
        let mut h = Histogram::default();
        let a = AtomicHistogram::default();
        for ns in [5, 10_000, 30_000, 2_000_000_000, 20_000_000_000] {
            h.observe(ns);
            a.observe(ns);
        }
        assert_eq!(a.snapshot(), h);
        assert_eq!(h.count(), 5);
        let b = h.buckets();
        assert_eq!(b.len(), BOUNDS_NS.len() + 1);
        assert_eq!((b[0].0, b[0].1), (0.00001, 2));
        assert_eq!(b[2].1, 1);
        assert_eq!(b[16], (2.5, 1));
        assert_eq!(b[19], (f64::MAX, 1));
        assert!((h.sum_seconds() - 22.000_040_005).abs() < 1e-12);
    }
}
