//! Checkers shared by the range-lock test binaries, generic over [`RawRangeLock`].
//!
//! * [`stress`]: threads lock random overlapping ranges of a small domain in random modes
//!   through `try` / blocking / timeout calls; an exclusive holder writes its tag over its
//!   units of a shared array and checks they still hold it before releasing; a shared
//!   holder checks that no unit changes while it holds the range.
//! * [`check_against_model`]: a single-threaded run of `try_lock` / `try_lock_shared` /
//!   unlock-by-index against a sequential model (a `Vec` of held ranges with modes); every
//!   success or failure must match the model exactly.
//! * Edge cases: [`edge_cases`].

#![allow(dead_code)] // each test binary uses a subset

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rangelock::{Lock, LockError, Mode, RawRangeLock};

/// SplitMix64: a small deterministic generator for the stress threads.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// What a stress run does.
#[derive(Clone, Debug)]
pub struct StressConfig {
    pub threads: usize,
    /// Operations per thread (ignored when `duration` is set).
    pub ops_per_thread: usize,
    /// Run for this long instead of a fixed number of operations.
    pub duration: Option<Duration>,
    /// Units of the shared array; ranges lie in `offset..offset + domain`.
    pub domain: u64,
    /// First unit of the locked domain (unit `offset + i` is cell `i` of the array).
    pub offset: u64,
    /// Longest range.
    pub max_len: u64,
    /// Percentage of shared acquisitions.
    pub shared_percent: u64,
    /// Longest shared range, when it differs from `max_len` (long readers over short
    /// writers exercise the reader-writer validation of list-based locks).
    pub shared_max_len: Option<u64>,
    pub seed: u64,
}

impl StressConfig {
    /// The CI configuration: bounded by operation count, a second or so per variant.
    pub fn short() -> Self {
        StressConfig {
            threads: 4,
            ops_per_thread: 3_000,
            duration: None,
            domain: 64,
            offset: 0,
            max_len: 12,
            shared_percent: 40,
            shared_max_len: None,
            seed: 0x5EED,
        }
    }
}

/// What a stress run observed.
#[derive(Debug, Default)]
pub struct StressReport {
    pub acquired: usize,
    pub refused: usize,
    pub timed_out: usize,
}

#[derive(Clone, Copy, Debug)]
enum Call {
    Try,
    Blocking,
    Timeout(Duration),
}

