//! Leak check of `RangeLock`: a counting global allocator sees every node, segment, epoch
//! action and batch; after the guards and the lock are gone, the live allocation count is
//! back where it started.
//!
//! One test in this binary, so no other test allocates concurrently. All lock traffic runs
//! on spawned threads that exit before the count is read (their thread-locals are freed).
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use rangelock::{Mode, RangeLock};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::SeqCst);
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const THREADS: usize = 4;

/// Mixed traffic: exclusive and shared, try/blocking/timeout, several ranges held at once,
/// contention on a small domain (so waiters park and writers drain readers).
fn workload() {
    let lock = Arc::new(RangeLock::builder().max_height(6).build());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (lock, barrier) = (Arc::clone(&lock), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                let mut x = 0x1234_5678_9ABC_DEF1_u64 + t as u64;
                for i in 0..3000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let start = x % 64;
                    let range = start..start + 1 + (x >> 8) % 8;
                    let mode = if (x >> 20) % 3 == 0 { Mode::Shared } else { Mode::Exclusive };
                    match i % 3 {
                        0 => drop(lock.lock_mode(range, mode)),
                        1 => drop(lock.try_lock_mode(range, mode)),
                        _ => drop(lock.try_lock_mode_until(
                            range,
                            mode,
                            std::time::Instant::now() + Duration::from_micros(50),
                        )),
                    }
                }
                // Hold many shared ranges at once (grows the announcement table).
                let held: Vec<_> =
                    (0..200u64).map(|i| lock.lock_shared(1000 + i..1010 + i)).collect();
                drop(held);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let lock = Arc::into_inner(lock).expect("all threads joined");
    assert!(lock.raw().allocated_nodes() > 0);
    // Forgotten guards leave their nodes linked/announced; dropping the lock frees them too.
    std::mem::forget(lock.lock(5000..5001));
    std::mem::forget(lock.lock_shared(6000..6001));
    drop(lock);
    windows();
}

/// Window tables: a lock with 16-unit windows and two window tables, used over sixteen
/// windows (two tables of their own, the rest in the overflow table), with forgotten
/// stripe guards in both kinds of table; and a default lock touching three windows far
/// apart (three 32 KiB tables).
fn windows() {
    let lock = RangeLock::builder().stripes(2, 4).windows(2).build();
    for start in (0..256u64).step_by(3) {
        drop(lock.lock(start..start + 2));
    }
    std::mem::forget(lock.lock(0..2)); // window 0: its own table
    std::mem::forget(lock.lock(100..102)); // window 6: the overflow table
    drop(lock);
    let lock = RangeLock::new();
    for w in [0u64, 7, 1 << 20] {
        let start = w << 25;
        drop(lock.lock(start..start + 1024));
    }
    std::mem::forget(lock.lock(7 << 25..(7 << 25) + 1));
    drop(lock);
}

/// `parking_lot_core` sizes its global hash table by the number of threads that have
/// parked so far and leaks the old table when it grows (by design: other threads may still
/// read it). Make it big enough for this test up front by having many threads alive at once
/// that all went through `park`.
fn grow_parking_lot_table() {
    let barrier = Arc::new(Barrier::new(4 * THREADS));
    let handles: Vec<_> = (0..4 * THREADS)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let key = &barrier as *const _ as usize;
                // SAFETY: no callback panics or re-enters the parking lot; `validate` refuses
                // to sleep, so this only registers the thread with the parking lot.
                unsafe {
                    parking_lot_core::park(
                        key,
                        || false,
                        || {},
                        |_, _| {},
                        parking_lot_core::DEFAULT_PARK_TOKEN,
                        None,
                    );
                }
                barrier.wait();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn skiplist_no_leak_after_guards_and_lock_drop() {
    // Warm-up: lazily initialized process-wide state (the parking lot's hash table, thread
    // spawning caches) is allocated once and never freed; it must not count.
    grow_parking_lot_table();
    workload();
    let live = LIVE.load(Ordering::SeqCst);
    let bytes = LIVE_BYTES.load(Ordering::SeqCst);
    for _ in 0..3 {
        workload();
    }
    assert_eq!(LIVE.load(Ordering::SeqCst), live, "allocations leaked");
    assert_eq!(LIVE_BYTES.load(Ordering::SeqCst), bytes, "bytes leaked");
}
