//! Behaviour and stress tests of `epvs::epoch::LightEpoch`, run once per announce mode.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use epvs::epoch::{Announce, EpochError, LightEpoch};

fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Box<dyn FnOnce() + Send>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    (runs, move || {
        let r = r.clone();
        Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
    })
}

/// The tests of one announce mode, in a module of their own.
macro_rules! epoch_tests {
    ($name:ident, $announce:expr) => {
        mod $name {
            use super::*;

            fn make(slots: usize) -> LightEpoch {
                LightEpoch::with_options(slots, $announce)
            }

            #[test]
            fn action_waits_for_older_guards_and_runs_on_release() {
                let epoch = make(8);
                let (runs, action) = counter();
                let g = epoch.protect();
                let e0 = g.epoch();
                let e1 = epoch.bump_with(action());
                assert_eq!(e1, e0 + 1);
                assert_eq!(runs.load(Ordering::SeqCst), 0, "ran while a guard at the old epoch lives");
                assert_eq!(epoch.pending_actions(), 1);
                drop(g);
                assert_eq!(runs.load(Ordering::SeqCst), 1);
                assert_eq!(epoch.pending_actions(), 0);
            }

            #[test]
            fn action_runs_at_once_when_nobody_is_protected() {
                let epoch = make(8);
                let (runs, action) = counter();
                epoch.bump_with(action());
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }

            #[test]
            fn guards_at_the_new_epoch_do_not_hold_back_old_actions() {
                let epoch = make(8);
                let (runs, action) = counter();
                let old = epoch.protect();
                epoch.bump_with(action());
                let new = epoch.protect();
                assert!(new.epoch() > old.epoch());
                drop(old);
                assert_eq!(runs.load(Ordering::SeqCst), 1, "a guard newer than the action blocked it");
                drop(new);
            }

            #[test]
            fn refresh_lets_older_actions_run() {
                let epoch = make(8);
                let (runs, action) = counter();
                let mut g = epoch.protect();
                epoch.bump_with(action());
                assert_eq!(runs.load(Ordering::SeqCst), 0);
                g.refresh();
                assert_eq!(g.epoch(), epoch.current());
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }

            #[test]
            fn nested_guards_are_independent_and_each_must_release() {
                let epoch = make(8);
                let (runs, action) = counter();
                let outer = epoch.protect();
                let inner = epoch.protect();
                epoch.bump_with(action());
                drop(inner);
                assert_eq!(runs.load(Ordering::SeqCst), 0, "the outer guard still protects");
                drop(outer);
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }

            #[test]
            fn safe_epoch_tracks_the_oldest_guard() {
                let epoch = make(8);
                assert_eq!(epoch.safe_epoch(), epoch.current() - 1);
                let g = epoch.protect();
                epoch.bump();
                epoch.bump();
                assert_eq!(epoch.safe_epoch(), g.epoch() - 1);
                drop(g);
                assert_eq!(epoch.safe_epoch(), epoch.current() - 1);
            }

            #[test]
            fn default_table_is_sized_from_the_core_count() {
                let epoch = LightEpoch::new();
                let cores = thread::available_parallelism().map_or(4, |n| n.get());
                assert!(epoch.slots() >= LightEpoch::MIN_DEFAULT_SLOTS);
                assert!(epoch.slots() >= cores * LightEpoch::DEFAULT_SLOTS_PER_CORE);
            }

            #[test]
            fn pending_actions_run_when_the_instance_drops() {
                let (runs, action) = counter();
                {
                    let epoch = make(2);
                    let g = epoch.protect();
                    epoch.bump_with(action());
                    epoch.bump_with(action());
                    std::mem::forget(g); // pins the epoch: nothing can drain before the drop
                    assert_eq!(runs.load(Ordering::SeqCst), 0);
                }
                assert_eq!(runs.load(Ordering::SeqCst), 2);
            }

            /// `try_protect` with no time to wait fails at once on a full table, without
            /// sleeping first (the range lock's `try_lock` pins this way). A sleep is at
            /// least 50 µs (the first wait of `protect`), so the fastest of 20 calls shows it.
            #[test]
            fn try_protect_without_time_does_not_sleep() {
                let epoch = make(1);
                let _held = epoch.protect();
                let fastest = (0..20)
                    .map(|_| {
                        let begin = Instant::now();
                        let err = epoch.try_protect(Duration::ZERO).unwrap_err();
                        assert_eq!(err, EpochError::TableFull { slots: 1 });
                        begin.elapsed()
                    })
                    .min()
                    .unwrap();
                assert!(fastest < Duration::from_micros(50), "slept: {fastest:?}");
            }

            /// A full table makes `try_protect` fail with a clear error and `protect` wait until a
            /// slot frees, then succeed.
            #[test]
            fn table_exhaustion_blocks_and_recovers() {
                let epoch = Arc::new(make(2));
                let (held_tx, held_rx) = mpsc::channel::<()>();
                let (holders, releases): (Vec<_>, Vec<_>) = (0..2)
                    .map(|_| {
                        let (epoch, held_tx) = (epoch.clone(), held_tx.clone());
                        let (release_tx, release_rx) = mpsc::channel::<()>();
                        let h = thread::spawn(move || {
                            let _g = epoch.protect();
                            held_tx.send(()).unwrap();
                            release_rx.recv().unwrap();
                        });
                        (h, release_tx)
                    })
                    .unzip();
                held_rx.recv().unwrap();
                held_rx.recv().unwrap();

                let err = epoch.try_protect(Duration::from_millis(5)).unwrap_err();
                assert_eq!(err, EpochError::TableFull { slots: 2 });
                assert!(err.to_string().contains("with_slots"), "the error says how to fix it: {err}");

                let before = epoch.table_full_events();
                let waiter = {
                    let epoch = epoch.clone();
                    thread::spawn(move || epoch.protect().epoch())
                };
                // Wait (by event, not by time) until the waiter has seen the full table.
                while epoch.table_full_events() == before {
                    thread::yield_now();
                }
                releases[0].send(()).unwrap();
                assert!(waiter.join().unwrap() >= 1);
                releases[1].send(()).unwrap();
                for h in holders {
                    h.join().unwrap();
                }
            }

            /// Many instances used at once from many threads, nested across instances in opposite
            /// orders: no cross-instance interference (FASTER shares one static table), every action
            /// runs.
            #[test]
            fn many_instances_at_once() {
                const INSTANCES: usize = 16;
                const THREADS: usize = 4;
                const ROUNDS: usize = 2_000;
                let epochs: Arc<Vec<LightEpoch>> =
                    Arc::new((0..INSTANCES).map(|_| make(THREADS * 2)).collect());
                let runs = Arc::new(AtomicUsize::new(0));
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (epochs, runs) = (epochs.clone(), runs.clone());
                        thread::spawn(move || {
                            for i in 0..ROUNDS {
                                let a = (i + t) % INSTANCES;
                                let b = (INSTANCES - 1 - a + t) % INSTANCES;
                                let _ga = epochs[a].protect();
                                let _gb = epochs[b].protect();
                                let r = runs.clone();
                                epochs[(a + b) % INSTANCES].bump_with(move || {
                                    r.fetch_add(1, Ordering::Relaxed);
                                });
                            }
                        })
                    })
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
                for e in epochs.iter() {
                    e.drain();
                    assert_eq!(e.pending_actions(), 0);
                }
                assert_eq!(runs.load(Ordering::Relaxed), THREADS * ROUNDS);
            }

            /// A thread that panics while protected releases its slot during unwinding.
            #[test]
            fn thread_panicking_while_protected_releases_its_slot() {
                let epoch = Arc::new(make(1));
                let e = epoch.clone();
                let r = thread::spawn(move || {
                    let _g = e.protect();
                    panic!("worker dies while protected");
                })
                .join();
                assert!(r.is_err());
                // The only slot is free again, and nothing pins the epoch.
                let g = epoch.try_protect(Duration::from_secs(5)).expect("slot released by unwinding");
                drop(g);
                let (runs, action) = counter();
                epoch.bump_with(action());
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }

            /// A guard parked in a `thread_local!` is released by the TLS destructor at thread
            /// exit. In asymmetric mode (2 slots: one may be sticky) the guard may outlive the
            /// thread's sticky-slot cache (destructor order is unspecified) and then gives its
            /// slot back itself.
            #[test]
            fn guard_in_thread_local_is_released_at_thread_exit() {
                thread_local! {
                    static HELD: RefCell<Option<epvs::epoch::EpochGuard<'static>>> = const { RefCell::new(None) };
                }
                let epoch: &'static LightEpoch = Box::leak(Box::new(make(2)));
                let (runs, action) = counter();
                let (tx, rx) = mpsc::channel();
                let t = thread::spawn(move || {
                    HELD.with(|h| *h.borrow_mut() = Some(epoch.protect()));
                    tx.send(()).unwrap();
                });
                rx.recv().unwrap();
                epoch.bump_with(action());
                t.join().unwrap();
                epoch.drain();
                assert_eq!(runs.load(Ordering::SeqCst), 1);
                all_slots_are_claimable(epoch);
            }

            /// Readers never observe a reclaimed object while protected, under a writer that keeps
            /// replacing and retiring the shared object. Objects are marked, not freed, until the end,
            /// so a protocol bug fails the assertion instead of corrupting memory.
            #[test]
            fn stress_readers_never_see_reclaimed_objects() {
                struct Obj {
                    reclaimed: AtomicBool,
                }
                const READERS: usize = 3;
                const SWAPS: usize = 20_000;
                const MIN_READS: usize = 3_000;
                let epoch = Arc::new(make(8));
                let all: Arc<std::sync::Mutex<Vec<usize>>> = Arc::default();
                let new_obj = |all: &std::sync::Mutex<Vec<usize>>| {
                    let p = Box::into_raw(Box::new(Obj { reclaimed: AtomicBool::new(false) }));
                    all.lock().unwrap().push(p as usize);
                    p
                };
                let shared = Arc::new(AtomicPtr::new(new_obj(&all)));
                let done = Arc::new(AtomicBool::new(false));
                let reads = Arc::new(AtomicUsize::new(0));
                let start = Arc::new(Barrier::new(READERS + 1));
                let readers: Vec<_> = (0..READERS)
                    .map(|i| {
                        let (epoch, shared, done, start, reads) =
                            (epoch.clone(), shared.clone(), done.clone(), start.clone(), reads.clone());
                        thread::spawn(move || {
                            start.wait();
                            let mut pinned = epoch.protect();
                            while !done.load(Ordering::Relaxed) {
                                if i == 0 {
                                    // One reader stays pinned and refreshes (FASTER's usage).
                                    pinned.refresh();
                                    let p = shared.load(Ordering::Acquire);
                                    // SAFETY: objects are freed only after all threads joined.
                                    assert!(!unsafe { &*p }.reclaimed.load(Ordering::Relaxed));
                                } else {
                                    let _g = epoch.protect();
                                    let p = shared.load(Ordering::Acquire);
                                    // SAFETY: objects are freed only after all threads joined.
                                    assert!(!unsafe { &*p }.reclaimed.load(Ordering::Relaxed));
                                }
                                reads.fetch_add(1, Ordering::Relaxed);
                            }
                            drop(pinned);
                        })
                    })
                    .collect();
                start.wait();
                // Keep retiring until the readers have really overlapped with the writer (by count,
                // not by time: on a loaded machine the readers may start late).
                let mut swaps = 0;
                while swaps < SWAPS || reads.load(Ordering::Relaxed) < MIN_READS {
                    let old = shared.swap(new_obj(&all), Ordering::AcqRel) as usize;
                    epoch.bump_with(move || {
                        // SAFETY: `old` is freed only after all threads joined.
                        unsafe { &*(old as *const Obj) }.reclaimed.store(true, Ordering::Relaxed);
                    });
                    swaps += 1;
                }
                done.store(true, Ordering::Relaxed);
                for h in readers {
                    h.join().unwrap();
                }
                epoch.drain();
                assert_eq!(epoch.pending_actions(), 0, "every retired object was reclaimed");
                for p in all.lock().unwrap().drain(..) {
                    // SAFETY: every pointer came from Box::into_raw above and all users have joined.
                    drop(unsafe { Box::from_raw(p as *mut Obj) });
                }
            }
        }
    };
}

