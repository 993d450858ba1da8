//! The method matrix of `RangeLock` (crate docs, "Choosing a method"): every mode row has
//! every column (blocking, try, for, until, async, timed async, owned, owned async), each
//! behaves as its row and column say, the futures are nameable types, `lock_many` takes
//! what users have (`&v`, `v`, arrays, iterators) in every form, and a timed async call
//! reports an invalid range as the caller wrote it.
#![cfg(not(loom))]

use std::fmt::Debug;
use std::future::Future;
use std::ops::{Bound, Range};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rangelock::{
    LockError, LockFuture, ManyGuard, ManyLockFuture, Mode, OwnedLockFuture, OwnedRangeGuard,
    OwnedTryLockFuture, RangeError, RangeGuard, RangeLock, TryLockFuture, TryManyLockFuture,
};

const MS: Duration = Duration::from_millis(1);
/// Held exclusively while the conflicting calls run: it conflicts with both modes.
const HELD: Range<u64> = 100..200;
const INSIDE: Range<u64> = 150..160;
const FREE: Range<u64> = 0..10;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

/// `fut` is a future that can move between threads and be printed.
fn send_debug<F: Future + Send + Debug>(fut: F) -> F {
    fut
}

fn held(guard: Result<RangeGuard<'_>, LockError>, mode: Mode) {
    let guard = guard.expect("a free range");
    assert_eq!((guard.range(), guard.mode()), (FREE, mode));
}

fn held_owned(guard: Result<OwnedRangeGuard, LockError>, mode: Mode) {
    let guard = guard.expect("a free range");
    assert_eq!((guard.range(), guard.mode()), (FREE, mode));
}

/// Every borrowed column of one mode row: the named form (`lock`, `lock_shared`) and the
/// `_mode` form agree, on a free range and against a conflicting holder.
#[test]
fn every_mode_row_has_every_borrowed_column() {
    let lock = RangeLock::new();
    let _holder = lock.lock(HELD);
    let rt = runtime();
    for mode in [Mode::Exclusive, Mode::Shared] {
        let soon = || Instant::now() + MS;
        // Blocking.
        let named = match mode {
            Mode::Exclusive => lock.lock(FREE),
            Mode::Shared => lock.lock_shared(FREE),
        };
        held(Ok(named), mode);
        held(Ok(lock.lock_mode(FREE, mode)), mode);
        // Try.
        let (a, b) = match mode {
            Mode::Exclusive => (lock.try_lock(INSIDE), lock.try_lock(FREE)),
            Mode::Shared => (lock.try_lock_shared(INSIDE), lock.try_lock_shared(FREE)),
        };
        assert_eq!(a.unwrap_err(), LockError::WouldBlock);
        held(b, mode);
        assert_eq!(lock.try_lock_mode(INSIDE, mode).unwrap_err(), LockError::WouldBlock);
        held(lock.try_lock_mode(FREE, mode), mode);
        // For.
        let (a, b) = match mode {
            Mode::Exclusive => (lock.try_lock_for(INSIDE, MS), lock.try_lock_for(FREE, MS)),
            Mode::Shared => {
                (lock.try_lock_shared_for(INSIDE, MS), lock.try_lock_shared_for(FREE, MS))
            }
        };
        assert_eq!(a.unwrap_err(), LockError::TimedOut);
        held(b, mode);
        assert_eq!(lock.try_lock_mode_for(INSIDE, mode, MS).unwrap_err(), LockError::TimedOut);
        held(lock.try_lock_mode_for(FREE, mode, MS), mode);
        // Until.
        let (a, b) = match mode {
            Mode::Exclusive => {
                (lock.try_lock_until(INSIDE, soon()), lock.try_lock_until(FREE, soon()))
            }
            Mode::Shared => (
                lock.try_lock_shared_until(INSIDE, soon()),
                lock.try_lock_shared_until(FREE, soon()),
            ),
        };
        assert_eq!(a.unwrap_err(), LockError::TimedOut);
        held(b, mode);
        let late = lock.try_lock_mode_until(INSIDE, mode, soon());
        assert_eq!(late.unwrap_err(), LockError::TimedOut);
        held(lock.try_lock_mode_until(FREE, mode, soon()), mode);
        // Async, untimed and timed: nameable, `Send`, `Debug` futures.
        rt.block_on(async {
            let named: LockFuture<'_> = match mode {
                Mode::Exclusive => lock.lock_async(FREE),
                Mode::Shared => lock.lock_shared_async(FREE),
            };
            held(Ok(send_debug(named).await), mode);
            held(Ok(lock.lock_mode_async(FREE, mode).await), mode);
            let (a, b): (TryLockFuture<'_>, TryLockFuture<'_>) = match mode {
                Mode::Exclusive => {
                    (lock.try_lock_async_for(INSIDE, MS), lock.try_lock_async_until(INSIDE, soon()))
                }
                Mode::Shared => (
                    lock.try_lock_shared_async_for(INSIDE, MS),
                    lock.try_lock_shared_async_until(INSIDE, soon()),
                ),
            };
            assert_eq!(send_debug(a).await.unwrap_err(), LockError::TimedOut);
            assert_eq!(b.await.unwrap_err(), LockError::TimedOut);
            let c = lock.try_lock_mode_async_for(INSIDE, mode, MS);
            assert_eq!(c.await.unwrap_err(), LockError::TimedOut);
            let d = lock.try_lock_mode_async_until(INSIDE, mode, soon());
            assert_eq!(d.await.unwrap_err(), LockError::TimedOut);
            held(lock.try_lock_mode_async_for(FREE, mode, MS).await, mode);
            held(lock.try_lock_mode_async_until(FREE, mode, soon()).await, mode);
            let e = match mode {
                Mode::Exclusive => lock.try_lock_async_for(FREE, MS).await,
                Mode::Shared => lock.try_lock_shared_async_until(FREE, soon()).await,
            };
            held(e, mode);
        });
    }
    drop(_holder);
    drop(lock.try_lock(0..u64::MAX).expect("every call left nothing behind"));
}

