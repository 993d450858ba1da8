//! Unit and stress tests of the lock (the loom models are in `loom_tests`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::clock::{inhibit_until, now_ticks};
use crate::table::mix64;
use crate::{Bravo, VisibleReaders};
use std::sync::atomic::AtomicUsize;
use std::sync::Barrier;
use std::thread;

#[test]
fn read_then_write_roundtrip() {
    let lock = Bravo::with_table(5u64, Arc::new(VisibleReaders::new(64)));
    {
        let r = lock.read();
        assert!(r.is_fast_path(), "a fresh lock is read-biased");
        assert_eq!(*r, 5);
    }
    *lock.write() += 1;
    assert_eq!(*lock.read(), 6);
    assert_eq!(lock.into_inner(), 6);
}

#[test]
fn table_rounds_up_to_power_of_two() {
    assert_eq!(VisibleReaders::new(0).len(), 1);
    assert_eq!(VisibleReaders::new(100).len(), 128);
    assert_eq!(VisibleReaders::new(4096).len(), 4096);
}

#[test]
fn inhibit_window_is_nine_times_revocation() {
    assert_eq!(inhibit_until(100, 110), 110 + 90);
    assert_eq!(inhibit_until(7, 7), 7);
    assert_eq!(inhibit_until(0, u64::MAX), u64::MAX);
}

#[test]
fn collision_falls_back_to_slow_path() {
    // One slot: the second reader (another lock, or a nested read) cannot publish.
    let table = Arc::new(VisibleReaders::new(1));
    let a = Bravo::with_table(1u8, table.clone());
    let b = Bravo::with_table(2u8, table.clone());
    let ra = a.read();
    assert!(ra.is_fast_path());
    let rb = b.read();
    assert!(!rb.is_fast_path(), "slot taken by lock a");
    assert_eq!((*ra, *rb), (1, 2));
    assert_eq!(table.occupied(), 1);
    drop(ra);
    drop(rb);
    assert_eq!(table.occupied(), 0, "fast readers clear their slot");
    assert!(b.read().is_fast_path());
}

#[test]
fn try_write_revokes_bias_but_fails_while_fast_reader_present() {
    let table = Arc::new(VisibleReaders::new(64));
    let lock = Bravo::with_table(0u32, table.clone());
    let r = lock.read();
    assert!(r.is_fast_path());
    assert!(lock.try_write().is_none(), "a fast reader is published");
    assert!(!lock.is_read_biased(), "the failed attempt revoked the bias");
    // New readers now take the slow path.
    let r2 = lock.read();
    assert!(!r2.is_fast_path());
    assert!(lock.try_write().is_none(), "slow reader holds the underlying lock");
    drop(r);
    drop(r2);
    *lock.try_write().expect("no readers left") = 9;
    assert_eq!(table.occupied(), 0);
    assert_eq!(*lock.read(), 9);
}

/// The revocation path: a writer arriving while a fast-path reader holds the lock
/// clears the bias, waits for the reader to leave (it cannot finish before), sets an
/// inhibition window, and later slow readers re-enable the bias once it has passed.
#[test]
fn writer_revokes_bias_and_waits_for_fast_reader() {
    let table = Arc::new(VisibleReaders::new(64));
    let lock = Bravo::with_table(0u64, table.clone());
    let done = AtomicBool::new(false);
    let before = now_ticks();
    thread::scope(|s| {
        let r = lock.read();
        assert!(r.is_fast_path());
        let writer = s.spawn(|| {
            let mut w = lock.write();
            *w = 42;
            done.store(true, Ordering::SeqCst);
        });
        // Wait (by observing state, not by time) until the writer has revoked the bias.
        while lock.is_read_biased() {
            thread::yield_now();
        }
        // The writer is inside `revoke`, waiting for our slot: it cannot have finished.
        assert!(!done.load(Ordering::SeqCst), "writer ran while a fast reader held");
        assert_eq!(*r, 0);
        drop(r);
        writer.join().unwrap();
    });
    assert!(done.load(Ordering::SeqCst));
    let until = lock.inhibit_until.load(Ordering::Relaxed);
    assert!(until >= before, "revocation sets the inhibition window");
    // Slow readers re-enable the bias once the window has passed.
    loop {
        let r = lock.read();
        assert_eq!(*r, 42);
        if lock.is_read_biased() {
            assert!(now_ticks() >= until, "bias re-enabled inside the window");
            break;
        }
        assert!(!r.is_fast_path());
        drop(r);
        thread::yield_now();
    }
    assert!(lock.read().is_fast_path());
}

/// Readers check an invariant (all words equal) that writers break and restore under
/// the write lock; a small table forces collisions and both read paths.
fn stress(table_slots: usize, threads: usize, iters: usize, write_every: usize) -> usize {
    let table = Arc::new(VisibleReaders::new(table_slots));
    let lock = Bravo::with_table([0u64; 8], table.clone());
    let writes = AtomicUsize::new(0);
    let fast_reads = AtomicUsize::new(0);
    let barrier = Barrier::new(threads);
    thread::scope(|s| {
        for t in 0..threads {
            let (lock, writes, fast_reads, barrier) = (&lock, &writes, &fast_reads, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
                for _ in 0..iters {
                    rng = mix64(rng);
                    if rng as usize % write_every == 0 {
                        let mut w = lock.write();
                        let next = w[0] + 1;
                        for (i, x) in w.iter_mut().enumerate() {
                            assert_eq!(*x + 1, next, "word {i} torn before write");
                            *x = next;
                            std::hint::black_box(&*x);
                        }
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        let r = lock.read();
                        if r.is_fast_path() {
                            fast_reads.fetch_add(1, Ordering::Relaxed);
                        }
                        let first = r[0];
                        assert!(r.iter().all(|&x| x == first), "reader saw torn state {r:?}");
                    }
                }
            });
        }
    });
    let total = writes.load(Ordering::Relaxed) as u64;
    assert_eq!(lock.read()[7], total, "every write counted once");
    assert_eq!(table.occupied(), 0, "no slot left published");
    fast_reads.into_inner()
}

#[test]
fn stress_readers_and_writers() {
    let fast = stress(4096, 4, 200_000, 64);
    assert!(fast > 0, "the fast path was exercised");
}

#[test]
fn stress_small_table_collisions() {
    stress(2, 6, 100_000, 16);
}

#[test]
fn stress_write_heavy() {
    stress(64, 4, 100_000, 2);
}
