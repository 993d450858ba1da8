//! The async acquisitions of `RangeLock`: wake-ups, deadlines (they wake the waker of the
//! latest poll, and a dropped timed future keeps no waker), cancellation (a dropped future
//! leaves nothing behind and wakes whoever it blocked), timeouts, and a stress run of many
//! tasks on few threads, with random cancellation, mixed with blocking threads, through the
//! exclusivity checker.
#![cfg(not(loom))]

mod support;

use std::future::Future;
use std::ops::Range;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rangelock::{LockError, Mode, RangeLock};
use support::{Call, Checker, Rng};

/// A waker that counts its wake-ups. Its clones are counted too: every clone of the
/// `Waker` is a strong reference to the `Count` (`Count::clones`).
#[derive(Default)]
struct Count(AtomicUsize, Mutex<()>, Condvar);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let _guard = self.1.lock().unwrap();
        self.0.fetch_add(1, Ordering::SeqCst);
        self.2.notify_all();
    }
}

impl Count {
    fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Whether a wake-up came within `limit` (an upper bound on the wait for the event).
    fn wait_for_wake(&self, limit: Duration) -> bool {
        let guard = self.1.lock().unwrap();
        let (_guard, _) = self.2.wait_timeout_while(guard, limit, |()| self.wakes() == 0).unwrap();
        self.wakes() > 0
    }
}

/// The clones of `count`'s waker alive, besides the test's own `Waker` and `Arc`.
fn clones(count: &Arc<Count>) -> usize {
    Arc::strong_count(count) - 2
}

fn counting() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    (count.clone(), Waker::from(count))
}

/// A held range and a request that waits for it, one of each kind of wait word: a stripe
/// holder, a list holder, a reader.
fn wait_kinds() -> [(Range<u64>, Mode, Range<u64>, Mode); 3] {
    let stripe = 1u64 << rangelock::internals::DEFAULT_STRIPE_SHIFT;
    [
        (0..10, Mode::Exclusive, 5..6, Mode::Exclusive),
        (stripe - 5..stripe + 5, Mode::Exclusive, stripe..stripe + 1, Mode::Shared),
        (100..200, Mode::Shared, 150..160, Mode::Exclusive),
    ]
}

#[test]
fn a_release_wakes_the_waiting_task_and_its_next_poll_holds() {
    let lock = RangeLock::new();
    // The task waits on each kind of wait word.
    for (held_range, held_mode, want, mode) in wait_kinds() {
        let held = lock.lock_mode(held_range.clone(), held_mode);
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let mut fut = pin!(lock.lock_mode_async(want.clone(), mode));
        assert!(fut.as_mut().poll(&mut cx).is_pending(), "{held_range:?} is held");
        assert!(fut.as_mut().poll(&mut cx).is_pending(), "a spurious poll waits on");
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        drop(held);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "the release woke the task");
        let Poll::Ready(guard) = fut.as_mut().poll(&mut cx) else { panic!("not granted") };
        assert_eq!((guard.range(), guard.mode()), (want, mode));
    }
    drop(lock.try_lock(0..u64::MAX).expect("everything released"));
}

#[test]
fn dropping_a_pending_writer_lets_the_readers_it_blocked_in() {
    let lock = RangeLock::new();
    let nodes_before = lock.raw().allocated_nodes();
    let reader = lock.lock_shared(0..100);
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    {
        // Boxed, so that `drop` drops the future itself (not a pinned reference to it).
        let mut writer = Box::pin(lock.lock_async(10..20));
        // The writer links its pending node and waits for the reader...
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        // ...and new readers of its range back off from it (writer preference).
        assert_eq!(lock.try_lock_shared(15..16).unwrap_err(), LockError::WouldBlock);
        let (blocked_count, blocked_waker) = counting();
        let mut blocked = pin!(lock.lock_shared_async(15..16));
        assert!(blocked.as_mut().poll(&mut Context::from_waker(&blocked_waker)).is_pending());
        // Cancel the writer: the reader that waited for it is woken and holds.
        drop(writer);
        assert_eq!(blocked_count.0.load(Ordering::SeqCst), 1, "the cancelled writer woke it");
        let Poll::Ready(r) = blocked.as_mut().poll(&mut Context::from_waker(&blocked_waker)) else {
            panic!("the reader is not granted after the writer left")
        };
        drop(r);
    }
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
    drop(lock.try_lock_shared(15..16).expect("no pending writer left"));
    drop(reader);
    drop(lock.try_lock(0..u64::MAX).expect("nothing left behind"));
    // The cancelled writer's node went back to the pool (or is retiring): a bounded number.
    assert!(lock.raw().allocated_nodes() <= nodes_before + 8);
}

