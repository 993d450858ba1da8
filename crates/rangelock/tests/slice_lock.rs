//! `SliceLock` under contention: every write goes through a guard's `&mut [T]`, and the
//! checks would see any two guards that reached the same element at once.
//!
//! Each element is a `(owner, count)` pair. An exclusive holder stamps its id over its
//! elements, re-reads them after a pause (another writer inside would have overwritten a
//! stamp) and bumps each count with a plain, non-atomic add (a lost update shows in the
//! final sum). A shared holder checks that no element changes while it holds. At the end
//! the counts must add up to exactly the elements the writers held.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use rangelock::{SliceError, SliceLock};

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