/// Runs the stress checker on `lock`; panics on any violation of mutual exclusion.
pub fn stress<R: RawRangeLock>(lock: R, cfg: &StressConfig) -> StressReport {
    let lock = Lock::from_raw(lock);
    let cells: Vec<AtomicU64> = (0..cfg.domain).map(|_| AtomicU64::new(0)).collect();
    let acquired = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let timed_out = AtomicUsize::new(0);
    let start = Instant::now();
    thread::scope(|s| {
        let mut handles = Vec::new();
        for t in 0..cfg.threads {
            let (lock, cells, cfg) = (&lock, &cells, cfg);
            let (acquired, refused, timed_out) = (&acquired, &refused, &timed_out);
            handles.push(s.spawn(move || {
                let mut rng = Rng::new(cfg.seed ^ ((t as u64 + 1) << 32));
                let longest = cfg.max_len.max(cfg.shared_max_len.unwrap_or(0));
                let mut snapshot = vec![0u64; longest as usize];
                let mut op = 0u64;
                loop {
                    match cfg.duration {
                        Some(d) if op % 64 == 0 && start.elapsed() >= d => break,
                        None if op as usize >= cfg.ops_per_thread => break,
                        _ => {}
                    }
                    op += 1;
                    let mode = if rng.below(100) < cfg.shared_percent {
                        Mode::Shared
                    } else {
                        Mode::Exclusive
                    };
                    let max_len = match mode {
                        Mode::Shared => cfg.shared_max_len.unwrap_or(cfg.max_len),
                        Mode::Exclusive => cfg.max_len,
                    };
                    let begin = rng.below(cfg.domain);
                    let len = 1 + rng.below(max_len.min(cfg.domain - begin));
                    let cells_range = begin as usize..(begin + len) as usize;
                    let range = cfg.offset + begin..cfg.offset + begin + len;
                    let call = match rng.below(3) {
                        0 => Call::Try,
                        1 => Call::Blocking,
                        _ => Call::Timeout(Duration::from_micros(rng.below(300))),
                    };
                    let result = match call {
                        Call::Try => lock.try_lock_mode(range.clone(), mode),
                        Call::Blocking => lock.lock_mode(range.clone(), mode),
                        Call::Timeout(d) => {
                            lock.lock_mode_until(range.clone(), mode, Instant::now() + d)
                        }
                    };
                    let guard = match result {
                        Ok(guard) => guard,
                        Err(LockError::WouldBlock) => {
                            assert!(matches!(call, Call::Try), "{call:?} returned WouldBlock");
                            refused.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        Err(LockError::TimedOut) => {
                            assert!(matches!(call, Call::Timeout(_)), "{call:?} timed out");
                            timed_out.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        Err(e) => panic!("unexpected error for {range:?}: {e}"),
                    };
                    acquired.fetch_add(1, Ordering::Relaxed);
                    let units = &cells[cells_range];
                    let hold = rng.below(4);
                    match mode {
                        Mode::Exclusive => {
                            let tag = ((t as u64 + 1) << 40) | op;
                            for u in units {
                                u.store(tag, Ordering::Relaxed);
                            }
                            for _ in 0..hold {
                                thread::yield_now();
                            }
                            for (i, u) in units.iter().enumerate() {
                                let seen = u.load(Ordering::Relaxed);
                                assert_eq!(
                                    seen,
                                    tag,
                                    "{}: unit {} of exclusive {range:?} overwritten",
                                    R::NAME,
                                    range.start + i as u64
                                );
                            }
                        }
                        Mode::Shared => {
                            for (s, u) in snapshot.iter_mut().zip(units) {
                                *s = u.load(Ordering::Relaxed);
                            }
                            for _ in 0..hold {
                                thread::yield_now();
                            }
                            for (i, (s, u)) in snapshot.iter().zip(units).enumerate() {
                                assert_eq!(
                                    u.load(Ordering::Relaxed),
                                    *s,
                                    "{}: unit {} changed under shared {range:?}",
                                    R::NAME,
                                    range.start + i as u64
                                );
                            }
                        }
                    }
                    drop(guard);
                }
            }));
        }
        // Re-raise the first failure with its own message.
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let report = StressReport {
        acquired: acquired.into_inner(),
        refused: refused.into_inner(),
        timed_out: timed_out.into_inner(),
    };
    assert!(report.acquired > 0, "{}: nothing was ever acquired: {report:?}", R::NAME);
    // Everything was released: the whole domain is free again.
    let all = lock
        .try_lock(cfg.offset..cfg.offset + cfg.domain)
        .expect("domain still locked after the run");
    drop(all);
    report
}

/// Seconds for the long (`#[ignore]`) stress run: `RANGELOCK_STRESS_SECS`, default 600.
pub fn long_duration() -> Duration {
    let secs =
        std::env::var("RANGELOCK_STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    Duration::from_secs(secs)
}

/// One step of a model run.
#[derive(Clone, Debug)]
pub enum Op {
    /// `try_lock_mode(start..start + len, mode)`.
    Try { start: u64, len: u64, shared: bool },
    /// Drop the held guard at `index % held.len()` (no-op when nothing is held).
    Unlock(usize),
}

/// Random op sequences over units `0..domain`.
pub fn ops(domain: u64, max_len: u64, steps: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..domain, 1..=max_len, any::<bool>())
            .prop_map(|(start, len, shared)| Op::Try { start, len, shared }),
        2 => any::<usize>().prop_map(Op::Unlock),
    ];
    proptest::collection::vec(op, 0..steps)
}

/// Runs `ops` on a fresh lock and on the model; fails on the first divergence.
pub fn check_against_model<R: RawRangeLock>(raw: R, ops: &[Op]) -> Result<(), TestCaseError> {
    let lock = Lock::from_raw(raw);
    let mut held = Vec::new();
    let mut model: Vec<(Range<u64>, Mode)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Try { start, len, shared } => {
                let range = start..start + len;
                let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                let expect = model
                    .iter()
                    .all(|(r, m)| !rangelock::overlaps(r, &range) || mode.compatible(*m));
                match lock.try_lock_mode(range.clone(), mode) {
                    Ok(guard) => {
                        prop_assert!(
                            expect,
                            "step {step}: {} granted {range:?} {mode:?} over {model:?}",
                            R::NAME
                        );
                        held.push(guard);
                        model.push((range, mode));
                    }
                    Err(e) => {
                        prop_assert_eq!(e, LockError::WouldBlock);
                        prop_assert!(
                            !expect,
                            "step {step}: {} refused {range:?} {mode:?} over {model:?}",
                            R::NAME
                        );
                    }
                }
            }
            Op::Unlock(i) => {
                if !held.is_empty() {
                    let i = i % held.len();
                    drop(held.swap_remove(i));
                    model.swap_remove(i);
                }
            }
        }
    }
    drop(held);
    prop_assert!(lock.try_lock(0..u64::MAX).is_ok(), "{}: not empty after all unlocks", R::NAME);
    Ok(())
}

/// Every edge case, on fresh locks from `make`. `exact_top` is false for locks that do
/// not distinguish units near `u64::MAX` (segments clamp them into the last segment).
pub fn edge_cases<R: RawRangeLock>(make: impl Fn() -> R, exact_top: bool) {
    range_at_zero(make());
    range_to_max(make());
    adjacent_ranges(make(), exact_top);
    invalid_ranges(make());
    shared_and_exclusive(make());
    timeout_while_held(make());
    timed_out_waiter_leaves_no_trace(make());
    blocking_handoff(make());
}

fn range_at_zero<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let a = lock.try_lock(0..1).expect("0..1 is free");
    assert_eq!(lock.try_lock(0..1).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock_shared(0..5).unwrap_err(), LockError::WouldBlock);
    let b = lock.try_lock(1..2).expect("1..2 is adjacent to 0..1");
    drop((a, b));
    let whole = lock.lock(0..u64::MAX).expect("whole domain");
    assert!(lock.try_lock(0..1).is_err());
    drop(whole);
}

