//! The clock of the wait and hold histograms.

use std::time::Instant;

/// Nanoseconds since the server started, read from the monotonic clock (`Instant`:
/// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO, some 20 ns). A timestamp is a `u64`
/// so that a lock entry keeps it in 8 bytes; it overflows after 584 years.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub(crate) fn new() -> Clock {
        Clock { base: Instant::now() }
    }

    /// Nanoseconds since [`Clock::new`].
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