#[test]
fn a_timeout_resolves_without_another_wake_up() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let lock = RangeLock::new();
    let held = lock.lock(0..10);
    rt.block_on(async {
        for mode in [Mode::Exclusive, Mode::Shared] {
            let start = Instant::now();
            let deadline = start + Duration::from_millis(20);
            let err = lock.try_lock_mode_async_until(5..6, mode, deadline).await.unwrap_err();
            assert_eq!(err, LockError::TimedOut);
            assert!(start.elapsed() >= Duration::from_millis(20));
        }
        let err = lock.try_lock_async_for(5..6, Duration::ZERO).await.unwrap_err();
        assert_eq!(err, LockError::TimedOut);
        #[allow(clippy::reversed_empty_ranges)] // the invalid input under test
        let err = lock.try_lock_async_for(9..3, Duration::from_secs(1)).await.unwrap_err();
        assert!(matches!(err, LockError::InvalidRange(_)));
    });
    drop(held);
    drop(lock.try_lock(0..u64::MAX).expect("nothing left behind"));
}

/// An upper bound on waits for events that should come within milliseconds: generous, for
/// a loaded 2-core machine.
const EVENT_BOUND: Duration = Duration::from_secs(10);

#[test]
fn the_deadline_wakes_the_waker_of_the_latest_poll() {
    let lock = RangeLock::new();
    let held = lock.lock(0..10);
    for mode in [Mode::Exclusive, Mode::Shared] {
        let (first, first_waker) = counting();
        let (latest, latest_waker) = counting();
        let start = Instant::now();
        let timeout = Duration::from_millis(30);
        let mut fut = Box::pin(lock.try_lock_mode_async_until(5..6, mode, start + timeout));
        assert!(fut.as_mut().poll(&mut Context::from_waker(&first_waker)).is_pending());
        // Polled again under another waker (`select!`, `join`, a task moved elsewhere).
        assert!(fut.as_mut().poll(&mut Context::from_waker(&latest_waker)).is_pending());
        assert_eq!(clones(&first), 0, "{mode:?}: the re-poll let go of the first waker");
        assert!(
            latest.wait_for_wake(EVENT_BOUND),
            "{mode:?}: the deadline did not wake the latest waker ({} wake-ups of the first)",
            first.wakes()
        );
        assert!(start.elapsed() >= timeout, "{mode:?}: woken before the deadline");
        let polled = fut.as_mut().poll(&mut Context::from_waker(&latest_waker));
        assert!(matches!(polled, Poll::Ready(Err(LockError::TimedOut))), "{mode:?}: {polled:?}");
        assert_eq!(first.wakes(), 0, "{mode:?}: the first waker is not woken");
        // The timer's thread drops its clone just after the wake it made: wait for that.
        let deadline = Instant::now() + EVENT_BOUND;
        while clones(&latest) > 0 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!((clones(&first), clones(&latest)), (0, 0), "{mode:?}: resolved, holds none");
    }
    drop(held);
}

