//! How often a `try_*` call sleeps in the kernel: threads run `try_lock_mode` and
//! `try_lock_many` on random small ranges of one lock and count the calls during which
//! their thread was switched out voluntarily (`getrusage(RUSAGE_THREAD)`'s `ru_nvcsw` went
//! up: a futex wait, or another blocking system call), and how long the longest such call
//! took.
//!
//! `cargo run --release -p rangelock --example try_sleeps -- [threads] [seconds]
//! [domain]` (defaults 16, 5, 64). Each thread picks a range of up to 6 units (one in 8 up
//! to the whole domain) at a random start, a random mode, and either a single try or a
//! `try_lock_many` of it and one unit after it; a granted hold is released at once, outside
//! the measured call. Linux only (`RUSAGE_THREAD`).
//!
//! To see where a call slept: `perf record -e sched:sched_switch --call-graph dwarf` on
//! this example, then `perf script` and the stacks with `prev_state=S` under `measured`
//! (`rangelock::skiplist`'s module docs, "Progress", give what it found).

#[path = "common/rng.rs"]
mod rng;

use std::time::{Duration, Instant};

use rangelock::{ManyGuard, Mode, RangeGuard, RangeLock};
use rng::Rng;

/// What a granted try holds until it is released.
#[allow(dead_code)] // held only to be dropped
enum Held<'a> {
    One(RangeGuard<'a>),
    Many(ManyGuard<'a>),
    Nothing,
}

/// This thread's voluntary context switches so far.
fn voluntary_switches() -> i64 {
    // SAFETY: `getrusage` writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut usage), 0);
        usage
    };
    usage.ru_nvcsw
}

/// One try call: the part measured.
#[inline(never)]
fn measured<'a>(lock: &'a RangeLock, rng: &mut Rng, domain: u64) -> Held<'a> {
    let start = rng.below(domain - 1);
    let max = if rng.below(8) == 0 { domain } else { 6 };
    let range = start..start + 1 + rng.below((domain - start).min(max));
    let mode = if rng.below(2) == 0 { Mode::Exclusive } else { Mode::Shared };
    if rng.below(2) == 0 {
        return lock.try_lock_mode(range, mode).map_or(Held::Nothing, Held::One);
    }
    let next = (range.end + rng.below(4)).min(domain - 1);
    let next = next.max(range.end)..next.max(range.end) + 1;
    lock.try_lock_many([(range, mode), (next, Mode::Shared)]).map_or(Held::Nothing, Held::Many)
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args().nth(i).map_or(default, |a| a.parse().expect("a number"))
}

fn main() {
    let (threads, seconds, domain) = (arg(1, 16), arg(2, 5), arg(3, 64));
    let lock = RangeLock::new();
    let stop = Instant::now() + Duration::from_secs(seconds);
    let (calls, slept, longest) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let lock = &lock;
                s.spawn(move || {
                    let mut rng = Rng(t + 1);
                    let (mut calls, mut slept, mut longest) = (0u64, 0u64, Duration::ZERO);
                    while Instant::now() < stop {
                        let switches = voluntary_switches();
                        let begin = Instant::now();
                        let held = measured(lock, &mut rng, domain);
                        let took = begin.elapsed();
                        if voluntary_switches() != switches {
                            slept += 1;
                            longest = longest.max(took);
                        }
                        calls += 1;
                        drop(held);
                    }
                    (calls, slept, longest)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a try thread"))
            .fold((0, 0, Duration::ZERO), |(c, s, l), (c2, s2, l2)| (c + c2, s + s2, l.max(l2)))
    });
    println!(
        "{threads} threads, {seconds} s, domain {domain}: {calls} try calls, {slept} slept in \
         the kernel ({:.1} per million), the longest of them {longest:?}",
        slept as f64 * 1e6 / calls as f64
    );
}
