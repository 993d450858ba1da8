//! CPU-time budgets: the work budget of a quick run's measurements, and a suite's own limit
//! on an untimed setup.
//!
//! What a budget must tell apart is work from waiting: on a busy machine a thread may sit
//! on a run queue for most of the wall-clock time, which says nothing about the lock. So a
//! [`Budget`] counts CPU time (user and system, read with `libc::clock_gettime`: one call,
//! no crate needed) on one of two clocks ([`CpuClock`]), and falls back to the wall clock
//! where that clock cannot be read:
//!
//! - **the process's** (`CLOCK_PROCESS_CPUTIME_ID`): every thread of this process, so the
//!   worker threads, an in-process server's threads and the harness's own. This is the
//!   clock of a [`WorkBudget`], which [`Options::budget`](super::Options::budget) gives
//!   every measurement of a quick run: the runner starts one per measurement and hands it
//!   to the case in its [`Span`](super::Span), whose [`running`](super::Span::running)
//!   turns false once it is spent, as [`ThreadCtl::running`](super::ThreadCtl::running)
//!   does (the timing thread reads the clock every [`BUDGET_POLL`]). Setup loops that can
//!   run long (memory's held ranges, idle locks and one-holder operations, `held`'s
//!   background ranges) check it too. A measurement that spent more than its budget is
//!   *cut* (see [`run_suite`](super::run_suite));
//! - **the calling thread's** (`CLOCK_THREAD_CPUTIME_ID`): a suite's own limit on a setup
//!   that runs on one thread, in full runs too (a lock whose insertions cost O(held) needs
//!   hours for 100 000 held ranges: the case is skipped with a note).
//!
//! What the process clock does not count: child processes (`redis-server` of the
//! `*-redis` peers, `etcd` of the cluster suites, `valgrind` of `aliasing-counts`). Their
//! work is bounded by what the case asks of them (the requests of its clients, a fixed
//! number of transactions), not by the budget. And it counts whatever else the process
//! runs meanwhile: tests that run in parallel in one test binary spend each other's
//! budgets, so their budgets must leave room for that.

use std::time::{Duration, Instant};

/// How often the timing thread of [`run_threads`](super::run_threads) reads the process's
/// CPU clock while a measurement with a budget runs: workers overrun a spent budget by at
/// most about this much CPU time each.
pub const BUDGET_POLL: Duration = Duration::from_millis(2);

/// The work budget of one measurement: a limit on the CPU time the process spends on it,
/// from the call of the case's closure to its return (setup, measurement, teardown).
///
/// Quick runs give every measurement [`WorkBudget::QUICK`] ([`Options::quick`]); full runs
/// none. A measurement that spends more is cut: the runner leaves the case out of the
/// records and runs no more rounds of it, and the table names it with the budget.
///
/// [`Options::quick`]: super::Options::quick
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkBudget {
    /// CPU time of the process (all its threads) per measurement.
    pub cpu: Duration,
}

impl WorkBudget {
    /// The budget of a quick run: 1 s of CPU time per measurement, several times what the
    /// costliest quick case needs (a 50 ms measurement on 2 cores with its setup), so only
    /// a case whose setup or work runs away reaches it.
    pub const QUICK: WorkBudget = WorkBudget { cpu: Duration::from_secs(1) };

    /// A budget of `cpu` of process CPU time per measurement.
    pub const fn cpu(cpu: Duration) -> Self {
        WorkBudget { cpu }
    }

    /// Starts this budget on the process's CPU clock.
    pub fn start(self) -> Budget {
        Budget::start_on(CpuClock::Process, self.cpu)
    }
}

/// Whose CPU time a [`Budget`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClock {
    /// The calling thread's (only that thread may check the budget).
    Thread,
    /// The whole process's, all threads together (any thread may check the budget).
    Process,
}

/// A limit on the CPU time spent from [`Budget::start`] (or [`Budget::start_on`]) on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    limit: Duration,
    clock: CpuClock,
    from: Clock,
}

/// Where a budget's time is read: a CPU clock, or the wall clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    Cpu(Duration),
    Wall(Instant),
}

impl Budget {
    /// Starts a budget of `limit` on the calling thread's CPU clock; only that thread may
    /// check it.
    pub fn start(limit: Duration) -> Self {
        Budget::start_on(CpuClock::Thread, limit)
    }

    /// Starts a budget of `limit` on `clock`.
    pub fn start_on(clock: CpuClock, limit: Duration) -> Self {
        let from = cpu_time(clock).map_or_else(|| Clock::Wall(Instant::now()), Clock::Cpu);
        Budget { limit, clock, from }
    }

    /// The limit.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The clock the budget counts.
    pub fn clock(&self) -> CpuClock {
        self.clock
    }

    /// The time spent since the start: CPU time on the budget's clock, or the wall-clock
    /// time where that clock cannot be read.
    pub fn spent(&self) -> Duration {
        match self.from {
            Clock::Cpu(from) => cpu_time(self.clock).map_or(Duration::ZERO, |now| now - from),
            Clock::Wall(from) => from.elapsed(),
        }
    }

    /// Whether more than the limit has been spent.
    pub fn exceeded(&self) -> bool {
        self.spent() > self.limit
    }
}

/// The CPU time (user and system) on `clock`, if it can be read.
fn cpu_time(clock: CpuClock) -> Option<Duration> {
    let id = match clock {
        CpuClock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        CpuClock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
    };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only the timespec it is given, which lives here.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
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
        assert!(cpu_time(CpuClock::Thread).is_some(), "Linux has a per-thread CPU clock");
        let budget = Budget::start(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!budget.exceeded(), "100 ms asleep spent {:?} of the budget", budget.spent());
        let mut spins = 0u64;
        while !budget.exceeded() {
            spins = std::hint::black_box(spins + 1);
        }
        assert!(budget.spent() > budget.limit() && spins > 0);
    }

    /// A process budget counts another thread's work, and any thread may read it.
    #[test]
    fn a_process_budget_counts_every_thread() {
        assert!(cpu_time(CpuClock::Process).is_some(), "Linux has a process CPU clock");
        let budget = WorkBudget::cpu(Duration::from_millis(20)).start();
        assert_eq!(budget.clock(), CpuClock::Process);
        let mine = Budget::start(Duration::ZERO);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !budget.exceeded() {
                    std::hint::spin_loop();
                }
            });
        });
        assert!(budget.spent() > budget.limit());
        // This thread only waited for the other one.
        assert!(mine.spent() < budget.limit(), "{:?}", mine.spent());
    }
}