#[test]
fn dropping_a_timed_future_releases_every_waker_clone_at_once() {
    let lock = RangeLock::new();
    for (held_range, held_mode, want, mode) in wait_kinds() {
        let held = lock.lock_mode(held_range.clone(), held_mode);
        let (first, first_waker) = counting();
        let (latest, latest_waker) = counting();
        let hour = Duration::from_secs(3600);
        let mut fut = Box::pin(lock.try_lock_mode_async_until(want, mode, Instant::now() + hour));
        assert!(fut.as_mut().poll(&mut Context::from_waker(&first_waker)).is_pending());
        assert!(clones(&first) > 0, "{held_range:?}: registered");
        assert!(fut.as_mut().poll(&mut Context::from_waker(&latest_waker)).is_pending());
        assert_eq!(clones(&first), 0, "{held_range:?}: the re-poll let go of the first waker");
        assert!(clones(&latest) > 0, "{held_range:?}: registered");
        drop(fut);
        assert_eq!(
            (clones(&first), clones(&latest)),
            (0, 0),
            "{held_range:?}: the dropped future's wakers are still referenced"
        );
        assert_eq!((first.wakes(), latest.wakes()), (0, 0));
        drop(held);
    }
}

#[test]
fn a_timed_future_that_acquires_keeps_no_waker() {
    let lock = RangeLock::new();
    let held = lock.lock(0..10);
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    let mut fut = Box::pin(lock.try_lock_async_for(5..6, Duration::from_secs(3600)));
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    drop(held);
    let Poll::Ready(guard) = fut.as_mut().poll(&mut cx) else { panic!("not granted") };
    assert_eq!(clones(&count), 0, "the granted future's waker is still referenced");
    drop((guard, fut));
}

/// A runtime of two workers: tasks may run on either.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Polls `fut` once, in the calling task: it must be pending.
async fn poll_once<F: Future + Unpin>(fut: &mut F) {
    std::future::poll_fn(|cx| {
        assert!(Pin::new(&mut *fut).poll(cx).is_pending(), "the range is held");
        Poll::Ready(())
    })
    .await;
}

#[test]
fn a_timed_future_moved_to_another_task_times_out_at_its_deadline() {
    let lock: &'static RangeLock = Box::leak(Box::new(RangeLock::new()));
    // Held until the end of the test, by the test's thread.
    let held = lock.lock(0..10);
    runtime().block_on(async {
        let timeout = Duration::from_millis(30);
        let start = Instant::now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        // Polled first in one task...
        tokio::spawn(async move {
            let mut fut = Box::pin(lock.try_lock_async_for(5..6, timeout));
            poll_once(&mut fut).await;
            tx.send(fut).unwrap_or_else(|_| panic!("the receiver waits"));
        });
        // ...then awaited by another.
        let awaited = tokio::spawn(async move { rx.await.unwrap().await.map(drop) });
        let result = tokio::time::timeout(EVENT_BOUND, awaited).await;
        let result = result.expect("the deadline did not wake the task that awaits the future");
        assert_eq!(result.unwrap(), Err(LockError::TimedOut));
        assert!(start.elapsed() >= timeout);
    });
    drop(held);
}

/// The deadlock of a task that holds a range and hands a timed future to another task: a
/// writer queued behind the held range (`10..30`, pending behind `12..13`) blocks the
/// future's range (`20..21`); the holder waits for the other task before it releases. Only
/// the deadline can end the other task's wait, so it must wake that task.
#[test]
fn a_holder_that_hands_a_timed_future_to_another_task_is_not_deadlocked() {
    let lock: &'static RangeLock = Box::leak(Box::new(RangeLock::new()));
    runtime().block_on(async {
        let holder = tokio::spawn(async move {
            let held = lock.lock(12..13);
            // A writer of 10..30 links its pending node and waits for `held`.
            let writer = std::thread::spawn(move || drop(lock.lock(10..30)));
            let begin = Instant::now();
            while let Ok(probe) = lock.try_lock(20..21) {
                drop(probe);
                assert!(begin.elapsed() < EVENT_BOUND, "the writer never queued");
                tokio::task::yield_now().await;
            }
            let mut fut = Box::pin(lock.try_lock_async_for(20..21, Duration::from_millis(30)));
            poll_once(&mut fut).await;
            let other = tokio::spawn(async move { fut.await.map(drop) });
            let result = other.await.unwrap();
            drop(held);
            writer.join().unwrap();
            result
        });
        let result = tokio::time::timeout(EVENT_BOUND, holder).await;
        assert_eq!(result.expect("deadlocked").unwrap(), Err(LockError::TimedOut));
    });
}

