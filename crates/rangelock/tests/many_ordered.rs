//! The fair path of `lock_many` on `RangeLock` (`RawRangeLock::lock_ordered`, module docs
//! of `skiplist::ordered`): a blocking request is not starved by async tasks that keep
//! re-locking its ranges, and an ordered request that waits while holding lower ranges
//! does not deadlock against a writer that spans them.
//!
//! The stress test of `tests/many.rs` (`no_deadlock_random_sets`) mixes ordered requests
//! into its runs on `RangeLock` for exclusion and deadlock freedom at random.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use rangelock::internals::RawRangeLock;
use rangelock::{LockError, Mode, RangeLock};

const S: Mode = Mode::Shared;
const X: Mode = Mode::Exclusive;

/// An upper bound on waits for events that should come within milliseconds: generous, for
/// a loaded 2-core machine.
const EVENT_BOUND: Duration = Duration::from_secs(10);

/// The longest a blocking `lock_many` may wait in
/// [`blocking_lock_many_is_not_starved_by_async_tasks`]. In a debug build on the 2-core
/// development machine its worst wait was 44-63 ms (5 runs), 160-260 ms with two busy loops
/// beside it (5 runs); with the usual protocol alone, every one of 10 runs had a wait over
/// 3 s within its first 7 requests.
const MANY_BOUND: Duration = Duration::from_secs(3);

/// Requests of [`blocking_lock_many_is_not_starved_by_async_tasks`].
const CALLS: usize = 20;

/// Two ranges, each kept held by async tasks that re-lock it as soon as they release it (a
/// holder keeps it across a `yield_now`, so there is always a holder or a queue), in two
/// stripes (one range also takes the list path: a task finds its slot taken). A blocking
/// `lock_many` of both needs both free at one instant under the usual protocol: that
/// instant hardly comes. Each of its waits must stay under [`MANY_BOUND`].
#[test]
fn blocking_lock_many_is_not_starved_by_async_tasks() {
    let stripe = 1u64 << rangelock::internals::DEFAULT_STRIPE_SHIFT;
    let (a, b) = (10..11, 3 * stripe + 10..3 * stripe + 12);
    let lock = Arc::new(RangeLock::new());
    let stop = Arc::new(AtomicBool::new(false));
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for t in 0..16 {
        let (lock, stop) = (lock.clone(), stop.clone());
        let range = if t % 2 == 0 { a.clone() } else { b.clone() };
        rt.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let guard = lock.lock_shared_async(range.clone()).await;
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
                drop(guard);
            }
        });
    }
    let (tx, rx) = mpsc::channel();
    let many = {
        let lock = lock.clone();
        let (a, b) = (a.clone(), b.clone());
        let request = [(a.clone(), X), (b.clone(), X)];
        thread::spawn(move || {
            for _ in 0..CALLS {
                // Start from the contended state: the tasks hold both ranges again.
                let begin = Instant::now();
                while lock.try_lock(a.clone()).is_ok() || lock.try_lock(b.clone()).is_ok() {
                    assert!(begin.elapsed() < EVENT_BOUND, "the tasks do not hold the ranges");
                    thread::yield_now();
                }
                let begin = Instant::now();
                let guard = lock.lock_many(request.clone());
                if tx.send(begin.elapsed()).is_err() {
                    return; // the test failed already
                }
                drop(guard);
            }
        })
    };
    let mut waits = Vec::new();
    for _ in 0..CALLS {
        match rx.recv_timeout(MANY_BOUND) {
            Ok(wait) => waits.push(wait),
            Err(_) => panic!(
                "a blocking lock_many waited over {MANY_BOUND:?} beside the tasks (earlier \
                 waits: {waits:?})"
            ),
        }
    }
    stop.store(true, Ordering::Relaxed);
    many.join().unwrap();
    drop(rt);
    waits.sort();
    eprintln!(
        "lock_many beside 16 async tasks: {CALLS} waits, median {:?}, worst {:?}",
        waits[CALLS / 2],
        waits[CALLS - 1]
    );
    assert!(waits[CALLS - 1] < MANY_BOUND);
}

/// The interleaving of `Lock::lock_many`'s docs that deadlocks "sort, then block in
/// order", against an ordered request: A asks for `12..13` and `15..16` shared while H
/// holds `15..16`; B locks `10..20` exclusively once A waits for `15..16`. A holds `12..13`
/// as an exclusive list node while it waits (not as a reader, which B would link over and
/// wait for), so B queues behind A, and H's release lets A finish, then B.
#[test]
fn an_ordered_request_waits_holding_lower_ranges_without_deadlock() {
    let lock = Arc::new(RangeLock::new());
    let held = lock.lock(15..16);
    let (done_tx, done_rx) = mpsc::channel();
    let a = {
        let (lock, done_tx) = (lock.clone(), done_tx.clone());
        thread::spawn(move || {
            let request = [(12..13, S), (15..16, S)];
            let tokens = lock.raw().lock_ordered(&request, None).expect("no deadline");
            done_tx.send("A").unwrap();
            // Held: writers wait. (Whether readers join is `shared_ranges_end_shared`'s: B,
            // a writer queued over both ranges, turns new readers away here.)
            assert_eq!(lock.try_lock(15..16).unwrap_err(), LockError::WouldBlock);
            for token in tokens {
                // SAFETY: acquired from this lock just above, released once, here.
                unsafe { lock.raw().unlock(token) };
            }
        })
    };
    // A holds 12..13 once a new writer of it fails.
    let begin = Instant::now();
    while let Ok(probe) = lock.try_lock(12..13) {
        drop(probe);
        assert!(begin.elapsed() < EVENT_BOUND, "A never took 12..13");
        thread::yield_now();
    }
    let b = {
        let lock = lock.clone();
        thread::spawn(move || {
            drop(lock.lock(10..20));
            done_tx.send("B").unwrap();
        })
    };
    // B waits (its intent is published) once a new writer of 17..18 fails.
    let begin = Instant::now();
    while let Ok(probe) = lock.try_lock(17..18) {
        drop(probe);
        assert!(begin.elapsed() < EVENT_BOUND, "B never queued");
        thread::yield_now();
    }
    drop(held);
    let order: Vec<_> =
        (0..2).map(|_| done_rx.recv_timeout(EVENT_BOUND).expect("deadlock")).collect();
    assert_eq!(order, ["A", "B"]);
    a.join().unwrap();
    b.join().unwrap();
}

/// An ordered request's shared ranges end shared (downgraded once all are held): readers
/// join them, writers wait; its exclusive ranges turn both away.
#[test]
fn shared_ranges_end_shared() {
    let lock = RangeLock::new();
    let request = [(12..13, S), (15..16, X), (20..30, S)];
    let tokens = lock.raw().lock_ordered(&request, None).expect("no deadline");
    assert!(lock.try_lock_shared(12..13).is_ok());
    assert!(lock.try_lock_shared(20..30).is_ok());
    assert_eq!(lock.try_lock(12..13).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock(25..26).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock_shared(15..16).unwrap_err(), LockError::WouldBlock);
    assert!(lock.try_lock(13..15).is_ok());
    for token in tokens {
        // SAFETY: acquired from this lock just above, released once, here.
        unsafe { lock.raw().unlock(token) };
    }
    assert!(lock.try_lock(0..100).is_ok());
}