epoch_tests!(fenced, Announce::Fenced);
epoch_tests!(asymmetric, Announce::Asymmetric);

/// Holds every slot of `epoch` at once from this thread (nesting), proving none is kept by
/// a thread that has gone; then releases them.
fn all_slots_are_claimable(epoch: &LightEpoch) {
    let guards: Vec<_> = (0..epoch.slots())
        .map(|i| {
            epoch
                .try_protect(Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("slot {i} of {} still taken: {e}", epoch.slots()))
        })
        .collect();
    drop(guards);
}

/// Asymmetric mode: a thread keeps a sticky slot between regions and gives it back when it
/// exits, so threads that come and go never leak slots.
#[test]
fn asymmetric_sticky_slots_are_given_back_at_thread_exit() {
    let epoch = Arc::new(LightEpoch::with_options(4, Announce::Asymmetric));
    assert_eq!(epoch.announce(), Announce::Asymmetric);
    for _ in 0..10 {
        let e = epoch.clone();
        thread::spawn(move || {
            for _ in 0..3 {
                let g = e.protect();
                assert!(g.epoch() >= 1);
            }
        })
        .join()
        .unwrap();
    }
    all_slots_are_claimable(&epoch);
}

/// A thread using more asymmetric instances than it caches evicts (and gives back) idle
/// sticky slots; instances dropped while a thread still caches their slot are safe.
#[test]
fn asymmetric_eviction_and_dropped_instances() {
    let epochs: Vec<_> =
        (0..7).map(|_| Arc::new(LightEpoch::with_options(2, Announce::Asymmetric))).collect();
    let (runs, action) = counter();
    for round in 0..5 {
        for e in &epochs {
            let g = e.protect();
            e.bump_with(action());
            drop(g);
            if round == 4 {
                all_slots_are_claimable(e);
            }
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 35);
    // Drop instances whose slots this thread may still cache, then keep using others.
    let mut epochs = epochs;
    epochs.truncate(2);
    for e in &epochs {
        drop(e.protect());
        all_slots_are_claimable(e);
    }
}