fn range_to_max<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let top = lock.try_lock(u64::MAX - 1..u64::MAX).expect("last unit is free");
    assert!(lock.try_lock(0..u64::MAX).is_err());
    assert!(lock.try_lock_shared(u64::MAX - 10..u64::MAX).is_err());
    drop(top);
    let r1 = lock.try_lock_shared(0..u64::MAX).expect("whole domain shared");
    let r2 = lock.try_lock_shared(u64::MAX - 1..u64::MAX).expect("shared overlaps shared");
    assert!(lock.try_lock(u64::MAX - 1..u64::MAX).is_err());
    drop((r1, r2));
    assert!(lock.try_lock(0..u64::MAX).is_ok());
}

fn adjacent_ranges<R: RawRangeLock>(raw: R, exact_top: bool) {
    let lock = Lock::from_raw(raw);
    let a = lock.try_lock(0..10).expect("0..10");
    let b = lock.try_lock(10..20).expect("10..20 is adjacent, not overlapping");
    let c = lock.try_lock_shared(20..30).expect("20..30");
    assert!(lock.try_lock(9..11).is_err());
    assert!(lock.try_lock(19..21).is_err());
    if exact_top {
        let d = lock.try_lock(u64::MAX - 20..u64::MAX - 10).expect("high range");
        let e = lock.try_lock(u64::MAX - 10..u64::MAX).expect("adjacent at the top");
        drop((d, e));
    }
    drop((a, b, c));
}

