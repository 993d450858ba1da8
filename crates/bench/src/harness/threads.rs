//! Running a measured body on several threads started together.
//!
//! All workers and the timing thread meet at a barrier; the timing thread then reads the
//! clock, sleeps for the measurement's [`Span::duration`], waits until every worker has
//! completed its [`Span::min_ops`] (at once when that is 0), raises every worker's stop
//! flag and joins the workers. The sample's `elapsed` runs from the barrier to the last
//! join, so operations a worker finishes after the flag went up, and the wait for a worker
//! that got no CPU before the deadline, are inside the timed window. With a
//! [`Span::budget`], the timing thread sleeps and waits in slices of [`BUDGET_POLL`] and
//! raises the flags as soon as the budget is spent, whether the duration has passed and
//! the floors are met or not.
//!
//! Each worker has a [`ThreadCtl`] of its own, on a cache line of its own. Its state is
//! *running*, *owing* or *stopped*. [`ThreadCtl::running`] is one load and a compare while
//! running, as it was before there was a floor; the other states take the cold path. A
//! worker with a floor starts owing: its polls count down there, and the poll that meets
//! the floor switches it to running (a compare-exchange from *owing*) and wakes the timing
//! thread (`unpark`). A worker that ends while still owing (its loop had nothing to do, or
//! it panicked) settles the same way on its way out, so the timing thread never waits for
//! a worker that left. The timing thread writes *stopped* over either state: over
//! *owing* only when the budget is spent, and then the worker's compare-exchange fails, so
//! no *running* overwrites a *stopped*.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::thread::Thread;
use std::time::Instant;

use crossbeam_utils::CachePadded;

use super::budget::BUDGET_POLL;
use super::case::Sample;
use super::span::Span;

/// [`ThreadCtl`] state: keep going (the fast path of [`ThreadCtl::running`]).
const RUNNING: u8 = 0;
/// [`ThreadCtl`] state: the worker has not completed its [`Span::min_ops`] yet.
const OWING: u8 = 1;
/// [`ThreadCtl`] state: the measurement is over.
const STOPPED: u8 = 2;

/// What a worker sees of the measurement: whether to keep going. One per worker.
#[derive(Debug)]
pub struct ThreadCtl {
    /// [`RUNNING`], [`OWING`] or [`STOPPED`].
    state: AtomicU8,
    /// Polls left before the floor is met, while [`OWING`]; only the worker touches it.
    owed: AtomicU64,
    /// The timing thread, woken when the floor is met.
    timer: Thread,
}

impl ThreadCtl {
    fn new(min_ops: u64, timer: Thread) -> Self {
        let state = if min_ops == 0 { RUNNING } else { OWING };
        // The poll that follows the `min_ops`-th operation is the `min_ops + 1`-th.
        ThreadCtl {
            state: AtomicU8::new(state),
            owed: AtomicU64::new(min_ops.saturating_add(1)),
            timer,
        }
    }

    /// Whether the measurement is still running; poll it between operations (or batches
    /// of them; each poll after the first counts as one operation toward
    /// [`Span::min_ops`]).
    #[inline]
    pub fn running(&self) -> bool {
        // Relaxed: the state carries no data; the worker only needs to see `STOPPED`
        // eventually, and its results travel back through the thread join, which
        // synchronises. See the module docs for why no write is lost.
        let state = self.state.load(Ordering::Relaxed);
        state == RUNNING || self.running_slow(state)
    }

    /// A poll while owing (counts it) or stopped.
    #[cold]
    #[inline(never)]
    fn running_slow(&self, state: u8) -> bool {
        if state == STOPPED {
            return false;
        }
        // Relaxed: only this worker reads or writes `owed`.
        let owed = self.owed.load(Ordering::Relaxed).saturating_sub(1);
        self.owed.store(owed, Ordering::Relaxed);
        if owed == 0 {
            self.settle();
        }
        true
    }