/// Many tasks on two threads, plus two blocking threads, on one lock: random ranges and
/// modes, a third of the async acquisitions cancelled after a random short time, everything
/// through the checker.
fn stress(lock: RangeLock, domain: u64, tasks: usize, ops: usize) {
    let lock = Arc::new(lock);
    let blocking = 2;
    let checker = Arc::new(Checker::new("async", 0..=domain, tasks + blocking));
    let done = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let threads: Vec<_> = (0..blocking)
        .map(|b| {
            let (lock, checker) = (lock.clone(), checker.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(0xB10C + b as u64);
                for _ in 0..ops {
                    let (range, mode) = pick(&mut rng, domain);
                    let g = lock.lock_mode(range.clone(), mode);
                    let held = checker.enter(tasks + b, range, mode, Call::Blocking);
                    checker.check(&held);
                    checker.leave(tasks + b, held);
                    drop(g);
                }
            })
        })
        .collect();
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|t| {
                let (lock, checker, done) = (lock.clone(), checker.clone(), done.clone());
                let cancelled = cancelled.clone();
                tokio::spawn(async move {
                    let mut rng = Rng::new(0xA5 + t as u64);
                    for _ in 0..ops {
                        let (range, mode) = pick(&mut rng, domain);
                        let fut = lock.lock_mode_async(range.clone(), mode);
                        let guard = match rng.below(3) {
                            0 => {
                                // Cancelled at its first, second or third `Pending` (if it
                                // is not granted before).
                                let mut polls = rng.below(3);
                                let mut fut = Box::pin(fut);
                                let outcome =
                                    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
                                        Poll::Ready(r) => Poll::Ready(Some(r)),
                                        Poll::Pending if polls == 0 => Poll::Ready(None),
                                        Poll::Pending => {
                                            polls -= 1;
                                            Poll::Pending
                                        }
                                    })
                                    .await;
                                match outcome {
                                    Some(guard) => guard,
                                    None => {
                                        cancelled.fetch_add(1, Ordering::Relaxed);
                                        continue;
                                    }
                                }
                            }
                            _ => fut.await,
                        };
                        let held = checker.enter(t, range, mode, Call::Blocking);
                        if rng.below(2) == 0 {
                            tokio::task::yield_now().await;
                        }
                        checker.check(&held);
                        checker.leave(t, held);
                        drop(guard);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // A watchdog instead of a hang: a cancelled future that left its pending node
        // linked (or a lost wake-up) blocks every later overlapping acquisition for good.
        let all = async {
            for h in handles {
                h.await.unwrap();
            }
        };
        if tokio::time::timeout(Duration::from_secs(60), all).await.is_err() {
            panic!("async stress stuck: a lost wake-up, or a cancelled acquisition left a hold");
        }
    });
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert!(!checker.failed());
    let (done, cancelled) = (done.load(Ordering::Relaxed), cancelled.load(Ordering::Relaxed));
    eprintln!("async stress: {done} acquired, {cancelled} cancelled while pending");
    assert!(done > tasks * ops / 2, "most acquisitions completed: {done}");
    assert!(cancelled > 0, "some acquisitions were cancelled while pending");
    drop(lock.try_lock(0..u64::MAX).expect("a cancelled acquisition left something held"));
}

fn pick(rng: &mut Rng, domain: u64) -> (std::ops::Range<u64>, Mode) {
    let start = rng.below(domain - 1);
    let max = if rng.below(8) == 0 { domain } else { 6 };
    let len = 1 + rng.below((domain - start).min(max));
    let mode = if rng.below(2) == 0 { Mode::Exclusive } else { Mode::Shared };
    (start..start + len, mode)
}

#[test]
fn many_tasks_with_cancellation_keep_exclusion() {
    stress(RangeLock::new(), 64, 32, 300);
}

#[test]
fn many_tasks_with_cancellation_keep_exclusion_on_tiny_stripes() {
    stress(RangeLock::builder().stripes(2, 4).windows(2).build(), 96, 32, 300);
}
