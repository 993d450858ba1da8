//! Unit tests of the skip-list range lock (edge cases, modes, waiting, recycling).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use super::*;
use crate::LockError;
use stripes::Claimed;

#[test]
fn full_domain_edges_lock() {
    let lock = RangeLock::new();
    let first = lock.try_lock(0..1).unwrap();
    let last = lock.try_lock(u64::MAX - 1..u64::MAX).unwrap();
    assert_eq!(lock.try_lock(0..u64::MAX).unwrap_err(), LockError::WouldBlock);
    drop((first, last));
    let all = lock.try_lock(0..u64::MAX).unwrap();
    assert_eq!(lock.try_lock(0..1).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock(u64::MAX - 1..u64::MAX).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock_shared(12345..12346).unwrap_err(), LockError::WouldBlock);
    drop(all);
    let _all_shared = lock.try_lock_shared(0..u64::MAX).unwrap();
    let _edge_shared = lock.try_lock_shared(0..1).unwrap();
}

#[test]
fn adjacent_ranges_lock_and_overlaps_do_not() {
    let lock = RangeLock::builder().max_height(4).build();
    let a = lock.try_lock(10..20).unwrap();
    let b = lock.try_lock(20..30).unwrap();
    let c = lock.try_lock(0..10).unwrap();
    for r in [19..21, 9..11, 0..30, 15..16, 29..30, 5..25] {
        assert_eq!(lock.try_lock(r.clone()).unwrap_err(), LockError::WouldBlock, "{r:?}");
        assert_eq!(lock.try_lock_shared(r.clone()).unwrap_err(), LockError::WouldBlock, "{r:?}");
    }
    drop(b);
    let b2 = lock.try_lock(20..21).unwrap();
    drop((a, b2, c));
    let whole = lock.try_lock(0..30).unwrap();
    drop(whole);
}

#[test]
fn same_start_after_release_reuses_the_key_space() {
    let lock = RangeLock::builder().max_height(3).build();
    for _ in 0..1000 {
        let g = lock.try_lock(5..6).unwrap();
        assert!(lock.try_lock(5..7).is_err());
        drop(g);
    }
}

#[test]
fn shared_holders_share_and_exclude_writers() {
    let lock = RangeLock::new();
    let r1 = lock.try_lock_shared(0..100).unwrap();
    let r2 = lock.try_lock_shared(50..150).unwrap();
    let r3 = lock.try_lock_shared(50..150).unwrap();
    assert_eq!(lock.try_lock(149..150).unwrap_err(), LockError::WouldBlock);
    assert_eq!(lock.try_lock(0..1).unwrap_err(), LockError::WouldBlock);
    let w = lock.try_lock(150..200).unwrap();
    assert_eq!(lock.try_lock_shared(140..160).unwrap_err(), LockError::WouldBlock);
    drop((r1, r2, r3));
    let w2 = lock.try_lock(0..150).unwrap();
    drop((w, w2));
}

#[test]
fn many_shared_holders_grow_the_table() {
    let lock = RangeLock::new();
    let guards: Vec<_> =
        (0..1000u64).map(|i| lock.try_lock_shared(i % 7..i % 7 + 100).unwrap()).collect();
    assert!(lock.try_lock(50..51).is_err());
    assert!(lock.try_lock(106..107).is_ok());
    drop(guards);
    assert!(lock.try_lock(0..200).is_ok());
}

#[test]
fn many_exclusive_holders_in_random_order() {
    let lock = RangeLock::builder().max_height(8).build();
    // A permutation of 0..512 (multiplicative, odd factor), each unit locked once.
    let mut guards = Vec::new();
    for i in 0..512u64 {
        let unit = (i * 167) % 512;
        guards.push(lock.try_lock(unit * 2..unit * 2 + 2).unwrap());
    }
    for unit in 0..1024u64 {
        assert!(lock.try_lock(unit..unit + 1).is_err());
    }
    // Release every other one, then the freed slots lock again.
    let mut kept = Vec::new();
    for (i, g) in guards.into_iter().enumerate() {
        if i % 2 == 0 {
            kept.push(g);
        }
    }
    let mut free = 0;
    for unit in 0..512u64 {
        if let Ok(g) = lock.try_lock(unit * 2..unit * 2 + 2) {
            free += 1;
            drop(g);
        }
    }
    assert_eq!(free, 256);
}

#[test]
fn invalid_ranges_are_rejected_without_locking() {
    let lock = RangeLock::new();
    #[allow(clippy::reversed_empty_ranges)]
    let err = lock.try_lock(5..3).unwrap_err();
    assert!(matches!(err, LockError::InvalidRange(_)));
    assert!(lock.try_lock_shared_for(7..7, std::time::Duration::ZERO).is_err());
    let _g = lock.try_lock(0..u64::MAX).unwrap();
}

#[test]
#[should_panic(expected = "skip-list height must be in 1..=16")]
fn zero_height_is_refused() {
    let _ = RangeLock::builder().max_height(0).build();
}

#[test]
fn lock_timeout_gives_up_and_leaves_no_trace() {
    let lock = RangeLock::new();
    let held = lock.lock(10..20);
    let err = lock.try_lock_for(15..16, Duration::from_millis(20)).unwrap_err();
    assert_eq!(err, LockError::TimedOut);
    let err = lock.try_lock_shared_for(0..11, Duration::from_millis(1)).unwrap_err();
    assert_eq!(err, LockError::TimedOut);
    drop(held);
    // Nothing of the timed-out attempts stays behind.
    let _all = lock.try_lock(0..u64::MAX).unwrap();
}

