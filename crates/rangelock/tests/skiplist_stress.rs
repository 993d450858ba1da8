//! Multi-threaded exclusivity stress of `RangeLock` with batches (thesis W2 shape): every
//! thread holds up to 16 ranges at once, writes its id over the units of its exclusive
//! ranges and checks them before release; shared holders check that no writer is inside.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use rangelock::{Mode, RangeLock};

const UNITS: u64 = 512;
const THREADS: usize = 4;
const BATCHES: usize = 300;
const BATCH: usize = 16;

#[test]
fn skiplist_batched_stress_exclusive_and_shared() {
    let lock = Arc::new(RangeLock::new());
    // owner[u]: id of the exclusive holder of unit u (0: none); readers[u]: shared holders.
    let owner: Arc<Vec<AtomicU64>> = Arc::new((0..UNITS).map(|_| AtomicU64::new(0)).collect());
    let readers: Arc<Vec<AtomicU64>> = Arc::new((0..UNITS).map(|_| AtomicU64::new(0)).collect());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (lock, owner, readers, barrier) =
                (Arc::clone(&lock), Arc::clone(&owner), Arc::clone(&readers), Arc::clone(&barrier));
            thread::spawn(move || {
                let id = t as u64 + 1;
                let mut x = 0xA076_1D64_78BD_642F_u64 ^ id.wrapping_mul(0xE703_7ED1_A0B4_28DB);
                barrier.wait();
                let mut granted = 0u64;
                for _ in 0..BATCHES {
                    let mut held = Vec::with_capacity(BATCH);
                    for _ in 0..BATCH {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let start = x % UNITS;
                        let end = (start + 1 + (x >> 16) % 16).min(UNITS);
                        let mode = if (x >> 32) % 5 == 0 { Mode::Shared } else { Mode::Exclusive };
                        // try_lock only: holding some ranges while blocking on another could
                        // deadlock with any range lock.
                        let Ok(guard) = lock.try_lock_mode(start..end, mode) else { continue };
                        granted += 1;
                        for u in start..end {
                            let u = u as usize;
                            match mode {
                                Mode::Exclusive => {
                                    assert_eq!(
                                        owner[u].swap(id, Ordering::SeqCst),
                                        0,
                                        "two writers"
                                    );
                                    assert_eq!(
                                        readers[u].load(Ordering::SeqCst),
                                        0,
                                        "reader inside"
                                    );
                                }
                                Mode::Shared => {
                                    readers[u].fetch_add(1, Ordering::SeqCst);
                                    assert_eq!(owner[u].load(Ordering::SeqCst), 0, "writer inside");
                                }
                            }
                        }
                        held.push(guard);
                    }
                    for guard in held.into_iter().rev() {
                        for u in guard.range() {
                            let u = u as usize;
                            match guard.mode() {
                                Mode::Exclusive => {
                                    assert_eq!(
                                        readers[u].load(Ordering::SeqCst),
                                        0,
                                        "reader inside"
                                    );
                                    assert_eq!(
                                        owner[u].swap(0, Ordering::SeqCst),
                                        id,
                                        "overwritten"
                                    );
                                }
                                Mode::Shared => {
                                    assert_eq!(owner[u].load(Ordering::SeqCst), 0, "writer inside");
                                    readers[u].fetch_sub(1, Ordering::SeqCst);
                                }
                            }
                        }
                        drop(guard);
                    }
                }
                granted
            })
        })
        .collect();
    let granted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(granted > 0);
    let _all = lock.try_lock(0..u64::MAX).expect("everything released");
}