/// Every owned column of one mode row, sync and async; the guards and futures are
/// `'static`, so they move into threads and tasks.
#[test]
fn every_mode_row_has_every_owned_column() {
    let lock = Arc::new(RangeLock::new());
    let _holder = lock.lock_owned(HELD);
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for mode in [Mode::Exclusive, Mode::Shared] {
        let soon = || Instant::now() + MS;
        let named = match mode {
            Mode::Exclusive => lock.lock_owned(FREE),
            Mode::Shared => lock.lock_shared_owned(FREE),
        };
        held_owned(std::thread::spawn(move || Ok(named)).join().unwrap(), mode);
        held_owned(Ok(lock.lock_mode_owned(FREE, mode)), mode);
        let (a, b) = match mode {
            Mode::Exclusive => (lock.try_lock_owned(INSIDE), lock.try_lock_owned(FREE)),
            Mode::Shared => (lock.try_lock_shared_owned(INSIDE), lock.try_lock_shared_owned(FREE)),
        };
        assert_eq!(a.unwrap_err(), LockError::WouldBlock);
        held_owned(b, mode);
        assert_eq!(lock.try_lock_mode_owned(INSIDE, mode).unwrap_err(), LockError::WouldBlock);
        let (a, b) = match mode {
            Mode::Exclusive => {
                (lock.try_lock_owned_for(INSIDE, MS), lock.try_lock_owned_until(INSIDE, soon()))
            }
            Mode::Shared => (
                lock.try_lock_shared_owned_for(INSIDE, MS),
                lock.try_lock_shared_owned_until(INSIDE, soon()),
            ),
        };
        assert_eq!(a.unwrap_err(), LockError::TimedOut);
        assert_eq!(b.unwrap_err(), LockError::TimedOut);
        held_owned(lock.try_lock_mode_owned_for(FREE, mode, MS), mode);
        held_owned(lock.try_lock_mode_owned_until(FREE, mode, soon()), mode);
        let timed_out = lock.try_lock_mode_owned_until(INSIDE, mode, soon());
        assert_eq!(timed_out.unwrap_err(), LockError::TimedOut);
        // Owned async: the futures are `'static`, so `tokio::spawn` takes them.
        let untimed: OwnedLockFuture = match mode {
            Mode::Exclusive => lock.lock_owned_async(FREE),
            Mode::Shared => lock.lock_shared_owned_async(FREE),
        };
        let guard = rt.block_on(rt.spawn(send_debug(untimed))).unwrap();
        held_owned(Ok(guard), mode);
        let guard = rt.block_on(rt.spawn(lock.lock_mode_owned_async(FREE, mode))).unwrap();
        held_owned(Ok(guard), mode);
        let timed: [OwnedTryLockFuture; 3] = match mode {
            Mode::Exclusive => [
                lock.try_lock_owned_async_for(INSIDE, MS),
                lock.try_lock_owned_async_until(INSIDE, soon()),
                lock.try_lock_mode_owned_async_for(INSIDE, mode, MS),
            ],
            Mode::Shared => [
                lock.try_lock_shared_owned_async_for(INSIDE, MS),
                lock.try_lock_shared_owned_async_until(INSIDE, soon()),
                lock.try_lock_mode_owned_async_until(INSIDE, mode, soon()),
            ],
        };
        for fut in timed {
            let result = rt.block_on(rt.spawn(send_debug(fut))).unwrap();
            assert_eq!(result.unwrap_err(), LockError::TimedOut);
        }
        let free = rt.block_on(rt.spawn(lock.try_lock_mode_owned_async_for(FREE, mode, MS)));
        held_owned(free.unwrap(), mode);
    }
    drop(_holder);
    drop(lock.try_lock(0..u64::MAX).expect("every call left nothing behind"));
}