#[test]
fn writer_times_out_on_a_reader_and_unlinks_its_pending_node() {
    let lock = RangeLock::new();
    let reader = lock.lock_shared(0..10);
    assert_eq!(lock.try_lock_for(5..6, Duration::from_millis(5)).unwrap_err(), LockError::TimedOut);
    // The pending node is gone: another reader gets in.
    let reader2 = lock.try_lock_shared(5..6).unwrap();
    drop((reader, reader2));
    let _w = lock.try_lock(0..10).unwrap();
}

#[test]
fn blocking_lock_waits_for_release() {
    let lock = Arc::new(RangeLock::new());
    let acquired = Arc::new(AtomicBool::new(false));
    let held = lock.lock(0..100);
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let (lock, acquired) = (Arc::clone(&lock), Arc::clone(&acquired));
        thread::spawn(move || {
            tx.send(()).unwrap();
            let g = lock.lock(50..60);
            acquired.store(true, Ordering::SeqCst);
            drop(g);
        })
    };
    rx.recv().unwrap();
    // Whatever the waiter is doing now, it cannot hold the range.
    assert!(!acquired.load(Ordering::SeqCst));
    drop(held);
    waiter.join().unwrap();
    assert!(acquired.load(Ordering::SeqCst));
}

/// A writer on the list path (its range crosses a stripe boundary) links its pending node
/// before it waits, and new overlapping readers are refused from then on. (A range inside
/// one stripe takes the stripe path, whose waiting writer steps back while it waits: there
/// a reader may still get in, which is what this test once hit half the time.)
#[test]
fn pending_writer_blocks_new_readers_then_gets_in() {
    let b = 1u64 << stripes::DEFAULT_STRIPE_SHIFT;
    let lock = Arc::new(RangeLock::new());
    let reader = lock.lock_shared(b - 10..b);
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            let g = lock.lock(b - 5..b + 5);
            g.range()
        })
    };
    // Until the writer links its pending node, new readers get in; afterwards they are
    // refused for as long as the writer waits (writer preference), although the only holder
    // is a reader.
    loop {
        match lock.try_lock_shared(b - 2..b - 1) {
            Ok(g) => drop(g),
            Err(e) => {
                assert_eq!(e, LockError::WouldBlock);
                break;
            }
        }
        thread::yield_now();
    }
    for _ in 0..100 {
        assert!(lock.try_lock_shared(b - 10..b - 4).is_err());
    }
    // Readers of ranges the writer does not want still get in.
    drop(lock.try_lock_shared(b - 10..b - 5).unwrap());
    drop(reader);
    assert_eq!(writer.join().unwrap(), b - 5..b + 5);
}

/// Threads lock random ranges over a few units in random modes (try, blocking, deadline)
/// and check the per-unit ownership words: a writer finds its units free and keeps them, a
/// reader never sees a writer.
#[test]
fn stress_exclusivity_and_sharing() {
    stress(4, 4000, 256);
}

/// Many threads on few units: most acquisitions wait, so parking and waking are exercised.
#[test]
fn stress_contended_waits() {
    stress(8, 3000, 32);
}

/// A longer run for hunting lost wake-ups and races (`cargo test -- --ignored`).
#[test]
#[ignore = "long stress run"]
fn stress_long() {
    stress(16, 200_000, 64);
}

fn stress(threads: usize, ops: usize, units: usize) {
    let lock = Arc::new(RangeLock::builder().max_height(6).build());
    let owner: Arc<Vec<AtomicU64>> = Arc::new((0..units).map(|_| AtomicU64::new(0)).collect());
    let readers: Arc<Vec<AtomicU64>> = Arc::new((0..units).map(|_| AtomicU64::new(0)).collect());
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (lock, owner, readers, barrier) =
                (Arc::clone(&lock), Arc::clone(&owner), Arc::clone(&readers), Arc::clone(&barrier));
            thread::spawn(move || {
                let id = t as u64 + 1;
                let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ (id * 0x9E37_79B9);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                barrier.wait();
                let (mut held, mut refused) = (0u64, 0u64);
                for _ in 0..ops {
                    let r = next();
                    let start = (r % units as u64) as usize;
                    let len = 1 + ((r >> 16) % 24) as usize;
                    let end = (start + len).min(units);
                    let shared = (r >> 32) % 4 == 0;
                    let mode = if shared { Mode::Shared } else { Mode::Exclusive };
                    let range = start as u64..end as u64;
                    let guard = match (r >> 40) % 3 {
                        0 => lock.try_lock_mode(range, mode),
                        1 => Ok(lock.lock_mode(range, mode)),
                        _ => lock.try_lock_mode_until(
                            range,
                            mode,
                            Instant::now() + Duration::from_micros(200),
                        ),
                    };
                    let Ok(guard) = guard else {
                        refused += 1;
                        continue;
                    };
                    held += 1;
                    let units = start..end;
                    if shared {
                        for u in units.clone() {
                            readers[u].fetch_add(1, Ordering::SeqCst);
                            assert_eq!(owner[u].load(Ordering::SeqCst), 0, "writer under reader");
                        }
                        for _ in 0..(r >> 48) % 64 {
                            core::hint::spin_loop();
                        }
                        for u in units {
                            assert_eq!(owner[u].load(Ordering::SeqCst), 0, "writer under reader");
                            readers[u].fetch_sub(1, Ordering::SeqCst);
                        }
                    } else {
                        for u in units.clone() {
                            assert_eq!(owner[u].swap(id, Ordering::SeqCst), 0, "two writers");
                            assert_eq!(readers[u].load(Ordering::SeqCst), 0, "reader under writer");
                        }
                        for _ in 0..(r >> 48) % 64 {
                            core::hint::spin_loop();
                        }
                        for u in units {
                            assert_eq!(readers[u].load(Ordering::SeqCst), 0, "reader under writer");
                            assert_eq!(
                                owner[u].swap(0, Ordering::SeqCst),
                                id,
                                "writer overwritten"
                            );
                        }
                    }
                    drop(guard);
                }
                (held, refused)
            })
        })
        .collect();
    let mut held = 0;
    for h in handles {
        held += h.join().unwrap().0;
    }
    assert!(held > 0);
    // All released: the whole domain locks.
    let _all = lock.try_lock(0..u64::MAX).unwrap();
}