#[allow(clippy::reversed_empty_ranges)] // inverted ranges are the input under test
fn invalid_ranges<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let bad = |e: LockError| matches!(e, LockError::InvalidRange(_));
    assert!(bad(lock.lock(5..5).unwrap_err()));
    assert!(bad(lock.lock_shared(7..3).unwrap_err()));
    assert!(bad(lock.try_lock(0..0).unwrap_err()));
    assert!(bad(lock.try_lock_shared(u64::MAX..u64::MAX).unwrap_err()));
    assert!(bad(lock.lock_timeout(9..1, Duration::from_millis(1)).unwrap_err()));
    assert!(bad(lock.lock_shared_timeout(3..3, Duration::from_millis(1)).unwrap_err()));
    // Nothing was locked by the rejected calls.
    assert!(lock.try_lock(0..u64::MAX).is_ok());
}

fn shared_and_exclusive<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let r1 = lock.try_lock_shared(0..10).expect("shared");
    let r2 = lock.try_lock_shared(5..15).expect("shared overlapping shared");
    let r3 = lock.try_lock_shared(0..10).expect("same range shared twice");
    assert!(lock.try_lock(9..10).is_err());
    assert!(lock.try_lock(14..20).is_err());
    let w = lock.try_lock(15..20).expect("disjoint exclusive");
    assert!(lock.try_lock_shared(15..16).is_err());
    drop((r1, r3));
    assert!(lock.try_lock(0..5).is_ok());
    assert!(lock.try_lock(5..6).is_err());
    drop((r2, w));
    assert!(lock.try_lock(0..20).is_ok());
}

fn timeout_while_held<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let held = lock.lock(0..10).expect("0..10");
    let ms = Duration::from_millis(2);
    assert_eq!(lock.lock_timeout(5..6, ms).unwrap_err(), LockError::TimedOut);
    assert_eq!(lock.lock_shared_timeout(0..1, ms).unwrap_err(), LockError::TimedOut);
    assert_eq!(lock.lock_timeout(9..20, Duration::ZERO).unwrap_err(), LockError::TimedOut);
    assert!(lock.lock_timeout(10..20, ms).is_ok(), "a free range does not time out");
    drop(held);
    let again = lock.lock_timeout(5..6, ms).expect("free after the holder left");
    drop(again);
    let shared = lock.lock_shared(0..10).expect("shared");
    assert!(lock.lock_shared_timeout(5..15, ms).is_ok(), "shared is compatible");
    assert_eq!(lock.lock_timeout(5..15, ms).unwrap_err(), LockError::TimedOut);
    drop(shared);
    assert!(lock.try_lock(0..20).is_ok());
}

/// A waiter that times out must not keep blocking later requests (FIFO locks count
/// waiters) nor hold anything.
fn timed_out_waiter_leaves_no_trace<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let held = lock.lock(0..10).expect("0..10");
    thread::scope(|s| {
        s.spawn(|| {
            let r = lock.lock_timeout(5..15, Duration::from_millis(3));
            assert_eq!(r.unwrap_err(), LockError::TimedOut);
        });
    });
    let later = lock.try_lock(10..15).expect("the timed-out waiter is gone");
    drop((held, later));
    assert!(lock.try_lock(0..20).is_ok());
}

/// A blocked acquisition is granted once the holder releases.
fn blocking_handoff<R: RawRangeLock>(raw: R) {
    let lock = Lock::from_raw(raw);
    let counter = AtomicU64::new(0);
    let held = lock.lock(0..100).expect("0..100");
    thread::scope(|s| {
        for i in 0..3u64 {
            let (lock, counter) = (&lock, &counter);
            s.spawn(move || {
                let mode = if i == 0 { Mode::Exclusive } else { Mode::Shared };
                let g = lock.lock_mode(i * 10..i * 10 + 50, mode).expect("eventually granted");
                counter.fetch_add(1, Ordering::Relaxed);
                drop(g);
            });
        }
        // The waiters cannot get in while we hold the range.
        assert_eq!(counter.load(Ordering::Relaxed), 0);
        drop(held);
    });
    assert_eq!(counter.load(Ordering::Relaxed), 3);
}
