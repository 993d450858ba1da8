//! How long one measurement runs: a duration, and a floor of operations per worker thread.

use std::time::Duration;

/// How long one measurement runs: at least [`Span::duration`], and until every worker
/// thread has completed at least [`Span::min_ops`] operations.
///
/// The floor is for tiny runs (tests, CI) on a busy machine, where a worker may get no CPU
/// at all within a few milliseconds. It changes when a measurement ends, never what it
/// reports: the rate is still all threads' operations over the elapsed time, which then
/// includes the wait for the last thread. Full runs leave it at 0 (the duration alone).
///
/// [`run_threads`](super::run_threads) counts a worker's operations as its polls of
/// [`ThreadCtl::running`](super::ThreadCtl::running) after the first: the harness's loops
/// poll once per operation, or once per batch of them (a batch then counts as one), so
/// "`min_ops` polls" means at least `min_ops` operations. A loop iteration that completes
/// no operation (a paced writer that waits its turn in `server-oltp`) counts all the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// The measurement runs at least this long.
    pub duration: Duration,
    /// ... and until every worker thread has completed at least this many operations
    /// (0: the duration alone).
    pub min_ops: u64,
}

impl Span {
    /// A span of `duration` that also waits for `min_ops` operations per worker thread.
    pub const fn new(duration: Duration, min_ops: u64) -> Self {
        Span { duration, min_ops }
    }
}

impl From<Duration> for Span {
    /// The duration alone (no floor of operations).
    fn from(duration: Duration) -> Self {
        Span { duration, min_ops: 0 }
    }
}