#[test]
fn nodes_are_recycled() {
    let lock = RangeLock::builder().max_height(4).build();
    for i in 0..20_000u64 {
        let g = if i % 3 == 0 { lock.lock_shared(i..i + 1) } else { lock.lock(i..i + 2) };
        drop(g);
    }
    // One thread, sequential: the retirement batches come back to the pool, so the lock
    // holds a few batches of nodes, not one per acquisition.
    let allocated = lock.raw().allocated_nodes();
    assert!(allocated <= 8 * reclaim::BATCH, "allocated {allocated} nodes for 20000 locks");
}

#[test]
fn forgotten_guards_do_not_break_drop() {
    let lock = RangeLock::new();
    core::mem::forget(lock.lock(0..10));
    core::mem::forget(lock.lock_shared(20..30));
    assert!(lock.try_lock(5..6).is_err());
    assert!(lock.try_lock(25..26).is_err());
    drop(lock); // returns the forgotten nodes to the pool, which frees them
}

/// Takes `range` exclusively through the raw lock and says where its node went.
fn raw_kind(raw: &SkipList, range: Range<u64>) -> (SkipToken, Kind) {
    raw_kind_in(raw, range, Mode::Exclusive)
}

/// Takes a free `range` in `mode` on the raw lock: its token and how it holds.
fn raw_kind_in(raw: &SkipList, range: Range<u64>, mode: Mode) -> (SkipToken, Kind) {
    // On the core (a fresh lock's first hold is a solo one: `solo`).
    raw.core();
    let token = raw.try_lock(range, mode).expect("free range");
    let kind = token.0;
    (token, kind)
}

#[test]
fn ranges_held_in_one_window_leave_another_windows_stripes_fast() {
    // Default geometry: stripes of 16 Ki units, windows of 2048 stripes (32 Mi units).
    let raw = SkipList::new();
    let window = (1u64 << DEFAULT_STRIPE_SHIFT) * DEFAULT_STRIPE_SLOTS as u64;
    // Stripe 0 of window 0: the first range takes its slot, the next ones go to the list
    // and count themselves in that slot.
    let held: Vec<_> = (0..16u64).map(|i| raw_kind(&raw, i * 1024..i * 1024 + 1)).collect();
    assert!(matches!(held[0].1, Kind::Stripe(_)));
    assert!(held[1..].iter().all(|(_, kind)| matches!(kind, Kind::List(_))));
    // Stripe 0 of window 64 used the same slot in the one direct-mapped table: now it has
    // a table of its own, so it holds a slot and skips the list.
    let (far, kind) = raw_kind(&raw, 64 * window..64 * window + 1024);
    assert!(matches!(kind, Kind::Stripe(_)), "{kind:?}");
    assert_eq!(raw.core().stripes.tables_in_use(), 2);
    // SAFETY: every token is this lock's, released once.
    unsafe {
        raw.unlock(far);
        for (token, _) in held {
            raw.unlock(token);
        }
    }
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}

#[test]
fn a_full_window_directory_sends_later_windows_to_the_shared_table() {
    // Stripes of 4 units, windows of 4 stripes (16 units), two window tables; only ranges
    // inside one stripe claim slots (no multi-stripe or coarse claims).
    let raw = RangeLock::builder()
        .stripes(2, 4)
        .windows(2)
        .claim_stripes(1)
        .coarse_claims(false)
        .build_raw();
    let (a, ka) = raw_kind(&raw, 0..4); // window 0: a table of its own
    let (b, kb) = raw_kind(&raw, 16..20); // window 1: the second
    let (c, kc) = raw_kind(&raw, 32..36); // window 2: overflow slot 0
    assert!([ka, kb, kc].iter().all(|k| matches!(k, Kind::Stripe(_))));
    assert_eq!(raw.core().stripes.tables_in_use(), 2);
    // Window 4 shares overflow slot 0 with window 2: slot taken, so the list path, and
    // the two still exclude only what overlaps.
    let (d, kd) = raw_kind(&raw, 64..68);
    assert!(matches!(kd, Kind::List(_)));
    assert!(raw.try_lock(33..34, Mode::Exclusive).is_none());
    assert!(raw.try_lock(67..68, Mode::Shared).is_none());
    assert!(raw.try_lock(3..17, Mode::Exclusive).is_none());
    // A range over three windows checks every table (the wide path).
    assert!(raw.try_lock(20..60, Mode::Shared).is_none());
    let (e, ke) = raw_kind(&raw, 20..32);
    assert!(matches!(ke, Kind::List(_)), "spans stripes");
    assert_eq!(raw.core().stripes.tables_in_use(), 2);
    // With the overflow holder and the list node in 1..40 gone, a range over three windows
    // still meets the holders in window tables (0..4 and 16..20) on the wide path.
    // SAFETY: `c` and `e` are this lock's tokens, released once.
    unsafe {
        raw.unlock(c);
        raw.unlock(e);
    }
    assert!(raw.try_lock(1..40, Mode::Shared).is_none());
    // SAFETY: every token is this lock's, released once.
    unsafe {
        for token in [a, b, d] {
            raw.unlock(token);
        }
    }
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}