    /// The worker met its floor, or leaves without: running from now on (unless the timing
    /// thread stopped it meanwhile: a spent budget), and the timing thread may stop it.
    fn settle(&self) {
        // Relaxed: the timing thread acts on this write only after reading it (coherence of
        // this one location orders its `STOPPED` after it), and `unpark` happens before the
        // `park` it ends returns, so the timing thread sees it when woken. A `STOPPED`
        // written first makes the exchange fail: it stays.
        let _ = self.state.compare_exchange(OWING, RUNNING, Ordering::Relaxed, Ordering::Relaxed);
        self.timer.unpark();
    }

    /// Called by the worker as it ends, however it ends: settles a floor not met.
    fn leave(&self) {
        // Relaxed: the worker's own write, or the timing thread's `STOPPED` (which is
        // never `OWING`).
        if self.state.load(Ordering::Relaxed) == OWING {
            self.settle();
        }
    }
}

/// Settles the worker's floor when it ends, by return or by panic.
struct Leave<'a>(&'a ThreadCtl);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// One worker's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadResult {
    /// Operations completed.
    pub ops: u64,
    /// Sampled latencies in nanoseconds (may be empty).
    pub latencies_ns: Vec<u64>,
}

/// Runs `body` on `threads` threads started together, stops them when `span` is over
/// (its duration has passed and every worker completed its `min_ops`; a bare
/// [`Duration`](std::time::Duration) is the duration alone) and sums their results.
///
/// # Panics
///
/// If `threads` is 0 or a worker panics.
pub fn run_threads<F>(threads: usize, span: impl Into<Span>, body: F) -> Sample
where
    F: Fn(usize, &ThreadCtl) -> ThreadResult + Sync,
{
    run_threads_with(threads, span, |_| (), |index, (), ctl| body(index, ctl))
}

