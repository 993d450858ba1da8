//! The inhibition window's clock and the writers' back-off.

/// After a revocation that took `d`, reader bias stays disabled until `now + N·d`
/// (the paper's `N = 9`).
pub const INHIBIT_MULTIPLIER: u64 = 9;

/// The end of the inhibition window after a revocation from `start` to `end`.
#[inline]
pub(crate) fn inhibit_until(start: u64, end: u64) -> u64 {
    end.saturating_add(end.saturating_sub(start).saturating_mul(INHIBIT_MULTIPLIER))
}

/// A cheap monotonic clock for the inhibition window, in unspecified ticks (only
/// differences and comparisons matter). On x86-64 this is the time-stamp counter, as in the
/// paper (invariant and synchronised across cores on current CPUs; a skew would only shift
/// the heuristic window): `Instant::now()` costs 3-4x more here, and slow-path readers read
/// the clock on every acquisition while the bias is off. Elsewhere, nanoseconds since the
/// first call.
///
/// Under loom the clock stands still (0): executions must be deterministic.
#[inline]
pub(crate) fn now_ticks() -> u64 {
    #[cfg(loom)]
    {
        0
    }
    #[cfg(all(not(loom), target_arch = "x86_64"))]
    {
        // SAFETY: `rdtsc` has no preconditions and exists on every x86-64 CPU.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(all(not(loom), not(target_arch = "x86_64")))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;

        static BASE: OnceLock<Instant> = OnceLock::new();
        let base = *BASE.get_or_init(Instant::now);
        u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Spin briefly, then yield: a writer waits for readers whose hold time we do not control.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    if *spins < 64 && !cfg!(loom) {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        crate::primitive::yield_now();
    }
}