#[test]
fn options_are_reported_as_the_built_core_has_them() {
    let builders = [
        RangeLock::builder(),
        RangeLock::builder().windows(0),
        RangeLock::builder().stripes(0, 0),
        RangeLock::builder().stripes(0, 1),
        RangeLock::builder().stripes(12, 8192).windows(8),
        RangeLock::builder().stripes(16, 2).windows(1).max_height(3),
    ];
    for builder in builders {
        let raw = builder.build_raw();
        let before = (raw.stripes(), raw.stripe_windows(), raw.max_height());
        assert!(raw.built().is_none(), "{builder:?}: nothing is built before the first use");
        let core = raw.core();
        let built = ((core.stripes.shift(), core.stripes.len()), core.stripes.windows());
        assert_eq!((before.0, before.1), built, "{builder:?}");
        assert_eq!(before.2, core.list.height(), "{builder:?}");
    }
}

#[test]
fn one_holder_at_a_time_allocates_nothing_and_a_second_builds_the_core() {
    let raw = SkipList::new();
    for mode in [Mode::Exclusive, Mode::Shared, Mode::Exclusive] {
        let token = raw.try_lock(0..u64::MAX, mode).expect("a free lock");
        assert!(matches!(token.0, Kind::Solo(_)), "{:?}", token.0);
        // SAFETY: acquired above, released once.
        unsafe { raw.unlock(token) };
    }
    assert!(raw.built().is_none(), "solo holds build nothing");
    // A second hold while one is on (the same thread's, of a disjoint range) builds the
    // core, which adopts the solo hold: it still excludes, and its release goes to the core.
    let solo = raw.try_lock(0..10, Mode::Exclusive).expect("free");
    assert!(matches!(solo.0, Kind::Solo(_)));
    let other = raw.try_lock(20..30, Mode::Exclusive).expect("disjoint");
    let core: *const Core = raw.built().expect("built by the second hold");
    assert!(!matches!(other.0, Kind::Solo(_)), "{:?}", other.0);
    assert!(raw.try_lock(5..6, Mode::Shared).is_none(), "the adopted hold excludes");
    // SAFETY: acquired above, released once.
    unsafe { raw.unlock(solo) };
    let token = raw.try_lock(5..6, Mode::Exclusive).expect("the adopted hold was released");
    assert!(core::ptr::eq(core, raw.core()), "one core for the lock's life");
    // SAFETY: acquired above, released once each.
    unsafe {
        raw.unlock(token);
        raw.unlock(other);
    }
    assert!(raw.try_lock(0..u64::MAX, Mode::Exclusive).is_some(), "everything released");
}

#[test]
fn a_solo_hold_downgrades_before_and_after_its_adoption() {
    let raw = SkipList::new();
    let w = raw.try_lock(0..10, Mode::Exclusive).expect("free");
    // SAFETY: `w` holds 0..10 exclusively.
    let r = unsafe { raw.downgrade(w, 0..10) };
    assert!(matches!(r.0, Kind::Solo(_)), "{:?}", r.0);
    // A second reader builds the core, which adopts the solo reader as a reader.
    let r2 = raw.try_lock(5..15, Mode::Shared).expect("readers share");
    assert!(raw.try_lock(9..10, Mode::Exclusive).is_none());
    // SAFETY: acquired above, released once each.
    unsafe {
        raw.unlock(r);
        raw.unlock(r2);
    }
    let w = raw.try_lock(0..10, Mode::Exclusive).expect("all released");
    // An exclusive hold on the core downgrades as before; so does an adopted solo hold.
    // SAFETY: `w` holds 0..10 exclusively.
    let r = unsafe { raw.downgrade(w, 0..10) };
    assert!(raw.try_lock(0..1, Mode::Exclusive).is_none());
    assert!(raw.try_lock(0..1, Mode::Shared).is_some_and(|t| {
        // SAFETY: acquired just now.
        unsafe { raw.unlock(t) };
        true
    }));
    // SAFETY: acquired above.
    unsafe { raw.unlock(r) };
    let fresh = SkipList::new();
    let w = fresh.try_lock(0..10, Mode::Exclusive).expect("free");
    let other = fresh.try_lock(20..30, Mode::Exclusive).expect("disjoint: builds, adopts");
    // SAFETY: `w` holds 0..10 exclusively (adopted by the core).
    let r = unsafe { fresh.downgrade(w, 0..10) };
    assert!(!matches!(r.0, Kind::Solo(_)), "{:?}", r.0);
    assert!(fresh.try_lock(3..4, Mode::Exclusive).is_none());
    let r2 = fresh.try_lock(3..4, Mode::Shared).expect("a reader joins the downgraded hold");
    // SAFETY: acquired above, released once each.
    unsafe {
        fresh.unlock(r);
        fresh.unlock(r2);
        fresh.unlock(other);
    }
    assert!(fresh.try_lock(0..u64::MAX, Mode::Exclusive).is_some(), "everything released");
}

/// Threads race to build the core of fresh locks while they lock overlapping ranges (solo,
/// adopted or on the core): one core wins and the ranges exclude each other.
#[test]
fn racing_first_acquisitions_share_one_core() {
    const THREADS: usize = 4;
    for round in 0..200u64 {
        let lock = RangeLock::new();
        let barrier = std::sync::Barrier::new(THREADS);
        let inside = AtomicUsize::new(0);
        let cores: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS as u64)
                .map(|t| {
                    let (lock, barrier, inside) = (&lock, &barrier, &inside);
                    s.spawn(move || {
                        barrier.wait();
                        // Every range covers unit 100 (stripe, claim, coarse or list path).
                        let range = match (t + round) % 4 {
                            0 => 100..101,
                            1 => 0..(1 << 15),
                            2 => 50..(1 << 19),
                            _ => 0..u64::MAX,
                        };
                        let g = lock.lock(range);
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(g);
                        lock.raw().built().map(|c| c as *const Core as usize)
                    })
                })
                .collect();
            // A thread that held alone before any other started may have seen no core.
            handles.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        assert!(cores.windows(2).all(|w| w[0] == w[1]), "one core: {cores:?}");
    }
}