/// `lock_many_async` waits holding nothing, then takes every range at once.
#[test]
fn lock_many_async_waits_holding_nothing_then_takes_all() {
    let lock = RangeLock::new();
    let holder = lock.lock(5..6);
    let fut: ManyLockFuture<'_> =
        lock.lock_many_async([(0..10, Mode::Exclusive), (20..30, Mode::Shared)]);
    let mut fut = send_debug(fut);
    assert!(poll_once(&mut fut).is_pending(), "0..10 is held");
    drop(lock.try_lock(20..30).expect("a waiting request holds nothing"));
    drop(holder);
    let Poll::Ready(guard) = poll_once(&mut fut) else { panic!("free now") };
    assert_eq!(
        guard.ranges().collect::<Vec<_>>(),
        [(0..10, Mode::Exclusive), (20..30, Mode::Shared)]
    );
    assert_eq!(lock.try_lock(25..26).unwrap_err(), LockError::WouldBlock);
    assert!(lock.try_lock_shared(25..26).is_ok());
    drop(guard);
    drop(lock.try_lock(0..u64::MAX).expect("released"));
}

/// The timed many-range futures time out holding nothing and resolve an invalid request to
/// its error; a dropped pending one leaves nothing behind.
#[test]
fn timed_lock_many_async_times_out_holding_nothing() {
    let lock = RangeLock::new();
    let holder = lock.lock_shared(45..46);
    let request = [(0..10, Mode::Shared), (40..50, Mode::Exclusive)];
    runtime().block_on(async {
        let fut: TryManyLockFuture<'_> = lock.try_lock_many_async_for(request.clone(), MS);
        assert_eq!(send_debug(fut).await.unwrap_err(), LockError::TimedOut);
        let late = lock.try_lock_many_async_until(request.clone(), Instant::now() + MS).await;
        assert_eq!(late.unwrap_err(), LockError::TimedOut);
        let overlap = [(0..10, Mode::Shared), (5..15, Mode::Shared)];
        assert_eq!(
            lock.try_lock_many_async_for(overlap, MS).await.unwrap_err(),
            LockError::Overlapping { first: (0, 10), second: (5, 15) }
        );
    });
    {
        let mut pending = pin!(lock.lock_many_async(request.clone()));
        assert!(pending.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    }
    drop(lock.try_lock(0..10).expect("timed-out and dropped requests hold nothing"));
    drop(holder);
    let all = runtime().block_on(lock.try_lock_many_async_for(request, MS));
    assert_eq!(all.expect("free now").len(), 2);
}

/// Item 2 of issue 43: `lock_many` and its siblings take a `Vec` by reference or by value,
/// a slice, an array or an iterator of pairs (before, `&v` failed with E0271).
#[test]
fn lock_many_takes_what_users_have() {
    let lock = RangeLock::new();
    let v: Vec<(Range<u64>, Mode)> = vec![(0..10, Mode::Exclusive), (20..30, Mode::Shared)];
    let ranges = |g: &ManyGuard<'_>| g.ranges().collect::<Vec<_>>();
    let by_ref = lock.lock_many(&v);
    assert_eq!(ranges(&by_ref), v);
    assert_eq!(lock.try_lock_many(&v).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock_many_for(&v[..], MS).unwrap_err(), LockError::TimedOut);
    let deadline = Instant::now() + MS;
    assert_eq!(lock.try_lock_many_until(v.iter(), deadline).unwrap_err(), LockError::TimedOut);
    drop(by_ref);
    assert_eq!(ranges(&lock.try_lock_many(&v).unwrap()), v);
    assert_eq!(ranges(&lock.try_lock_many_for(v.iter().rev(), MS).unwrap()), v);
    let firsts = lock.lock_many(v.iter().filter(|(r, _)| r.start == 0));
    assert_eq!(ranges(&firsts), [(0..10, Mode::Exclusive)]);
    drop(firsts);
    let bounds = [(0..=9, Mode::Exclusive), (20..=29, Mode::Shared)];
    assert_eq!(ranges(&lock.lock_many(&bounds)), v);
    assert_eq!(ranges(&lock.lock_many(bounds)), v);
    let rt = runtime();
    assert_eq!(ranges(&rt.block_on(lock.lock_many_async(&v))), v);
    assert_eq!(ranges(&rt.block_on(lock.try_lock_many_async_for(&v, MS)).unwrap()), v);
    assert_eq!(ranges(&lock.lock_many(v.clone())), v);
    assert_eq!(ranges(&lock.lock_many(v)), [(0..10, Mode::Exclusive), (20..30, Mode::Shared)]);
}

/// Item 3 of issue 43: a timed async call names the invalid range the caller passed, as the
/// sync calls do (it used to report `1..0`).
#[test]
#[allow(clippy::reversed_empty_ranges)] // invalid ranges are the input under test
fn timed_async_calls_report_the_callers_invalid_range() {
    let lock = Arc::new(RangeLock::new());
    let bounds = |e: LockError| match e {
        LockError::InvalidRange(e) => (e.start_bound(), e.end_bound()),
        other => panic!("not an invalid range: {other}"),
    };
    let inverted = (Bound::Included(9), Bound::Excluded(3));
    let past_end = (Bound::Included(5), Bound::Included(u64::MAX));
    let soon = Instant::now() + Duration::from_secs(1);
    runtime().block_on(async {
        let sync = lock.try_lock_for(9..3, MS).unwrap_err();
        assert_eq!(bounds(sync), inverted);
        let errors = [
            lock.try_lock_async_for(9..3, MS).await.unwrap_err(),
            lock.try_lock_shared_async_until(9..3, soon).await.unwrap_err(),
            lock.try_lock_mode_async_for(9..3, Mode::Shared, MS).await.unwrap_err(),
            lock.try_lock_owned_async_for(9..3, MS).await.unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e, sync);
            assert_eq!(
                e.to_string(),
                "invalid range 9..3: a range must be non-empty (start < end)"
            );
        }
        let e = lock.try_lock_mode_async_until(5..=u64::MAX, Mode::Exclusive, soon).await;
        assert_eq!(bounds(e.unwrap_err()), past_end);
        let e = lock.try_lock_shared_owned_async_until(5..=u64::MAX, soon).await;
        assert_eq!(bounds(e.unwrap_err()), past_end);
    });
    let _: RangeError = match lock.try_lock_until(9..3, soon).unwrap_err() {
        LockError::InvalidRange(e) => e,
        other => panic!("{other}"),
    };
}
