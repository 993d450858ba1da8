//! Helpers the range-lock suites share.

use std::ops::Range;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::workload::loops::Background;
use crate::workload::{holds_disjoint, RangeTarget, SharedRegion};

/// Ranges of the W1/W2/held layouts: 16 Ki ranges of 1 KiB, a 16 MiB shared region
/// (larger than this machine's L2, so the memset is a real write, not a cache hit).
pub(crate) const RANGES: u64 = 16 * 1024;

/// Builds a variant's target, or says on stderr why the variant is skipped.
pub(crate) fn target<T>(
    suite: &str,
    name: &str,
    make: &dyn Fn() -> std::io::Result<T>,
) -> Option<Arc<T>> {
    if !selected(name) {
        eprintln!("{suite}: skipping {name}: not in RANGELOCK_BENCH_ONLY");
        return None;
    }
    match make() {
        Ok(t) => Some(Arc::new(t)),
        Err(e) => {
            eprintln!("{suite}: skipping {name}: {e}");
            None
        }
    }
}

/// Whether `RANGELOCK_BENCH_ONLY` (comma-separated variant names; unset: every variant)
/// selects the variant `name`.
pub(crate) fn selected(name: &str) -> bool {
    std::env::var("RANGELOCK_BENCH_ONLY").map_or(true, |only| only.split(',').any(|n| n == name))
}

/// Maps the suite's shared region, or says on stderr why the suite has no cases.
pub(crate) fn region(suite: &str, bytes: usize) -> Option<Arc<SharedRegion>> {
    match SharedRegion::new(bytes) {
        Ok(r) => Some(Arc::new(r)),
        Err(e) => {
            eprintln!("{suite}: cannot map {bytes} bytes: {e}");
            None
        }
    }
}

/// Notes on stderr that a variant cannot hold several disjoint ranges at once.
pub(crate) fn coarse(suite: &str, name: &str) {
    eprintln!(
        "{suite}: skipping {name}: one thread cannot hold several disjoint ranges at once \
         (a coarse lock would deadlock this workload)"
    );
}

/// Whether `target` can hold the `background` holders apart from the measured ranges
/// (`measured`, highest first after the holders: see `holds_disjoint`); notes the skip on
/// stderr if not. `None` (no background) always fits.
pub(crate) fn background_fits<T: RangeTarget>(
    suite: &str,
    name: &str,
    target: &T,
    background: Option<&Background>,
    measured: impl IntoIterator<Item = Range<u64>>,
) -> bool {
    let Some(bg) = background else { return true };
    let fits = holds_disjoint(target, bg.ranges_descending().into_iter().chain(measured));
    if !fits {
        eprintln!(
            "{suite}: skipping {name} with background={}: it cannot hold the background \
             ranges apart from the measured ones",
            Background::NAME
        );
    }
    fits
}

/// A params map from pairs.
pub(crate) fn params<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
