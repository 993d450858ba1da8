//! The self-fencing deadline: until when this node may act as an owner.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Nanoseconds of `CLOCK_BOOTTIME`: monotonic, and unlike `CLOCK_MONOTONIC` (what
/// [`std::time::Instant`] reads on Linux) it keeps counting while the machine is
/// suspended. A node that sleeps through its etcd lease must wake up fenced, and etcd's
/// clock kept running the whole time.
pub(crate) fn now_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every Linux
    // since 2.6.39 and the call only writes `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_BOOTTIME) failed");
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The instant (in `now_nanos` time) before which this node's etcd lease is surely
/// still valid, minus the safety margin. Every grant checks it, so a node that was paused
/// (SIGSTOP, a long GC-like stall, a suspended VM) past its lease grants nothing when it
/// resumes, before any of its tasks had a chance to notice.
///
/// The cluster manager is the only writer. It extends the deadline after each successful
/// etcd keepalive to `sent + ttl - margin`, where `sent` is read *before* the keepalive
/// was sent (etcd starts the new TTL after it receives the request, so later than
/// `sent`). Any deadline it ever writes is safe to act on until it passes, so readers may
/// see a stale one: staleness only shortens what they allow. Hence `Relaxed` throughout.
#[derive(Debug, Default)]
pub struct Fence {
    /// `now_nanos()` deadline; 0 = fenced.
    until: AtomicU64,
}

impl Fence {
    /// A fence that is closed (nothing may be granted) until [`Fence::extend_until`].
    pub fn new() -> Fence {
        Fence::default()
    }

    /// Allows acting as owner for `valid_for` from `sent` (a [`Fence::now`] reading taken
    /// before the keepalive that proved the lease was sent).
    pub fn extend_until(&self, sent: u64, valid_for: Duration) {
        let until = sent.saturating_add(valid_for.as_nanos() as u64);
        self.until.store(until, Ordering::Relaxed);
    }

    /// Closes the fence at once (the lease is known to be gone).
    pub fn close(&self) {
        self.until.store(0, Ordering::Relaxed);
    }

    /// Whether the node may still act as owner now.
    #[inline]
    pub fn is_open(&self) -> bool {
        now_nanos() < self.until.load(Ordering::Relaxed)
    }

    /// How long the fence stays open from now (zero if closed).
    pub fn remaining(&self) -> Duration {
        Duration::from_nanos(self.until.load(Ordering::Relaxed).saturating_sub(now_nanos()))
    }

    /// The clock the deadline is kept in (see `now_nanos`).
    pub fn now() -> u64 {
        now_nanos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_until_extended_and_closes_when_the_deadline_passes() {
        let f = Fence::new();
        assert!(!f.is_open());
        f.extend_until(Fence::now(), Duration::from_secs(60));
        assert!(f.is_open());
        assert!(f.remaining() > Duration::from_secs(59));
        // A deadline already in the past: closed.
        f.extend_until(Fence::now() - 1_000_000_000, Duration::from_millis(500));
        assert!(!f.is_open());
        f.extend_until(Fence::now(), Duration::from_secs(60));
        f.close();
        assert!(!f.is_open());
        assert_eq!(f.remaining(), Duration::ZERO);
    }
}
