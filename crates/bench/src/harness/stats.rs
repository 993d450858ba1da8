//! Medians and latency percentiles.

/// The median of `values` (mean of the two middle values for an even count); `None` when
/// empty. NaNs sort last. Reorders `values`.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

/// The `q`-quantile (`0.0 ..= 1.0`) of ascending `sorted` by the nearest-rank method: the
/// smallest value such that at least `q` of the samples are `<=` it. `None` when empty.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "percentile needs sorted input");
    let q = q.clamp(0.0, 1.0);
    // 1-based; the epsilon keeps float noise (0.99 * 100 = 99.000..01) off the next rank.
    let rank = (q * sorted.len() as f64 - 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Samples needed before p99.9 is reported (fewer would make it the maximum).
pub const P999_MIN_SAMPLES: usize = 1000;

/// The latency percentiles of a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Median latency.
    pub p50: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// 99.9th percentile; only with at least [`P999_MIN_SAMPLES`] samples.
    pub p999: Option<u64>,
}

impl Percentiles {
    /// Percentiles of `samples` (sorted in place).
    pub fn of(samples: &mut [u64]) -> Self {
        samples.sort_unstable();
        Percentiles {
            p50: percentile(samples, 0.50),
            p99: percentile(samples, 0.99),
            p999: if samples.len() >= P999_MIN_SAMPLES { percentile(samples, 0.999) } else { None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [1.0, 100.0, 2.0, 3.0, 1e9]), Some(3.0));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&v, 1.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0.999), Some(999));
    }

    #[test]
    fn percentiles_sort_and_gate_p999() {
        let mut few: Vec<u64> = (1..=10).rev().collect();
        let p = Percentiles::of(&mut few);
        assert_eq!((p.p50, p.p99, p.p999), (Some(5), Some(10), None));
        let mut many: Vec<u64> = (0..2000).map(|i| (i * 7919) % 2000).collect();
        let p = Percentiles::of(&mut many);
        assert_eq!((p.p50, p.p99, p.p999), (Some(999), Some(1979), Some(1997)));
        assert_eq!(Percentiles::of(&mut []), Percentiles::default());
    }
}
