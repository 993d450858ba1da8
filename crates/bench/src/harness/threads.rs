//! Running a measured body on several threads started together.
//!
//! All workers and the timing thread meet at a barrier; the timing thread then reads the
//! clock, sleeps for the measurement duration, raises the stop flag and joins the workers.
//! The sample's `elapsed` runs from the barrier to the last join, so operations a worker
//! finishes after the flag went up are still inside the timed window.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::case::Sample;

/// What a worker sees of the measurement: whether to keep going.
#[derive(Debug)]
pub struct ThreadCtl {
    stop: AtomicBool,
}

impl ThreadCtl {
    /// Whether the measurement is still running; poll it between operations.
    #[inline]
    pub fn running(&self) -> bool {
        // Relaxed: the flag carries no data; workers only need to see it eventually, and
        // their results travel back through the thread join, which synchronises.
        !self.stop.load(Ordering::Relaxed)
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

/// Runs `body` on `threads` threads started together, stops them after `duration` and
/// sums their results.
///
/// # Panics
///
/// If `threads` is 0 or a worker panics.
pub fn run_threads<F>(threads: usize, duration: Duration, body: F) -> Sample
where
    F: Fn(usize, &ThreadCtl) -> ThreadResult + Sync,
{
    run_threads_with(threads, duration, |_| (), |index, (), ctl| body(index, ctl))
}

/// Like [`run_threads`], but first runs `setup(index)` on each worker, untimed, and hands
/// its result to `body`; the clock starts when every worker has finished its setup.
///
/// # Panics
///
/// If `threads` is 0 or a worker panics.
pub fn run_threads_with<S, P, F>(threads: usize, duration: Duration, setup: P, body: F) -> Sample
where
    P: Fn(usize) -> S + Sync,
    F: Fn(usize, S, &ThreadCtl) -> ThreadResult + Sync,
{
    assert!(threads > 0, "run_threads needs at least one thread");
    let ctl = ThreadCtl { stop: AtomicBool::new(false) };
    let barrier = Barrier::new(threads + 1);
    let (results, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (ctl, barrier, setup, body) = (&ctl, &barrier, &setup, &body);
                scope.spawn(move || {
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
        std::thread::sleep(duration);
        // Relaxed: see `ThreadCtl::running`.
        ctl.stop.store(true, Ordering::Relaxed);
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
