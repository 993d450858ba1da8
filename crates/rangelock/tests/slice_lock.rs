//! `SliceLock` under contention: every write goes through a guard's `&mut [T]`, and the
//! checks would see any two guards that reached the same element at once.
//!
//! Each element is a `(owner, count)` pair. An exclusive holder stamps its id over its
//! elements, re-reads them after a pause (another writer inside would have overwritten a
//! stamp) and bumps each count with a plain, non-atomic add (a lost update shows in the
//! final sum). A shared holder checks that no element changes while it holds. At the end
//! the counts must add up to exactly the elements the writers held.
#![cfg(not(loom))]

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rangelock::{Mode, SliceError, SliceLock, SlicePart};

const ELEMENTS: usize = 192;
const THREADS: u64 = 6;
const OPS: u64 = if cfg!(debug_assertions) { 3_000 } else { 20_000 };

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Cell {
    owner: u64,
    count: u64,
}

/// SplitMix64, for the threads' ranges.
fn next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn pause(x: &mut u64) {
    for _ in 0..next(x) % 64 {
        std::hint::spin_loop();
    }
    if next(x) % 16 == 0 {
        thread::yield_now();
    }
}

#[test]
fn guards_never_alias() {
    let data = SliceLock::new(vec![Cell::default(); ELEMENTS]);
    let written = AtomicU64::new(0);
    thread::scope(|s| {
        for id in 1..=THREADS {
            let (data, written) = (&data, &written);
            s.spawn(move || {
                let mut x = id;
                for _ in 0..OPS {
                    let start = (next(&mut x) % ELEMENTS as u64) as usize;
                    let len = 1 + (next(&mut x) % 24) as usize;
                    let range = start..(start + len).min(ELEMENTS);
                    match next(&mut x) % 4 {
                        0 => {
                            let seen = data.lock_shared(range.clone());
                            let before: Vec<Cell> = seen.to_vec();
                            pause(&mut x);
                            assert_eq!(
                                &seen[..],
                                &before[..],
                                "a writer inside a read of {range:?}"
                            );
                        }
                        k => {
                            let guard = match k {
                                1 => Some(data.lock(range.clone())),
                                2 => match data.try_lock(range.clone()) {
                                    Ok(g) => Some(g),
                                    Err(SliceError::WouldBlock) => None,
                                    Err(e) => panic!("{e}"),
                                },
                                _ => data
                                    .try_lock_for(
                                        range.clone(),
                                        std::time::Duration::from_millis(5),
                                    )
                                    .ok(),
                            };
                            let Some(mut cells) = guard else { continue };
                            assert_eq!(cells.len(), range.len());
                            for c in cells.iter_mut() {
                                c.owner = id;
                            }
                            pause(&mut x);
                            for c in cells.iter_mut() {
                                assert_eq!(c.owner, id, "another writer inside {range:?}");
                                c.count += 1;
                            }
                            written.fetch_add(range.len() as u64, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let total: u64 = data.into_inner().iter().map(|c| c.count).sum();
    assert_eq!(total, written.load(Ordering::Relaxed), "lost updates: guards aliased");
}

/// The stamp check catches overlapping writers: the same loop with writers that take
/// *shared* guards (which overlap by design) and stamp through atomics sees foreign stamps.
#[test]
fn the_checks_catch_overlapping_writers() {
    let data = SliceLock::new((0..16).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let foreign = AtomicU64::new(0);
    thread::scope(|s| {
        for id in 1..=2u64 {
            let (data, foreign) = (&data, &foreign);
            s.spawn(move || {
                let mut x = id;
                for _ in 0..20_000 {
                    let cells = data.lock_shared(4..12); // the "broken lock": both get in
                    for c in cells.iter() {
                        c.store(id, Ordering::Relaxed);
                    }
                    pause(&mut x);
                    if cells.iter().any(|c| c.load(Ordering::Relaxed) != id) {
                        foreign.fetch_add(1, Ordering::Relaxed);
                    }
                    if foreign.load(Ordering::Relaxed) > 0 {
                        break;
                    }
                }
            });
        }
    });
    assert!(foreign.load(Ordering::Relaxed) > 0, "overlapping writers were never seen");
}

/// Stamps `id` over `cells`, pauses, checks no other writer overwrote a stamp, and counts
/// each element once; returns how many were written.
fn stamp(cells: &mut [Cell], id: u64, x: &mut u64, what: &str) -> u64 {
    for c in cells.iter_mut() {
        c.owner = id;
    }
    pause(x);
    for c in cells.iter_mut() {
        assert_eq!(c.owner, id, "another writer inside a {what} guard");
        c.count += 1;
    }
    cells.len() as u64
}

/// The owned, async and many-range forms keep writers apart too: each holder stamps its id
/// over its elements and checks them, and the counts add up to exactly what was written.
#[test]
fn owned_async_and_many_guards_never_alias() {
    let data = Arc::new(SliceLock::new(vec![Cell::default(); ELEMENTS]));
    let written = Arc::new(AtomicU64::new(0));
    let ops = OPS / 4;
    let threads: Vec<_> = (1..=THREADS)
        .map(|id| {
            let (data, written) = (Arc::clone(&data), Arc::clone(&written));
            thread::spawn(move || {
                let rt =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let mut x = id * 7919;
                let pick = |x: &mut u64| -> Range<usize> {
                    let start = (next(x) % ELEMENTS as u64) as usize;
                    start..(start + 1 + (next(x) % 24) as usize).min(ELEMENTS)
                };
                for _ in 0..ops {
                    let range = pick(&mut x);
                    let n = match next(&mut x) % 7 {
                        0 => stamp(&mut data.lock_owned(range), id, &mut x, "lock_owned"),
                        1 => match data.try_lock_owned_for(range, Duration::from_millis(2)) {
                            Ok(mut g) => stamp(&mut g, id, &mut x, "try_lock_owned_for"),
                            Err(SliceError::TimedOut) => 0,
                            Err(e) => panic!("{e}"),
                        },
                        2 => {
                            let mut g = rt.block_on(data.lock_async(range));
                            stamp(&mut g, id, &mut x, "lock_async")
                        }
                        3 => {
                            let deadline = Instant::now() + Duration::from_millis(2);
                            match rt.block_on(data.try_lock_async_until(range, deadline)) {
                                Ok(mut g) => stamp(&mut g, id, &mut x, "try_lock_async_until"),
                                Err(SliceError::TimedOut) => 0,
                                Err(e) => panic!("{e}"),
                            }
                        }
                        4 => {
                            // Two disjoint parts, one written and one read.
                            let (a, b) = (range.start / 2, range.start.div_ceil(2) + ELEMENTS / 2);
                            let b = b.min(ELEMENTS - 1);
                            let request = [(a..a + 1, Mode::Exclusive), (b..b + 1, Mode::Shared)];
                            let mut both = data.lock_many(&request);
                            let n = stamp(both.get_mut(0).expect("exclusive"), id, &mut x, "many");
                            let seen = both.get(1).to_vec();
                            pause(&mut x);
                            assert_eq!(both.get(1), seen, "a writer inside a shared part");
                            n
                        }
                        5 => {
                            let seen = data.lock_shared_owned(range);
                            let before = seen.to_vec();
                            pause(&mut x);
                            assert_eq!(
                                &seen[..],
                                &before[..],
                                "a writer inside a shared owned guard"
                            );
                            0
                        }
                        _ => {
                            let seen = rt.block_on(data.lock_shared_async(range));
                            let before = seen.to_vec();
                            pause(&mut x);
                            assert_eq!(
                                &seen[..],
                                &before[..],
                                "a writer inside a shared async guard"
                            );
                            0
                        }
                    };
                    written.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let data = Arc::try_unwrap(data).expect("every owned guard was dropped");
    let total: u64 = data.into_inner().iter().map(|c| c.count).sum();
    assert_eq!(total, written.load(Ordering::Relaxed), "lost updates: guards aliased");
}

/// Every form of `SliceLock` answers what it should: owned guards move into threads, the
/// parts of a many-range guard are exactly their elements, and bad ranges are
/// `SliceError`s in element indices.
#[test]
fn every_slice_form_reaches_exactly_its_elements() {
    let data = Arc::new(SliceLock::new((0..100u32).collect::<Vec<_>>()));
    let mut owned = data.lock_owned(10..20);
    assert_eq!(owned.range(), 10..20);
    assert_eq!(data.try_lock_shared(15..16).unwrap_err(), SliceError::WouldBlock);
    assert_eq!(
        data.try_lock_shared_owned_for(15..16, Duration::from_millis(1)).unwrap_err(),
        SliceError::TimedOut
    );
    thread::spawn(move || owned.fill(0)).join().unwrap();
    let reader = data.try_lock_shared_owned(5..15).expect("the owned guard was dropped");
    assert_eq!(reader[..], [5, 6, 7, 8, 9, 0, 0, 0, 0, 0]);
    assert_eq!(data.try_lock_owned(14..15).unwrap_err(), SliceError::WouldBlock);
    drop(reader);

    let request = vec![(90..95, Mode::Shared), (0..2, Mode::Exclusive)];
    let mut many = data.try_lock_many(&request).expect("free");
    assert_eq!(
        many.ranges().collect::<Vec<_>>(),
        [(0..2, Mode::Exclusive), (90..95, Mode::Shared)]
    );
    many.get_mut(0).expect("exclusive").copy_from_slice(&[7, 7]);
    assert_eq!(many.get(1), [90, 91, 92, 93, 94]);
    assert_eq!(
        data.try_lock_many_for(&request, Duration::from_millis(1)).unwrap_err(),
        SliceError::TimedOut
    );
    let parts = many.into_parts();
    assert!(matches!(&parts[..], [SlicePart::Exclusive(w), SlicePart::Shared(r)]
        if w[..] == [7, 7] && r.range() == (90..95)));
    drop(parts);

    assert_eq!(
        data.try_lock_many([(0..10, Mode::Shared), (5..15, Mode::Shared)]).unwrap_err(),
        SliceError::Overlapping { first: (0, 10), second: (5, 15) }
    );
    assert_eq!(
        data.try_lock_many_until([(0..1, Mode::Shared), (99..101, Mode::Shared)], Instant::now())
            .unwrap_err(),
        SliceError::OutOfBounds { range: (99, 101), len: 100 }
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(data.try_lock_shared_async_for(95..=100, Duration::from_secs(1)));
    assert_eq!(err.unwrap_err(), SliceError::OutOfBounds { range: (95, 101), len: 100 });
    let w = data.lock(0..1);
    let late = rt.block_on(data.try_lock_async_for(0..1, Duration::from_millis(1)));
    assert_eq!(late.unwrap_err(), SliceError::TimedOut);
    drop(w);
    assert_eq!(rt.block_on(data.lock_shared_async(..2))[..], [7, 7]);
    assert_eq!(Arc::try_unwrap(data).expect("no guard left").into_inner()[..3], [7, 7, 2]);
}