#[test]
fn window_options_are_checked_and_reported() {
    assert_eq!(SkipList::new().stripe_windows(), DEFAULT_STRIPE_WINDOWS);
    assert_eq!(RangeLock::builder().windows(0).build_raw().stripe_windows(), 0);
    assert_eq!(RangeLock::builder().stripes(0, 0).build_raw().stripe_windows(), 0);
    let too_many = std::panic::catch_unwind(|| RangeLock::builder().windows(128).build_raw());
    assert!(too_many.is_err());
    let not_pow2 = std::panic::catch_unwind(|| RangeLock::builder().windows(3).build_raw());
    assert!(not_pow2.is_err());
}

thread_local! {
    /// Stripe acquisitions of this thread that took the slow check (counts not all zero).
    pub(super) static SLOW_CHECKS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

fn slow_checks() -> u64 {
    SLOW_CHECKS.with(|c| c.get())
}

#[test]
fn a_reader_and_a_wide_writer_elsewhere_leave_stripe_holders_on_the_fast_path() {
    // Before counted readers and per-window wide counts, one announced reader or one held
    // wide writer anywhere sent every stripe acquisition of the lock to the slow check.
    // Ranges over two stripes are counted parties only without multi-stripe claims.
    let lock = RangeLock::builder().claim_stripes(1).build();
    let window = (1u64 << DEFAULT_STRIPE_SHIFT) * DEFAULT_STRIPE_SLOTS as u64;
    let stripe = 1u64 << DEFAULT_STRIPE_SHIFT;
    // Across stripes 0 and 1 of window 0: a reader in the table, counted in both slots.
    let reader = lock.lock_shared(stripe - 5..stripe + 5);
    let wide = lock.lock(2 * window..4 * window); // windows 2-3: 4096 stripes
    let before = slow_checks();
    for i in 0..1000u64 {
        let start = 10 * window + i * 1024;
        let g = lock.lock(start..start + 1024);
        drop(g);
    }
    assert_eq!(slow_checks(), before, "stripe holders far from the reader and the wide writer");
    // Next to them the slow check runs, and still tells overlap from disjointness.
    assert!(lock.try_lock(stripe..stripe + 1).is_err(), "overlaps the reader");
    let beside = lock.try_lock(100..200).expect("same stripe as the reader, disjoint");
    assert!(slow_checks() > before);
    assert!(lock.try_lock(3 * window..3 * window + 1).is_err(), "inside the wide range");
    let after = lock.try_lock(4 * window..4 * window + 1).expect("just past the wide range");
    drop((reader, wide, beside, after));
    // With both gone, the counts are zero again: the reader's stripe is fast again.
    let before = slow_checks();
    drop(lock.lock(0..10));
    drop(lock.lock(2 * window..2 * window + 10));
    assert_eq!(slow_checks(), before);
}

#[test]
fn a_waiter_that_times_out_or_is_dropped_leaves_no_trace_on_the_slot() {
    let lock = RangeLock::new();
    let raw = lock.raw();
    let (held, kind) = raw_kind(raw, 0..10);
    let Kind::Stripe(slot) = kind else { panic!("a one-stripe range holds a slot: {kind:?}") };
    let word = stripes::word_of(slot);
    // A blocking waiter spins, counts itself in the slot's waiter count, parks, and times
    // out: its count is gone, so the unlock below takes no wake-up path.
    std::thread::scope(|s| {
        s.spawn(|| {
            let deadline = Instant::now() + Duration::from_millis(30);
            assert!(raw.lock_until(5..6, Mode::Exclusive, deadline).is_none());
        });
    });
    assert_eq!(stripes::waiting_of(slot), 0, "a timed-out waiter uncounts itself");
    // A pending future counts itself too, and its drop uncounts it.
    {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut fut = std::pin::pin!(lock.lock_async(5..6));
        assert!(std::future::Future::poll(fut.as_mut(), &mut cx).is_pending());
        assert_eq!(stripes::waiting_of(slot), 1, "a pending future is counted");
    }
    assert_eq!(stripes::waiting_of(slot), 0, "a dropped future uncounts itself");
    // Nobody set a flag in the word: a counted word's waiters never write it.
    assert_eq!(stripes::word_of(slot), word);
    // SAFETY: `held` is this lock's token, released once.
    unsafe { raw.unlock(held) };
}

#[test]
fn downgrade_lets_readers_in_and_keeps_writers_out() {
    let lock = RangeLock::new();
    // A stripe hold, a list hold (across a stripe boundary) and an already shared guard.
    let stripe = 1u64 << DEFAULT_STRIPE_SHIFT;
    for range in [0..100, stripe - 10..stripe + 10] {
        let w = lock.lock(range.clone());
        assert!(lock.try_lock_shared(range.clone()).is_err());
        let r = w.downgrade();
        assert_eq!(r.mode(), Mode::Shared);
        assert_eq!(r.range(), range);
        let other = lock.try_lock_shared(range.start + 1..range.start + 2).expect("a reader joins");
        assert!(lock.try_lock(range.clone()).is_err(), "a writer is still kept out");
        let again = r.downgrade(); // shared stays shared
        drop((again, other));
        drop(lock.try_lock(range.clone()).expect("everything released"));
    }
}

#[test]
fn a_waiting_writer_does_not_slip_in_at_a_downgrade() {
    // Many rounds of: hold exclusively, let a writer queue up, downgrade, read. The writer
    // checks on entry that no downgraded reader is inside.
    let lock = RangeLock::new();
    let stripe = 1u64 << DEFAULT_STRIPE_SHIFT;
    let reading = AtomicBool::new(false);
    for round in 0..300u64 {
        let range = if round % 2 == 0 { 0..64 } else { stripe - 32..stripe + 32 };
        let w = lock.lock(range.clone());
        let queued = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                queued.store(true, Ordering::SeqCst);
                let g = lock.lock(range.start + 10..range.start + 20);
                assert!(!reading.load(Ordering::SeqCst), "a writer entered a downgraded range");
                drop(g);
            });
            while !queued.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            let r = w.downgrade();
            reading.store(true, Ordering::SeqCst);
            std::hint::black_box(&r);
            reading.store(false, Ordering::SeqCst);
            drop(r);
        });
    }
}

