//! How long one measurement runs: a duration, a floor of operations per worker thread, and
//! the work budget that may end it sooner.

use std::time::Duration;

use super::budget::Budget;

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
///
/// Both give way to the measurement's [`Span::budget`]: once it is spent, the workers stop
/// (however long the duration, however many operations they owe) and
/// [`Span::running`] turns false for the case's own loops, and the runner cuts the case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// The measurement runs at least this long.
    pub duration: Duration,
    /// ... and until every worker thread has completed at least this many operations
    /// (0: the duration alone).
    pub min_ops: u64,
    /// ... unless this budget (of the process's CPU time, started by the runner for this
    /// measurement from [`Options::budget`](super::Options::budget)) is spent first.
    pub budget: Option<Budget>,
}

impl Span {
    /// A span of `duration` that also waits for `min_ops` operations per worker thread
    /// (no budget).
    pub const fn new(duration: Duration, min_ops: u64) -> Self {
        Span { duration, min_ops, budget: None }
    }

    /// This span with `budget`.
    pub const fn with_budget(self, budget: Option<Budget>) -> Self {
        Span { budget, ..self }
    }

    /// Whether the measurement's budget is not spent yet (always, without one): setup
    /// loops that can run long poll it and give up (the case is cut) once it is false.
    /// A read of the process's CPU clock, a system call: poll it every few dozen cheap
    /// steps, not on a hot path.
    pub fn running(&self) -> bool {
        self.budget.is_none_or(|b| !b.exceeded())
    }
}

impl From<Duration> for Span {
    /// The duration alone (no floor of operations, no budget).
    fn from(duration: Duration) -> Self {
        Span::new(duration, 0)
    }
}