/// Like [`run_threads`], but first runs `setup(index)` on each worker, untimed, and hands
/// its result to `body`; the clock starts when every worker has finished its setup.
///
/// # Panics
///
/// If `threads` is 0 or a worker panics.
pub fn run_threads_with<S, P, F>(threads: usize, span: impl Into<Span>, setup: P, body: F) -> Sample
where
    P: Fn(usize) -> S + Sync,
    F: Fn(usize, S, &ThreadCtl) -> ThreadResult + Sync,
{
    assert!(threads > 0, "run_threads needs at least one thread");
    let span = span.into();
    let timer = std::thread::current();
    let ctls: Vec<CachePadded<ThreadCtl>> = (0..threads)
        .map(|_| CachePadded::new(ThreadCtl::new(span.min_ops, timer.clone())))
        .collect();
    let barrier = Barrier::new(threads + 1);
    let (results, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = ctls
            .iter()
            .enumerate()
            .map(|(index, ctl)| {
                let (ctl, barrier, setup, body): (&ThreadCtl, _, _, _) =
                    (ctl, &barrier, &setup, &body);
                scope.spawn(move || {
                    let _leave = Leave(ctl);
                    // A panicking setup still meets the barrier, so the timing thread is not
                    // left waiting; the panic resurfaces when the worker is joined.
                    let state = std::panic::catch_unwind(AssertUnwindSafe(|| setup(index)));
                    barrier.wait();
                    match state {
                        Ok(state) => body(index, state, ctl),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        wait_for_the_end(&ctls, span, start);
        for ctl in &ctls {
            // Relaxed: see `ThreadCtl::running`.
            ctl.state.store(STOPPED, Ordering::Relaxed);
        }
        let results: Vec<ThreadResult> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        (results, start.elapsed())
    });
    let mut sample = Sample { elapsed, ..Sample::default() };
    for r in results {
        sample.ops += r.ops;
        sample.latencies_ns.extend(r.latencies_ns);
    }
    sample
}

/// Returns when the measurement that started at `start` is over: its duration has passed
/// and every worker has met its floor, or its budget is spent.
fn wait_for_the_end(ctls: &[CachePadded<ThreadCtl>], span: Span, start: Instant) {
    // Relaxed: see `ThreadCtl::settle`; a spurious wake-up only loops.
    let owing = || ctls.iter().any(|ctl| ctl.state.load(Ordering::Relaxed) == OWING);
    let Some(budget) = span.budget else {
        std::thread::sleep(span.duration);
        while owing() {
            std::thread::park();
        }
        return;
    };
    let deadline = start + span.duration;
    while !budget.exceeded() {
        let now = Instant::now();
        if now < deadline {
            std::thread::sleep((deadline - now).min(BUDGET_POLL));
        } else if owing() {
            std::thread::park_timeout(BUDGET_POLL);
        } else {
            return;
        }
    }
}

/// Times one operation in every `every`, keeping the clock off most of the hot path.
#[derive(Debug)]
pub struct LatencySampler {
    every: u32,
    countdown: u32,
    latencies_ns: Vec<u64>,
}

impl LatencySampler {
    /// Samples one operation in `every` (at least 1).
    pub fn new(every: u32) -> Self {
        let every = every.max(1);
        LatencySampler { every, countdown: 0, latencies_ns: Vec::new() }
    }

    /// Call before an operation; returns the start time when this operation is sampled.
    #[inline]
    pub fn start(&mut self) -> Option<Instant> {
        if self.countdown == 0 {
            self.countdown = self.every - 1;
            Some(Instant::now())
        } else {
            self.countdown -= 1;
            None
        }
    }

    /// Call after the operation with what [`start`](Self::start) returned.
    #[inline]
    pub fn finish(&mut self, started: Option<Instant>) {
        if let Some(t) = started {
            self.latencies_ns.push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
    }

    /// The samples taken.
    pub fn into_latencies(self) -> Vec<u64> {
        self.latencies_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn every_thread_runs_and_results_are_summed() {
        let seen = AtomicUsize::new(0);
        let sample = run_threads(3, Duration::from_millis(5), |index, ctl| {
            seen.fetch_or(1 << index, Ordering::Relaxed);
            while ctl.running() {
                std::hint::spin_loop();
            }
            ThreadResult { ops: index as u64 + 1, latencies_ns: vec![index as u64] }
        });
        assert_eq!(seen.load(Ordering::Relaxed), 0b111);
        assert_eq!(sample.ops, 1 + 2 + 3);
        let mut lat = sample.latencies_ns.clone();
        lat.sort_unstable();
        assert_eq!(lat, [0, 1, 2]);
        assert!(sample.elapsed >= Duration::from_millis(5));
    }

    #[test]
    fn setup_state_reaches_the_body() {
        let sample = run_threads_with(
            2,
            Duration::from_millis(1),
            |index| index * 10,
            |_, state, _| ThreadResult { ops: state as u64, latencies_ns: Vec::new() },
        );
        assert_eq!(sample.ops, 10);
    }

    #[test]
    fn a_panicking_setup_is_reported_not_hung() {
        let result = std::panic::catch_unwind(|| {
            run_threads_with(
                2,
                Duration::from_millis(1),
                |index| assert!(index == 0, "setup of worker {index} fails"),
                |_, (), _| ThreadResult::default(),
            )
        });
        let panic = result.unwrap_err();
        let msg = panic.downcast_ref::<String>().map(String::as_str).unwrap_or("");
        assert!(msg.contains("setup of worker 1 fails"), "{msg}");
    }

    /// A worker that gets no CPU until the others have run for long (here: until worker 0
    /// has polled 100 000 times, far past a zero duration) still completes its floor, and
    /// the round waits for it instead of stopping on the duration alone.
    #[test]
    fn a_late_worker_still_completes_its_floor() {
        const LATE_AFTER: u64 = 100_000;
        let polls0 = AtomicU64::new(0);
        let ops = [AtomicU64::new(0), AtomicU64::new(0)];
        let sample = run_threads(2, Span::new(Duration::ZERO, 3), |index, ctl| {
            // Relaxed: counters; the results are read after the join.
            if index == 1 {
                while polls0.load(Ordering::Relaxed) < LATE_AFTER {
                    std::thread::yield_now();
                }
            }
            let mut n = 0;
            while ctl.running() {
                if index == 0 {
                    polls0.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
            ops[index].store(n, Ordering::Relaxed);
            ThreadResult { ops: n, latencies_ns: Vec::new() }
        });
        let ops = ops.map(AtomicU64::into_inner);
        assert!(ops[1] >= 3, "the late worker completed {} operations", ops[1]);
        assert!(ops[0] >= LATE_AFTER, "worker 0 ran while worker 1 owed: {ops:?}");
        assert_eq!(sample.ops, ops[0] + ops[1]);
    }

    /// A worker that ends without meeting its floor (nothing to do, or a panic) does not
    /// hold the round: the others stop and the panic resurfaces.
    #[test]
    fn a_worker_that_leaves_owing_does_not_hold_the_round() {
        let span = Span::new(Duration::from_millis(1), 1_000);
        let sample = run_threads(3, span, |index, ctl| {
            let mut ops = 0;
            while index > 0 && ctl.running() {
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: Vec::new() }
        });
        assert!(sample.ops >= 2 * 1_000, "{sample:?}");
        let result = std::panic::catch_unwind(|| {
            run_threads(2, span, |index, ctl| {
                assert!(index == 0, "worker {index} fails owing");
                while ctl.running() {}
                ThreadResult::default()
            })
        });
        let panic = result.unwrap_err();
        let msg = panic.downcast_ref::<String>().map(String::as_str).unwrap_or("");
        assert!(msg.contains("worker 1 fails owing"), "{msg}");
    }

    /// The floor counts polls after the first: one worker, a zero duration and a floor of
    /// 5 complete at least 5 operations; without a floor, the duration alone ends the round.
    #[test]
    fn the_floor_counts_polls_after_the_first() {
        let body = |_, ctl: &ThreadCtl| {
            let mut ops = 0;
            while ctl.running() {
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: Vec::new() }
        };
        assert!(run_threads(1, Span::new(Duration::ZERO, 5), body).ops >= 5);
        let ctl = ThreadCtl::new(2, std::thread::current());
        assert!(ctl.running() && ctl.running(), "polls 1 and 2 owe");
        assert!(ctl.running(), "poll 3 follows the second operation and settles");
        // Relaxed: one thread.
        assert_eq!(ctl.state.load(Ordering::Relaxed), RUNNING);
        let free = ThreadCtl::new(0, std::thread::current());
        assert_eq!(free.state.load(Ordering::Relaxed), RUNNING, "no floor, no slow path");
    }

    /// A spent budget stops the workers, even those that owe operations (here: a floor no
    /// worker can meet), and a worker that settles after the stop stays stopped.
    #[test]
    fn a_spent_budget_stops_owing_workers() {
        use crate::harness::WorkBudget;
        let budget = WorkBudget::cpu(Duration::from_millis(10)).start();
        let span = Span::new(Duration::from_secs(3600), u64::MAX).with_budget(Some(budget));
        let sample = run_threads(2, span, |_, ctl| {
            let mut ops = 0;
            while ctl.running() {
                ops += 1;
            }
            ThreadResult { ops, latencies_ns: Vec::new() }
        });
        assert!(budget.exceeded() && sample.ops > 0, "{sample:?}");
        assert!(sample.elapsed < Duration::from_secs(3600));
        // A worker that read `OWING` just before the stop: its slow path counts down and
        // settles, and the stop stays.
        let ctl = ThreadCtl::new(1, std::thread::current());
        ctl.state.store(STOPPED, Ordering::Relaxed);
        assert!(ctl.running_slow(OWING) && ctl.running_slow(OWING));
        // Relaxed: one thread.
        assert_eq!(ctl.state.load(Ordering::Relaxed), STOPPED, "settling left the stop");
        assert!(!ctl.running());
    }

    #[test]
    fn sampler_times_one_in_every() {
        let mut s = LatencySampler::new(4);
        for _ in 0..10 {
            let t = s.start();
            s.finish(t);
        }
        assert_eq!(s.into_latencies().len(), 3); // operations 0, 4 and 8
    }
}