/// A wide writer waiting for part of its range against list writers that keep locking
/// other parts of it. Once its intent is published (at its first wait), a list writer that
/// starts later must not get in before it: the test counts the acquisitions that started
/// after the wide writer's intent and still finished while that intent was up. With the
/// intent check removed, these overtakes grow with the time it waits (hundreds to
/// thousands per round here); with it, at most the few racing the publication.
#[test]
fn a_waiting_wide_writer_is_overtaken_a_bounded_number_of_times() {
    const CHURNERS: usize = 3;
    const ROUNDS: usize = 40;
    // The churners' ranges cross a stripe boundary, so with claims of one stripe and no
    // coarse claims they are list writers, with and without the stripe table. (Claims of
    // several stripes, like one-stripe claims, are not ordered by intents: they cannot
    // delay the wide writer's link, and back off once it is linked; see `intents`.)
    let locks = [
        RangeLock::builder().stripes(0, 0).build(),
        RangeLock::builder().claim_stripes(1).coarse_claims(false).build(),
    ];
    for lock in locks {
        let stripe = lock.raw().stripes().0.min(14);
        let wide_range = 0..64 << stripe;
        let overtakes = AtomicU64::new(0);
        let churned = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let mut worst = 0;
        thread::scope(|s| {
            for c in 0..CHURNERS as u64 {
                let (lock, overtakes, stop, churned) = (&lock, &overtakes, &stop, &churned);
                let wide_range = wide_range.clone();
                s.spawn(move || {
                    let mut i = c;
                    while !stop.load(Ordering::SeqCst) {
                        i = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        // Ranges across a stripe boundary (see above).
                        let at = ((i >> 33) % 60 + 2) << stripe;
                        let arrival = lock.raw().core().intents.next_seq();
                        let g = lock.lock(at - 2..at + 2);
                        if lock
                            .raw()
                            .core()
                            .intents
                            .seq_of(&wide_range)
                            .is_some_and(|w| w < arrival)
                        {
                            overtakes.fetch_add(1, Ordering::SeqCst);
                        }
                        for _ in 0..200 {
                            std::hint::spin_loop();
                        }
                        drop(g);
                        churned.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            for _ in 0..ROUNDS {
                // Every round starts in the middle of the churn.
                let seen = churned.load(Ordering::SeqCst);
                while churned.load(Ordering::SeqCst) < seen + 100 {
                    std::hint::spin_loop();
                }
                overtakes.store(0, Ordering::SeqCst);
                let wide = lock.lock(wide_range.clone());
                worst = worst.max(overtakes.load(Ordering::SeqCst));
                drop(wide);
            }
            stop.store(true, Ordering::SeqCst);
        });
        eprintln!("wide writer overtaken at most {worst} times in {ROUNDS} rounds");
        assert!(worst <= CHURNERS as u64, "overtaken {worst} times");
    }
}

#[test]
fn readers_of_one_stripe_share_its_slot_without_false_conflicts() {
    let raw = SkipList::new();
    raw.core();
    let take = |range: Range<u64>, mode| {
        let token =
            raw.try_lock(range.clone(), mode).unwrap_or_else(|| panic!("{range:?} {mode:?}"));
        let kind = token.0;
        (token, kind)
    };
    let (a, ka) = take(10..20, Mode::Shared);
    let (b, kb) = take(10..20, Mode::Shared); // the same range joins the slot
    let (c, kc) = take(30..40, Mode::Shared); // another range: the reader table
    assert!(matches!(ka, Kind::StripeShared(_)) && ka == kb, "{ka:?} {kb:?}");
    assert!(matches!(kc, Kind::Shared(_)), "{kc:?}");
    // Exact: a writer between the readers holds; one overlapping either does not.
    let (d, kd) = take(20..30, Mode::Exclusive);
    assert!(matches!(kd, Kind::List(_)), "the slot is the readers': {kd:?}");
    assert!(raw.try_lock(15..16, Mode::Exclusive).is_none());
    assert!(raw.try_lock(35..36, Mode::Exclusive).is_none());
    // SAFETY: every token is this lock's, released once.
    unsafe {
        raw.unlock(a);
        assert!(raw.try_lock(15..16, Mode::Exclusive).is_none(), "one reader is left");
        raw.unlock(b);
        let (e, ke) = take(15..16, Mode::Exclusive);
        assert!(matches!(ke, Kind::Stripe(_)), "the last reader freed the slot: {ke:?}");
        for token in [c, d, e] {
            raw.unlock(token);
        }
    }
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}

/// Stripes of 16 units, windows of 8 stripes (128 units), claims of up to 8 stripes.
fn sixteen_unit_stripes() -> SkipList {
    RangeLock::builder().stripes(4, 8).windows(2).build_raw()
}

#[test]
fn a_range_over_a_few_stripes_claims_each_slot_with_its_exact_piece() {
    let raw = sixteen_unit_stripes();
    // Stripes 0..=3, pieces 10..16, 16..32, 32..48 and 48..50.
    let (held, kind) = raw_kind(&raw, 10..50);
    let Kind::Stripes(claimed) = kind else { panic!("a claim of four slots: {kind:?}") };
    assert_eq!(claimed.len, 4);
    // Each piece excludes exactly its units: the ends of the first and last stripes are
    // free (list path: the slots are taken, the check reads the pieces).
    for free in [0..10, 50..64] {
        let t = raw.try_lock(free.clone(), Mode::Exclusive).expect("outside 10..50");
        // SAFETY: this lock's token, released once.
        unsafe { raw.unlock(t) };
    }
    for taken in [9..11, 15..17, 31..33, 49..50, 20..21, 0..64] {
        assert!(raw.try_lock(taken.clone(), Mode::Exclusive).is_none(), "{taken:?}");
        assert!(raw.try_lock(taken.clone(), Mode::Shared).is_none(), "{taken:?}");
    }
    // SAFETY: this lock's token, released once.
    unsafe { raw.unlock(held) };
    let (all, kind) = raw_kind(&raw, 0..128);
    assert!(matches!(kind, Kind::Stripes(Claimed { len: 8, .. })), "the whole window: {kind:?}");
    // SAFETY: as above.
    unsafe { raw.unlock(all) };
}

#[test]
fn ranges_past_the_claim_limit_or_a_window_take_the_list() {
    let raw = RangeLock::builder().stripes(4, 8).windows(2).coarse_claims(false).build_raw();
    let (a, ka) = raw_kind(&raw, 0..129); // 9 stripes
    let (b, kb) = raw_kind(&raw, 250..260); // stripes 15 and 16: windows 1 and 2
    assert!(matches!(ka, Kind::List(_)) && matches!(kb, Kind::List(_)), "{ka:?} {kb:?}");
    let one = RangeLock::builder().stripes(4, 8).claim_stripes(1).coarse_claims(false).build_raw();
    let (c, kc) = raw_kind(&one, 10..20);
    assert!(matches!(kc, Kind::List(_)), "claims of one stripe only: {kc:?}");
    // SAFETY: this lock's tokens, released once.
    unsafe {
        raw.unlock(a);
        raw.unlock(b);
        one.unlock(c);
    }
    let too_wide = std::panic::catch_unwind(|| RangeLock::builder().claim_stripes(65).build_raw());
    let zero = std::panic::catch_unwind(|| RangeLock::builder().claim_stripes(0).build_raw());
    assert!(too_wide.is_err() && zero.is_err());
}

#[test]
fn a_claim_that_meets_a_taken_slot_gives_back_the_slots_it_took() {
    let raw = sixteen_unit_stripes();
    let (mid, _) = raw_kind(&raw, 40..41); // stripe 2's slot
                                           // 10..50 claims stripes 0 and 1, fails on 2, frees 0 and 1, and fails on the list.
    assert!(raw.try_lock(10..50, Mode::Exclusive).is_none());
    assert!(raw.try_lock(10..50, Mode::Shared).is_none());
    // The slots of stripes 0 and 1 are free again: a range there claims them.
    let (again, kind) = raw_kind(&raw, 5..30);
    assert!(matches!(kind, Kind::Stripes(Claimed { len: 2, .. })), "{kind:?}");
    // SAFETY: this lock's tokens, released once.
    unsafe {
        raw.unlock(again);
        raw.unlock(mid);
    }
}

#[test]
fn readers_of_one_multi_stripe_range_share_its_slots() {
    let raw = sixteen_unit_stripes();
    let shared = |range| raw_kind_in(&raw, range, Mode::Shared);
    let (a, ka) = shared(10..50);
    let (b, kb) = shared(10..50);
    assert!(matches!(ka, Kind::StripesShared(Claimed { len: 4, .. })) && ka == kb, "{ka:?}");
    // A reader of another range whose middle piece is a whole stripe too joins that slot
    // (the same piece, 16..32) but not the others: it goes to the reader table.
    let (c, kc) = shared(16..40);
    assert!(matches!(kc, Kind::Shared(_)), "{kc:?}");
    let w = raw.try_lock(50..60, Mode::Exclusive).expect("beside the readers");
    // SAFETY: this lock's tokens, released once.
    unsafe {
        raw.unlock(w);
        raw.unlock(a);
        assert!(raw.try_lock(40..41, Mode::Exclusive).is_none(), "one reader is left");
        raw.unlock(b);
        raw.unlock(c);
    }
    let (e, ke) = raw_kind(&raw, 10..50);
    assert!(matches!(ke, Kind::Stripes(_)), "the last readers freed every slot: {ke:?}");
    // SAFETY: as above.
    unsafe { raw.unlock(e) };
}

#[test]
fn a_shared_range_over_more_stripes_than_the_shared_limit_takes_a_coarse_claim() {
    // Claims of up to 8 stripes; readers' limit: 4 (with coarse claims on).
    let raw = sixteen_unit_stripes();
    assert_eq!(stripes::SHARED_CLAIM_STRIPES, 4);
    let shared = |range| raw_kind_in(&raw, range, Mode::Shared);
    let (four, k4) = shared(0..64); // stripes 0..=3
    assert!(matches!(k4, Kind::StripesShared(Claimed { len: 4, .. })), "{k4:?}");
    let (five, k5) = shared(256..336); // stripes 16..=20: five
    assert!(matches!(k5, Kind::CoarseShared { start: 256, two: false, .. }), "{k5:?}");
    // Exclusive ranges keep the lock's limit: five stripes are a stripe claim.
    let (x, kx) = raw_kind(&raw, 512..592);
    assert!(matches!(kx, Kind::Stripes(Claimed { len: 5, .. })), "{kx:?}");
    // The coarse reader excludes writers of its range and admits readers.
    assert!(raw.try_lock(300..301, Mode::Exclusive).is_none());
    let (r, _) = shared(300..301);
    // SAFETY: this lock's tokens, released once.
    unsafe {
        for t in [r, x, five, four] {
            raw.unlock(t);
        }
    }
    // Without coarse claims, readers keep the lock's limit.
    let plain = RangeLock::builder().stripes(4, 16).claim_stripes(8).coarse_claims(false);
    let plain = plain.build_raw();
    let (five, k5) = raw_kind_in(&plain, 256..336, Mode::Shared);
    assert!(matches!(k5, Kind::StripesShared(Claimed { len: 5, .. })), "{k5:?}");
    // SAFETY: as above.
    unsafe { plain.unlock(five) };
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}

#[test]
fn a_range_too_wide_for_a_claim_holds_its_coarse_slot_exactly() {
    // Coarse stripes of 64 x 16 = 1024 units, 2 slots a table.
    let raw = sixteen_unit_stripes();
    let (wide, kind) = raw_kind(&raw, 0..129); // 9 stripes, windows 0 and 1
    assert!(matches!(kind, Kind::Coarse { start: 0, two: false, .. }), "{kind:?}");
    // Holders next to it: a stripe holder of window 1 (counted over, so it searches, and
    // reads the coarse piece exactly).
    let before = slow_checks();
    let (beside, kb) = raw_kind(&raw, 129..140);
    assert!(matches!(kb, Kind::Stripe(_)) && slow_checks() > before, "{kb:?}");
    for taken in [128..129, 0..1, 60..70, 100..200] {
        assert!(raw.try_lock(taken.clone(), Mode::Exclusive).is_none(), "{taken:?}");
        assert!(raw.try_lock(taken.clone(), Mode::Shared).is_none(), "{taken:?}");
    }
    // Another wide range in the same coarse stripe: its claim fails, the list path reads
    // the coarse piece and holds beside it.
    let (other, ko) = raw_kind(&raw, 300..500);
    assert!(matches!(ko, Kind::List(_)), "{ko:?}");
    // SAFETY: this lock's tokens, released once.
    unsafe {
        raw.unlock(other);
        raw.unlock(beside);
        raw.unlock(wide);
    }
    // Uncounted: a stripe holder of window 0 is fast again.
    let before = slow_checks();
    let (again, _) = raw_kind(&raw, 20..30);
    assert_eq!(slow_checks(), before);
    // SAFETY: as above.
    unsafe { raw.unlock(again) };
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}

#[test]
fn coarse_readers_share_and_exclude_writers() {
    let raw = sixteen_unit_stripes();
    let shared = |range| raw_kind_in(&raw, range, Mode::Shared);
    let (a, ka) = shared(0..250);
    let (b, kb) = shared(0..250); // joins the same coarse piece
    assert!(matches!(ka, Kind::CoarseShared { .. }) && ka == kb, "{ka:?} {kb:?}");
    let (c, _) = shared(10..20); // a reader inside: fine slot
    assert!(raw.try_lock(249..250, Mode::Exclusive).is_none());
    assert!(raw.try_lock(0..1000, Mode::Exclusive).is_none());
    let w = raw.try_lock(250..251, Mode::Exclusive).expect("beside the readers");
    // SAFETY: this lock's tokens, released once.
    unsafe {
        raw.unlock(w);
        raw.unlock(a);
        raw.unlock(c);
        assert!(raw.try_lock(200..210, Mode::Exclusive).is_none(), "one reader is left");
        raw.unlock(b);
    }
    let (e, ke) = raw_kind(&raw, 0..250);
    assert!(matches!(ke, Kind::Coarse { .. }), "the last reader freed the coarse slot: {ke:?}");
    // SAFETY: as above.
    unsafe { raw.unlock(e) };
}

#[test]
fn a_coarse_hold_over_two_coarse_stripes_keeps_its_exact_range_in_a_small_token() {
    // The token keeps the first coarse slot and the start; the end comes back from the
    // last slot's word at release.
    assert_eq!(core::mem::size_of::<SkipToken>(), 24);
    // Coarse stripes of 1024 units: 900..1100 (13 stripes, windows 3 and 4) takes both
    // coarse slots of coarse stripes 0 and 1.
    let raw = sixteen_unit_stripes();
    for mode in [Mode::Exclusive, Mode::Shared] {
        let (held, kind) = raw_kind_in(&raw, 900..1100, mode);
        assert!(
            matches!(
                kind,
                Kind::Coarse { start: 900, two: true, .. }
                    | Kind::CoarseShared { start: 900, two: true, .. }
            ),
            "{kind:?}"
        );
        for taken in [900..901, 1023..1025, 1099..1100] {
            assert!(raw.try_lock(taken.clone(), Mode::Exclusive).is_none(), "{taken:?}");
        }
        for free in [899..900, 1100..1101] {
            let beside = raw.try_lock(free.clone(), Mode::Exclusive).expect("beside the hold");
            // SAFETY: this lock's token, released once.
            unsafe { raw.unlock(beside) };
        }
        // SAFETY: as above.
        unsafe { raw.unlock(held) };
        // Uncounted exactly: a stripe holder of either window is fast again.
        for inside in [950..951, 1090..1091] {
            let before = slow_checks();
            let (again, _) = raw_kind(&raw, inside.clone());
            assert_eq!(slow_checks(), before, "{inside:?} {mode:?}");
            // SAFETY: as above.
            unsafe { raw.unlock(again) };
        }
    }
    let _all = raw.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
}
