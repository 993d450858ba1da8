//! Time budgets for untimed setup work, counted in the thread's own CPU time.
//!
//! Some suites give up on a case whose setup grows too costly (a lock whose insertions cost
//! O(held) needs hours for 100 000 held ranges) and skip it with a note. What the budget
//! must tell apart is a costly setup from a thread that waited for a CPU: on a busy machine
//! a thread may sit on a run queue for most of the wall-clock time, which says nothing about
//! the lock. So a [`Budget`] counts the calling thread's CPU time (user and system, Linux's
//! `CLOCK_THREAD_CPUTIME_ID`, read with `libc::clock_gettime`: one call, no crate needed),
//! and falls back to the wall clock where that clock cannot be read.

use std::time::{Duration, Instant};

/// A limit on the CPU time the calling thread spends from [`Budget::start`] on.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    limit: Duration,
    from: Clock,
}

/// Where a budget's time is read: the thread's CPU clock, or the wall clock.
#[derive(Clone, Copy, Debug)]
enum Clock {
    Cpu(Duration),
    Wall(Instant),
}

impl Budget {
    /// Starts a budget of `limit` on the calling thread; only that thread may check it.
    pub fn start(limit: Duration) -> Self {
        let from = thread_cpu_time().map_or_else(|| Clock::Wall(Instant::now()), Clock::Cpu);
        Budget { limit, from }
    }

    /// The limit.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The time spent since the start: the thread's CPU time, or the wall-clock time where
    /// the CPU clock cannot be read.
    pub fn spent(&self) -> Duration {
        match self.from {
            Clock::Cpu(from) => thread_cpu_time().map_or(Duration::ZERO, |now| now - from),
            Clock::Wall(from) => from.elapsed(),
        }
    }

    /// Whether more than the limit has been spent.
    pub fn exceeded(&self) -> bool {
        self.spent() > self.limit
    }
}

/// The calling thread's CPU time (user and system), if the clock can be read.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only the timespec it is given, which lives here.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    (rc == 0).then(|| Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Time off the CPU does not count; work on it does. (The sleep stands in for a thread
    /// that waits on a run queue: neither runs on a CPU.)
    #[test]
    fn only_the_threads_cpu_time_counts() {
        assert!(thread_cpu_time().is_some(), "Linux has a per-thread CPU clock");
        let budget = Budget::start(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!budget.exceeded(), "100 ms asleep spent {:?} of the budget", budget.spent());
        let mut spins = 0u64;
        while !budget.exceeded() {
            spins = std::hint::black_box(spins + 1);
        }
        assert!(budget.spent() > budget.limit() && spins > 0);
    }
}
