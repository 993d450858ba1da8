//! Helpers shared by the `epvs-*` suites: thread counts, parameter maps, simulated work.

use serde_json::{Map, Value};

/// A `params` map from `(name, value)` pairs.
pub(crate) fn params<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Bytes of thread-local data hashed per simulated operation (seed 2 §6.2: "each thread
/// protects hashing of some local bytes").
pub(crate) const WORK_BYTES: usize = 64;

/// The simulated operation: hash `WORK_BYTES` of thread-local data (no shared state).
#[inline]
pub(crate) fn hash_work(local: &mut [u64; WORK_BYTES / 8], salt: u64) -> u64 {
    let mut h = salt ^ 0xcbf2_9ce4_8422_2325;
    for w in local.iter_mut() {
        h = (h ^ *w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(23);
        *w = w.wrapping_add(h);
    }
    std::hint::black_box(h)
}

/// A probability as a threshold on a uniform `u64`: `rng < threshold` has probability `p`.
pub(crate) fn threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else if p <= 0.0 {
        0
    } else {
        (p * u64::MAX as f64) as u64
    }
}

/// Smoke test for a suite: every quick-mode case runs briefly (5 ms, and until every thread
/// completed an operation), counts operations, and the
/// case list names each variant in `expected` for every (params, threads) group.
#[cfg(test)]
pub(crate) fn smoke(suite: &dyn crate::harness::Suite, expected: &[&str]) {
    use crate::harness::Options;
    use std::collections::BTreeMap;
    let opts = Options {
        rounds: 1,
        duration: std::time::Duration::from_millis(5),
        // Every thread completes an operation, however busy the machine (see `Span`).
        min_ops: 1,
        oversubscribe: false,
        ..Options::quick()
    };
    let mut cases = suite.cases(&opts);
    assert!(!cases.is_empty(), "{}: no cases", suite.name());
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for case in &mut cases {
        let key = format!("{} t={}", Value::Object(case.params.clone()), case.threads);
        groups.entry(key).or_default().push(case.variant.clone());
        let sample = (case.run)(opts.span());
        assert!(sample.ops > 0, "{}: {} made no progress", suite.name(), case.variant);
    }
    for (key, variants) in groups {
        for v in expected {
            assert!(variants.iter().any(|x| x == v), "{}: {key} lacks {v}", suite.name());
        }
        assert!(variants.iter().any(|x| x == suite.baseline()), "{key} lacks the baseline");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_extremes() {
        assert_eq!(threshold(1.0), u64::MAX);
        assert_eq!(threshold(0.0), 0);
        let t = threshold(0.5);
        assert!(t > u64::MAX / 2 - 4096 && t < u64::MAX / 2 + 4096);
    }
}
